/* fpy_heap_hooks: memory profiling's allocator hooks (fpy_heap_hooks.c):
 * Python's three allocator domains wrapped, each block counted into the
 * heap of the memory profiler that records, for the row the thread is in. */
#ifndef FPY_HEAP_HOOKS_H
#define FPY_HEAP_HOOKS_H

#include <Python.h>

#include "fp_profiler.h"
#include "fpy_compat.h"

/* A heap for a memory profiler, empty (kept from an earlier one, or new);
 * NULL with an exception set. */
fp_heap_t *fpy_heap_acquire(void);

/* The profiler is done with `h` (NULL is fine): emptied and kept. */
void fpy_heap_release(fp_heap_t *h);

/* The hooks count into `h` from now on (wrapping the allocators if they are
 * not yet); -1 with RuntimeError when they already count for a profiler
 * (one memory profile at a time), or when an earlier stop could not take
 * them out. */
int fpy_heap_start(fp_heap_t *h);

/* The hooks stop counting and come out of the chain where they are still
 * the domain's allocator: 1 if they all were, 0 if another tool wrapped or
 * replaced some meanwhile (its chain is left as it is). */
int fpy_heap_stop(void);

/* The calling thread's allocations belong to the top row of record `t`
 * from now on (after each event of the general path, memory on). */
void fpy_heap_follow(fp_profiler_t *core, fp_thread_t *t);

/* The memory-aware fast paths (fpy_record.c): whether the calling
 * thread's hook state was set by an earlier fpy_heap_follow for this heap
 * (same epoch) and record `t` reads this OS thread's counts, so that an
 * event only has to say which row allocates next (fpy_heap_fast_owner). */
int fpy_heap_fast_ready(const fp_profiler_t *core, const fp_thread_t *t);
void fpy_heap_fast_owner(fp_owner_t owner);

/* The calling thread's allocations belong to no row until the next
 * fpy_heap_follow (the profiler's own, while it handles an event); and
 * record `t` (NULL: none) reads this OS thread's allocation counts. */
void fpy_heap_pause(fp_thread_t *t);

/* sys.monitoring on 3.12 and 3.13 makes a new int object for an event's
 * code offset or line number (beyond the small ints) just before it calls
 * the tools' callbacks, and frees it after: a block the program did not
 * ask for, which the hooks charged to the row the thread is in. Each
 * callback (the profiler's and the line counter's, memory on) gives such
 * an argument to fpy_heap_disown_event_int first: it counts for nobody
 * (in the totals only, which tracemalloc's include too). Idempotent: every
 * tool's callback gets the same object. 3.14 takes these ints from a free
 * list (no allocation, except when the list is empty). */
#if FPY_EVENT_INTS_ALLOCATED
void fpy_heap_disown_allocated_int(PyObject *obj);
static inline void fpy_heap_disown_event_int(PyObject *obj)
{
    /* a small int (the interpreter's static ones) was never allocated */
    if (PyLong_CheckExact(obj) &&
        !(PyUnstable_Long_IsCompact((PyLongObject *)obj) &&
          (uint64_t)(PyUnstable_Long_CompactValue((PyLongObject *)obj) + 5) <= 261))
        fpy_heap_disown_allocated_int(obj);
}
#endif

/* The calling thread's allocations count for no row (the totals only)
 * until fpy_heap_restore_owner(the value returned): the profiler's own
 * Python code run between events (line profiling's decisions). */
fp_owner_t fpy_heap_hold_owner(void);
void fpy_heap_restore_owner(fp_owner_t owner);

/* For other allocators' hooks (numpy's data handler, fpy_numpy_handler.c),
 * no Python API inside: fpy_heap_enter gives the heap to count a call into
 * and holds this thread's hooks off (the allocator it wraps may call
 * Python's), or NULL (then count nothing, and no leave); the block is
 * noted (alloc), taken out before it is freed (take, then taken once it
 * is gone, or untake if it stays); then fpy_heap_leave. */
fp_heap_t *fpy_heap_enter(void);
void fpy_heap_leave(void);
void fpy_heap_note_alloc(fp_heap_t *h, void *ptr, uint64_t size);
fp_heap_block_t fpy_heap_note_take(fp_heap_t *h, void *ptr);
void fpy_heap_note_taken(fp_heap_block_t b);
void fpy_heap_note_untake(fp_heap_t *h, void *ptr, fp_heap_block_t b);

/* numpy's default data handler (fpy_numpy_handler.c): hooked if numpy is
 * loaded and has handlers (1.22+), unhooked (if still ours); whether it is
 * hooked now. The GIL held. */
void fpy_numpy_hook(void);
void fpy_numpy_unhook(void);
int fpy_numpy_hooked(void);

/* Testing only: with `clear`, tracemalloc's traces and then `h` cleared,
 * nothing allocated in between (None); else ((current, peak),
 * tracemalloc.get_traced_memory()), both read before either is built. */
PyObject *fpy_heap_vs_tracemalloc(fp_heap_t *h, int clear);

#endif
