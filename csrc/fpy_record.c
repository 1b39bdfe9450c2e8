/* From interpreter events to core calls, shared by both event sources.
 *
 * Order matters: the clock is read first, because a custom timer may run
 * Python code and release the GIL, during which another thread may clear or
 * disable the profiler; the generation check after it drops such events.
 * After that, nothing here runs Python code except naming a C function
 * the first time it is seen. */
#include "fpy_profiler.h"

#include <math.h>

fp_time_t fpy_now_custom(fpy_profiler_t *p)
{
    if (p->failed) /* never call a timer that failed again */
        return p->last_now;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    p->busy++; /* a collection in the timer: see fpy_gc.c */
    PyObject *o = PyObject_CallNoArgs(p->timer);
    p->busy--;
    fp_time_t now = p->last_now;
    int ok = 0;
    if (o) {
        if (p->timeunit > 0.0 && PyLong_Check(o)) {
            long long v = PyLong_AsLongLong(o);
            ok = !(v == -1 && PyErr_Occurred());
            now = (fp_time_t)v;
        } else {
            double v = PyFloat_AsDouble(o);
            ok = !(v == -1.0 && PyErr_Occurred()) && isfinite(v);
            if (ok)
                now = (fp_time_t)floor(p->timeunit > 0.0 ? v : v * 1e9);
            else if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "the timer returned a value that is not finite");
        }
        Py_DECREF(o);
    }
    if (ok) {
        p->last_now = now;
    } else if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        fpy_drop_error(); /* a Ctrl-C handled in the timer: the program's, and the last time stays */
    } else {
        /* Stop recording and keep the error for disable()/getstats(). */
        if (!p->error) {
            PyObject *cause = PyErr_GetRaisedException();
            PyErr_SetString(PyExc_RuntimeError,
                            "the profiler's timer failed; profiling stopped (stats so far are kept)");
            PyObject *err = PyErr_GetRaisedException();
            PyException_SetCause(err, cause); /* steals cause */
            p->error = err;
        }
        PyErr_Clear();
        p->failed = 1;
    }
    fpy_exc_restore(&saved);
    return now;
}

/* The general paths are kept out of the sources' callbacks: inlined there,
 * they would make every event save registers the fast paths do not need. */
#define FPY_GENERAL __attribute__((noinline))

fp_thread_t *fpy_thread_record(fpy_profiler_t *p, PyThreadState *tstate)
{
    fp_thread_t *t = fp_thread_get(&p->core, tstate->id);
    if (t) {
        t->foldable = 1; /* a thread state's own: folded once it ends */
        t->ident = (uint64_t)tstate->thread_id;
        unsigned long native_id;
        if (fpy_native_thread_id(tstate, &native_id))
            t->native_id = (uint64_t)native_id;
    }
    return t;
}

/* Set while this OS thread is in fpy_thread_started's Python call. */
static _Thread_local int naming_thread;

int fpy_naming_thread(void)
{
    return naming_thread;
}

uint64_t fpy_thread_started(fpy_profiler_t *p, uint64_t id)
{
    if (naming_thread)
        return 0; /* a collection during the call asks again: once is enough */
    /* what the naming allocates is the profiler's */
    fpy_memory_pause(p, NULL);
    /* before the call: the names of the records folded go with it */
    fpy_fold_ended(p, 0);
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    /* As "tracing", the thread gets no events from the call: none of its
     * frames is recorded, even when it comes from a gc callback (which runs
     * outside any event callback). */
    PyThreadState *tstate = PyThreadState_Get();
    naming_thread = 1;
    PyThreadState_EnterTracing(tstate);
    PyObject *gone = fpy_take_gone(p);
    PyObject *r =
        gone ? PyObject_CallMethod((PyObject *)p, "_thread_started", "KO", (unsigned long long)id, gone)
             : NULL;
    PyThreadState_LeaveTracing(tstate);
    naming_thread = 0;
    uint64_t group = r && PyLong_Check(r) ? PyLong_AsUnsignedLongLongMask(r) : 0;
    Py_XDECREF(r);
    Py_XDECREF(gone);
    fpy_drop_error(); /* a name is not worth a failure (and the C type alone has no such method) */
    fpy_exc_restore(&saved);
    return group < FPY_FOLDED_BIT ? group : 0;
}

/* The entry for a code object, created (holding a reference) if new. */
static fp_entry_t *code_entry(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code)
{
    fp_entry_t *e = fp_entry_find(t, code);
    if (e)
        return e;
    Py_INCREF(code);
    e = fp_entry_add(t, code, code);
    if (!e) {
        Py_DECREF(code); /* cannot run code: the frame holds the code alive */
        p->core.nomem = 1;
    }
    /* a new function: numpy may have been imported since memory started */
    if (p->core.heap && !fpy_numpy_hooked())
        fpy_numpy_hook();
    return e;
}

/* (The general path below follows the new top row last, after its
 * charge: a custom timer's allocations are the profiler's.) */

/* ---- memory on: the common cases without the general path's work ---- */

/* The TSC read, the entry of `key` from the thread's cache, and
 * fp_try_enter_memory; then the thread's allocations belong to the new
 * frame's row. Nothing here allocates or runs Python code, so the hooks
 * need no pause. Its cost is charged whole, as the plain fast path's
 * (fpy_try_enter), measured for these paths (calibration.py, memory on):
 * a second TSC read would be most of their time. 1 if done. */
static inline int memory_enter(fpy_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                               fpy_cost_t cost)
{
    fp_time_t now = fp_program_time(t, fp_tsc_read() - cost.pre);
    fp_entry_t *e = fp_entry_cached(t, key);
    fp_owner_t owner;
    if (!e || !fpy_heap_fast_ready(&p->core, t) ||
        !fp_try_enter_memory(&p->core, t, e, ident, now, &owner))
        return 0;
    fpy_heap_fast_owner(owner);
    t->offset += cost.whole;
    return 1;
}

static inline int memory_leave(fpy_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                               fpy_cost_t cost)
{
    fp_time_t now = fp_program_time(t, fp_tsc_read() - cost.pre);
    fp_owner_t owner;
    if (!fpy_heap_fast_ready(&p->core, t) || !fp_try_leave_memory(&p->core, t, key, ident, now, &owner))
        return 0;
    fpy_heap_fast_owner(owner);
    t->offset += cost.whole;
    return 1;
}

FPY_GENERAL void fpy_record_py_enter_slow(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code,
                                          const void *frame, int first)
{
    if (p->fast_memory && !fpy_frame_parks(p, code) &&
        memory_enter(p, t, code, NULL, fpy_delivery_enter(p, first)))
        return;
    fpy_memory_pause(p, t);
    uint64_t gen = p->generation;
    fp_time_t raw = fpy_now(p);
    if (!fpy_live(p, gen))
        return;
    fpy_cost_t cost = fpy_delivery_enter(p, first);
    fp_time_t now = fpy_program_time(p, t, raw, cost);
    fp_entry_t *e = code_entry(p, t, code); /* NULL: recorded as a dropped call */
    if (fpy_frame_parks(p, code))
        (first ? fp_start : fp_resume)(&p->core, t, e, frame, now);
    else
        fp_enter(&p->core, t, e, NULL, now);
    fpy_charge(p, t, raw, cost);
    fpy_memory_follow(p, t);
}

FPY_GENERAL void fpy_record_py_leave_slow(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code,
                                          const void *frame, int suspending)
{
    if (p->fast_memory && !(suspending && fpy_frame_parks(p, code)) &&
        memory_leave(p, t, code, NULL, fpy_delivery_leave(p, suspending)))
        return;
    fpy_memory_pause(p, t);
    uint64_t gen = p->generation;
    fp_time_t raw = fpy_now(p);
    if (!fpy_live(p, gen))
        return;
    fpy_cost_t cost = fpy_delivery_leave(p, suspending);
    fp_time_t now = fpy_program_time(p, t, raw, cost);
    if (suspending && fpy_frame_parks(p, code))
        fp_suspend(&p->core, t, code, frame, now);
    else
        fp_leave(&p->core, t, code, now);
    fpy_charge(p, t, raw, cost);
    fpy_memory_follow(p, t);
}

FPY_GENERAL void fpy_record_c_enter_slow(fpy_profiler_t *p, fp_thread_t *t, const void *key,
                                         PyObject *callable, PyObject *self_arg)
{
    if (p->fast_memory && memory_enter(p, t, key, callable, p->cost[FPY_COST_C_CALL]))
        return;
    fpy_memory_pause(p, t);
    uint64_t gen = p->generation;
    fp_time_t raw = fpy_now(p);
    if (!fpy_live(p, gen))
        return;
    fp_time_t now = fpy_program_time(p, t, raw, p->cost[FPY_COST_C_CALL]);
    fp_entry_t *e = fp_entry_find(t, key);
    if (!e) {
        fpy_exc_state saved;
        fpy_exc_save(&saved);
        p->busy++;
        PyObject *name = fpy_cfunc_name(callable, self_arg);
        /* Only a MemoryError is out of memory. Any other failure to name it
         * (which fpy_cfunc_key should have ruled out) leaves the call
         * unrecorded, as cProfile leaves a callable it cannot resolve. */
        int unnamable = !name && !PyErr_ExceptionMatches(PyExc_MemoryError);
        p->busy--;
        if (!name)
            fpy_drop_error();
        fpy_exc_restore(&saved);
        if (unnamable) {
            fpy_charge(p, t, raw, p->cost[FPY_COST_C_CALL]);
            return;
        }
        /* naming may have run code: look again before adding */
        if (!fpy_live(p, gen)) {
            Py_XDECREF(name);
            return;
        }
        e = fp_entry_find(t, key);
        if (e) {
            Py_XDECREF(name);
        } else if (name) {
            e = fp_entry_add(t, key, name);
            if (!e) {
                Py_DECREF(name);
                p->core.nomem = 1;
            }
        }
    }
    fp_enter(&p->core, t, e, callable, now); /* e NULL: recorded as a dropped call */
    fpy_charge(p, t, raw, p->cost[FPY_COST_C_CALL]);
    fpy_memory_follow(p, t);
}

FPY_GENERAL void fpy_record_c_leave_slow(fpy_profiler_t *p, fp_thread_t *t, PyObject *callable,
                                         PyObject *self_arg, PyObject *missing)
{
    if (p->fast_memory && memory_leave(p, t, NULL, callable, p->cost[FPY_COST_C_RETURN]))
        return;
    const void *key = fpy_cfunc_key(callable, self_arg, missing);
    if (!key)
        return;
    fpy_memory_pause(p, t);
    uint64_t gen = p->generation;
    fp_time_t raw = fpy_now(p);
    if (!fpy_live(p, gen))
        return;
    fp_leave(&p->core, t, key, fpy_program_time(p, t, raw, p->cost[FPY_COST_C_RETURN]));
    fpy_charge(p, t, raw, p->cost[FPY_COST_C_RETURN]);
    fpy_memory_follow(p, t);
}

void fpy_release_user(void *user, void *ctx)
{
    fpy_profiler_t *p = ctx;
    if (p->n_doomed == p->cap_doomed) {
        size_t cap = p->cap_doomed ? p->cap_doomed * 2 : 256;
        PyObject **grown = PyMem_Realloc(p->doomed, cap * sizeof *grown);
        if (!grown) {
            /* Cannot defer: a code object or str dealloc runs no Python
             * code in practice, so release it now. */
            Py_DECREF((PyObject *)user);
            return;
        }
        p->doomed = grown;
        p->cap_doomed = cap;
    }
    p->doomed[p->n_doomed++] = user;
}

void fpy_drain_doomed(fpy_profiler_t *p)
{
    /* One at a time, popped before its DECREF: a DECREF may re-enter and
     * queue more, which the loop then releases too. */
    while (p->n_doomed) {
        PyObject *o = p->doomed[--p->n_doomed];
        Py_DECREF(o);
    }
}
