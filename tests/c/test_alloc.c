/* Allocation failure: fp_mem_fail_after(N) lets N allocations of the core
 * succeed and fails every one after.
 *
 * test_fail_after_n: for N = 0, 1, 2, ... until a whole scenario runs
 * without any failure, the scenario (two threads, trees, recursion past the
 * initial stack capacity, mutual recursion, generators, a few hundred
 * functions so that every table expands, a missed return, frames left open
 * and a flush) must:
 *   - not crash, and leak nothing (run under valgrind / ASan);
 *   - set p.nomem whenever an allocation failed, and when p.nomem is not
 *     set, have counted everything exactly as a run without failures;
 *   - keep the stacks balanced: after the balanced part every stack is
 *     empty with nothing pending, and once failures stop a fresh call tree
 *     is counted exactly;
 *   - hand every user pointer it took to the release callback exactly once,
 *     and none it refused.
 * test_merge_fail_after_n does the same for fp_thread_new + fp_thread_merge,
 * test_fold_fail_after_n for fp_thread_fold (which changes nothing when it
 * fails);
 * the other tests pin down, with exact numbers, what each kind of failure
 * drops (a push, an entry, a park, an edge, a node, a thread record). */
#define _GNU_SOURCE
#include "fp_testlib.h"

enum { N_THREADS = 2, N_MANY = 300, REC_DEPTH = 80 };

static char many[N_THREADS][N_MANY]; /* keys of the "few hundred functions":
                                      * enough for the tables to expand */
static char fresh[4];                /* keys used only after failures stop */
#define KP ((const void *)&fresh[0])
#define KQ ((const void *)&fresh[1])
#define KR ((const void *)&fresh[2])

typedef struct {
    fp_profiler_t p;
    fp_thread_t *t[N_THREADS];
    fp_time_t now;
    unsigned step;
    int event_fail; /* an event or table add reported out of memory */
    long users_taken;
    long users_released;
} run_t;

/* User pointers are real allocations (outside fp_mem): valgrind and ASan
 * see a leak or a double release. */
static void release_user(void *user, void *ctx)
{
    run_t *r = ctx;
    r->users_released++;
    free(user);
}

/* Each event advances the scripted clock the same way, dropped or not, so
 * a run and the reference run see identical times. */
static fp_time_t tick(run_t *r)
{
    r->now += 1 + (fp_time_t)(r->step++ % 3);
    return r->now;
}

static fp_entry_t *entry_of(run_t *r, fp_thread_t *t, const void *key)
{
    fp_entry_t *e = fp_entry_find(t, key);
    if (e)
        return e;
    void *user = malloc(8);
    assert_non_null(user);
    e = fp_entry_add(t, key, user);
    if (e) {
        assert_ptr_equal(e->user, user);
        r->users_taken++;
    } else {
        free(user); /* not taken on failure */
        r->event_fail = 1;
    }
    return e; /* NULL is passed on: fp_enter drops the call, balanced */
}

/* A push the core dropped (its return will pop nothing). */
static void check_pushed(run_t *r, const fp_thread_t *t, size_t lost_before)
{
    if (t->lost > lost_before)
        r->event_fail = 1;
}

static void call(run_t *r, int ti, const void *key)
{
    fp_time_t now = tick(r);
    fp_thread_t *t = r->t[ti];
    if (t) {
        size_t lost = t->lost;
        fp_enter(&r->p, t, entry_of(r, t, key), NULL, now);
        check_pushed(r, t, lost);
    }
}

static void ret(run_t *r, int ti, const void *key)
{
    fp_time_t now = tick(r);
    if (r->t[ti])
        fp_leave(&r->p, r->t[ti], key, now);
}

static void gen_start(run_t *r, int ti, const void *key, const void *ident)
{
    fp_time_t now = tick(r);
    fp_thread_t *t = r->t[ti];
    if (t) {
        size_t lost = t->lost;
        fp_enter(&r->p, t, entry_of(r, t, key), ident, now);
        check_pushed(r, t, lost);
    }
}

static void yield(run_t *r, int ti, const void *key, const void *ident)
{
    fp_time_t now = tick(r);
    if (r->t[ti]) {
        int nomem = r->p.nomem;
        fp_suspend(&r->p, r->t[ti], key, ident, now);
        if (r->p.nomem && !nomem)
            r->event_fail = 1; /* could not park it */
    }
}

static void resume(run_t *r, int ti, const void *key, const void *ident)
{
    fp_time_t now = tick(r);
    fp_thread_t *t = r->t[ti];
    if (t) {
        size_t lost = t->lost;
        fp_resume(&r->p, t, entry_of(r, t, key), ident, now);
        check_pushed(r, t, lost);
    }
}

static void run_init(run_t *r)
{
    memset(r, 0, sizeof *r);
    fp_profiler_init(&r->p, FP_SUBCALLS | FP_CALLPATHS, 6, release_user, r);
}

static void get_threads(run_t *r)
{
    for (int i = 0; i < N_THREADS; i++) {
        r->t[i] = fp_thread_get(&r->p, 100 + (uint64_t)i);
        if (!r->t[i]) {
            assert_int_equal(r->p.nomem, 1);
            r->event_fail = 1;
        }
    }
}

/* Every call returns: afterwards nothing may be left on a stack. */
static void scenario_balanced(run_t *r)
{
    for (int ti = 0; ti < N_THREADS; ti++) {
        /* a tree */
        call(r, ti, KA);
        call(r, ti, KB);
        ret(r, ti, KB);
        call(r, ti, KB);
        ret(r, ti, KB);
        call(r, ti, KC);
        ret(r, ti, KC);
        ret(r, ti, KA);
        /* mutual recursion */
        call(r, ti, KA);
        call(r, ti, KB);
        call(r, ti, KA);
        call(r, ti, KB);
        ret(r, ti, KB);
        ret(r, ti, KA);
        ret(r, ti, KB);
        ret(r, ti, KA);
    }
    /* recursion deeper than the first stack (64 frames): it must grow */
    call(r, 0, KM);
    for (int i = 0; i < REC_DEPTH; i++)
        call(r, 0, KF);
    for (int i = 0; i < REC_DEPTH; i++)
        ret(r, 0, KF);
    ret(r, 0, KM);
    /* generators: two instances parked at once, resumed from elsewhere */
    call(r, 1, KM);
    resume(r, 1, KG, G1); /* first start */
    yield(r, 1, KG, G1);
    gen_start(r, 1, KG, G2);
    yield(r, 1, KG, G2);
    ret(r, 1, KM);
    call(r, 1, KD);
    resume(r, 1, KG, G1);
    call(r, 1, KH);
    ret(r, 1, KH);
    yield(r, 1, KG, G1);
    resume(r, 1, KG, G2);
    ret(r, 1, KG);
    resume(r, 1, KG, G1);
    ret(r, 1, KG);
    ret(r, 1, KD);
    /* a few hundred functions: the tables grow */
    for (int ti = 0; ti < N_THREADS; ti++) {
        int n = ti == 0 ? N_MANY : N_MANY / 4;
        call(r, ti, KM);
        for (int i = 0; i < n; i++) {
            call(r, ti, &many[ti][i]);
            if (i % 7 == 0) {
                call(r, ti, &many[ti][(i * 5) % n]);
                ret(r, ti, &many[ti][(i * 5) % n]);
            }
            ret(r, ti, &many[ti][i]);
        }
        ret(r, ti, KM);
    }
    /* the two threads interleaved */
    call(r, 0, KA);
    call(r, 1, KB);
    call(r, 0, KC);
    call(r, 1, KC);
    ret(r, 0, KC);
    ret(r, 1, KC);
    ret(r, 0, KA);
    ret(r, 1, KB);
}

/* Missed returns and frames left open, then the flush (disable). */
static void scenario_open(run_t *r)
{
    call(r, 0, KA);
    call(r, 0, KB);
    call(r, 0, KC);
    call(r, 0, KX);
    ret(r, 0, KB); /* the returns of x and c were missed */
    ret(r, 0, KA);

    for (int ti = 0; ti < N_THREADS; ti++) {
        call(r, ti, KA);
        call(r, ti, KB);
        gen_start(r, ti, KG, G1);
        yield(r, ti, KG, G1);
        call(r, ti, KC);
    }
    fp_time_t now = tick(r);
    for (int ti = 0; ti < N_THREADS; ti++)
        if (r->t[ti])
            fp_thread_flush(&r->p, r->t[ti], now);
}

/* The node of `b` whose path is the path of node `a` of another thread. */
static fp_node_t *node_like(fp_thread_t *b, const fp_node_t *a)
{
    const fp_node_t *ap = a->key.parent;
    fp_node_t *parent = NULL;
    if (ap) {
        parent = node_like(b, ap);
        if (!parent)
            return NULL;
    }
    return tl_node(b, parent, ((const fp_entry_t *)a->key.entry)->key);
}

/* `got` holds exactly the stats of `want`. */
static void assert_same_thread(fp_thread_t *got, fp_thread_t *want)
{
    assert_non_null(got);
    assert_int_equal(got->n_entries, want->n_entries);
    assert_int_equal(got->n_edges, want->n_edges);
    assert_int_equal(got->n_nodes, want->n_nodes);
    for (const fp_entry_t *w = want->entries; w; w = w->hh.next) {
        fp_entry_t *g = fp_entry_find(got, w->key);
        assert_stats(g, w->callcount, w->reccallcount, w->cumtime, w->owntime);
    }
    for (const fp_edge_t *w = want->edges; w; w = w->hh.next) {
        fp_edge_t *g = tl_edge(got, ((const fp_entry_t *)w->key.caller)->key,
                               ((const fp_entry_t *)w->key.callee)->key);
        assert_stats(g, w->callcount, w->reccallcount, w->cumtime, w->owntime);
    }
    for (const fp_node_t *w = want->nodes; w; w = w->hh.next) {
        fp_node_t *g = node_like(got, w);
        assert_node(g, w->callcount, w->cumtime, w->owntime, w->depth);
    }
}

/* What must hold even after dropped events. */
typedef struct {
    const fp_entry_t *e;
    uint64_t edge_calls, node_calls;
} sums_t;

static int cmp_sums(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const sums_t *)a)->e, y = (uintptr_t)((const sums_t *)b)->e;
    return x < y ? -1 : x > y;
}

static sums_t *sums_of(sums_t *v, size_t n, const void *entry)
{
    sums_t k = {entry, 0, 0};
    sums_t *s = bsearch(&k, v, n, sizeof *v, cmp_sums);
    assert_non_null(s); /* edges and nodes join entries of their own thread */
    return s;
}

static void assert_sane_thread(const fp_thread_t *t)
{
    size_t n = t->n_entries;
    sums_t *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    size_t i = 0;
    for (const fp_entry_t *e = t->entries; e; e = e->hh.next) {
        assert_true(i < n);
        assert_true(e->reccallcount <= e->callcount);
        assert_true(e->owntime >= 0);
        assert_true(e->owntime <= e->cumtime);
        v[i++].e = e;
    }
    assert_int_equal(i, n);
    qsort(v, n, sizeof *v, cmp_sums);
    for (const fp_edge_t *g = t->edges; g; g = g->hh.next) {
        sums_of(v, n, g->key.caller);
        sums_of(v, n, g->key.callee)->edge_calls += g->callcount;
    }
    for (const fp_node_t *nd = t->nodes; nd; nd = nd->hh.next) {
        const fp_node_t *parent = nd->key.parent;
        assert_true(nd->depth >= 1 && nd->depth <= 6);
        if (parent)
            assert_true(parent->index < nd->index);
        sums_of(v, n, nd->key.entry)->node_calls += nd->callcount;
    }
    for (i = 0; i < n; i++) {
        assert_true(v[i].edge_calls <= v[i].e->callcount);
        assert_true(v[i].node_calls <= v[i].e->callcount);
    }
    free(v);
}

/* After failures stop: a fresh tree on fresh keys, on every thread record. */
static void assert_fresh_tree_exact(run_t *r)
{
    for (int ti = 0; ti < N_THREADS; ti++) {
        fp_thread_t *t = fp_thread_get(&r->p, 100 + (uint64_t)ti);
        assert_non_null(t);
        r->t[ti] = t;
        fp_profiler_t *p = &r->p;
        fp_time_t T = 1000000 * (ti + 1);
        tl_call(p, t, KP, T);
        tl_call(p, t, KQ, T + 1);
        tl_ret(p, t, KQ, T + 4); /* q: 3 */
        tl_call(p, t, KQ, T + 5);
        tl_ret(p, t, KQ, T + 7); /* q: 2 */
        tl_call(p, t, KR, T + 8);
        tl_call(p, t, KR, T + 9);
        tl_ret(p, t, KR, T + 10); /* inner r: 1/1 */
        tl_ret(p, t, KR, T + 12); /* outer r: 4/3 */
        tl_ret(p, t, KP, T + 14); /* p: 14/5 */
        assert_entry(t, KP, 1, 0, 14, 5);
        assert_entry(t, KQ, 2, 0, 5, 5);
        assert_entry(t, KR, 2, 1, 4, 4);
        assert_edge(t, KP, KQ, 2, 0, 5, 5);
        assert_edge(t, KP, KR, 1, 0, 4, 3);
        assert_edge(t, KR, KR, 1, 0, 1, 1);
        fp_node_t *np = tl_node(t, NULL, KP);
        assert_node(np, 1, 14, 5, 1);
        assert_node(tl_node(t, np, KQ), 2, 5, 5, 2);
        assert_node(tl_node(t, np, KR), 2, 4, 4, 2);
        assert_int_equal(t->depth, 0);
        assert_int_equal(t->lost, 0);
        /* the fresh tree's users were taken by tl_call with NULL users */
    }
}

static void run_scenario(run_t *r)
{
    get_threads(r);
    scenario_balanced(r);
    for (int ti = 0; ti < N_THREADS; ti++) {
        fp_thread_t *t = r->t[ti];
        if (!t)
            continue;
        /* balanced: every pushed frame popped, every dropped one skipped */
        assert_int_equal(t->depth, 0);
        assert_int_equal(t->lost, 0);
        /* (a generator resumed inside a dropped call stays parked until
         * the flush: degraded data, but nomem says so) */
        if (!r->p.nomem)
            assert_int_equal(tl_count_parked(t), 0);
        for (const fp_entry_t *e = t->entries; e; e = e->hh.next)
            assert_int_equal(e->reclevel, 0);
    }
    scenario_open(r);
    for (int ti = 0; ti < N_THREADS; ti++) {
        if (r->t[ti]) {
            tl_assert_idle(r->t[ti]);
            assert_int_equal(tl_count_parked(r->t[ti]), 0);
        }
    }
    (void)fp_profiler_memory(&r->p);
}

/* The tables of the reference run grew past their first bucket arrays,
 * so the runs below also fail inside uthash's expansions. */
static void assert_tables_expanded(const fp_thread_t *t)
{
    assert_true(t->entries->hh.tbl->num_buckets > HASH_INITIAL_NUM_BUCKETS);
    assert_true(t->edges->hh.tbl->num_buckets > HASH_INITIAL_NUM_BUCKETS);
    assert_true(t->nodes->hh.tbl->num_buckets > HASH_INITIAL_NUM_BUCKETS);
}

static void test_fail_after_n(void **state)
{
    (void)state;
    fp_mem_fail_after(-1);
    run_t ref;
    run_init(&ref);
    run_scenario(&ref);
    assert_int_equal(ref.event_fail, 0);
    assert_int_equal(ref.p.nomem, 0);
    assert_tables_expanded(ref.t[0]);
    assert_true(ref.t[0]->capacity > 64); /* the stack grew */

    long n;
    long with_nomem = 0;
    for (n = 0; n < 1000000; n++) {
        run_t r;
        run_init(&r);
        fp_mem_fail_after(n);
        run_scenario(&r);
        fp_mem_fail_after(-1);

        int failed = r.event_fail || r.p.nomem;
        if (r.event_fail)
            assert_int_equal(r.p.nomem, 1); /* a dropped event is reported */
        if (!r.p.nomem) {
            /* nothing reported: nothing dropped */
            for (int ti = 0; ti < N_THREADS; ti++)
                assert_same_thread(r.t[ti], ref.t[ti]);
        }
        with_nomem += r.p.nomem;
        for (int ti = 0; ti < N_THREADS; ti++)
            if (r.t[ti])
                assert_sane_thread(r.t[ti]);

        assert_fresh_tree_exact(&r);

        fp_profiler_destroy(&r.p);
        assert_int_equal(r.users_released, r.users_taken);
        if (!failed)
            break;
    }
    print_message("events: clean from %ld allocations on (%ld runs set nomem)\n", n, with_nomem);
    assert_true(n > 100);
    assert_int_equal(with_nomem, n); /* every failing run said so */

    fp_profiler_destroy(&ref.p);
    assert_int_equal(ref.users_released, ref.users_taken);
}

/* fp_thread_new + fp_thread_merge of the reference run's threads: FP_ENOMEM
 * or a NULL record when an allocation fails, the exact merge otherwise;
 * a partial merge is still consistent and frees cleanly. */
static void test_merge_fail_after_n(void **state)
{
    (void)state;
    fp_mem_fail_after(-1);
    run_t src;
    run_init(&src);
    run_scenario(&src);
    assert_int_equal(src.p.nomem, 0);
    fp_thread_t *want = fp_thread_new(0);
    assert_non_null(want);
    for (fp_thread_t *t = src.p.threads; t; t = t->hh.next)
        assert_int_equal(fp_thread_merge(want, t), 0);
    assert_tables_expanded(want);

    long n;
    for (n = 0; n < 1000000; n++) {
        fp_mem_fail_after(n);
        int failed = 0;
        fp_thread_t *dst = fp_thread_new(0);
        if (!dst)
            failed = 1;
        for (fp_thread_t *t = src.p.threads; dst && t; t = t->hh.next) {
            int rc = fp_thread_merge(dst, t);
            assert_true(rc == 0 || rc == FP_ENOMEM);
            if (rc)
                failed = 1;
        }
        fp_mem_fail_after(-1);
        if (dst) {
            assert_sane_thread(dst);
            if (!failed)
                assert_same_thread(dst, want);
        }
        fp_thread_free(dst, NULL, NULL);
        if (!failed)
            break;
    }
    print_message("merge: clean from %ld allocations on\n", n);
    assert_true(n > 100);
    fp_thread_free(want, NULL, NULL);
    fp_profiler_destroy(&src.p);
    assert_int_equal(src.users_released, src.users_taken);
}

/* A call dropped because its push failed (the stack is full and cannot
 * grow) drops everything nested in it; the returns skip exactly those, so
 * the frames below are closed by their own returns, at their own times. */
static void test_push_failure_drops_nested_calls(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_entry(t, KX); /* exists before failures start */
    for (int i = 0; i < 64; i++)
        tl_call(&p, t, KF, i);
    assert_int_equal(t->depth, t->capacity); /* full: the next push must grow it */
    fp_mem_fail_after(0);
    fp_enter(&p, t, fp_entry_find(t, KF), NULL, 64);
    assert_int_equal(p.nomem, 1);
    assert_int_equal(t->lost, 1);
    fp_enter(&p, t, fp_entry_find(t, KX), NULL, 65); /* nested: dropped too */
    assert_int_equal(t->lost, 2);
    fp_mem_fail_after(-1);
    tl_ret(&p, t, KX, 66);
    tl_ret(&p, t, KF, 67); /* the dropped f: pops nothing */
    assert_int_equal(t->depth, 64);
    assert_int_equal(t->lost, 0);
    for (int i = 0; i < 64; i++)
        tl_ret(&p, t, KF, 68 + i);
    /* 64 counted calls; the outermost spans 0..131; all of it is f's own
     * time, the dropped calls included */
    assert_entry(t, KF, 64, 63, 131, 131);
    assert_entry(t, KX, 0, 0, 0, 0);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* The binding could not make an entry (fp_entry_add failed): it passes
 * NULL to fp_enter, which drops the call like a failed push, so the
 * function's later return (reported as usual) pops nothing -- not even a
 * frame of the same key further down, nor the caller's. */
static void test_entry_failure_is_a_dropped_call(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    for (int i = 0; i < 64; i++)
        tl_call(&p, t, KF, i);
    fp_mem_fail_after(0);
    /* f again: the stack is full, the push fails */
    fp_enter(&p, t, fp_entry_find(t, KF), NULL, 64);
    assert_int_equal(t->lost, 1);
    /* inside it, x is new and its entry cannot be made */
    assert_null(fp_entry_add(t, KX, NULL));
    fp_enter(&p, t, NULL, NULL, 65);
    assert_int_equal(t->lost, 2);
    fp_resume(&p, t, NULL, G1, 66); /* a generator's first start */
    assert_int_equal(t->lost, 3);
    fp_mem_fail_after(-1);
    tl_ret(&p, t, KG, 67);
    tl_ret(&p, t, KX, 68);
    tl_ret(&p, t, KF, 69);
    assert_int_equal(t->depth, 64);
    assert_int_equal(t->lost, 0);
    for (int i = 0; i < 64; i++)
        tl_ret(&p, t, KF, 70 + i);
    assert_entry(t, KF, 64, 63, 133, 133);
    assert_null(fp_entry_find(t, KX));
    assert_int_equal(p.nomem, 1);
    tl_assert_idle(t);

    /* with room on the stack, a NULL entry is dropped the same way */
    tl_call(&p, t, KA, 200);
    fp_enter(&p, t, NULL, NULL, 201);
    assert_int_equal(t->lost, 1);
    tl_ret(&p, t, KA, 202); /* the dropped call's return: skipped */
    assert_int_equal(t->depth, 1);
    tl_ret(&p, t, KA, 203);
    assert_entry(t, KA, 1, 0, 3, 3);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* A generator that cannot be parked is booked as one finished call; its
 * resume is then a first start: two calls, times exact, nomem set. */
static void test_park_failure(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KM, 0);
    tl_gen_start(&p, t, KG, G1, 1);
    fp_mem_fail_after(0);
    fp_suspend(&p, t, KG, G1, 3); /* cannot park: g booked 2/2 */
    assert_int_equal(p.nomem, 1);
    assert_int_equal(tl_count_parked(t), 0);
    assert_int_equal(t->depth, 1);
    fp_resume(&p, t, fp_entry_find(t, KG), G1, 6); /* a first start again: needs no memory */
    assert_int_equal(t->depth, 2);
    fp_mem_fail_after(-1);
    tl_ret(&p, t, KG, 7); /* g: 1/1 */
    tl_ret(&p, t, KM, 9); /* m: 9/6 */
    assert_entry(t, KG, 2, 0, 3, 3);
    assert_entry(t, KM, 1, 0, 9, 6);
    assert_edge(t, KM, KG, 2, 0, 3, 3);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* An edge or call-path node that cannot be made: the call itself is still
 * counted exactly (its frame is pushed), only the edge or node is missing,
 * and nomem says so. */
static void test_edge_failure(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    fp_entry_t *b = tl_entry(t, KB);
    tl_call(&p, t, KA, 0);
    fp_mem_fail_after(0);
    fp_enter(&p, t, b, NULL, 1);
    assert_int_equal(t->depth, 2); /* pushed all the same */
    fp_mem_fail_after(-1);
    assert_int_equal(p.nomem, 1);
    tl_ret(&p, t, KB, 3);
    tl_ret(&p, t, KA, 4);
    assert_entry(t, KB, 1, 0, 2, 2);
    assert_entry(t, KA, 1, 0, 4, 2);
    assert_null(tl_edge(t, KA, KB));
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

static void test_node_failure(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, 8, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    fp_entry_t *b = tl_entry(t, KB);
    tl_call(&p, t, KA, 0);
    fp_mem_fail_after(0);
    fp_enter(&p, t, b, NULL, 1);
    assert_int_equal(t->depth, 2); /* pushed all the same */
    fp_mem_fail_after(-1);
    assert_int_equal(p.nomem, 1);
    tl_ret(&p, t, KB, 3);
    tl_ret(&p, t, KA, 4);
    assert_entry(t, KB, 1, 0, 2, 2);
    assert_entry(t, KA, 1, 0, 4, 2);
    assert_int_equal(t->n_nodes, 1);
    assert_node(tl_node(t, NULL, KA), 1, 4, 2, 1);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* A thread record that cannot be made (the record, or the threads table
 * of a profiler's first record: table and buckets): NULL, nomem set,
 * nothing leaked, and the next try works. */
static void test_thread_record_failure(void **state)
{
    (void)state;
    for (long n = 0; n < 3; n++) {
        fp_profiler_t p;
        fp_profiler_init(&p, FP_SUBCALLS, 1, NULL, NULL);
        fp_mem_fail_after(n);
        assert_null(fp_thread_get(&p, 1));
        fp_mem_fail_after(-1);
        assert_int_equal(p.nomem, 1);
        assert_null(p.threads);
        fp_thread_t *t = fp_thread_get(&p, 1);
        assert_non_null(t);
        fp_mem_fail_after(0); /* a second record: the table exists */
        assert_null(fp_thread_get(&p, 2));
        fp_mem_fail_after(-1);
        assert_ptr_equal(fp_thread_find(&p, 1), t);
        assert_null(fp_thread_find(&p, 2));
        assert_int_equal(HASH_COUNT(p.threads), 1);
        fp_profiler_destroy(&p);
    }
}

/* fp_thread_fold of the reference run's two threads into a group record,
 * failing after N allocations: FP_ENOMEM leaves both records as they were
 * (the source still in the profiler, every user still its own), and a
 * fold tried again once memory is back is exact; every user is released
 * once (valgrind / ASan see a double release). */
static void test_fold_fail_after_n(void **state)
{
    (void)state;
    fp_mem_fail_after(-1);
    run_t ref;
    run_init(&ref);
    run_scenario(&ref);
    assert_int_equal(ref.p.nomem, 0);
    fp_thread_t *want = fp_thread_new(0);
    assert_non_null(want);
    for (int ti = 0; ti < N_THREADS; ti++)
        assert_int_equal(fp_thread_merge(want, ref.t[ti]), 0);

    long n;
    for (n = 0; n < 1000000; n++) {
        run_t r;
        run_init(&r);
        run_scenario(&r);
        fp_thread_t *group = fp_thread_get(&r.p, 99);
        assert_non_null(group);
        int failed = 0;
        for (int ti = 0; ti < N_THREADS; ti++) {
            fp_mem_fail_after(n);
            fp_status rc = fp_thread_fold(&r.p, group, r.t[ti]);
            fp_mem_fail_after(-1);
            if (rc == FP_OK) {
                assert_null(fp_thread_find(&r.p, 100 + (uint64_t)ti));
                continue;
            }
            assert_int_equal(rc, FP_ENOMEM);
            failed = 1;
            /* nothing moved: the source as recorded, the group as before */
            assert_ptr_equal(fp_thread_find(&r.p, 100 + (uint64_t)ti), r.t[ti]);
            assert_same_thread(r.t[ti], ref.t[ti]);
            assert_sane_thread(group);
            if (ti == 0)
                assert_int_equal(group->n_entries + group->n_edges + group->n_nodes, 0);
            else
                assert_same_thread(group, ref.t[0]);
            assert_int_equal(group->folded, (uint64_t)ti);
            /* with memory back, the same fold goes through */
            assert_int_equal(fp_thread_fold(&r.p, group, r.t[ti]), FP_OK);
        }
        assert_same_thread(group, want);
        assert_int_equal(group->folded, N_THREADS);
        assert_int_equal(HASH_COUNT(r.p.threads), 1);
        fp_profiler_destroy(&r.p);
        assert_int_equal(r.users_released, r.users_taken);
        if (!failed)
            break;
    }
    print_message("fold: clean from %ld allocations on\n", n);
    assert_true(n > 100);
    fp_thread_free(want, NULL, NULL);
    fp_profiler_destroy(&ref.p);
    assert_int_equal(ref.users_released, ref.users_taken);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_failure_drops_nested_calls),
        cmocka_unit_test(test_entry_failure_is_a_dropped_call),
        cmocka_unit_test(test_park_failure),
        cmocka_unit_test(test_edge_failure),
        cmocka_unit_test(test_node_failure),
        cmocka_unit_test(test_thread_record_failure),
        cmocka_unit_test(test_fail_after_n),
        cmocka_unit_test(test_merge_fail_after_n),
        cmocka_unit_test(test_fold_fail_after_n),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
