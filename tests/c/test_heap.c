/* fp_heap, the traced heap: exact bytes per owner and in total, the peak and
 * who held it, against a reference kept by the test.
 *
 * - blocks: allocations, frees, an unknown free ignored, an address tracked
 *   twice (the first counted freed), realloc's take / untake;
 * - the peak: three owners that allocate and free 30, 20 and 10 MB one
 *   after another: peak 30 MB, and only the first holds it;
 * - the table: a random mix of thousands of tracks and takes on colliding
 *   addresses, checked against a plain array after every step; growth;
 *   blocks of 4 GiB or more;
 * - a block disowned (made for a profiler's callback): its owner's counts
 *   as if it had never allocated it, the totals unchanged;
 * - out of memory: blocks the heap has no room for are counted lost, the
 *   rest stays exact;
 * - threads: eight threads tracking and freeing each other's blocks at once
 *   (run under ASan and valgrind: no race corrupts the table), totals equal
 *   the sum of what the threads did; and threads whose owners come and go
 *   (each phase a new owner, merged or dropped after), so that sweeps hand
 *   ids out again while the others track and free: every block left counts
 *   for the owner its phase's ended in, none for a later holder of its id;
 * - its own memory per million live blocks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fp_heap.h"
#include "fp_mem.h"

#define MB (1000ull * 1000ull)
#define P(n) ((const void *)(uintptr_t)(16 * (uintptr_t)(n)))

static void totals_are(fp_heap_t *h, uint64_t current, uint64_t peak, uint64_t blocks)
{
    fp_heap_totals_t t = fp_heap_totals(h);
    assert_int_equal(t.current, current);
    assert_int_equal(t.peak, peak);
    assert_int_equal(t.blocks, blocks);
}

static fp_heap_owner_stats_t owner(fp_heap_t *h, fp_owner_t id)
{
    fp_heap_owner_stats_t s;
    assert_int_equal(fp_heap_owner_read(h, id, &s), 0);
    return s;
}

static void test_blocks(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t a = fp_heap_new_owner(&h), b = fp_heap_new_owner(&h);
    assert_true(a != FP_OWNER_NONE && b != FP_OWNER_NONE && a != b);

    fp_heap_track(&h, P(1), 100, a);
    fp_heap_track(&h, P(2), 50, b);
    fp_heap_track(&h, P(3), 7, FP_OWNER_NONE); /* totals only */
    totals_are(&h, 157, 157, 3);

    /* b frees a's block: charged to a. */
    fp_heap_block_t blk = fp_heap_take(&h, P(1));
    assert_true(blk.found);
    assert_int_equal(blk.size, 100);
    assert_int_equal(blk.owner, a);
    totals_are(&h, 57, 157, 2);
    fp_heap_owner_stats_t sa = owner(&h, a);
    assert_int_equal(sa.allocs, 1);
    assert_int_equal(sa.alloc_bytes, 100);
    assert_int_equal(sa.frees, 1);
    assert_int_equal(sa.freed_bytes, 100);
    assert_int_equal(sa.live, 0);
    assert_int_equal(sa.live_at_peak, 100);

    /* A block from before tracing: ignored. */
    blk = fp_heap_take(&h, P(99));
    assert_false(blk.found);
    totals_are(&h, 57, 157, 2);

    /* The same address tracked again without a free in between: the old
     * block counts as freed (b's), the new one as allocated (a's). */
    fp_heap_track(&h, P(2), 30, a);
    totals_are(&h, 37, 157, 2);
    fp_heap_owner_stats_t sb = owner(&h, b);
    assert_int_equal(sb.freed_bytes, 50);
    assert_int_equal(sb.live, 0);
    assert_int_equal(owner(&h, a).live, 30);

    /* A realloc that failed: take, then untake, changes nothing. */
    blk = fp_heap_take(&h, P(2));
    totals_are(&h, 7, 157, 1);
    fp_heap_untake(&h, P(2), blk);
    totals_are(&h, 37, 157, 2);
    sa = owner(&h, a);
    assert_int_equal(sa.allocs, 2);
    assert_int_equal(sa.frees, 1);
    assert_int_equal(sa.live, 30);
    assert_int_equal(fp_heap_take(&h, P(2)).size, 30);

    /* Unknown ids. */
    fp_heap_owner_stats_t s;
    assert_int_equal(fp_heap_owner_read(&h, FP_OWNER_NONE, &s), -1);
    assert_int_equal(fp_heap_owner_read(&h, 1000, &s), -1);

    /* Four blocks tracked, the same address twice; an untake is no new one. */
    assert_int_equal(fp_heap_totals(&h).allocs, 4);
    fp_heap_clear(&h);
    totals_are(&h, 0, 0, 0);
    assert_int_equal(fp_heap_totals(&h).allocs, 0);
    assert_int_equal(owner(&h, a).alloc_bytes, 0);
    assert_int_equal(fp_heap_totals(&h).lost, 0);
    fp_heap_fini(&h);
}

/* Allocates `total` bytes as `n` blocks from address `base` for `o`, then
 * frees them: a call that rises by `total` and comes back. */
static void rise_and_fall(fp_heap_t *h, uintptr_t base, uint64_t total, int n, fp_owner_t o)
{
    for (int i = 0; i < n; i++)
        fp_heap_track(h, P(base + (uintptr_t)i), total / (uint64_t)n, o);
    for (int i = 0; i < n; i++)
        fp_heap_take(h, P(base + (uintptr_t)i));
}

static void test_peak_and_who_held_it(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t keep = fp_heap_new_owner(&h);
    fp_owner_t f30 = fp_heap_new_owner(&h), f20 = fp_heap_new_owner(&h), f10 = fp_heap_new_owner(&h);
    fp_heap_track(&h, P(1), 1 * MB, keep);
    rise_and_fall(&h, 1000, 30 * MB, 30, f30);
    rise_and_fall(&h, 2000, 20 * MB, 20, f20);
    rise_and_fall(&h, 3000, 10 * MB, 10, f10);
    totals_are(&h, 1 * MB, 31 * MB, 1);
    assert_int_equal(owner(&h, f30).live_at_peak, 30 * MB);
    assert_int_equal(owner(&h, f20).live_at_peak, 0);
    assert_int_equal(owner(&h, f10).live_at_peak, 0);
    assert_int_equal(owner(&h, keep).live_at_peak, 1 * MB);
    assert_int_equal(owner(&h, f30).live, 0);

    /* A new owner made after the peak held nothing at it. */
    fp_owner_t late = fp_heap_new_owner(&h);
    fp_heap_track(&h, P(5), 10, late);
    assert_int_equal(owner(&h, late).live_at_peak, 0);

    /* A higher peak moves the answer: f20 now holds 40 MB (with keep's 1). */
    rise_and_fall(&h, 4000, 40 * MB, 4, f20);
    assert_int_equal(owner(&h, f20).live_at_peak, 40 * MB);
    assert_int_equal(owner(&h, f30).live_at_peak, 0);
    assert_int_equal(owner(&h, keep).live_at_peak, 1 * MB);
    assert_int_equal(owner(&h, late).live_at_peak, 10);
    totals_are(&h, 1 * MB + 10, 41 * MB + 10, 2);

    /* The peak is reached as the last block of a call arrives, shared by
     * two owners; the sum of what they held is the peak. */
    fp_heap_clear(&h);
    fp_heap_track(&h, P(1), 300, keep);
    fp_heap_track(&h, P(2), 200, f10);
    fp_heap_take(&h, P(1));
    fp_heap_track(&h, P(3), 250, keep); /* 450: not a new peak */
    fp_heap_track(&h, P(4), 100, f30);  /* 550: the peak */
    fp_heap_take(&h, P(2));
    totals_are(&h, 350, 550, 2);
    assert_int_equal(owner(&h, keep).live_at_peak, 250);
    assert_int_equal(owner(&h, f10).live_at_peak, 200);
    assert_int_equal(owner(&h, f30).live_at_peak, 100);
    fp_heap_fini(&h);
}

/* Rows merged (a folded thread record): the source's counts join the
 * destination's, and its blocks freed later count there too. */
static void test_owners_merged(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t a = fp_heap_new_owner(&h), b = fp_heap_new_owner(&h), c = fp_heap_new_owner(&h);
    fp_heap_track(&h, P(1), 100, a);
    fp_heap_track(&h, P(2), 40, b);
    fp_heap_track(&h, P(3), 5, b);
    fp_heap_take(&h, P(3));
    fp_heap_track(&h, P(4), 7, c);
    fp_heap_owner_merge(&h, a, b);
    fp_heap_owner_stats_t s = owner(&h, a);
    assert_int_equal(s.allocs, 3);
    assert_int_equal(s.alloc_bytes, 145);
    assert_int_equal(s.frees, 1);
    assert_int_equal(s.live, 140);
    assert_int_equal(s.live_at_peak, 140); /* the peak, 147 with c's 7, came at P(4) */
    fp_heap_take(&h, P(2));                /* b's block: a counts it */
    s = owner(&h, a);
    assert_int_equal(s.frees, 2);
    assert_int_equal(s.live, 100);
    assert_int_equal(owner(&h, b).live, 100); /* b reads as a */
    /* A chain: a into c, then b's id still reaches c. */
    fp_heap_owner_merge(&h, c, a);
    fp_heap_take(&h, P(1));
    s = owner(&h, c);
    assert_int_equal(s.allocs, 4);
    assert_int_equal(s.live, 7);
    assert_int_equal(s.live_at_peak, 147);
    fp_heap_owner_merge(&h, c, b); /* already one: nothing changes */
    assert_int_equal(owner(&h, c).allocs, 4);
    totals_are(&h, 7, 147, 1);
    fp_heap_fini(&h);
}

/* Owners retired (merged or dropped) are handed out again by a sweep, and
 * no block, and no thread's cached id, is counted for the wrong one. */
static void test_owners_handed_out_again(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t keep = fp_heap_new_owner(&h);
    const uint64_t n = FP_HEAP_SWEEP_MIN + 100;
    fp_owner_t most = 0;
    for (int round = 0; round < 4; round++) {
        /* n owners each allocate a block that outlives them: the even ones
         * are merged into `keep` (a thread folded), the odd ones dropped (a
         * request thrown away) */
        uint64_t base = 1000000 * (uint64_t)(round + 1);
        fp_owner_t first = 0;
        for (uint64_t i = 0; i < n; i++) {
            fp_owner_t o = fp_heap_new_owner(&h);
            assert_true(o != FP_OWNER_NONE);
            first = first ? first : o;
            most = o > most ? o : most;
            fp_heap_track(&h, P(base + i), 10, o);
            if (i % 2)
                fp_heap_owner_drop(&h, o);
            else
                fp_heap_owner_merge(&h, keep, o);
        }
        if (round > 0)
            assert_true(first < n + 2); /* the sweep handed the ids out again */
        assert_int_equal(owner(&h, keep).live, 10 * ((n + 1) / 2) * (uint64_t)(round + 1));
        assert_int_equal(fp_heap_totals(&h).current, 10 * n * (uint64_t)(round + 1));
    }
    assert_true(most < 2 * n + 2); /* 4 rounds of n: bounded */
    /* After the sweeps: a merged owner's block is still `keep`'s, a dropped
     * one's counts in the totals only, whatever owner has its id now. */
    uint64_t live = owner(&h, keep).live;
    fp_heap_take(&h, P(1000000));     /* round 0, i 0: merged */
    fp_heap_take(&h, P(1000000 + 1)); /* round 0, i 1: dropped */
    assert_int_equal(owner(&h, keep).live, live - 10);
    assert_int_equal(fp_heap_totals(&h).current, 10 * n * 4 - 20);
    /* A thread's id read before a sweep that handed it out again counts for
     * nobody; one read after counts. So does a realloc's block taken before
     * such a sweep and put back after it (the realloc failed). */
    uint64_t before = h.sweeps;
    fp_owner_t gone = fp_heap_new_owner(&h);
    fp_heap_track(&h, P(6), 3, gone);
    fp_heap_block_t taken = fp_heap_take(&h, P(6));
    assert_int_equal(taken.owner, gone);
    fp_heap_owner_drop(&h, gone);
    for (uint64_t i = 0; i < n; i++)
        fp_heap_owner_drop(&h, fp_heap_new_owner(&h));
    fp_owner_t again = fp_heap_new_owner(&h); /* sweeps */
    assert_true(h.sweeps > before);
    fp_heap_track_seen(&h, P(7), 5, again, before);
    assert_int_equal(owner(&h, again).allocs, 0);
    uint64_t current = fp_heap_totals(&h).current;
    fp_heap_untake(&h, P(6), taken);
    assert_int_equal(fp_heap_totals(&h).current, current + 3);
    for (fp_owner_t o = 1; o < h.n_owners; o++) {
        fp_heap_owner_stats_t s;
        if (fp_heap_owner_read(&h, o, &s) == 0)
            assert_true(s.frees == 0 || o == keep); /* no owner had the block taken back */
    }
    fp_heap_track_seen(&h, P(8), 5, again, h.sweeps);
    assert_int_equal(owner(&h, again).allocs, 1);
    /* every id free again (the rows were dropped): numbered from 1, an id
     * read before counts for nobody */
    before = h.sweeps;
    fp_heap_clear(&h);
    fp_heap_forget_owners(&h);
    fp_owner_t one = fp_heap_new_owner(&h);
    assert_int_equal(one, 1);
    fp_heap_track_seen(&h, P(9), 5, one, before);
    assert_int_equal(owner(&h, one).allocs, 0);
    totals_are(&h, 5, 5, 1);
    fp_heap_fini(&h);
}

/* A deterministic generator (xorshift) for the random mix. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

enum { N_ADDR = 6000 };

static void test_table_against_a_reference(void **state)
{
    (void)state;
    static uint64_t ref_size[N_ADDR];
    static fp_owner_t ref_owner[N_ADDR];
    memset(ref_size, 0, sizeof ref_size);
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t owners[8];
    for (int i = 0; i < 8; i++)
        owners[i] = fp_heap_new_owner(&h);
    uint64_t current = 0, peak = 0, blocks = 0;
    /* Addresses 16 apart fill runs of neighbouring slots: backward-shift
     * deletes move blocks all the time. Three rounds: fill, drain, mix. */
    for (int round = 0; round < 3; round++) {
        for (int step = 0; step < 40000; step++) {
            unsigned a = (unsigned)(rng() % N_ADDR);
            int add = round == 0 ? rng() % 4 != 0 : round == 1 ? rng() % 4 == 0 : rng() % 2;
            if (add) {
                uint64_t size = 1 + rng() % 1000;
                fp_owner_t o = owners[rng() % 8];
                fp_heap_track(&h, P(a + 1), size, o);
                if (ref_size[a]) {
                    current -= ref_size[a];
                    blocks--;
                }
                ref_size[a] = size;
                ref_owner[a] = o;
                current += size;
                blocks++;
                if (current > peak)
                    peak = current;
            } else {
                fp_heap_block_t b = fp_heap_take(&h, P(a + 1));
                assert_int_equal(b.found, ref_size[a] != 0);
                if (b.found) {
                    assert_int_equal(b.size, ref_size[a]);
                    assert_int_equal(b.owner, ref_owner[a]);
                    current -= ref_size[a];
                    blocks--;
                    ref_size[a] = 0;
                }
            }
            if (step % 997 == 0)
                totals_are(&h, current, peak, blocks);
        }
        /* Every block is still found where the reference says. */
        uint64_t live[8] = {0};
        for (unsigned a = 0; a < N_ADDR; a++) {
            if (!ref_size[a])
                continue;
            fp_heap_block_t b = fp_heap_take(&h, P(a + 1));
            assert_true(b.found);
            assert_int_equal(b.size, ref_size[a]);
            fp_heap_untake(&h, P(a + 1), b);
            for (int i = 0; i < 8; i++)
                if (owners[i] == ref_owner[a])
                    live[i] += ref_size[a];
        }
        for (int i = 0; i < 8; i++)
            assert_int_equal(owner(&h, owners[i]).live, live[i]);
        totals_are(&h, current, peak, blocks);
    }
    assert_int_equal(fp_heap_totals(&h).lost, 0);
    fp_heap_fini(&h);
}

static void test_huge_blocks(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t o = fp_heap_new_owner(&h);
    const uint64_t five_gib = 5ull << 30, exactly = FP_HEAP_HUGE;
    fp_heap_track(&h, P(1), five_gib, o);
    fp_heap_track(&h, P(2), exactly, o);
    fp_heap_track(&h, P(3), exactly - 1, o);
    totals_are(&h, five_gib + 2 * exactly - 1, five_gib + 2 * exactly - 1, 3);
    assert_int_equal(fp_heap_take(&h, P(2)).size, exactly);
    fp_heap_block_t b = fp_heap_take(&h, P(1));
    assert_int_equal(b.size, five_gib);
    fp_heap_untake(&h, P(1), b);
    fp_heap_track(&h, P(1), 10, o); /* replaces the 5 GiB block */
    totals_are(&h, exactly - 1 + 10, five_gib + 2 * exactly - 1, 2);
    assert_int_equal(fp_heap_take(&h, P(1)).size, 10);
    assert_int_equal(fp_heap_take(&h, P(3)).size, exactly - 1);
    assert_int_equal(owner(&h, o).live, 0);
    fp_heap_fini(&h);
}

static void test_disowned_blocks(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t a = fp_heap_new_owner(&h), b = fp_heap_new_owner(&h);
    const uint64_t big = (uint64_t)FP_HEAP_HUGE + 1; /* kept in the huge list */
    fp_heap_track(&h, P(1), 100, a);
    fp_heap_track(&h, P(2), 32, a);
    fp_heap_track(&h, P(3), big, b);
    fp_heap_track(&h, P(4), 8, FP_OWNER_NONE);
    assert_int_equal(fp_heap_disown(&h, P(2)), 32);
    assert_int_equal(fp_heap_disown(&h, P(2)), 0); /* once */
    assert_int_equal(fp_heap_disown(&h, P(4)), 0); /* nobody's already */
    assert_int_equal(fp_heap_disown(&h, P(9)), 0); /* not tracked */
    fp_heap_owner_stats_t s = owner(&h, a);
    assert_int_equal(s.allocs, 1);
    assert_int_equal(s.alloc_bytes, 100);
    assert_int_equal(s.live, 100);
    fp_heap_owner_merge(&h, a, b); /* b's huge block, disowned through the merge */
    assert_int_equal(fp_heap_disown(&h, P(3)), big);
    assert_int_equal(owner(&h, a).alloc_bytes, 100);
    totals_are(&h, 140 + big, 140 + big, 4);
    fp_heap_block_t blk = fp_heap_take(&h, P(2)); /* its free: the totals only */
    assert_true(blk.found);
    assert_int_equal(blk.owner, FP_OWNER_NONE);
    assert_int_equal(owner(&h, a).frees, 0);
    assert_int_equal(fp_heap_take(&h, P(3)).size, big);
    totals_are(&h, 108, 140 + big, 2);
    fp_heap_fini(&h);
}

static void test_growth_and_its_failure(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t o = fp_heap_new_owner(&h);
    /* Fill until the next block needs a bigger table, with growth failing. */
    size_t before = fp_heap_self_bytes(&h);
    int n = 0;
    fp_mem_fail_after(0);
    while (fp_heap_totals(&h).lost == 0)
        fp_heap_track(&h, P(++n), 1, o);
    fp_mem_fail_after(-1);
    assert_int_equal(fp_heap_self_bytes(&h), before);
    totals_are(&h, (uint64_t)n - 1, (uint64_t)n - 1, (uint64_t)n - 1);
    assert_false(fp_heap_take(&h, P(n)).found); /* the lost one */
    assert_true(fp_heap_take(&h, P(n - 1)).found);
    /* Room again: it grows and stays exact, but stays marked inexact. */
    for (int i = 0; i < 20000; i++)
        fp_heap_track(&h, P(100000 + i), 2, o);
    totals_are(&h, (uint64_t)n - 2 + 40000, (uint64_t)n - 2 + 40000, (uint64_t)n - 2 + 20000);
    assert_true(fp_heap_self_bytes(&h) > before);
    assert_int_equal(fp_heap_totals(&h).lost, 1);
    /* Owners: none can be made when memory is out (a new chunk). */
    fp_mem_fail_after(0);
    fp_owner_t last = FP_OWNER_NONE;
    for (int i = 0; i < FP_HEAP_OWNER_CHUNK + 1; i++) {
        fp_owner_t id = fp_heap_new_owner(&h);
        if (id == FP_OWNER_NONE)
            break;
        last = id;
    }
    fp_mem_fail_after(-1);
    assert_int_equal(last, FP_HEAP_OWNER_CHUNK - 1);
    assert_int_equal(fp_heap_new_owner(&h), FP_HEAP_OWNER_CHUNK);
    fp_heap_fini(&h);
}

/* Threads: each allocates its own blocks and frees a neighbour's, at once. */
enum { N_THREADS = 8, PER_THREAD = 4000 };

typedef struct {
    fp_heap_t *h;
    int index;
    fp_owner_t owner;
    pthread_barrier_t *start;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    pthread_barrier_wait(w->start);
    uintptr_t mine = 1 + (uintptr_t)w->index * PER_THREAD;
    uintptr_t theirs = 1 + (uintptr_t)((w->index + 1) % N_THREADS) * PER_THREAD;
    for (int i = 0; i < PER_THREAD; i++) {
        fp_heap_track(w->h, P(mine + (uintptr_t)i), (uint64_t)(1 + i % 7), w->owner);
        /* Free the neighbour's block i - 100 if it already made it (a
         * free of an unknown address is ignored, and counted nowhere). */
        if (i >= 100 && i % 2 == 0)
            fp_heap_take(w->h, P(theirs + (uintptr_t)(i - 100)));
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N_THREADS);
    pthread_t tid[N_THREADS];
    worker_t w[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker_t){&h, i, fp_heap_new_owner(&h), &start};
        assert_int_equal(pthread_create(&tid[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);

    /* Whatever the interleaving, each owner allocated all its blocks, and
     * what is left is exactly the blocks nobody took. */
    uint64_t allocated = 0, current = 0, blocks = 0;
    for (int i = 0; i < PER_THREAD; i++)
        allocated += (uint64_t)(1 + i % 7);
    for (int t = 0; t < N_THREADS; t++) {
        fp_heap_owner_stats_t s = owner(&h, w[t].owner);
        assert_int_equal(s.allocs, PER_THREAD);
        assert_int_equal(s.alloc_bytes, allocated);
        assert_int_equal(s.live, s.alloc_bytes - s.freed_bytes);
        uintptr_t mine = 1 + (uintptr_t)t * PER_THREAD;
        uint64_t live = 0, n = 0;
        for (int i = 0; i < PER_THREAD; i++) {
            fp_heap_block_t b = fp_heap_take(&h, P(mine + (uintptr_t)i));
            if (b.found) {
                assert_int_equal(b.size, (uint64_t)(1 + i % 7));
                fp_heap_untake(&h, P(mine + (uintptr_t)i), b);
                live += b.size;
                n++;
            }
        }
        assert_int_equal(s.live, live);
        assert_int_equal(s.frees, PER_THREAD - n);
        current += live;
        blocks += n;
    }
    fp_heap_totals_t t = fp_heap_totals(&h);
    assert_int_equal(t.current, current);
    assert_int_equal(t.blocks, blocks);
    assert_int_equal(t.allocs, (uint64_t)N_THREADS * PER_THREAD);
    assert_int_equal(fp_heap_totals(&h).lost, 0);
    fp_heap_fini(&h);
}

/* The table's own memory per million live blocks: 16 bytes a slot, at most
 * 70% full, so 2^21 slots (32 MiB) hold a million. */
/* Threads whose owners come and go while the others allocate: the sweeps
 * run in the middle of their tracking and freeing. */
enum { CHURN_THREADS = 6, CHURN_PHASES = 1500, CHURN_BLOCKS = 8 };

typedef struct {
    fp_heap_t *h;
    int index;
    fp_owner_t keep;
    pthread_barrier_t *start;
    uint64_t tracked, freed; /* bytes */
    uint64_t frees;
} churn_t;

static uintptr_t churn_addr(int thread, int phase, int i)
{
    return 1 + ((uintptr_t)thread * CHURN_PHASES + (uintptr_t)phase) * CHURN_BLOCKS + (uintptr_t)i;
}

static void *churner(void *arg)
{
    churn_t *c = arg;
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(c->index + 1);
    pthread_barrier_wait(c->start);
    for (int phase = 0; phase < CHURN_PHASES; phase++) {
        /* as the binding does: the owner, then the sweeps it was read at */
        fp_owner_t o = fp_heap_new_owner(c->h);
        uint64_t seen = __atomic_load_n(&c->h->sweeps, __ATOMIC_ACQUIRE);
        for (int i = 0; i < CHURN_BLOCKS; i++) {
            fp_heap_track_seen(c->h, P(churn_addr(c->index, phase, i)), (uint64_t)(1 + i), o, seen);
            c->tracked += (uint64_t)(1 + i);
        }
        for (int k = 0; k < CHURN_BLOCKS - 2; k++) { /* its own and others' */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int thread = (int)(x % CHURN_THREADS), at = (int)((x >> 8) % (uint64_t)(phase + 1));
            fp_heap_block_t b =
                fp_heap_take(c->h, P(churn_addr(thread, at, (int)((x >> 24) % CHURN_BLOCKS))));
            if (b.found) {
                c->freed += b.size;
                c->frees++;
            }
        }
        if (phase % 2)
            fp_heap_owner_drop(c->h, o); /* a request thrown away */
        else
            fp_heap_owner_merge(c->h, c->keep, o); /* a thread folded */
    }
    return NULL;
}

static void test_sweeps_while_threads_track(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t keep = fp_heap_new_owner(&h);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, CHURN_THREADS);
    pthread_t tid[CHURN_THREADS];
    churn_t c[CHURN_THREADS];
    for (int i = 0; i < CHURN_THREADS; i++) {
        c[i] = (churn_t){&h, i, keep, &start, 0, 0, 0};
        assert_int_equal(pthread_create(&tid[i], NULL, churner, &c[i]), 0);
    }
    uint64_t tracked = 0, freed = 0;
    for (int i = 0; i < CHURN_THREADS; i++) {
        pthread_join(tid[i], NULL);
        tracked += c[i].tracked;
        freed += c[i].freed;
    }
    pthread_barrier_destroy(&start);
    assert_true(h.sweeps > 0);                              /* ids were handed out again meanwhile */
    assert_true(h.n_owners < CHURN_THREADS * CHURN_PHASES); /* some handed out again */
    fp_heap_totals_t t = fp_heap_totals(&h);
    assert_int_equal(t.lost, 0);
    assert_int_equal(t.current, tracked - freed);
    /* Each block left: `keep`'s if its phase's owner was merged, nobody's
     * if it was dropped, whoever holds the id now. */
    for (int thread = 0; thread < CHURN_THREADS; thread++)
        for (int phase = 0; phase < CHURN_PHASES; phase++)
            for (int i = 0; i < CHURN_BLOCKS; i++) {
                fp_heap_block_t b = fp_heap_take(&h, P(churn_addr(thread, phase, i)));
                if (!b.found)
                    continue;
                assert_int_equal(b.owner, phase % 2 ? FP_OWNER_NONE : keep);
            }
    fp_heap_owner_stats_t s = owner(&h, keep);
    assert_int_equal(s.live, 0); /* its blocks, all taken just now */
    assert_int_equal(s.alloc_bytes - s.freed_bytes, 0);
    totals_are(&h, 0, t.peak, 0);
    fp_heap_fini(&h);
}

static void test_bytes_per_million_blocks(void **state)
{
    (void)state;
    fp_heap_t h;
    assert_int_equal(fp_heap_init(&h), 0);
    fp_owner_t o = fp_heap_new_owner(&h);
    for (int i = 1; i <= 1000000; i++)
        fp_heap_track(&h, P(i), 32, o);
    size_t bytes = fp_heap_self_bytes(&h);
    print_message("fp_heap: %zu bytes for 1,000,000 live blocks\n", bytes);
    assert_true(bytes <= (32u << 20) + FP_HEAP_OWNER_CHUNK * sizeof(fp_heap_owner_t));
    totals_are(&h, 32000000, 32000000, 1000000);
    /* A reset gives it back, and the heap works on. */
    fp_heap_reset(&h);
    assert_true(fp_heap_self_bytes(&h) <= 64u << 10);
    totals_are(&h, 0, 0, 0);
    fp_heap_owner_stats_t s;
    assert_int_equal(fp_heap_owner_read(&h, o, &s), -1);
    o = fp_heap_new_owner(&h);
    fp_heap_track(&h, P(1), 5, o);
    totals_are(&h, 5, 5, 1);
    assert_int_equal(owner(&h, o).live, 5);
    fp_heap_fini(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_peak_and_who_held_it),
        cmocka_unit_test(test_owners_merged),
        cmocka_unit_test(test_owners_handed_out_again),
        cmocka_unit_test(test_table_against_a_reference),
        cmocka_unit_test(test_huge_blocks),
        cmocka_unit_test(test_disowned_blocks),
        cmocka_unit_test(test_growth_and_its_failure),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_sweeps_while_threads_track),
        cmocka_unit_test(test_bytes_per_million_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
