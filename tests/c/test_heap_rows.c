/* Memory profiling's rows in the core: what a thread allocates belongs to
 * its top frame's most precise row (fp_top_owner: the call-path node, else
 * the edge, else the entry), and a folded thread record's rows keep what
 * they allocated, blocks freed later included (fp_thread_fold). The
 * thread's allocation counts are a second clock (fp_mem_clock_t): bytes
 * including callees (outermost activations, as cumtime) and the peak of a
 * call (its thread's live bytes' largest rise above their value at the
 * call's start), through recursion, a generator's suspensions, a missed
 * return, flush and fold. */
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

/* What the hooks do to the thread's counts (fpy_heap_hooks.c). */
static void alloc(fp_mem_clock_t *m, int64_t n)
{
    m->allocated += (uint64_t)n;
    m->live += n;
    if (m->live > m->frame_max)
        m->frame_max = m->live;
}

static void release(fp_mem_clock_t *m, int64_t n)
{
    m->live -= n;
}

static void test_bytes_with_callees_and_peak(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 16, NULL, NULL);
    p.heap = &h;
    fp_mem_clock_t m = {1000, 500, 500}; /* a thread that ran before */
    fp_thread_t *t = fp_thread_get(&p, 1);
    t->mem = &m;
    /* M: 10 itself; A (from M): 300 up and down, then 20 kept;
     * B (from M): 5, then C (from B): 40 freed by B after C returns. */
    tl_call(&p, t, KM, 1);
    alloc(&m, 10);
    tl_call(&p, t, KA, 2);
    alloc(&m, 300);
    release(&m, 300);
    alloc(&m, 20);
    tl_ret(&p, t, KA, 3);
    tl_call(&p, t, KB, 4);
    alloc(&m, 5);
    tl_call(&p, t, KC, 5);
    alloc(&m, 40);
    tl_ret(&p, t, KC, 6);
    release(&m, 40);
    tl_ret(&p, t, KB, 7);
    tl_ret(&p, t, KM, 8);
    fp_entry_t *em = tl_entry(t, KM), *ea = tl_entry(t, KA), *eb = tl_entry(t, KB),
               *ec = tl_entry(t, KC);
    assert_int_equal(ea->mem_incl, 320);
    assert_int_equal(ea->mem_peak, 300);
    assert_int_equal(ec->mem_incl, 40);
    assert_int_equal(ec->mem_peak, 40);
    assert_int_equal(eb->mem_incl, 45);
    assert_int_equal(eb->mem_peak, 45);
    assert_int_equal(em->mem_incl, 375);
    assert_int_equal(em->mem_peak, 310); /* 10, then A's 300 on top */
    assert_int_equal(tl_edge(t, KB, KC)->mem_incl, 40);
    assert_int_equal(tl_edge(t, KM, KA)->mem_peak, 300);
    const fp_node_t *nm = tl_node(t, NULL, KM);
    assert_int_equal(tl_node(t, tl_node(t, nm, KB), KC)->mem_incl, 40);
    assert_int_equal(m.frame_max, 810); /* the root's running high: M's high point */

    /* Recursion: the outermost call counts the bytes once; the peak is the
     * largest of one call, the outer one. */
    tl_call(&p, t, KD, 10);
    alloc(&m, 7);
    tl_call(&p, t, KD, 11);
    alloc(&m, 3);
    tl_ret(&p, t, KD, 12);
    tl_ret(&p, t, KD, 13);
    assert_int_equal(tl_entry(t, KD)->mem_incl, 10);
    assert_int_equal(tl_entry(t, KD)->mem_peak, 10);

    /* A second call of A rising less keeps the peak, adds the bytes. */
    tl_call(&p, t, KM, 20);
    tl_call(&p, t, KA, 21);
    alloc(&m, 8);
    tl_ret(&p, t, KA, 22);
    tl_ret(&p, t, KM, 23);
    assert_int_equal(ea->mem_incl, 328);
    assert_int_equal(ea->mem_peak, 300);

    /* A missed return, then flush with a frame open: booked as returning. */
    tl_call(&p, t, KM, 30);
    tl_call(&p, t, KE, 31);
    tl_call(&p, t, KF, 32);
    alloc(&m, 4);
    tl_ret(&p, t, KE, 33); /* F's return was missed */
    tl_call(&p, t, KG, 34);
    alloc(&m, 6);
    fp_thread_flush(&p, t, 35);
    assert_int_equal(tl_entry(t, KF)->mem_incl, 4);
    assert_int_equal(tl_entry(t, KE)->mem_incl, 4);
    assert_int_equal(tl_entry(t, KG)->mem_incl, 6);
    assert_int_equal(em->mem_incl, 375 + 8 + 10);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

/* A generator in wall mode: its bytes while it runs, not while it is
 * parked (what its caller does meanwhile). */
/* fp_try_enter_memory / fp_try_leave_memory: refused until the row that
 * would allocate has an owner (given on the general path), then the same
 * bytes as fp_enter / fp_leave, and the owner of the new top row. */
static void test_memory_fast_paths(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 16, NULL, NULL);
    p.heap = &h;
    fp_mem_clock_t m = {0, 0, 0};
    fp_thread_t *t = fp_thread_get(&p, 1);
    t->mem = &m;
    fp_owner_t got = 99;
    tl_call(&p, t, KA, 1);
    fp_owner_t a = fp_top_owner(&p, t);
    fp_entry_t *eb = tl_entry(t, KB);
    /* A->B's first call: no edge yet, no owner: refused, nothing changed */
    assert_int_equal(fp_try_enter_memory(&p, t, eb, NULL, 2, &got), 0);
    assert_int_equal(t->depth, 1);
    assert_int_equal(got, 99);
    tl_call(&p, t, KB, 2); /* the general path; the follow gives A->B its owner */
    fp_owner_t ab = fp_top_owner(&p, t);
    alloc(&m, 30);
    tl_ret(&p, t, KB, 3);
    /* the second call: taken; B allocates 50, frees 10, returns */
    assert_int_equal(fp_try_enter_memory(&p, t, eb, NULL, 4, &got), 1);
    assert_int_equal(got, ab);
    alloc(&m, 50);
    release(&m, 10);
    assert_int_equal(fp_try_leave_memory(&p, t, KB, NULL, 5, &got), 1);
    assert_int_equal(got, a);
    assert_int_equal(t->depth, 1);
    assert_int_equal(eb->callcount, 2);
    assert_int_equal(eb->mem_incl, 80);
    assert_int_equal(eb->mem_peak, 50);
    assert_int_equal(tl_edge(t, KA, KB)->mem_incl, 80);
    /* a return to a frame whose row has no owner yet is refused */
    tl_call(&p, t, KB, 6);
    tl_call(&p, t, KC, 7); /* (B->C: no follow, so no owner for B->C) */
    tl_entry(t, KC)->mem_owner = 0;
    tl_edge(t, KB, KC)->mem_owner = 0;
    assert_int_equal(fp_try_enter_memory(&p, t, tl_entry(t, KB), NULL, 8, &got), 0);
    fp_owner_t bc = fp_top_owner(&p, t);
    assert_true(bc != FP_OWNER_NONE);
    tl_ret(&p, t, KC, 9);
    assert_int_equal(fp_try_leave_memory(&p, t, KB, NULL, 10, &got), 1);
    assert_int_equal(got, a);
    /* the root's return: no row allocates after it */
    assert_int_equal(fp_try_leave_memory(&p, t, KA, NULL, 11, &got), 1);
    assert_int_equal(got, FP_OWNER_NONE);
    assert_int_equal(t->depth, 0);
    /* memory off, a thread without a clock, call paths: refused */
    t->mem = NULL;
    tl_call(&p, t, KA, 12);
    assert_int_equal(fp_try_enter_memory(&p, t, eb, NULL, 13, &got), 0);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

static void test_generator_runs_only(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 16, NULL, NULL);
    p.heap = &h;
    fp_mem_clock_t m = {0, 0, 0};
    fp_thread_t *t = fp_thread_get(&p, 1);
    t->mem = &m;
    tl_call(&p, t, KM, 1);
    tl_gen_start(&p, t, KG, G1, 2);
    alloc(&m, 100);
    release(&m, 100);
    tl_yield(&p, t, KG, G1, 3);
    alloc(&m, 1000); /* the caller's, while the generator is parked */
    tl_resume(&p, t, KG, G1, 4);
    alloc(&m, 30);
    tl_yield(&p, t, KG, G1, 5);
    tl_resume(&p, t, KG, G1, 6);
    tl_ret(&p, t, KG, 7);
    tl_ret(&p, t, KM, 8);
    fp_entry_t *g = tl_entry(t, KG);
    assert_int_equal(g->mem_incl, 130);
    assert_int_equal(g->mem_peak, 100);
    assert_int_equal(tl_entry(t, KM)->mem_incl, 1130);
    assert_int_equal(tl_entry(t, KM)->mem_peak, 1030);

    /* Parked when the thread is flushed: what it ran up so far. */
    tl_call(&p, t, KM, 10);
    tl_gen_start(&p, t, KH, G2, 11);
    alloc(&m, 9);
    tl_yield(&p, t, KH, G2, 12);
    tl_ret(&p, t, KM, 13);
    fp_thread_flush(&p, t, 14);
    assert_int_equal(tl_entry(t, KH)->mem_incl, 9);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

/* Folded records: bytes including callees add up, the peak is the larger. */
static void test_fold_adds_bytes_keeps_the_larger_peak(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS, 16, NULL, NULL);
    p.heap = &h;
    fp_thread_t *dst = fp_thread_get(&p, 1), *src = fp_thread_get(&p, 2);
    fp_mem_clock_t md = {0, 0, 0}, ms = {0, 0, 0};
    dst->mem = &md;
    src->mem = &ms;
    tl_call(&p, dst, KA, 1);
    alloc(&md, 50);
    tl_ret(&p, dst, KA, 2);
    tl_call(&p, src, KA, 1);
    alloc(&ms, 70);
    release(&ms, 70);
    alloc(&ms, 10);
    tl_ret(&p, src, KA, 2);
    assert_int_equal(fp_thread_fold(&p, dst, src), FP_OK);
    assert_int_equal(tl_entry(dst, KA)->mem_incl, 130);
    assert_int_equal(tl_entry(dst, KA)->mem_peak, 70);
    fp_profiler_destroy(&p);
    fp_heap_fini(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_owner),
        cmocka_unit_test(test_fold_keeps_what_rows_allocated),
        cmocka_unit_test(test_bytes_with_callees_and_peak),
        cmocka_unit_test(test_memory_fast_paths),
        cmocka_unit_test(test_generator_runs_only),
        cmocka_unit_test(test_fold_adds_bytes_keeps_the_larger_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
