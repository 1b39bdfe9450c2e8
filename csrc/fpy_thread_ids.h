/* fpy_thread_ids: the ids of an interpreter's threads, taken before acting
 * on any of them. Acting on a thread (hooking it, setting its tracer) can
 * run the GC or audit hooks, which may release the GIL and let threads
 * end, freeing thread states under a walk; ids stay valid to look up. */
#ifndef FPY_THREAD_IDS_H
#define FPY_THREAD_IDS_H

#include <Python.h>
#include <stdint.h>

/* Which thread states to take (NULL: all); `arg` is passed on. */
typedef int (*fpy_thread_wanted_fn)(PyThreadState *ts, void *arg);

/* The ids of the threads of `interp` that `wanted` takes, in a PyMem
 * array (*ids, freed by the caller with PyMem_Free; NULL when *n is 0).
 * 0, or -1 with MemoryError set. */
int fpy_thread_ids(PyInterpreterState *interp, fpy_thread_wanted_fn wanted, void *arg, uint64_t **ids,
                   size_t *n);

/* The thread state of `interp` with id `id`, or NULL when it has ended. */
PyThreadState *fpy_thread_by_id(PyInterpreterState *interp, uint64_t id);

#endif
