/* Threads: each thread record has its own stack and tables, so interleaved
 * events of two threads never make one thread's function the caller of the
 * other's; fp_thread_merge adds thread records together by key (entries,
 * edges, call-path nodes). */
#define _GNU_SOURCE
#include "fp_testlib.h"

static void call_u(fp_profiler_t *p, fp_thread_t *t, const void *key, unsigned user, fp_time_t now)
{
    fp_entry_t *e = fp_entry_find(t, key);
    if (!e)
        e = fp_entry_add(t, key, TL_USER(user));
    assert_non_null(e);
    assert_ptr_equal(e->user, TL_USER(user));
    fp_enter(p, t, e, NULL, now);
}

/* The scripted run shared by the tests below. Thread 1 uses the users 1
 * (a) and 2 (b); thread 2 uses 3 (c), 4 (b) and 5 (a). */
static void run_two_threads(fp_profiler_t *p, fp_thread_t *t1, fp_thread_t *t2)
{
    call_u(p, t1, KA, 1, 0);
    call_u(p, t2, KC, 3, 1);
    call_u(p, t1, KB, 2, 2);
    call_u(p, t2, KB, 4, 3);
    tl_ret(p, t1, KB, 5); /* t1 b: 3/3 */
    tl_ret(p, t2, KB, 6); /* t2 b: 3/3 */
    tl_ret(p, t1, KA, 8); /* t1 a: 8/5 */
    tl_ret(p, t2, KC, 9); /* t2 c: 8/5 */

    call_u(p, t2, KA, 5, 10);
    call_u(p, t2, KB, 4, 11);
    tl_ret(p, t2, KB, 15); /* t2 b: 4/4 */
    tl_ret(p, t2, KA, 16); /* t2 a: 6/2 */

    call_u(p, t1, KA, 1, 20);
    call_u(p, t1, KA, 1, 21);
    tl_ret(p, t1, KA, 22); /* t1 inner a: 1/1 */
    tl_ret(p, t1, KA, 24); /* t1 outer a: 4/3 */
}

static void test_threads_are_independent(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    fp_thread_t *t1 = fp_thread_get(&p, 1);
    fp_thread_t *t2 = fp_thread_get(&p, 2);
    assert_non_null(t1);
    assert_non_null(t2);
    assert_ptr_not_equal(t1, t2);
    assert_ptr_equal(fp_thread_get(&p, 1), t1);
    assert_ptr_equal(fp_thread_find(&p, 2), t2);
    assert_null(fp_thread_find(&p, 3));

    run_two_threads(&p, t1, t2);

    assert_entry(t1, KA, 3, 1, 12, 9);
    assert_entry(t1, KB, 1, 0, 3, 3);
    assert_null(fp_entry_find(t1, KC));
    assert_edge(t1, KA, KB, 1, 0, 3, 3);
    assert_edge(t1, KA, KA, 1, 0, 1, 1);
    assert_int_equal(t1->n_edges, 2);

    assert_entry(t2, KC, 1, 0, 8, 5);
    assert_entry(t2, KB, 2, 0, 7, 7);
    assert_entry(t2, KA, 1, 0, 6, 2);
    assert_edge(t2, KC, KB, 1, 0, 3, 3);
    assert_edge(t2, KA, KB, 1, 0, 4, 4);
    assert_int_equal(t2->n_edges, 2);
    /* the same key has one entry per thread */
    assert_ptr_not_equal(fp_entry_find(t1, KB), fp_entry_find(t2, KB));

    /* each thread's edges join that thread's entries only */
    for (const fp_edge_t *g = t1->edges; g; g = g->hh.next) {
        assert_ptr_equal(fp_entry_find(t1, ((const fp_entry_t *)g->key.caller)->key), g->key.caller);
        assert_ptr_equal(fp_entry_find(t1, ((const fp_entry_t *)g->key.callee)->key), g->key.callee);
    }
    for (const fp_edge_t *g = t2->edges; g; g = g->hh.next) {
        assert_ptr_equal(fp_entry_find(t2, ((const fp_entry_t *)g->key.caller)->key), g->key.caller);
        assert_ptr_equal(fp_entry_find(t2, ((const fp_entry_t *)g->key.callee)->key), g->key.callee);
    }
    assert_node(tl_node(t1, NULL, KA), 3, 12, 9, 1); /* the inner a folds in */
    assert_null(tl_node(t1, NULL, KC));
    assert_node(tl_node(t2, NULL, KC), 1, 8, 5, 1);
    tl_assert_idle(t1);
    tl_assert_idle(t2);

    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 5);
    for (unsigned u = 1; u <= 5; u++)
        assert_int_equal(log.calls[u], 1);
    assert_int_equal(log.bad, 0);
}

static void test_merge_threads(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    fp_thread_t *t1 = fp_thread_get(&p, 1);
    fp_thread_t *t2 = fp_thread_get(&p, 2);
    assert_non_null(t1);
    assert_non_null(t2);
    run_two_threads(&p, t1, t2);

    fp_thread_t *dst = fp_thread_new(0);
    assert_non_null(dst);
    for (fp_thread_t *t = p.threads; t; t = t->hh.next) /* creation order: t1, t2 */
        assert_int_equal(fp_thread_merge(dst, t), 0);

    assert_int_equal(dst->n_entries, 3);
    assert_entry(dst, KA, 4, 1, 18, 11);
    assert_entry(dst, KB, 3, 0, 10, 10);
    assert_entry(dst, KC, 1, 0, 8, 5);
    /* new entries borrow the user pointer of the first source holding them */
    assert_ptr_equal(fp_entry_find(dst, KA)->user, TL_USER(1));
    assert_ptr_equal(fp_entry_find(dst, KC)->user, TL_USER(3));

    assert_int_equal(dst->n_edges, 3);
    assert_edge(dst, KA, KB, 2, 0, 7, 7);
    assert_edge(dst, KC, KB, 1, 0, 3, 3);
    assert_edge(dst, KA, KA, 1, 0, 1, 1);
    /* edges of dst join dst's own entries */
    for (const fp_edge_t *g = dst->edges; g; g = g->hh.next) {
        assert_ptr_equal(fp_entry_find(dst, ((const fp_entry_t *)g->key.caller)->key), g->key.caller);
        assert_ptr_equal(fp_entry_find(dst, ((const fp_entry_t *)g->key.callee)->key), g->key.callee);
    }

    assert_int_equal(dst->n_nodes, 4);
    fp_node_t *a = tl_node(dst, NULL, KA);
    fp_node_t *c = tl_node(dst, NULL, KC);
    assert_node(a, 4, 18, 11, 1);
    assert_node(tl_node(dst, a, KB), 2, 7, 7, 2);
    assert_node(c, 1, 8, 5, 1);
    assert_node(tl_node(dst, c, KB), 1, 3, 3, 2);
    for (const fp_node_t *n = dst->nodes; n; n = n->hh.next) {
        const fp_node_t *parent = n->key.parent;
        assert_true(n->index < dst->n_nodes);
        if (parent)
            assert_true(parent->index < n->index);
    }

    /* merging again adds again */
    assert_int_equal(fp_thread_merge(dst, t2), 0);
    assert_entry(dst, KC, 2, 0, 16, 10);
    assert_node(tl_node(dst, c, KB), 2, 6, 6, 2);

    /* the sources are unchanged */
    assert_entry(t1, KA, 3, 1, 12, 9);
    assert_entry(t2, KB, 2, 0, 7, 7);

    fp_thread_free(dst, NULL, NULL); /* borrowed users: nothing released */
    assert_int_equal(log.total, 0);
    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 5);
    for (unsigned u = 1; u <= 5; u++)
        assert_int_equal(log.calls[u], 1);
}

/* Merging a thread with a bounded, folded call tree and generators keeps
 * the per-function node sums of the merge equal to its entries. */
static void test_merge_bounded_paths(void **state)
{
    (void)state;
    static char keys[50];
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 4, NULL, NULL);
    fp_time_t now = 0;
    for (uint64_t id = 1; id <= 3; id++) {
        fp_thread_t *t = fp_thread_get(&p, id);
        assert_non_null(t);
        for (int i = 0; i < 30; i++)
            tl_call(&p, t, &keys[(i * (int)id) % 11], now++);
        for (int i = 29; i >= 0; i--)
            tl_ret(&p, t, &keys[(i * (int)id) % 11], now += (fp_time_t)id);
    }
    fp_thread_t *dst = fp_thread_new(0);
    assert_non_null(dst);
    for (fp_thread_t *t = p.threads; t; t = t->hh.next)
        assert_int_equal(fp_thread_merge(dst, t), 0);
    for (const fp_entry_t *e = dst->entries; e; e = e->hh.next) {
        uint64_t calls = 0, want = 0, g_calls = 0;
        fp_time_t it = 0, want_it = 0;
        for (fp_thread_t *t = p.threads; t; t = t->hh.next) {
            fp_entry_t *se = fp_entry_find(t, e->key);
            if (se) {
                want += se->callcount;
                want_it += se->owntime;
            }
        }
        for (const fp_node_t *n = dst->nodes; n; n = n->hh.next)
            if (n->key.entry == e) {
                calls += n->callcount;
                it += n->owntime;
                assert_true(n->depth <= 4);
            }
        for (const fp_edge_t *g = dst->edges; g; g = g->hh.next)
            if (g->key.callee == e)
                g_calls += g->callcount;
        assert_int_equal(e->callcount, want);
        assert_int_equal(e->owntime, want_it);
        assert_int_equal(calls, want);
        assert_int_equal(it, want_it);
        /* every call but the three roots came from a caller */
        assert_true(g_calls == want || (e->key == &keys[0] && g_calls + 3 == want));
    }
    fp_thread_free(dst, NULL, NULL);
    fp_profiler_destroy(&p);
}

/* fp_thread_fold moves an ended thread's record into a group record: the
 * group's stats are the sum, frames still open close at the thread's last
 * event, new entries keep the source's users (released once, by the
 * group), the others are released with the source, which is gone. */
static void test_fold_threads(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    fp_thread_t *t1 = fp_thread_get(&p, 1);
    fp_thread_t *t2 = fp_thread_get(&p, 2);
    assert_non_null(t1);
    assert_non_null(t2);
    run_two_threads(&p, t1, t2);
    call_u(&p, t2, KD, 6, 30); /* t2 ends inside d: closed at 30 + 0 */
    call_u(&p, t2, KC, 3, 31);
    t2->offset = 7;

    fp_thread_t *group = fp_thread_get(&p, 100);
    assert_non_null(group);
    assert_int_equal(fp_thread_fold(&p, group, t1), FP_OK);
    assert_null(fp_thread_find(&p, 1));
    assert_int_equal(log.total, 0); /* every user of t1 moved to the group */
    assert_int_equal(group->folded, 1);
    assert_entry(group, KA, 3, 1, 12, 9);
    assert_ptr_equal(fp_entry_find(group, KA)->user, TL_USER(1));

    assert_int_equal(fp_thread_fold(&p, group, t2), FP_OK);
    assert_null(fp_thread_find(&p, 2));
    assert_int_equal(group->folded, 2);
    assert_int_equal(group->offset, 7);
    /* t2's b (4) and a (5): the group had its own, released with t2 */
    assert_int_equal(log.total, 2);
    assert_int_equal(log.calls[4], 1);
    assert_int_equal(log.calls[5], 1);
    assert_ptr_equal(fp_entry_find(group, KC)->user, TL_USER(3));
    assert_ptr_equal(fp_entry_find(group, KD)->user, TL_USER(6));
    assert_entry(group, KA, 4, 1, 18, 11);
    assert_entry(group, KB, 3, 0, 10, 10);
    assert_entry(group, KC, 2, 0, 8, 5); /* the open c: 31 -> 31 */
    assert_entry(group, KD, 1, 0, 1, 1); /* the open d: 30 -> 31 */
    assert_edge(group, KA, KB, 2, 0, 7, 7);
    assert_edge(group, KC, KB, 1, 0, 3, 3);
    assert_edge(group, KA, KA, 1, 0, 1, 1);
    assert_edge(group, KD, KC, 1, 0, 0, 0);
    fp_node_t *a = tl_node(group, NULL, KA);
    assert_node(a, 4, 18, 11, 1);
    assert_node(tl_node(group, a, KB), 2, 7, 7, 2);
    assert_node(tl_node(group, tl_node(group, NULL, KD), KC), 1, 0, 0, 2);
    for (const fp_node_t *n = group->nodes; n; n = n->hh.next) {
        assert_true(n->index < group->n_nodes);
        if (n->key.parent)
            assert_true(n->key.parent->index < n->index);
    }
    tl_assert_idle(group);
    assert_int_equal(HASH_COUNT(p.threads), 1);

    fp_profiler_clear(&p); /* the group's stats, and its count, are gone */
    assert_int_equal(group->folded, 0);
    assert_int_equal(log.total, 6);
    for (unsigned u = 1; u <= 6; u++)
        assert_int_equal(log.calls[u], 1);
    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 6);
    assert_int_equal(log.bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_are_independent),
        cmocka_unit_test(test_merge_threads),
        cmocka_unit_test(test_merge_bounded_paths),
        cmocka_unit_test(test_fold_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
