/* Accounting on the shadow stack (fp_account.c): scripted clock readings in,
 * cProfile's exact numbers out (Modules/_lsprof.c definitions):
 *   callcount every call, reccallcount calls made while already active,
 *   it  own time (callees and suspensions excluded),
 *   tt  time including callees, outermost activations only;
 * edges (caller entry, callee entry) the same with their own recursion
 * level. Each comment "x: tt/it" gives the arithmetic behind an assert. */
#define _GNU_SOURCE
#include "fp_testlib.h"

typedef struct {
    fp_profiler_t p;
    fp_thread_t *t;
} fixture_t;

static int setup_subcalls(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    fp_profiler_init(&f->p, FP_SUBCALLS, 1, NULL, NULL);
    f->t = fp_thread_get(&f->p, 1);
    if (!f->t)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    fp_profiler_destroy(&f->p);
    free(f);
    return 0;
}

#define FIX                                                                                             \
    fixture_t *fx = *state;                                                                             \
    fp_profiler_t *p = &fx->p;                                                                          \
    fp_thread_t *t = fx->t

/* 1. a calls b twice and c once. */
static void test_simple_tree(void **state)
{
    FIX;
    tl_call(p, t, KA, 0);
    tl_call(p, t, KB, 1);
    tl_ret(p, t, KB, 4); /* b: 3 */
    tl_call(p, t, KB, 5);
    tl_ret(p, t, KB, 7); /* b: 2 */
    tl_call(p, t, KC, 8);
    tl_ret(p, t, KC, 12); /* c: 4 */
    tl_ret(p, t, KA, 14); /* a: tt 14, it 14 - 3 - 2 - 4 = 5 */

    assert_entry(t, KA, 1, 0, 14, 5);
    assert_entry(t, KB, 2, 0, 5, 5);
    assert_entry(t, KC, 1, 0, 4, 4);
    assert_edge(t, KA, KB, 2, 0, 5, 5);
    assert_edge(t, KA, KC, 1, 0, 4, 4);
    assert_int_equal(t->n_entries, 3);
    assert_int_equal(t->n_edges, 2); /* the root has no caller edge */
    assert_null(t->nodes);           /* call paths are off */
    tl_assert_idle(t);
    assert_int_equal(p->nomem, 0);
}

/* Without FP_SUBCALLS no edge is made; entries are the same. */
static void test_simple_tree_no_subcalls(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, 0, 1, NULL, NULL);
    fp_thread_t *t = fp_thread_get(&p, 7);
    assert_non_null(t);
    tl_call(&p, t, KA, 10);
    tl_call(&p, t, KB, 11);
    tl_ret(&p, t, KB, 14);
    tl_call(&p, t, KC, 18);
    tl_ret(&p, t, KC, 19);
    tl_ret(&p, t, KA, 20);
    assert_entry(t, KA, 1, 0, 10, 6);
    assert_entry(t, KB, 1, 0, 3, 3);
    assert_entry(t, KC, 1, 0, 1, 1);
    assert_null(t->edges);
    assert_int_equal(t->n_edges, 0);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
}

/* A deeper tree with repeated sub-trees: times add up across levels. */
static void test_nested_tree(void **state)
{
    FIX;
    tl_call(p, t, KM, 0);
    tl_call(p, t, KA, 2);
    tl_call(p, t, KB, 3);
    tl_call(p, t, KC, 4);
    tl_ret(p, t, KC, 9);  /* c: 5 */
    tl_ret(p, t, KB, 10); /* b: tt 7 it 2 */
    tl_ret(p, t, KA, 13); /* a: tt 11 it 4 */
    tl_call(p, t, KB, 20);
    tl_call(p, t, KC, 21);
    tl_ret(p, t, KC, 22); /* c: 1 */
    tl_ret(p, t, KB, 25); /* b: tt 5 it 4 */
    tl_ret(p, t, KM, 30); /* m: tt 30 it 30 - 11 - 5 = 14 */

    assert_entry(t, KM, 1, 0, 30, 14);
    assert_entry(t, KA, 1, 0, 11, 4);
    assert_entry(t, KB, 2, 0, 12, 6);
    assert_entry(t, KC, 2, 0, 6, 6);
    assert_edge(t, KM, KA, 1, 0, 11, 4);
    assert_edge(t, KA, KB, 1, 0, 7, 2);
    assert_edge(t, KM, KB, 1, 0, 5, 4);
    assert_edge(t, KB, KC, 2, 0, 6, 6);
    assert_int_equal(t->n_edges, 4);
    tl_assert_idle(t);
}

/* 2a. Direct recursion, fact-like, depth 5, called from main. */
static void test_direct_recursion(void **state)
{
    FIX;
    tl_call(p, t, KM, 0);
    for (int i = 1; i <= 5; i++)
        tl_call(p, t, KF, i); /* f1..f5 enter at 1..5 */
    tl_ret(p, t, KF, 7);      /* f5: tt 2,  it 2 */
    tl_ret(p, t, KF, 8);      /* f4: tt 4,  it 4 - 2 = 2 */
    tl_ret(p, t, KF, 10);     /* f3: tt 7,  it 7 - 4 = 3 */
    tl_ret(p, t, KF, 11);     /* f2: tt 9,  it 9 - 7 = 2 */
    tl_ret(p, t, KF, 15);     /* f1: tt 14, it 14 - 9 = 5 */
    tl_ret(p, t, KM, 20);     /* m:  tt 20, it 6 */

    /* tt only for the outermost activation (14), it summed (2+2+3+2+5). */
    assert_entry(t, KF, 5, 4, 14, 14);
    assert_entry(t, KM, 1, 0, 20, 6);
    assert_edge(t, KM, KF, 1, 0, 14, 5);
    /* f->f: four calls; the edge's own level makes three recursive and
     * counts tt once, for f2 (the outermost f->f activation): 9. */
    assert_edge(t, KF, KF, 4, 3, 9, 9);
    assert_int_equal(t->n_edges, 2);
    tl_assert_idle(t);
}

/* 2b. Mutual recursion a -> b -> a -> b. */
static void test_mutual_recursion(void **state)
{
    FIX;
    tl_call(p, t, KA, 0); /* a1 */
    tl_call(p, t, KB, 1); /* b1 */
    tl_call(p, t, KA, 3); /* a2 */
    tl_call(p, t, KB, 4); /* b2 */
    tl_ret(p, t, KB, 8);  /* b2: tt 4,  it 4 */
    tl_ret(p, t, KA, 9);  /* a2: tt 6,  it 2 */
    tl_ret(p, t, KB, 12); /* b1: tt 11, it 5 */
    tl_ret(p, t, KA, 13); /* a1: tt 13, it 2 */

    assert_entry(t, KA, 2, 1, 13, 4);
    assert_entry(t, KB, 2, 1, 11, 9);
    /* a->b carries b1 and b2: b2 returns with the edge still active (b1),
     * so it is the recursive one and only b1's 11 counts as tt. */
    assert_edge(t, KA, KB, 2, 1, 11, 9);
    assert_edge(t, KB, KA, 1, 0, 6, 2);
    assert_int_equal(t->n_edges, 2);
    tl_assert_idle(t);
}

/* An entry's recursion level is not an edge's: a -> b -> c -> b makes b
 * recursive, but each edge into b is entered once. */
static void test_edge_level_differs_from_entry_level(void **state)
{
    FIX;
    tl_call(p, t, KA, 0);
    tl_call(p, t, KB, 1);
    tl_call(p, t, KC, 2);
    tl_call(p, t, KB, 3);
    tl_ret(p, t, KB, 5);  /* inner b: tt 2, it 2 */
    tl_ret(p, t, KC, 6);  /* c: tt 4, it 2 */
    tl_ret(p, t, KB, 8);  /* outer b: tt 7, it 3 */
    tl_ret(p, t, KA, 10); /* a: tt 10, it 3 */

    assert_entry(t, KA, 1, 0, 10, 3);
    assert_entry(t, KB, 2, 1, 7, 5);
    assert_entry(t, KC, 1, 0, 4, 2);
    assert_edge(t, KA, KB, 1, 0, 7, 3);
    assert_edge(t, KC, KB, 1, 0, 2, 2);
    assert_edge(t, KB, KC, 1, 0, 4, 2);
    tl_assert_idle(t);
}

/* Recursion deeper than the initial stack capacity (64 frames), so the
 * stack grows while frames point into it. */
static void test_deep_recursion_grows_stack(void **state)
{
    FIX;
    enum { DEPTH = 1000 };
    for (int i = 0; i < DEPTH; i++)
        tl_call(p, t, KF, i);
    assert_int_equal(t->depth, DEPTH);
    assert_true(t->capacity >= DEPTH);
    for (int i = 0; i < DEPTH; i++)
        tl_ret(p, t, KF, DEPTH + i); /* frame k (entered at k) returns at 2*DEPTH-1-k */
    /* each frame's own time: 2 (1 before its callee, 1 after), the innermost 1 */
    assert_entry(t, KF, DEPTH, DEPTH - 1, 2 * DEPTH - 1, 2 * DEPTH - 1);
    assert_edge(t, KF, KF, DEPTH - 1, DEPTH - 2, 2 * DEPTH - 3, 2 * DEPTH - 3);
    tl_assert_idle(t);
}

/* 3a. Profiling enabled inside f (its call never seen): returns of frames
 * never entered are ignored, whatever is on the stack. The calls that
 * return to the empty stack are the callee time of the frames not seen
 * (root_subt: their lines' own times). */
static void test_unbalanced_enabled_inside(void **state)
{
    FIX;
    tl_call(p, t, KG, 10); /* f (not seen) calls g */
    tl_ret(p, t, KG, 13);  /* g: 3 */
    assert_int_equal(t->root_subt, 3);
    tl_ret(p, t, KF, 15); /* f returns: never entered */
    assert_int_equal(t->depth, 0);
    tl_call(p, t, KH, 20); /* main (not seen) calls h */
    tl_call(p, t, KG, 22);
    tl_ret(p, t, KX, 23); /* a stray return while h and g are open */
    assert_int_equal(t->depth, 2);
    tl_ret(p, t, KG, 25); /* g: 3 */
    tl_ret(p, t, KH, 26); /* h: tt 6, it 3 */
    assert_int_equal(t->root_subt, 3 + 6);
    tl_ret(p, t, KM, 30); /* main returns: never entered */

    assert_null(fp_entry_find(t, KF)); /* a return creates nothing */
    assert_null(fp_entry_find(t, KM));
    assert_null(fp_entry_find(t, KX));
    assert_entry(t, KG, 2, 0, 6, 6);
    assert_entry(t, KH, 1, 0, 6, 3);
    assert_edge(t, KH, KG, 1, 0, 3, 3);
    assert_int_equal(t->n_edges, 1); /* the first g had no caller on the stack */
    assert_int_equal(t->n_entries, 2);
    tl_assert_idle(t);
}

/* 3b. Profiling disabled with frames still open: the flush closes them at
 * the flush time, as cProfile's disable does; the thread stays usable. */
static void test_unbalanced_flush_open_frames(void **state)
{
    FIX;
    tl_call(p, t, KA, 0);
    tl_call(p, t, KB, 2);
    tl_call(p, t, KC, 3);
    fp_thread_flush(p, t, 10); /* c: 7/7, b: 8/1, a: 10/2 */
    assert_entry(t, KA, 1, 0, 10, 2);
    assert_entry(t, KB, 1, 0, 8, 1);
    assert_entry(t, KC, 1, 0, 7, 7);
    assert_edge(t, KA, KB, 1, 0, 8, 1);
    assert_edge(t, KB, KC, 1, 0, 7, 7);
    tl_assert_idle(t);

    /* late returns of the flushed frames are ignored */
    tl_ret(p, t, KC, 11);
    tl_ret(p, t, KB, 12);
    tl_ret(p, t, KA, 13);
    assert_entry(t, KA, 1, 0, 10, 2);

    /* enabled again: counting goes on */
    tl_call(p, t, KA, 20);
    tl_call(p, t, KB, 21);
    tl_ret(p, t, KB, 23);
    tl_ret(p, t, KA, 24);
    assert_entry(t, KA, 2, 0, 14, 4);
    assert_entry(t, KB, 2, 0, 10, 3);
    assert_edge(t, KA, KB, 2, 0, 10, 3);
    tl_assert_idle(t);
}

/* Enabled inside f, f returns (ignored), disabled in f's caller while a
 * callee of that caller is still open. */
static void test_unbalanced_enable_inside_disable_in_caller(void **state)
{
    FIX;
    tl_call(p, t, KG, 1);
    tl_ret(p, t, KG, 2);
    tl_ret(p, t, KF, 3); /* f was running at enable: ignored */
    tl_call(p, t, KH, 4);
    tl_call(p, t, KG, 6);
    fp_thread_flush(p, t, 9); /* g: 3/3, h: 5/2 */
    assert_entry(t, KG, 2, 0, 4, 4);
    assert_entry(t, KH, 1, 0, 5, 2);
    assert_edge(t, KH, KG, 1, 0, 3, 3);
    assert_null(fp_entry_find(t, KF));
    tl_assert_idle(t);
}

/* A flush with recursive frames open counts tt once, like returns would. */
static void test_flush_recursive_frames(void **state)
{
    FIX;
    tl_call(p, t, KF, 0);
    tl_call(p, t, KF, 1);
    tl_call(p, t, KF, 2);
    fp_thread_flush(p, t, 5); /* inner 3/3, middle 4/1, outer 5/1 */
    assert_entry(t, KF, 3, 2, 5, 5);
    assert_edge(t, KF, KF, 2, 1, 4, 4);
    tl_assert_idle(t);
    fp_thread_flush(p, t, 6); /* nothing open: no change */
    assert_entry(t, KF, 3, 2, 5, 5);
}

/* 4. An exception unwinds from e up to b; the returns of e, d and c are
 * missing. The return of b closes them all at that time. */
static void test_exception_missing_returns(void **state)
{
    FIX;
    tl_call(p, t, KA, 0);
    tl_call(p, t, KB, 1);
    tl_call(p, t, KC, 2);
    tl_call(p, t, KD, 4);
    tl_call(p, t, KE, 5);
    tl_ret(p, t, KB, 9); /* e: 4/4, d: 5/1, c: 7/2, b: 8/1 */
    assert_int_equal(t->depth, 1);
    assert_entry(t, KE, 1, 0, 4, 4);
    assert_entry(t, KD, 1, 0, 5, 1);
    assert_entry(t, KC, 1, 0, 7, 2);
    assert_entry(t, KB, 1, 0, 8, 1);
    assert_int_equal(fp_entry_find(t, KA)->callcount, 0);

    tl_ret(p, t, KD, 10); /* a late return of a closed frame: ignored */
    assert_int_equal(t->depth, 1);
    assert_entry(t, KD, 1, 0, 5, 1);

    tl_ret(p, t, KA, 12); /* a: 12/4 */
    assert_entry(t, KA, 1, 0, 12, 4);
    assert_edge(t, KA, KB, 1, 0, 8, 1);
    assert_edge(t, KB, KC, 1, 0, 7, 2);
    assert_edge(t, KC, KD, 1, 0, 5, 1);
    assert_edge(t, KD, KE, 1, 0, 4, 4);
    tl_assert_idle(t);
}

/* A missed return inside recursion: the topmost frame of the key is the
 * one that returns, the frames above it are closed. */
static void test_exception_in_recursion(void **state)
{
    FIX;
    tl_call(p, t, KF, 0); /* f1 */
    tl_call(p, t, KG, 1); /* g1 */
    tl_call(p, t, KF, 2); /* f2 */
    tl_call(p, t, KG, 3); /* g2: its return is missing */
    tl_ret(p, t, KF, 6);  /* g2: 3/3, f2: 4/1 */
    assert_int_equal(t->depth, 2);
    tl_ret(p, t, KG, 7);  /* g1: 6/2 */
    tl_ret(p, t, KF, 10); /* f1: 10/4 */
    assert_entry(t, KF, 2, 1, 10, 5);
    assert_entry(t, KG, 2, 1, 6, 5);
    assert_edge(t, KF, KG, 2, 1, 6, 5);
    assert_edge(t, KG, KF, 1, 0, 4, 1);
    tl_assert_idle(t);
}

/* 5a. A generator in wall mode: started by c1 (fp_enter with an ident),
 * suspended, resumed later from c2, then finished. One call; tt spans the
 * suspension, it excludes it and the callee h; the callers are charged
 * only for the segments the generator ran inside them. */
static void test_generator_wall_mode(void **state)
{
    FIX;
    tl_call(p, t, KM, 0);
    tl_call(p, t, KA, 1); /* c1 */
    tl_gen_start(p, t, KG, G1, 2);
    tl_call(p, t, KH, 3);
    tl_ret(p, t, KH, 5);       /* h: 2 */
    tl_yield(p, t, KG, G1, 6); /* g ran 2..6 inside c1 */
    assert_int_equal(t->depth, 2);
    assert_int_equal(tl_count_parked(t), 1);
    assert_int_equal(fp_entry_find(t, KG)->reclevel, 0); /* parked: not active */
    tl_ret(p, t, KA, 10);                                /* c1: tt 9, it 9 - 4 = 5 */
    tl_call(p, t, KB, 11);                               /* c2 */
    tl_resume(p, t, KG, G1, 13);                         /* suspended 6..13 = 7 */
    assert_int_equal(tl_count_parked(t), 0);
    tl_ret(p, t, KG, 16); /* g: tt 14, it 14 - 7 - 2 = 5 */
    tl_ret(p, t, KB, 18); /* c2: tt 7, it 7 - 3 = 4 */
    tl_ret(p, t, KM, 20); /* m: tt 20, it 20 - 9 - 7 = 4 */

    assert_entry(t, KG, 1, 0, 14, 5);
    assert_entry(t, KH, 1, 0, 2, 2);
    assert_entry(t, KA, 1, 0, 9, 5);
    assert_entry(t, KB, 1, 0, 7, 4);
    assert_entry(t, KM, 1, 0, 20, 4);
    assert_edge(t, KG, KH, 1, 0, 2, 2);
    /* the one call of g is booked on one edge: callers' counts sum to it */
    uint64_t into_g = 0;
    fp_entry_t *eg = fp_entry_find(t, KG);
    for (fp_edge_t *g = t->edges; g; g = g->hh.next)
        if (g->key.callee == eg)
            into_g += g->callcount;
    assert_int_equal(into_g, 1);
    assert_edge(t, KA, KG, 1, 0, 14, 5);
    tl_assert_idle(t);
}

/* 5b. Two instances of one generator function suspended at the same time
 * are not recursion; fp_resume of an unknown ident is a first start. */
static void test_generator_two_instances(void **state)
{
    FIX;
    tl_call(p, t, KM, 0);
    tl_resume(p, t, KG, G1, 1); /* unknown ident: first start of G1 */
    tl_yield(p, t, KG, G1, 2);
    tl_resume(p, t, KG, G2, 3); /* first start of G2 */
    tl_yield(p, t, KG, G2, 5);
    assert_int_equal(tl_count_parked(t), 2);
    tl_resume(p, t, KG, G1, 6);
    tl_yield(p, t, KG, G1, 7);
    tl_resume(p, t, KG, G2, 8);
    tl_ret(p, t, KG, 10); /* G2 ends: tt 7, susp 3, it 4 */
    tl_resume(p, t, KG, G1, 11);
    tl_ret(p, t, KG, 12); /* G1 ends: tt 11, susp 4 + 4, it 3 */
    tl_ret(p, t, KM, 14); /* m: 14, it 14 - 7 = 7 */

    assert_entry(t, KG, 2, 0, 18, 7);
    assert_entry(t, KM, 1, 0, 14, 7);
    assert_edge(t, KM, KG, 2, 0, 18, 7);
    assert_int_equal(tl_count_parked(t), 0);
    tl_assert_idle(t);
}

/* 5c. One instance of a generator function starts another (G2 inside G1),
 * which yields back and is finished later at top level: two calls, own
 * time split exactly, levels back to zero. */
static void test_generator_nested_instance(void **state)
{
    FIX;
    tl_gen_start(p, t, KG, G1, 0);
    tl_gen_start(p, t, KG, G2, 1);
    tl_yield(p, t, KG, G2, 3); /* G2 ran 1..3 inside G1 */
    tl_ret(p, t, KG, 4);       /* G1 ends: it 4 - 2 = 2 */
    tl_resume(p, t, KG, G2, 6);
    tl_ret(p, t, KG, 7); /* G2 ends: tt 6, suspended 3, it 3 */
    fp_entry_t *e = fp_entry_find(t, KG);
    assert_int_equal(e->callcount, 2);
    assert_int_equal(e->owntime, 5);
    fp_edge_t *gg = tl_edge(t, KG, KG);
    assert_non_null(gg);
    assert_int_equal(gg->callcount, 1);
    assert_int_equal(gg->owntime, 3);
    tl_assert_idle(t);
}

/* 5d. The flush closes parked frames too, counting the suspension up to
 * the flush as part of tt, not it; a resume after it is a new call. */
static void test_generator_flush_parked(void **state)
{
    FIX;
    tl_call(p, t, KM, 0);
    tl_gen_start(p, t, KG, G1, 1);
    tl_yield(p, t, KG, G1, 3);
    fp_thread_flush(p, t, 10); /* m: 10/8; g: tt 9, susp 7, it 2 */
    assert_entry(t, KM, 1, 0, 10, 8);
    assert_entry(t, KG, 1, 0, 9, 2);
    assert_edge(t, KM, KG, 1, 0, 9, 2);
    assert_int_equal(tl_count_parked(t), 0);
    tl_assert_idle(t);

    tl_resume(p, t, KG, G1, 20); /* nothing parked any more: a first start */
    tl_ret(p, t, KG, 21);
    assert_entry(t, KG, 2, 0, 10, 3);
    tl_assert_idle(t);
}

/* A yield from inside a callee whose return was missed closes the callee;
 * a yield for a key not on the stack is ignored. */
static void test_generator_suspend_edge_cases(void **state)
{
    FIX;
    tl_gen_start(p, t, KG, G1, 0);
    tl_call(p, t, KH, 1);
    tl_yield(p, t, KG, G1, 4); /* h: 3/3 closed at 4; g ran 0..4 */
    assert_int_equal(t->depth, 0);
    assert_entry(t, KH, 1, 0, 3, 3);
    tl_yield(p, t, KX, G2, 5); /* not on the stack: ignored */
    assert_int_equal(tl_count_parked(t), 1);
    tl_resume(p, t, KG, G1, 8);
    tl_ret(p, t, KG, 9); /* g: tt 9, susp 4, it 9 - 4 - 3 = 2 */
    assert_entry(t, KG, 1, 0, 9, 2);
    tl_assert_idle(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_simple_tree, setup_subcalls, teardown),
        cmocka_unit_test(test_simple_tree_no_subcalls),
        cmocka_unit_test_setup_teardown(test_nested_tree, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_direct_recursion, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_mutual_recursion, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_edge_level_differs_from_entry_level, setup_subcalls,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_deep_recursion_grows_stack, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_unbalanced_enabled_inside, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_unbalanced_flush_open_frames, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_unbalanced_enable_inside_disable_in_caller, setup_subcalls,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_flush_recursive_frames, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_exception_missing_returns, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_exception_in_recursion, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_generator_wall_mode, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_generator_two_instances, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_generator_nested_instance, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_generator_flush_parked, setup_subcalls, teardown),
        cmocka_unit_test_setup_teardown(test_generator_suspend_edge_cases, setup_subcalls, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
