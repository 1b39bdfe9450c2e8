/* fpy_route: request routing (fastprof.middleware). With a routing context
 * variable set (Profiler._route_by), an event is recorded in the record of
 * its thread *and* the request whose id the variable holds in the running
 * context, or not at all when none does: one web request's work, in its
 * thread or task, the worker threads it ran on (which copy the context),
 * and nothing of the requests running at the same time. */
#ifndef FPY_ROUTE_H
#define FPY_ROUTE_H

#include "fpy_profiler.h"

/* Record ids of routed records: the top bit, the request id (31 bits) and
 * the low 32 bits of the thread record's id. */
#define FPY_ROUTE_BIT ((uint64_t)1 << 63)
#define FPY_ROUTE_MAX_REQUEST 0x7fffffffu

fp_thread_t *fpy_route_slow(fpy_profiler_t *p, fp_thread_t *t);

/* The record an event of thread record `t` goes to: `t` itself unless the
 * profiler routes by request. */
FP_FORCE_INLINE fp_thread_t *fpy_route(fpy_profiler_t *p, fp_thread_t *t)
{
    if (__builtin_expect(p->route.var == NULL, 1) || !t)
        return t;
    return fpy_route_slow(p, t);
}

/* Profiler._route_by(var, open) and Profiler._drop_route(request) */
PyObject *fpy_route_by(fpy_profiler_t *p, PyObject *args);
PyObject *fpy_route_drop(fpy_profiler_t *p, PyObject *request);
/* Profiler._route_times(request): a list of (record id, thread ident,
 * seconds in the request's context, CPU seconds of the thread meanwhile,
 * the profiler's own seconds meanwhile, the seconds compensation took out
 * of the record's times, the events it charged that are no call's start or
 * end), one per thread that ran the request; the calling thread's stay in
 * it ends. */
PyObject *fpy_route_times(fpy_profiler_t *p, PyObject *request);
/* clear(): the parts' times start again from 0. */
void fpy_route_clear_times(fpy_profiler_t *p);
/* Bytes of the routing's own tables (memory() adds them to the core's). */
size_t fpy_route_memory(const fpy_profiler_t *p);
/* The profiler is freed: the parts go (their records are the core's). */
void fpy_route_free(fpy_profiler_t *p);
/* Record `t` is about to be freed (fpy_thread_fold.c): the routing cache
 * forgets it. */
void fpy_route_forget_thread(fpy_profiler_t *p, const fp_thread_t *t);
int fpy_route_traverse(fpy_profiler_t *p, visitproc visit, void *arg);
void fpy_route_clear(fpy_profiler_t *p);

#endif
