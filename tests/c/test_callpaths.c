/* The calling-context tree (FP_CALLPATHS): one node per distinct path of
 * functions, with calls / tt / it counted like entries; direct recursion
 * folds into one node; max_depth bounds the depth, the calls past the bound
 * becoming nodes at the bound so that each function's nodes still add up to
 * its entry. */
#define _GNU_SOURCE
#include "fp_testlib.h"

/* For every entry: the calls and own time of its nodes add up to the
 * entry's; every node is within the depth bound and its parent was made
 * before it (what fp_thread_merge and exporters rely on). */
static void assert_nodes_consistent(const fp_thread_t *t, int32_t max_depth)
{
    size_t n = 0;
    for (const fp_node_t *nd = t->nodes; nd; nd = nd->hh.next) {
        const fp_node_t *parent = nd->key.parent;
        assert_true(nd->depth >= 1 && nd->depth <= max_depth);
        assert_true(nd->index < t->n_nodes);
        if (parent) {
            assert_true(parent->index < nd->index);
            assert_true(parent->depth < nd->depth);
        } else {
            assert_int_equal(nd->depth, 1);
        }
        n++;
    }
    assert_int_equal(n, t->n_nodes);
    for (const fp_entry_t *e = t->entries; e; e = e->hh.next) {
        uint64_t calls = 0;
        fp_time_t it = 0;
        for (const fp_node_t *nd = t->nodes; nd; nd = nd->hh.next) {
            if (nd->key.entry == e) {
                calls += nd->callcount;
                it += nd->owntime;
            }
        }
        assert_int_equal(calls, e->callcount);
        assert_int_equal(it, e->owntime);
    }
}

/* m -> a -> c, m -> b -> c, m -> a: five distinct paths. */
static void test_paths_of_a_tree(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 16, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KM, 0);
    tl_call(&p, t, KA, 1);
    tl_call(&p, t, KC, 2);
    tl_ret(&p, t, KC, 4); /* c under m/a: 2 */
    tl_ret(&p, t, KA, 5); /* a: 4/2 */
    tl_call(&p, t, KB, 6);
    tl_call(&p, t, KC, 7);
    tl_ret(&p, t, KC, 10); /* c under m/b: 3 */
    tl_ret(&p, t, KB, 11); /* b: 5/2 */
    tl_call(&p, t, KA, 12);
    tl_ret(&p, t, KA, 14); /* a: 2/2 */
    tl_ret(&p, t, KM, 15); /* m: 15/4 */

    fp_node_t *m = tl_node(t, NULL, KM);
    fp_node_t *ma = tl_node(t, m, KA);
    fp_node_t *mac = tl_node(t, ma, KC);
    fp_node_t *mb = tl_node(t, m, KB);
    fp_node_t *mbc = tl_node(t, mb, KC);
    assert_node(m, 1, 15, 4, 1);
    assert_node(ma, 2, 6, 4, 2);
    assert_node(mac, 1, 2, 2, 3);
    assert_node(mb, 1, 5, 2, 2);
    assert_node(mbc, 1, 3, 3, 3);
    assert_int_equal(t->n_nodes, 5);
    assert_int_equal(m->index, 0);
    /* entries are unchanged by call paths */
    assert_entry(t, KC, 2, 0, 5, 5);
    assert_entry(t, KA, 2, 0, 6, 4);
    assert_nodes_consistent(t, 16);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* Direct recursion (depth 3 under m) folds into the node m/f. */
static void test_direct_recursion_folds(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, 16, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KM, 0);
    tl_call(&p, t, KF, 1);
    tl_call(&p, t, KF, 2);
    tl_call(&p, t, KF, 3);
    tl_ret(&p, t, KF, 5); /* 2/2 */
    tl_ret(&p, t, KF, 6); /* 4/2 */
    tl_ret(&p, t, KF, 8); /* 7/3 */
    tl_ret(&p, t, KM, 9); /* 9/2 */

    fp_node_t *m = tl_node(t, NULL, KM);
    fp_node_t *mf = tl_node(t, m, KF);
    assert_node(m, 1, 9, 2, 1);
    assert_node(mf, 3, 7, 7, 2); /* tt of the outermost activation only */
    assert_null(tl_node(t, mf, KF));
    assert_int_equal(t->n_nodes, 2);
    assert_null(t->edges); /* call paths without subcalls: no edges */
    assert_entry(t, KF, 3, 2, 7, 7);
    assert_nodes_consistent(t, 16);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* Mutual recursion does not fold: m/a/b/a is a path of its own. */
static void test_mutual_recursion_paths(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, 16, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KM, 0);
    tl_call(&p, t, KA, 1);
    tl_call(&p, t, KB, 2);
    tl_call(&p, t, KA, 3);
    tl_ret(&p, t, KA, 4); /* a2: 1/1 */
    tl_ret(&p, t, KB, 6); /* b: 4/3 */
    tl_ret(&p, t, KA, 7); /* a1: 6/2 */
    tl_ret(&p, t, KM, 8); /* m: 8/2 */
    fp_node_t *m = tl_node(t, NULL, KM);
    fp_node_t *ma = tl_node(t, m, KA);
    fp_node_t *mab = tl_node(t, ma, KB);
    fp_node_t *maba = tl_node(t, mab, KA);
    assert_node(m, 1, 8, 2, 1);
    assert_node(ma, 1, 6, 2, 2);
    assert_node(mab, 1, 4, 3, 3);
    assert_node(maba, 1, 1, 1, 4);
    assert_int_equal(t->n_nodes, 4);
    assert_entry(t, KA, 2, 1, 6, 3);
    assert_nodes_consistent(t, 16);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* max_depth = 3 and an 8-deep chain m a b c d e c d: nothing deeper than 3;
 * the calls past the bound become nodes at depth 3 (under m/a), and the
 * recursion c..c, d..d through them counts tt once. */
static void test_max_depth_bound(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 3, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    const void *chain[] = {KM, KA, KB, KC, KD, KE, KC, KD};
    for (int i = 0; i < 8; i++)
        tl_call(&p, t, chain[i], i);
    assert_int_equal(t->depth, 8);
    tl_ret(&p, t, KD, 9);  /* d2: 2/2 */
    tl_ret(&p, t, KC, 10); /* c2: 4/2 */
    tl_ret(&p, t, KE, 12); /* e: 7/3 */
    tl_ret(&p, t, KD, 13); /* d1: 9/2 */
    tl_ret(&p, t, KC, 15); /* c1: 12/3 */
    tl_ret(&p, t, KB, 16); /* b: 14/2 */
    tl_ret(&p, t, KA, 18); /* a: 17/3 */
    tl_ret(&p, t, KM, 20); /* m: 20/3 */

    assert_entry(t, KC, 2, 1, 12, 5);
    assert_entry(t, KD, 2, 1, 9, 4);
    assert_entry(t, KE, 1, 0, 7, 3);

    for (const fp_node_t *nd = t->nodes; nd; nd = nd->hh.next)
        assert_true(nd->depth <= 3);
    fp_node_t *m = tl_node(t, NULL, KM);
    fp_node_t *ma = tl_node(t, m, KA);
    assert_node(m, 1, 20, 3, 1);
    assert_node(ma, 1, 17, 3, 2);
    assert_node(tl_node(t, ma, KB), 1, 14, 2, 3);
    assert_node(tl_node(t, ma, KC), 2, 12, 5, 3);
    assert_node(tl_node(t, ma, KD), 2, 9, 4, 3);
    assert_node(tl_node(t, ma, KE), 1, 7, 3, 3);
    assert_int_equal(t->n_nodes, 6);
    assert_nodes_consistent(t, 3);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* A long chain of distinct functions under a bound: sums still hold. */
static void test_max_depth_long_chain(void **state)
{
    (void)state;
    enum { N = 200, BOUND = 5 };
    static char keys[N];
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, BOUND, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    for (int round = 0; round < 3; round++) {
        fp_time_t base = round * 1000;
        for (int i = 0; i < N; i++)
            tl_call(&p, t, &keys[i % 37], base + 2 * i); /* some functions recur */
        for (int i = N - 1; i >= 0; i--)
            tl_ret(&p, t, &keys[i % 37], base + 2 * N + 3 * (N - 1 - i));
    }
    assert_nodes_consistent(t, BOUND);
    fp_time_t total_it = 0;
    for (const fp_node_t *nd = t->nodes; nd; nd = nd->hh.next)
        total_it += nd->owntime;
    /* all own time adds up to the wall time of the three roots */
    fp_entry_t *root = fp_entry_find(t, &keys[0]);
    assert_int_equal(total_it, root->cumtime);
    assert_int_equal(root->cumtime, 3 * (2 * N + 3 * (N - 1)));
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* max_depth = 1: every node is a root. */
static void test_max_depth_one(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KM, 0);
    tl_call(&p, t, KA, 1);
    tl_call(&p, t, KB, 2);
    tl_call(&p, t, KA, 3);
    tl_ret(&p, t, KA, 5); /* 2/2 */
    tl_ret(&p, t, KB, 6); /* 4/2 */
    tl_ret(&p, t, KA, 7); /* 6/2 */
    tl_ret(&p, t, KM, 8); /* 8/2 */
    assert_node(tl_node(t, NULL, KM), 1, 8, 2, 1);
    assert_node(tl_node(t, NULL, KA), 2, 6, 4, 1);
    assert_node(tl_node(t, NULL, KB), 1, 4, 2, 1);
    assert_int_equal(t->n_nodes, 3);
    assert_nodes_consistent(t, 1);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* A generator keeps its node across suspension: resumed from another
 * caller it is still booked on the path it started on. */
static void test_generator_keeps_its_path(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_CALLPATHS, 8, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    tl_call(&p, t, KA, 0);
    tl_gen_start(&p, t, KG, G1, 1);
    tl_yield(&p, t, KG, G1, 2);
    tl_ret(&p, t, KA, 3);
    tl_call(&p, t, KB, 4);
    tl_resume(&p, t, KG, G1, 5);
    tl_ret(&p, t, KG, 7); /* g: tt 6, suspended 3, it 3 */
    tl_ret(&p, t, KB, 8);
    fp_node_t *a = tl_node(t, NULL, KA);
    assert_node(tl_node(t, a, KG), 1, 6, 3, 2);
    assert_null(tl_node(t, tl_node(t, NULL, KB), KG));
    assert_nodes_consistent(t, 8);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_of_a_tree),          cmocka_unit_test(test_direct_recursion_folds),
        cmocka_unit_test(test_mutual_recursion_paths),   cmocka_unit_test(test_max_depth_bound),
        cmocka_unit_test(test_max_depth_long_chain),     cmocka_unit_test(test_max_depth_one),
        cmocka_unit_test(test_generator_keeps_its_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
