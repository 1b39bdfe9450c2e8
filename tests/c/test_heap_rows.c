/* Memory profiling's rows in the core: what a thread allocates belongs to
 * its top frame's most precise row (fp_top_owner: the call-path node, else
 * the edge, else the entry), and a folded thread record's rows keep what
 * they allocated, blocks freed later included (fp_thread_fold). */
#define _GNU_SOURCE
#include "fp_testlib.h"

#define P(n) ((const void *)(uintptr_t)(16 * (uintptr_t)(n)))

static fp_heap_owner_stats_t owner(fp_heap_t *h, fp_owner_t id)
{
    fp_heap_owner_stats_t s;
    assert_int_equal(fp_heap_owner_read(h, id, &s), 0);
    return s;
}

static void test_top_owner(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 16, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_int_equal(fp_top_owner(&p, t), FP_OWNER_NONE); /* memory off */
    p.heap = &h;
    assert_int_equal(fp_top_owner(&p, t), FP_OWNER_NONE); /* nothing on the stack */
    tl_call(&p, t, KA, 1);
    fp_owner_t a = fp_top_owner(&p, t);
    assert_true(a != FP_OWNER_NONE);
    assert_int_equal(tl_entry(t, KA)->mem_owner, a); /* a root: no edge */
    assert_int_equal(fp_top_owner(&p, t), a);        /* made once */
    tl_call(&p, t, KB, 2);
    fp_owner_t ab = fp_top_owner(&p, t);
    assert_int_equal(tl_edge(t, KA, KB)->mem_owner, ab);
    assert_int_equal(tl_entry(t, KB)->mem_owner, FP_OWNER_NONE);
    fp_heap_track(&h, P(1), 100, ab);
    tl_ret(&p, t, KB, 3);
    assert_int_equal(fp_top_owner(&p, t), a);
    tl_ret(&p, t, KA, 4);
    fp_profiler_destroy(&p);

    /* With call paths, the node: two paths to one edge, two owners. */
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 16, NULL, NULL);
    p.heap = &h;
    t = fp_thread_get(&p, 1);
    tl_call(&p, t, KA, 1);
    tl_call(&p, t, KB, 2);
    tl_call(&p, t, KC, 3);
    fp_owner_t abc = fp_top_owner(&p, t);
    tl_ret(&p, t, KC, 4);
    tl_ret(&p, t, KB, 5);
    tl_call(&p, t, KC, 6);
    fp_owner_t ac = fp_top_owner(&p, t);
    tl_ret(&p, t, KC, 7);
    tl_ret(&p, t, KA, 8);
    assert_true(abc && ac && abc != ac);
    const fp_node_t *na = tl_node(t, NULL, KA);
    assert_int_equal(tl_node(t, tl_node(t, na, KB), KC)->mem_owner, abc);
    assert_int_equal(tl_node(t, na, KC)->mem_owner, ac);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

static void test_fold_keeps_what_rows_allocated(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 16, NULL, NULL);
    p.heap = &h;
    fp_thread_t *dst = fp_thread_get(&p, 1), *src = fp_thread_get(&p, 2);
    /* Both ran A -> B; only src ran A -> C. */
    fp_thread_t *both[2] = {dst, src};
    for (int i = 0; i < 2; i++) {
        fp_thread_t *t = both[i];
        tl_call(&p, t, KA, 1);
        tl_call(&p, t, KB, 2);
        fp_heap_track(&h, P(10 + i), 100 + (uint64_t)i, fp_top_owner(&p, t));
        tl_ret(&p, t, KB, 3);
        if (t == src) {
            tl_call(&p, t, KC, 4);
            fp_heap_track(&h, P(20), 7, fp_top_owner(&p, t));
            tl_ret(&p, t, KC, 5);
        }
        tl_ret(&p, t, KA, 6);
    }
    assert_int_equal(fp_thread_fold(&p, dst, src), FP_OK);
    const fp_node_t *na = tl_node(dst, NULL, KA);
    fp_owner_t ab = tl_node(dst, na, KB)->mem_owner, ac = tl_node(dst, na, KC)->mem_owner;
    fp_heap_owner_stats_t s = owner(&h, ab);
    assert_int_equal(s.allocs, 2);
    assert_int_equal(s.alloc_bytes, 201);
    assert_int_equal(owner(&h, ac).alloc_bytes, 7); /* a row new to dst took src's owner */
    /* src's block, freed after the fold, counts for dst's row. */
    fp_heap_take(&h, P(11));
    s = owner(&h, ab);
    assert_int_equal(s.freed_bytes, 101);
    assert_int_equal(s.live, 100);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_owner),
        cmocka_unit_test(test_fold_keeps_what_rows_allocated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
