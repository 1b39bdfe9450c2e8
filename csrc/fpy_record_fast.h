/* Each event, as the sources call it: fpy_record_<event> is inline and
 * tries the common case first (the TSC clock, a function already in the
 * thread's entry cache, a plain call or return), which calls nothing, so
 * the sources' callbacks stay leaf functions (no registers to save);
 * anything else goes to the general path, fpy_record_<event>_slow
 * (fpy_record.c). Both take the profiler's own time out (fpy_charge).
 * Events: a Python frame enters (starts or resumes) or
 * leaves (returns or yields); a C function is entered (called) or left. */
#ifndef FPY_RECORD_FAST_H
#define FPY_RECORD_FAST_H

#include "fpy_profiler.h"

#include "fp_account_fast.h"

/* Whether an event may take a fast path (`fast_events`: enabled, the TSC,
 * memory off). The TSC runs no Python code, so nothing can disable or
 * clear the profiler between the clock read and the recording (the general
 * path checks that around a custom timer). */
FP_FORCE_INLINE int fpy_fast_ok(const fpy_profiler_t *p)
{
    return p->fast_events;
}

/* fp_try_enter with the TSC read now and, when done, the event's cost
 * charged to the thread. A fast-path event costs about the same every
 * time, so its cost is not read (a second TSC read would add several ns
 * to every event) but calibrated whole, delivery and callback together
 * (`cost`, python/fastprof/calibration.py: 0 with compensation off,
 * so raw times need no test here); the general path reads its own. */
FP_FORCE_INLINE int fpy_try_enter(fpy_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident,
                                  fpy_cost_t cost)
{
    if (!fp_try_enter(&p->core, t, e, ident, fp_program_time(t, fp_tsc_read() - cost.pre)))
        return 0;
    t->offset += cost.whole;
    return 1;
}

/* fp_try_leave the same way. */
FP_FORCE_INLINE int fpy_try_leave(fp_thread_t *t, const void *key, const void *ident, fpy_cost_t cost)
{
    if (!fp_try_leave(t, key, ident, fp_program_time(t, fp_tsc_read() - cost.pre)))
        return 0;
    t->offset += cost.whole;
    return 1;
}

FP_FORCE_INLINE void fpy_record_py_enter(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code,
                                         const void *frame, int first)
{
    if (fpy_fast_ok(p) && !fpy_frame_parks(p, code)) {
        fp_entry_t *e = fp_entry_cached(t, code);
        if (e && fpy_try_enter(p, t, e, NULL, fpy_delivery_enter(p, first)))
            return;
    }
    fpy_record_py_enter_slow(p, t, code, frame, first);
}

FP_FORCE_INLINE void fpy_record_py_leave(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code,
                                         const void *frame, int suspending)
{
    if (fpy_fast_ok(p) && !(suspending && fpy_frame_parks(p, code)) &&
        fpy_try_leave(t, code, NULL, fpy_delivery_leave(p, suspending)))
        return;
    fpy_record_py_leave_slow(p, t, code, frame, suspending);
}

FP_FORCE_INLINE void fpy_record_c_enter(fpy_profiler_t *p, fp_thread_t *t, const void *key,
                                        PyObject *callable, PyObject *self_arg)
{
    if (fpy_fast_ok(p)) {
        fp_entry_t *e = fp_entry_cached(t, key);
        if (e && fpy_try_enter(p, t, e, callable, p->cost[FPY_COST_C_CALL]))
            return;
    }
    fpy_record_c_enter_slow(p, t, key, callable, self_arg);
}

/* The fast path finds the frame by the callable (its identity), which
 * spares computing the key; only the general path needs it. `self_arg`
 * and `missing` as for fpy_cfunc_key. */
FP_FORCE_INLINE void fpy_record_c_leave(fpy_profiler_t *p, fp_thread_t *t, PyObject *callable,
                                        PyObject *self_arg, PyObject *missing)
{
    if (fpy_fast_ok(p) && fpy_try_leave(t, NULL, callable, p->cost[FPY_COST_C_RETURN]))
        return;
    fpy_record_c_leave_slow(p, t, callable, self_arg, missing);
}

#endif
