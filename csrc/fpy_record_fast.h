/* The common case of each event, inline in the event sources: the TSC
 * clock, a function already in the thread's entry cache, a plain call or
 * return. It calls nothing, so the sources' callbacks stay leaf functions
 * (no registers to save); anything else goes to the general fpy_record_*
 * functions (fpy_record.c). */
#ifndef FPY_RECORD_FAST_H
#define FPY_RECORD_FAST_H

#include "fpy_profiler.h"

#include "fp_account_fast.h"

/* Whether an event may take a fast path. The TSC runs no Python code, so
 * nothing can disable or clear the profiler between the clock read and the
 * recording (the general path checks that around a custom timer). */
FP_HOT int fpy_fast_ok(const fpy_profiler_t *p)
{
    return p->clock.kind == FP_CLOCK_TSC && p->enabled;
}

FP_HOT void fpy_py_start(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code, const void *frame,
                         int first)
{
    if (fpy_fast_ok(p) && !(p->coroutines_wall && (code->co_flags & FPY_CO_SUSPENDABLE))) {
        fp_entry_t *e = fp_entry_cached(t, code);
        if (e && fp_try_enter(&p->core, t, e, NULL, fp_tsc_read()))
            return;
    }
    fpy_record_py_start(p, t, code, frame, first);
}

FP_HOT void fpy_py_stop(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code, const void *frame,
                        int suspending)
{
    if (fpy_fast_ok(p) && !(suspending && p->coroutines_wall && (code->co_flags & FPY_CO_SUSPENDABLE)) &&
        fp_try_leave(t, code, NULL, fp_tsc_read()))
        return;
    fpy_record_py_stop(p, t, code, frame, suspending);
}

FP_HOT void fpy_c_call(fpy_profiler_t *p, fp_thread_t *t, const void *key, PyObject *callable,
                       PyObject *self_arg)
{
    if (fpy_fast_ok(p)) {
        fp_entry_t *e = fp_entry_cached(t, key);
        if (e && fp_try_enter(&p->core, t, e, callable, fp_tsc_read()))
            return;
    }
    fpy_record_c_call(p, t, key, callable, self_arg);
}

/* A C call returns: closes its frame if it is on top, found by the
 * callable (the frame's identity), which spares computing the key. 1 if
 * done; on 0 the source computes the key and calls fpy_record_c_return. */
FP_HOT int fpy_c_return_fast(fpy_profiler_t *p, fp_thread_t *t, PyObject *callable)
{
    return fpy_fast_ok(p) && fp_try_leave(t, NULL, callable, fp_tsc_read());
}

#endif
