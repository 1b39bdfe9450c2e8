/* fpy_heap_hooks: memory profiling's allocator hooks (fpy_heap_hooks.c):
 * Python's three allocator domains wrapped, each block counted into the
 * heap of the memory profiler that records, for the row the thread is in. */
#ifndef FPY_HEAP_HOOKS_H
#define FPY_HEAP_HOOKS_H

#include <Python.h>

#include "fp_profiler.h"

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

/* The calling thread's allocations belong to no row until the next
 * fpy_heap_follow (the profiler's own, while it handles an event); and
 * record `t` (NULL: none) reads this OS thread's allocation counts. */
void fpy_heap_pause(fp_thread_t *t);

/* Testing only: with `clear`, tracemalloc's traces and then `h` cleared,
 * nothing allocated in between (None); else ((current, peak),
 * tracemalloc.get_traced_memory()), both read before either is built. */
PyObject *fpy_heap_vs_tracemalloc(fp_heap_t *h, int clear);

#endif
