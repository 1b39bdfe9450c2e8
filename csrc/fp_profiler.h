/* fp_profiler: the core of fastprof -- per-thread stats tables, shadow call
 * stacks, and cProfile's accounting of calls, tottime and cumtime.
 *
 * Pure C: no Python. A function is identified by an opaque `key` pointer
 * chosen by the binding (a code object, a PyMethodDef); the binding may hang
 * a `user` pointer on each entry, which the core hands back to the
 * profiler's `release` callback when the entry is dropped.
 *
 * Threading: none of these functions lock. The caller guarantees that one
 * thread at a time is inside the core for a given profiler (the binding
 * holds the GIL). Each profiled thread has its own fp_thread_t, so one
 * thread's calls never become another thread's callees.
 *
 * Errors: out of memory on the hot path never fails loudly: the event is
 * dropped (kept balanced) and the profiler's sticky `nomem` flag is set for
 * the binding to report, so the accounting functions return nothing. The
 * few that can fail otherwise say so with an fp_status. */
#ifndef FP_PROFILER_H
#define FP_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "fp_clock.h"
#include "fp_hash.h"
#include "fp_heap.h"

typedef enum { FP_OK = 0, FP_ENOMEM = -1 } fp_status;

enum {
    FP_SUBCALLS = 1 << 0,  /* record caller->callee edges */
    FP_CALLPATHS = 1 << 1, /* record the calling-context tree */
};

/* Stats of one function in one thread. Times are clock ticks. */
typedef struct fp_entry {
    const void *key;
    void *user;
    uint64_t callcount;        /* all calls */
    uint64_t reccallcount;     /* calls made while already active (recursive) */
    fp_time_t cumtime;         /* callees included, outermost activations only
                                  (pstats' cumtime, _lsprof's totaltime) */
    fp_time_t owntime;         /* own code only, callees excluded (pstats'
                                  tottime, _lsprof's inlinetime) */
    int64_t reclevel;          /* activations currently on the stack */
    struct fp_edge *last_edge; /* the edge into this entry used last */
    struct fp_node *last_node; /* the call-path node of this entry used last */
    fp_owner_t mem_owner;      /* memory profiling: the heap's owner of what
                                  its frames allocate with no edge or node
                                  (fp_top_owner); 0 until one does */
    uint64_t mem_incl;         /* memory: bytes allocated, callees included,
                                  outermost activations only (as cumtime) */
    uint64_t mem_peak;         /* memory: the largest rise of its thread's
                                  live bytes over one call, callees included */
    UT_hash_handle hh;
} fp_entry_t;

/* The key of an edge. Two pointers, no padding: uthash hashes and compares
 * its bytes. */
typedef struct fp_edge_key {
    struct fp_entry *caller;
    struct fp_entry *callee;
} fp_edge_key_t;

/* Stats of calls from one function (key.caller) to another (key.callee). */
typedef struct fp_edge {
    fp_edge_key_t key;
    uint64_t callcount;
    uint64_t reccallcount;
    fp_time_t cumtime;
    fp_time_t owntime;
    int32_t reclevel;     /* (32 bits: packed with mem_owner, edges are many) */
    fp_owner_t mem_owner; /* as the entry's, for frames on this edge */
    uint64_t mem_incl, mem_peak;
    UT_hash_handle hh;
} fp_edge_t;

/* The key of a call-path node, as fp_edge_key_t. */
typedef struct fp_node_key {
    struct fp_node *parent; /* NULL: a root */
    struct fp_entry *entry;
} fp_node_key_t;

/* A node of the calling-context tree: one function reached along one path. */
typedef struct fp_node {
    fp_node_key_t key;
    uint64_t callcount;
    fp_time_t cumtime; /* outermost activations at this node only */
    fp_time_t owntime;
    int64_t reclevel;
    int32_t depth;        /* 1 for a root */
    size_t index;         /* creation order in its thread: parents come first */
    fp_owner_t mem_owner; /* as the entry's, for frames at this node */
    uint64_t mem_incl, mem_peak;
    UT_hash_handle hh;
} fp_node_t;

/* One activation on a thread's shadow stack. `seg` is when the frame last
 * started running and `susp` the time it spent suspended (a generator or
 * coroutine in wall mode), so own time = (now - t0) - susp - subt. */
typedef struct fp_frame {
    fp_entry_t *entry;
    fp_edge_t *edge;   /* NULL: no caller, or subcalls off */
    fp_node_t *node;   /* NULL unless call paths are on */
    const void *ident; /* generator identity in wall mode, else NULL */
    int watched;       /* the binding watches this generator's death */
    fp_time_t t0;
    fp_time_t seg;
    fp_time_t susp;
    fp_time_t subt; /* time spent in callees */
} fp_frame_t;

/* Memory profiling's readings of one frame (fp_mem_clock_t readings),
 * kept beside the shadow stack (fp_thread_t.mem_stack, same index) so
 * that the stack's frames stay small when memory is off. */
typedef struct fp_mem_frame {
    int running;              /* the readings below are of this run */
    uint64_t alloc0;          /* when the frame last started running: */
    int64_t live0, saved_max; /* its thread's counts then */
    uint64_t incl_acc;        /* what its runs before allocated, */
    int64_t rise_acc;         /* and the highest they rose */
    uint64_t sub_alloc;       /* what its callees' runs allocated (its lines'
                                 own bytes, fpy_lines.c) */
} fp_mem_frame_t;

/* Memory profiling: the allocation counts of the OS thread a record runs
 * on, which the binding's allocator hooks keep (one per OS thread, never
 * freed while a record may point at it). The accounting reads them as a
 * second clock: a frame's bytes including callees, and its peak. */
typedef struct fp_mem_clock {
    uint64_t allocated; /* bytes allocated for rows on this thread, ever */
    int64_t live;       /* those bytes less the bytes freed on this thread */
    int64_t frame_max;  /* the highest `live` since the top frame started */
} fp_mem_clock_t;

/* A frame taken off the stack while its generator is suspended. */
typedef struct fp_parked {
    const void *ident;
    int dead; /* its generator is gone without returning: close it where it parked */
    fp_frame_t frame;
    fp_mem_frame_t mem; /* its memory readings (memory profiling) */
    UT_hash_handle hh;
} fp_parked_t;

/* A direct-mapped cache in front of the entry table: most events hit a
 * function seen moments ago, and one compare beats a hash-table probe. */
#define FP_ENTRY_CACHE_BITS 8

/* The same for edges, for the callees called from several callers in turn
 * (a constructor, a property), which miss their entry's last_edge. */
#define FP_EDGE_CACHE_BITS 8

typedef struct fp_cached_entry {
    const void *key;
    struct fp_entry *entry;
} fp_cached_entry_t;

typedef struct fp_thread {
    uint64_t id;        /* chosen by the binding, unique */
    uint64_t ident;     /* labels set by the binding for display; */
    uint64_t native_id; /* the core does not read them */
    int stopped;        /* set by the binding: this thread's events are
                           no longer recorded (the core does not read it) */
    int foldable;       /* set by the binding: a thread's own record, folded
                           into its group's once the thread has ended */
    uint64_t group;     /* set by the binding: the name group of the thread */
    uint64_t folded;    /* how many threads' records fp_thread_fold added
                           into this one (0: a thread's own record) */
    fp_entry_t *entries;
    fp_edge_t *edges;
    fp_node_t *nodes;
    fp_parked_t *parked;
    fp_frame_t *stack;
    size_t depth;
    size_t capacity;
    size_t lost;        /* pushes dropped (out of memory) whose pops must be skipped */
    fp_time_t last_now; /* the program time of this thread's last event */
    /* The profiler's own time on this thread so far (its callbacks, from
     * their first clock read to their last, plus the calibrated cost of
     * delivering each event): a clock reading less this is program time,
     * the only time the accounting sees (fp_program_time, fp_charge in
     * fp_profiler.h). Stays 0 for raw times; clear() resets it. */
    fp_time_t offset;
    /* Events charged to `offset` that are no call's start or end (3.12+'s
     * call-site CALL events, calls nothing records, line events): with the
     * calls' two each, what the removed time is spread over (the trailer's
     * "events", data/cost_note.py). clear() resets it. */
    uint64_t extra_events;
    /* The time of the calls that returned to an empty stack: the callee
     * time of a frame begun before profiling, which is on no stack (its
     * lines' own times, fpy_lines.c). clear() resets it. */
    fp_time_t root_subt;
    /* memory: what the calls that returned to an empty stack allocated (as
     * root_subt). clear() resets it. */
    uint64_t root_sub_alloc;
    size_t n_entries, n_edges, n_nodes;
    /* memory profiling: the allocation counts of the OS thread this record
     * last ran on (set by the binding before each event), or NULL */
    fp_mem_clock_t *mem;
    /* memory profiling: each stack frame's readings, allocated on first
     * use; slots from mem_capacity up are missing (out of memory) */
    fp_mem_frame_t *mem_stack;
    size_t mem_capacity;
    fp_cached_entry_t cache[1 << FP_ENTRY_CACHE_BITS];
    struct fp_edge *edge_cache[1 << FP_EDGE_CACHE_BITS];
    UT_hash_handle hh;
} fp_thread_t;

typedef void (*fp_release_fn)(void *user, void *ctx);

typedef struct fp_profiler {
    fp_thread_t *threads; /* hash by id, in creation order */
    unsigned flags;
    int32_t max_depth; /* call-path depth bound, >= 1 */
    int nomem;         /* sticky: some event or table add ran out of memory */
    fp_heap_t *heap;   /* memory profiling: the heap whose owners the rows
                          name (set by the binding), else NULL */
    fp_release_fn release;
    void *release_ctx;
} fp_profiler_t;

/* ---- lifecycle (fp_profiler.c) ---- */

/* Initialises `p`. `release` (may be NULL) is called once for every
 * non-NULL entry user pointer when the entry is dropped. */
void fp_profiler_init(fp_profiler_t *p, unsigned flags, int32_t max_depth, fp_release_fn release,
                      void *release_ctx);

/* Drops all threads, stats and stacks (releasing user pointers). `p` stays
 * usable, as after fp_profiler_init. */
void fp_profiler_destroy(fp_profiler_t *p);

/* Drops the stats and open frames of every thread but keeps the thread
 * records themselves, so pointers to them held by the binding stay valid. */
void fp_profiler_clear(fp_profiler_t *p);

/* The record of thread `id`, created on first use; NULL when out of memory
 * (nomem is set). */
fp_thread_t *fp_thread_get(fp_profiler_t *p, uint64_t id);

/* The record of thread `id`, or NULL if that thread has none. */
fp_thread_t *fp_thread_find(fp_profiler_t *p, uint64_t id);

/* Removes thread record `t` from `p` and frees it (its stats, its open
 * frames, releasing user pointers). */
void fp_thread_drop(fp_profiler_t *p, fp_thread_t *t);

/* fp_thread_drop for a record whose stats are thrown away, not folded
 * (a request's): memory profiling's owners of its rows are dropped too. */
void fp_thread_discard(fp_profiler_t *p, fp_thread_t *t);

/* Bytes used by the tables, stacks and records of `p`. */
size_t fp_profiler_memory(const fp_profiler_t *p);

/* Adds the stats of every thread of `src` into the single thread record
 * `dst` (normally a fresh one, not owned by any profiler): entries are
 * matched by key, edges and call-path nodes by the keys of their ends.
 * Entries new to `dst` borrow the source's user pointer (release nothing
 * when `dst` is dropped: use fp_thread_free with release NULL).
 * Returns FP_OK or FP_ENOMEM (dst then holds part of the merge). */
fp_status fp_thread_merge(fp_thread_t *dst, const fp_thread_t *src);

/* Moves the stats of `src`, the record of a thread that has ended, into
 * `dst` (both of `p`), then drops `src`: frames still open on `src` close
 * at its last event; entries, edges and call-path nodes add up by key;
 * entries new to `dst` take over `src`'s user pointers (the others are
 * released with `src`); the profiler's time on `src` (`offset`) is added
 * to `dst`'s, and `dst->folded` counts the threads folded into it.
 * FP_ENOMEM: neither record changed but for the closed frames (`src`
 * stays, to fold again later). */
fp_status fp_thread_fold(fp_profiler_t *p, fp_thread_t *dst, fp_thread_t *src);

/* Frees a thread record not owned by a profiler (e.g. a merge result),
 * calling `release` for each entry's user pointer if non-NULL. */
void fp_thread_free(fp_thread_t *t, fp_release_fn release, void *ctx);

/* A fresh, empty thread record not owned by any profiler; NULL on OOM. */
fp_thread_t *fp_thread_new(uint64_t id);

/* Inlined even where the compiler would rather not: the event callbacks
 * must stay leaf functions. (Not GCC's `hot` attribute, which only moves
 * code.) */
#define FP_FORCE_INLINE static inline __attribute__((always_inline))

/* ---- tables (fp_table.c) ---- */

/* The entry for `key` in thread `t`, or NULL. */
fp_entry_t *fp_entry_find_slow(fp_thread_t *t, const void *key);

static inline fp_cached_entry_t *fp_entry_slot(fp_thread_t *t, const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
    return &t->cache[h >> (64 - FP_ENTRY_CACHE_BITS)];
}

/* The entry for `key` if the cache holds it, else NULL (no table probe). */
static inline fp_entry_t *fp_entry_cached(fp_thread_t *t, const void *key)
{
    fp_cached_entry_t *slot = fp_entry_slot(t, key);
    return slot->key == key ? slot->entry : NULL;
}

static inline fp_entry_t *fp_entry_find(fp_thread_t *t, const void *key)
{
    fp_entry_t *e = fp_entry_cached(t, key);
    return e ? e : fp_entry_find_slow(t, key);
}

/* Adds an entry for `key` with `user` attached; the core owns `user` from
 * here on (released with the entry). Returns NULL when out of memory, in
 * which case `user` is NOT taken. */
fp_entry_t *fp_entry_add(fp_thread_t *t, const void *key, void *user);

/* The edge caller->callee in `t`, created if missing; NULL on OOM. */
fp_edge_t *fp_edge_get_slow(fp_thread_t *t, fp_entry_t *caller, fp_entry_t *callee);

static inline fp_edge_t **fp_edge_slot(fp_thread_t *t, const fp_entry_t *caller,
                                       const fp_entry_t *callee)
{
    /* Asymmetric in caller and callee, so mutual recursion's two edges
     * do not evict each other. */
    uint64_t h =
        ((uint64_t)(uintptr_t)caller ^ ((uint64_t)(uintptr_t)callee >> 5)) * 0x9E3779B97F4A7C15ull;
    return &t->edge_cache[h >> (64 - FP_EDGE_CACHE_BITS)];
}

/* The edge caller->callee if a cache holds it, else NULL (no table probe).
 * Loops call the same callee from the same caller over and over, so the
 * callee's last edge is tried first, then the thread's edge cache. */
FP_FORCE_INLINE fp_edge_t *fp_edge_cached(fp_thread_t *t, fp_entry_t *caller, fp_entry_t *callee)
{
    fp_edge_t *edge = callee->last_edge;
    if (edge && edge->key.caller == caller)
        return edge;
    edge = *fp_edge_slot(t, caller, callee);
    if (edge && edge->key.caller == caller && edge->key.callee == callee) {
        callee->last_edge = edge;
        return edge;
    }
    return NULL;
}

static inline fp_edge_t *fp_edge_get(fp_thread_t *t, fp_entry_t *caller, fp_entry_t *callee)
{
    fp_edge_t *edge = fp_edge_cached(t, caller, callee);
    return edge ? edge : fp_edge_get_slow(t, caller, callee);
}

/* The call-path node for `entry` under `parent` (NULL: a root), created if
 * missing; NULL on OOM. */
fp_node_t *fp_node_get(fp_thread_t *t, fp_node_t *parent, fp_entry_t *entry);

/* ---- accounting (fp_account.c); `now` is program time: a reading of
 * the clock less the thread's `offset` (fp_program_time), or the reading
 * itself for raw times ---- */

/* Program time on `t` of the clock reading `raw` taken at an event's
 * start: the reading less the profiler's own time so far. Never earlier
 * than the thread's last event: when the calibrated delivery cost charged
 * since was more than the time that really passed (a tiny function), the
 * time stands still and the surplus stays owed, taken from the next
 * intervals, so that no time comes out negative and the total removed is
 * exactly what was charged. */
FP_FORCE_INLINE fp_time_t fp_program_time(const fp_thread_t *t, fp_time_t raw)
{
    fp_time_t now = raw - t->offset;
    return __builtin_expect(now < t->last_now, 0) ? t->last_now : now;
}

/* The event that read `raw` at its start (fp_program_time) ends, its last
 * clock reading `done`: its time and `extra` (the calibrated cost of the
 * interpreter delivering it, outside those readings) go to the profiler's
 * account, so they are not in any time the thread reports. */
FP_FORCE_INLINE void fp_charge(fp_thread_t *t, fp_time_t raw, fp_time_t done, fp_time_t extra)
{
    t->offset += done - raw + extra;
}

/* A call of `e` starts on `t`. `ident` names a generator/coroutine frame
 * that may later be parked with fp_suspend (NULL for plain calls). `e` may
 * be NULL when the binding could not get an entry (out of memory): the call
 * is dropped like a failed push (nomem set) and its return, still to be
 * reported with fp_leave, pops nothing. */
void fp_enter(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now);

/* The call of the function `key` on top of `t`'s stack returns. If `key`
 * is not on top but a few frames down, the frames above it are closed
 * first (recovery from a missed return); if it is not found the event is
 * ignored (a return from a frame entered before profiling started). */
void fp_leave(fp_profiler_t *p, fp_thread_t *t, const void *key, fp_time_t now);

/* The generator frame of `key` on top of `t` suspends (yield/await): it is
 * taken off the stack, still open, and parked under `ident` (out of
 * memory: booked as a finished call instead, nomem set). */
void fp_suspend(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident, fp_time_t now);

/* A generator frame resumes: the frame parked on `t` under `ident` goes
 * back on top of the stack; if none is parked there, this is a first start:
 * fp_enter(p, t, e, ident, now) (so `e` may be NULL, as there). */
void fp_resume(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now);

/* A generator frame starts for the first time. A frame still parked under
 * the same `ident` belonged to a generator that vanished without a return
 * event (its memory reused): it is closed where it parked. */
void fp_start(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now);

/* The frame parked on `t` under `ident`, or NULL. */
fp_parked_t *fp_parked_find(fp_thread_t *t, const void *ident);

/* The generator of the frame parked under `ident` is gone: the frame will
 * be closed at the time it parked (at flush, or when `ident` starts anew). */
void fp_mark_dead(fp_thread_t *t, const void *ident);

/* Closes every open frame of `t`, parked ones included, as if returning
 * at `now` (what cProfile does on disable); dead parked frames close where
 * they parked. */
void fp_thread_flush(fp_profiler_t *p, fp_thread_t *t, fp_time_t now);

/* ---- memory (fp_account.c) ---- */

/* fp_try_enter / fp_try_leave with memory on (p->heap): the same common
 * cases, and only when the row the thread's allocations then belong to
 * already has an owner, which goes to *owner (fp_top_owner gives a row its
 * owner on the general path); the frame's memory readings start or are
 * booked as fp_enter / fp_leave do. 1 if done, 0 changing nothing. */
int fp_try_enter_memory(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident,
                        fp_time_t now, fp_owner_t *owner);
int fp_try_leave_memory(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                        fp_time_t now, fp_owner_t *owner);

/* The heap owner of what `t` allocates now: its top frame's most precise
 * row (the call-path node, else the edge it was called on, else its
 * entry), given an owner on first use; 0 when memory is off, the stack is
 * empty, or the heap has no room for another owner. */
fp_owner_t fp_top_owner(fp_profiler_t *p, fp_thread_t *t);

#endif
