/* The fast paths of fp_account_fast.h (fp_try_enter, fp_try_leave), used
 * the way the binding uses them: try the fast path, fall back to fp_enter /
 * fp_leave when it refuses. They must never change a number: a
 * pseudo-random event stream (nested calls, recursion, C-style frames
 * matched by identity, missed returns, returns of frames never entered,
 * first calls making new edges) recorded both ways gives identical tables;
 * and a refusal changes nothing. */
#define _GNU_SOURCE
#include "fp_testlib.h"

#include "fp_account_fast.h"

#define N_KEYS 8
#define N_EVENTS 20000

/* C-style frames are entered with an identity (the binding passes the
 * callable) and left by it; these are their identities. */
static char idents[N_KEYS];

typedef struct {
    fp_profiler_t p;
    fp_thread_t *t;
    size_t fast_enters, fast_leaves;
} recorder_t;

static void recorder_init(recorder_t *r, unsigned flags)
{
    fp_profiler_init(&r->p, flags, 4, NULL, NULL);
    r->t = fp_thread_get(&r->p, 1);
    assert_non_null(r->t);
    r->fast_enters = r->fast_leaves = 0;
}

/* What the binding does on a call: the cached entry and the fast path,
 * else the table lookup and fp_enter. */
static void fast_call(recorder_t *r, const void *key, const void *ident, fp_time_t now)
{
    fp_entry_t *e = fp_entry_cached(r->t, key);
    if (e && fp_try_enter(&r->p, r->t, e, ident, now)) {
        r->fast_enters++;
        return;
    }
    e = tl_entry(r->t, key);
    assert_non_null(e);
    fp_enter(&r->p, r->t, e, ident, now);
}

static void fast_return(recorder_t *r, const void *key, const void *ident, fp_time_t now)
{
    int done = fp_try_leave(r->t, key, ident, now);
    if (done)
        r->fast_leaves++;
    else
        fp_leave(&r->p, r->t, key, now);
}

static void slow_call(recorder_t *r, const void *key, const void *ident, fp_time_t now)
{
    fp_entry_t *e = tl_entry(r->t, key);
    assert_non_null(e);
    fp_enter(&r->p, r->t, e, ident, now);
}

static void assert_same_tables(const fp_thread_t *a, const fp_thread_t *b)
{
    assert_int_equal(a->n_entries, b->n_entries);
    assert_int_equal(a->n_edges, b->n_edges);
    assert_int_equal(a->n_nodes, b->n_nodes);
    for (const fp_entry_t *x = a->entries; x; x = x->hh.next) {
        fp_entry_t *y = fp_entry_find((fp_thread_t *)b, x->key);
        assert_non_null(y);
        assert_int_equal(x->callcount, y->callcount);
        assert_int_equal(x->reccallcount, y->reccallcount);
        assert_int_equal(x->cumtime, y->cumtime);
        assert_int_equal(x->owntime, y->owntime);
    }
    for (const fp_edge_t *x = a->edges; x; x = x->hh.next) {
        const fp_entry_t *ca = x->key.caller, *ce = x->key.callee;
        fp_edge_t *y = tl_edge((fp_thread_t *)b, ca->key, ce->key);
        assert_non_null(y);
        assert_int_equal(x->callcount, y->callcount);
        assert_int_equal(x->reccallcount, y->reccallcount);
        assert_int_equal(x->cumtime, y->cumtime);
        assert_int_equal(x->owntime, y->owntime);
    }
}

static uint32_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

/* One random program recorded both ways, with `flags`. */
static void run_differential(unsigned flags, uint32_t seed)
{
    recorder_t fast, slow;
    recorder_init(&fast, flags);
    recorder_init(&slow, flags);
    rng_state = seed;
    /* the model of the real call stack: key indexes, and whether C-style */
    int stack[64], is_c[64];
    int depth = 0;
    fp_time_t now = 0;
    for (int i = 0; i < N_EVENTS; i++) {
        now += 1 + rnd(5);
        uint32_t what = rnd(100);
        if (depth < 64 && (depth == 0 || what < 48)) {
            /* a call; loops keep calling the same few functions */
            int k = depth > 0 && rnd(2) ? stack[depth - 1] : (int)rnd(N_KEYS);
            int c = rnd(4) == 0;
            const void *key = &tl_keys[k];
            const void *ident = c ? &idents[k] : NULL;
            fast_call(&fast, key, ident, now);
            slow_call(&slow, key, ident, now);
            stack[depth] = k;
            is_c[depth++] = c;
        } else if (what < 95) {
            /* the top frame returns */
            int k = stack[--depth];
            const void *ident = is_c[depth] ? &idents[k] : NULL;
            fast_return(&fast, &tl_keys[k], ident, now);
            fp_leave(&slow.p, slow.t, &tl_keys[k], now);
        } else if (what < 98 && depth >= 2) {
            /* a frame two down returns: the top one missed its return */
            depth -= 2;
            int k = stack[depth];
            const void *ident = is_c[depth] ? &idents[k] : NULL;
            fast_return(&fast, &tl_keys[k], ident, now);
            fp_leave(&slow.p, slow.t, &tl_keys[k], now);
        } else {
            /* the return of a frame entered before profiling started */
            fast_return(&fast, KX, NULL, now);
            fp_leave(&slow.p, slow.t, KX, now);
        }
        assert_int_equal(fast.t->depth, slow.t->depth);
    }
    fp_thread_flush(&fast.p, fast.t, now + 1);
    fp_thread_flush(&slow.p, slow.t, now + 1);
    assert_same_tables(fast.t, slow.t);
    assert_same_tables(slow.t, fast.t);
    if (!(flags & FP_CALLPATHS)) {
        /* the fast paths really ran (seen: 40-100% of calls, nearly all
         * returns; a call from a new caller needs the general path) */
        assert_true(fast.fast_enters > N_EVENTS / 8);
        assert_true(fast.fast_leaves > N_EVENTS / 4);
    }
    assert_int_equal(fast.p.nomem, 0);
    fp_profiler_destroy(&fast.p);
    fp_profiler_destroy(&slow.p);
}

static void test_same_numbers_with_subcalls(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 5; seed++)
        run_differential(FP_SUBCALLS, seed);
}

static void test_same_numbers_without_subcalls(void **state)
{
    (void)state;
    run_differential(0, 7);
}

static void test_same_numbers_with_callpaths(void **state)
{
    (void)state;
    run_differential(FP_SUBCALLS | FP_CALLPATHS, 11);
}

/* Every refusal leaves the thread as it was. */
static void test_refusals_change_nothing(void **state)
{
    (void)state;
    recorder_t r;
    recorder_init(&r, FP_SUBCALLS);
    fp_thread_t *t = r.t;
    fp_entry_t *a = tl_entry(t, KA), *b = tl_entry(t, KB);

    /* the first frame has no caller: the general path makes it */
    assert_false(fp_try_enter(&r.p, t, a, NULL, 1));
    assert_int_equal(t->depth, 0);
    tl_call(&r.p, t, KA, 1);

    /* a->b has no edge yet */
    assert_false(fp_try_enter(&r.p, t, b, NULL, 2));
    assert_int_equal(t->depth, 1);
    assert_int_equal(b->reclevel, 0);
    tl_call(&r.p, t, KB, 2);

    /* b is on top: a's return is a missed-return recovery, not fast */
    assert_false(fp_try_leave(t, KA, NULL, 3));
    assert_false(fp_try_leave(t, NULL, &idents[0], 3));
    assert_int_equal(t->depth, 2);
    assert_true(fp_try_leave(t, KB, NULL, 3));
    assert_int_equal(b->callcount, 1);

    /* the edge exists now: a second b is fast */
    assert_true(fp_try_enter(&r.p, t, b, &idents[1], 4));
    assert_true(fp_try_leave(t, NULL, &idents[1], 6));
    assert_int_equal(b->callcount, 2);
    assert_int_equal(b->owntime, 1 + 2);

    /* while dropped frames are pending, every event takes the general path */
    assert_true(fp_try_enter(&r.p, t, b, &idents[1], 7));
    t->lost = 1;
    assert_false(fp_try_enter(&r.p, t, b, NULL, 7));
    assert_false(fp_try_leave(t, KB, NULL, 7));
    assert_false(fp_try_leave(t, NULL, &idents[1], 7));
    t->lost = 0;
    assert_true(fp_try_leave(t, NULL, &idents[1], 7));
    assert_int_equal(b->callcount, 3);

    /* a full stack must grow first */
    size_t capacity = t->capacity;
    t->capacity = t->depth;
    assert_false(fp_try_enter(&r.p, t, b, NULL, 8));
    t->capacity = capacity;

    assert_int_equal(t->depth, 1);
    tl_ret(&r.p, t, KA, 10);
    assert_entry(t, KA, 1, 0, 9, 9 - 1 - 2);
    fp_profiler_destroy(&r.p);
}

/* A callee called from several callers in turn (a constructor, a
 * property) misses its entry's last edge; the thread's edge cache still
 * gives the fast path the right edge, whichever caller came last. */
static void test_edge_cache_alternating_callers(void **state)
{
    (void)state;
    recorder_t r;
    recorder_init(&r, FP_SUBCALLS);
    fp_thread_t *t = r.t;
    fp_entry_t *c = tl_entry(t, KC);
    fp_time_t now = 0;
    tl_call(&r.p, t, KM, ++now);
    for (int round = 0; round < 3; round++) {
        const void *callers[2] = {KA, KB};
        for (int i = 0; i < 2; i++) {
            tl_call(&r.p, t, callers[i], ++now);
            if (round == 0) {
                assert_false(fp_try_enter(&r.p, t, c, NULL, ++now)); /* new edge */
                tl_call(&r.p, t, KC, now);
            } else {
                assert_ptr_not_equal(c->last_edge->key.caller, fp_entry_find(t, callers[i]));
                assert_true(fp_try_enter(&r.p, t, c, NULL, ++now));
            }
            assert_ptr_equal(t->stack[t->depth - 1].edge, tl_edge(t, callers[i], KC));
            assert_true(fp_try_leave(t, KC, NULL, now += 2));
            tl_ret(&r.p, t, callers[i], ++now);
        }
    }
    assert_edge(t, KA, KC, 3, 0, 6, 6);
    assert_edge(t, KB, KC, 3, 0, 6, 6);
    assert_int_equal(t->n_edges, 4);
    fp_profiler_destroy(&r.p);
}

/* Two pairs sharing a cache slot never get each other's edge, even with
 * the same caller (pigeonhole: 1 caller, more callees than slots), and
 * clearing the profiler empties the cache (its edges are freed). */
static void test_edge_cache_collisions_and_clear(void **state)
{
    (void)state;
    enum { N = (1 << FP_EDGE_CACHE_BITS) + 1 };
    static char keys[N + 1];
    recorder_t r;
    recorder_init(&r, FP_SUBCALLS);
    fp_thread_t *t = r.t;
    fp_entry_t *x = tl_entry(t, &keys[N]);
    fp_entry_t *callee[N];
    int i = 0, j = -1;
    for (; i < N && j < 0; i++) {
        callee[i] = tl_entry(t, &keys[i]);
        for (int k = 0; k < i; k++)
            if (fp_edge_slot(t, x, callee[k]) == fp_edge_slot(t, x, callee[i]))
                j = k;
    }
    assert_true(j >= 0);
    fp_entry_t *y = callee[j], *v = callee[i - 1];
    fp_edge_t *xy = fp_edge_get(t, x, y), *xv = fp_edge_get(t, x, v);
    assert_ptr_not_equal(xy, xv);
    y->last_edge = v->last_edge = NULL; /* only the shared slot can answer */
    assert_ptr_equal(*fp_edge_slot(t, x, y), xv);
    assert_null(fp_edge_cached(t, x, y));
    assert_ptr_equal(fp_edge_get(t, x, y), xy);
    assert_null(fp_edge_cached(t, x, v));
    assert_ptr_equal(fp_edge_get(t, x, v), xv);
    assert_int_equal(t->n_edges, 2);

    fp_profiler_clear(&r.p);
    for (size_t s = 0; s < (1u << FP_EDGE_CACHE_BITS); s++)
        assert_null(t->edge_cache[s]);
    fp_profiler_destroy(&r.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_numbers_with_subcalls),
        cmocka_unit_test(test_same_numbers_without_subcalls),
        cmocka_unit_test(test_same_numbers_with_callpaths),
        cmocka_unit_test(test_refusals_change_nothing),
        cmocka_unit_test(test_edge_cache_alternating_callers),
        cmocka_unit_test(test_edge_cache_collisions_and_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
