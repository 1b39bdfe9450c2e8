/* Shared helpers of the cmocka tests of the core: fake keys, scripted events
 * with explicit clock readings ("now" values are plain integers chosen by
 * each test, so every expected number is exact), lookups that never create,
 * and a release callback that counts.
 *
 * Header-only (static inline) so each test_*.c stays one translation unit;
 * include it after the system headers cmocka needs. */
#ifndef FP_TESTLIB_H
#define FP_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "fp_profiler.h"

/* Fake keys: the core only compares key pointers, so distinct addresses in
 * one static array do. Generator identities come from the same array. */
static char tl_keys[16];
#define KM ((const void *)&tl_keys[0])
#define KA ((const void *)&tl_keys[1])
#define KB ((const void *)&tl_keys[2])
#define KC ((const void *)&tl_keys[3])
#define KD ((const void *)&tl_keys[4])
#define KE ((const void *)&tl_keys[5])
#define KF ((const void *)&tl_keys[6])
#define KG ((const void *)&tl_keys[7])
#define KH ((const void *)&tl_keys[8])
#define KX ((const void *)&tl_keys[9])
#define G1 ((const void *)&tl_keys[14])
#define G2 ((const void *)&tl_keys[15])

/* The entry of `key`, created (with no user pointer) on first use, as the
 * binding does on a call event. */
static inline fp_entry_t *tl_entry(fp_thread_t *t, const void *key)
{
    fp_entry_t *e = fp_entry_find(t, key);
    return e ? e : fp_entry_add(t, key, NULL);
}

/* Scripted events; each asserts the core accepted it: a call or resume
 * pushed its frame, a yield did not run out of memory. */
static inline void tl_call(fp_profiler_t *p, fp_thread_t *t, const void *key, fp_time_t now)
{
    fp_entry_t *e = tl_entry(t, key);
    assert_non_null(e);
    size_t depth = t->depth;
    fp_enter(p, t, e, NULL, now);
    assert_int_equal(t->depth, depth + 1);
}

static inline void tl_ret(fp_profiler_t *p, fp_thread_t *t, const void *key, fp_time_t now)
{
    fp_leave(p, t, key, now);
}

static inline void tl_gen_start(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                                fp_time_t now)
{
    fp_entry_t *e = tl_entry(t, key);
    assert_non_null(e);
    size_t depth = t->depth;
    fp_enter(p, t, e, ident, now);
    assert_int_equal(t->depth, depth + 1);
}

static inline void tl_yield(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                            fp_time_t now)
{
    int nomem = p->nomem;
    fp_suspend(p, t, key, ident, now);
    assert_int_equal(p->nomem, nomem);
}

static inline void tl_resume(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                             fp_time_t now)
{
    fp_entry_t *e = tl_entry(t, key);
    assert_non_null(e);
    size_t depth = t->depth;
    fp_resume(p, t, e, ident, now);
    assert_int_equal(t->depth, depth + 1);
}

/* Lookups that never create anything. */
static inline fp_edge_t *tl_edge(fp_thread_t *t, const void *caller_key, const void *callee_key)
{
    fp_entry_t *a = fp_entry_find(t, caller_key);
    fp_entry_t *b = fp_entry_find(t, callee_key);
    if (!a || !b)
        return NULL;
    fp_edge_key_t key = {.caller = a, .callee = b};
    fp_edge_t *g;
    HASH_FIND(hh, t->edges, &key, sizeof key, g);
    return g;
}

/* The node of `key` under `parent` (NULL: a root), or NULL. */
static inline fp_node_t *tl_node(fp_thread_t *t, const fp_node_t *parent, const void *key)
{
    fp_entry_t *e = fp_entry_find(t, key);
    if (!e)
        return NULL;
    fp_node_key_t pk = {.parent = (fp_node_t *)parent, .entry = e};
    fp_node_t *n;
    HASH_FIND(hh, t->nodes, &pk, sizeof pk, n);
    return n;
}

static inline size_t tl_count_parked(const fp_thread_t *t)
{
    return HASH_COUNT(t->parked);
}

/* Exact stats of an entry or edge: calls, recursive calls, cumulative (tt)
 * and inline (it) time. Macros so a failure reports the caller's line. */
#define assert_stats(x, cc, rc, tt_, it_)                                                               \
    do {                                                                                                \
        assert_non_null(x);                                                                             \
        assert_int_equal((x)->callcount, (cc));                                                         \
        assert_int_equal((x)->reccallcount, (rc));                                                      \
        assert_int_equal((x)->cumtime, (tt_));                                                          \
        assert_int_equal((x)->owntime, (it_));                                                          \
    } while (0)

#define assert_entry(t, key, cc, rc, tt_, it_) assert_stats(fp_entry_find((t), (key)), cc, rc, tt_, it_)
#define assert_edge(t, ka, kb, cc, rc, tt_, it_) assert_stats(tl_edge((t), (ka), (kb)), cc, rc, tt_, it_)

#define assert_node(n, cc, tt_, it_, depth_)                                                            \
    do {                                                                                                \
        assert_non_null(n);                                                                             \
        assert_int_equal((n)->callcount, (cc));                                                         \
        assert_int_equal((n)->cumtime, (tt_));                                                          \
        assert_int_equal((n)->owntime, (it_));                                                          \
        assert_int_equal((n)->depth, (depth_));                                                         \
    } while (0)

/* Every frame closed, nothing active: reclevels back to zero. */
static inline void tl_assert_idle(const fp_thread_t *t)
{
    assert_int_equal(t->depth, 0);
    assert_int_equal(t->lost, 0);
    for (const fp_entry_t *e = t->entries; e; e = e->hh.next)
        assert_int_equal(e->reclevel, 0);
    for (const fp_edge_t *g = t->edges; g; g = g->hh.next)
        assert_int_equal(g->reclevel, 0);
    for (const fp_node_t *n = t->nodes; n; n = n->hh.next)
        assert_int_equal(n->reclevel, 0);
}

/* Release callback that counts calls per user pointer. Users are small
 * integers cast to pointers (1..TL_MAX_USERS-1), never dereferenced. */
#define TL_MAX_USERS 64
typedef struct {
    unsigned calls[TL_MAX_USERS];
    unsigned total;
    unsigned bad; /* pointers outside the range */
} tl_release_log_t;

static inline void tl_release(void *user, void *ctx)
{
    tl_release_log_t *log = ctx;
    uintptr_t u = (uintptr_t)user;
    log->total++;
    if (u == 0 || u >= TL_MAX_USERS)
        log->bad++;
    else
        log->calls[u]++;
}

#define TL_USER(n) ((void *)(uintptr_t)(n))

#endif
