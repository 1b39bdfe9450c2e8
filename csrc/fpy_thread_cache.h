/* fpy_thread_cache: the thread of an event for the 3.12+ source
 * (fpy_source_monitoring.c), whose callbacks are not told the thread;
 * fpy_thread_cache.c says how the cache stays right. */
#ifndef FPY_THREAD_CACHE_H
#define FPY_THREAD_CACHE_H

#include "fpy_profiler.h"
#include "fpy_route.h"

#include <pthread.h>

/* OS threads seen by a profiler that have exited since the module loaded. */
extern uint64_t fpy_mon_os_threads_ended;

/* Makes the process-wide thread-exit key, once per process (any module
 * instance or interpreter may call it). */
int fpy_mon_thread_cache_init(void);

/* Forgets the cached thread (attach, a thread's stop, fork child). */
void fpy_mon_thread_cache_reset(fpy_profiler_t *p);

fp_thread_t *fpy_mon_thread_for_slow(fpy_profiler_t *p, uintptr_t os_thread);

/* This OS thread's identity: the thread pointer, which is what
 * pthread_self() returns, read inline where the compiler can. */
static inline uintptr_t fpy_os_thread_self(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/* The record of the thread running this event (of the thread and the
 * request, when routing: fpy_route.h), or NULL when its events are not
 * recorded (threads=False and not the enabling thread) or memory ran out. */
static inline fp_thread_t *fpy_mon_thread_for(fpy_profiler_t *p)
{
    uintptr_t os_thread = fpy_os_thread_self();
    if (os_thread == p->mon.cached_os_thread &&
        p->mon.cached_epoch == __atomic_load_n(&fpy_mon_os_threads_ended, __ATOMIC_RELAXED))
        return fpy_route(p, p->mon.cached_thread);
    return fpy_route(p, fpy_mon_thread_for_slow(p, os_thread));
}

#endif
