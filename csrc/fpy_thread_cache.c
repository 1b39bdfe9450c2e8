/* Which thread record an event belongs to, for the 3.12+ event source,
 * whose callbacks are not told the thread. Asking CPython for the current
 * thread state is a thread-local read that goes through __tls_get_addr in
 * a shared libpython (about 25 instructions, a sixth of fastprof's own work
 * per event), so the profiler remembers the OS thread of the last event
 * (its thread pointer, a register read) and its record.
 *
 * An OS thread that exits may have its pthread_self() value reused by a
 * new thread: a thread-specific key, set on each thread the cache has
 * seen, bumps `fpy_mon_os_threads_ended` when such a thread exits, and the
 * cache trusts only entries made since the last bump. Thread states
 * swapped on one OS thread (PyGILState_Ensure/Release from a native
 * thread, one after the other) share that thread's record. */
#include "fpy_thread_cache.h"

#if FPY_USE_MONITORING /* the legacy source's hooks know their thread */

/* Process-wide on purpose, unlike the module state (fpy_module.c): OS
 * threads and pthread keys belong to the process, not to an interpreter or
 * a module instance. The key is made once per process (a key per import
 * would leak one of the few PTHREAD_KEYS_MAX); the counter is atomic, so
 * interpreters with their own GIL share it safely. An exit seen by any
 * profiler invalidates every profiler's cache: a cost, never a wrong
 * answer. */
uint64_t fpy_mon_os_threads_ended;

static pthread_key_t seen_key;
static int seen_key_ok; /* written once, under seen_key_once */
static pthread_once_t seen_key_once = PTHREAD_ONCE_INIT;

static void on_seen_thread_exit(void *value)
{
    (void)value;
    __atomic_fetch_add(&fpy_mon_os_threads_ended, 1, __ATOMIC_RELAXED);
}

static void make_seen_key(void)
{
    /* Without the key, exits cannot be told: the cache stays off. */
    seen_key_ok = pthread_key_create(&seen_key, on_seen_thread_exit) == 0;
}

int fpy_mon_thread_cache_init(void)
{
    return pthread_once(&seen_key_once, make_seen_key) == 0 ? 0 : -1;
}

void fpy_mon_thread_cache_reset(fpy_profiler_t *p)
{
    p->mon.cached_os_thread = 0;
    p->mon.cached_thread = NULL;
}

fp_thread_t *fpy_mon_thread_for_slow(fpy_profiler_t *p, uintptr_t os_thread)
{
    /* Read the epoch first: an exit after this makes the entry stale. */
    uint64_t epoch = __atomic_load_n(&fpy_mon_os_threads_ended, __ATOMIC_RELAXED);
    PyThreadState *tstate = PyThreadState_Get();
    fp_thread_t *t = NULL;
    if (p->threads_all || tstate->id == p->owner_tid) {
        int fresh = p->threads_all && !fp_thread_find(&p->core, tstate->id);
        uint64_t group = 0;
        if (fresh) {
            group = fpy_thread_started(p, tstate->id);
            if (!p->enabled)
                return NULL; /* disabled meanwhile: record nothing */
        }
        t = fpy_thread_record(p, tstate);
        if (!t)
            return NULL; /* out of memory: try again next event */
        if (fresh)
            t->group = group;
        if (t->stopped)
            t = NULL; /* disable(this_thread=True) */
    }
    if (!seen_key_ok)
        return t;
    if (!pthread_getspecific(seen_key) && pthread_setspecific(seen_key, &seen_key) != 0)
        return t; /* cannot watch this thread's exit: do not cache it */
    p->mon.cached_os_thread = os_thread;
    p->mon.cached_epoch = epoch;
    p->mon.cached_thread = t;
    return t;
}

#endif
