/* Event source for fast=True, every version: a PEP 523 frame evaluator.
 * The interpreter calls it for each Python frame it runs: a function's
 * call, each resume of a generator or coroutine (also by throw()), so it
 * records the enter, runs the default evaluator and records the leave
 * (a return, a yield or an exception), with no event dispatch in between.
 * Installing one makes 3.11+ stop inlining Python-to-Python calls, so
 * every call comes through here. C functions are not seen: their time is
 * their caller's own time.
 *
 * The frames already running at enable() keep the evaluator they started
 * with: their returns are not seen (as for the frames running when the
 * default mode is enabled, nothing is recorded for them). A leave is
 * recorded only for an enter that was, in the same enable and generation.

 *
 * Its table is fpy_eval_source (at the end), its state p->eval (fpy_source.h). */
#include "fpy_record_fast.h"
#include "fpy_route.h"

/* The profiler the evaluator feeds, and a count of attaches and detaches
 * (an event checks it before touching its profiler again after running
 * the frame, which may have disabled and freed it). Process-wide, like
 * the evaluator the interpreter calls: fast mode is refused outside the
 * main interpreter, so one GIL guards both. */
static fpy_profiler_t *active;
static uint64_t active_epoch;

/* The record of thread state `ts` (a cache miss): NULL if its frames are
 * not recorded. May run Python code (naming a new thread, as "tracing"). */
static fp_thread_t *thread_of_slow(fpy_profiler_t *p, PyThreadState *ts)
{
    fp_thread_t *t = NULL;
    uint64_t id = ts->id;
    if (p->threads_all || id == p->owner_tid) {
        int fresh = p->threads_all && !fp_thread_find(&p->core, id);
        uint64_t group = 0;
        if (fresh) {
            Py_INCREF(p); /* naming runs Python code, which may drop the last one */
            group = fpy_thread_started(p, id);
            int gone = active != p; /* disabled meanwhile */
            Py_DECREF(p);
            if (gone)
                return NULL;
        }
        t = fpy_thread_record(p, ts);
        if (!t)
            return NULL; /* out of memory: try again next frame */
        if (fresh)
            t->group = group;
        if (t->stopped)
            t = NULL; /* disable(this_thread=True) */
    }
    p->eval.ts = ts;
    p->eval.ts_id = id;
    p->eval.generation = p->generation;
    p->eval.thread = t;
    return t;
}

/* A thread state's address can be reused by a later thread: its id tells. */
FP_FORCE_INLINE fp_thread_t *thread_of(fpy_profiler_t *p, PyThreadState *ts)
{
    if (ts == p->eval.ts && ts->id == p->eval.ts_id && p->generation == p->eval.generation)
        return fpy_route(p, p->eval.thread);
    return fpy_route(p, thread_of_slow(p, ts));
}

/* The general paths (fpy_record_py_enter_slow / _leave_slow) run
 * "tracing": a custom timer's Python code (or a finalizer run by an
 * allocation) is not profiled and cannot recurse. The evaluator holds no
 * reference to the profiler, so they take one: a timer may disable it and
 * drop the last one. */
typedef void (*record_slow_t)(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code, const void *frame,
                              int flag);

static __attribute__((noinline)) void record_slow(record_slow_t record, fpy_profiler_t *p,
                                                  fp_thread_t *t, PyCodeObject *code, PyThreadState *ts)
{
    Py_INCREF(p);
    PyThreadState_EnterTracing(ts);
    record(p, t, code, NULL, 0);
    PyThreadState_LeaveTracing(ts);
    Py_DECREF(p);
}

static PyObject *evaluate(PyThreadState *ts, fpy_eval_frame_t *frame, int throwflag)
{
    fpy_profiler_t *p = active;
    if (!p || fpy_thread_tracing(ts))
        return fpy_eval_default(ts, frame, throwflag);
    PyCodeObject *code = fpy_eval_frame_code(frame);
    fp_thread_t *t = code && !fpy_eval_frame_makes_generator(frame, code) ? thread_of(p, ts) : NULL;
    if (!t)
        return fpy_eval_default(ts, frame, throwflag);
    uint64_t epoch = active_epoch;
    uint64_t gen = p->generation;
    fp_entry_t *e;
    if (!(fpy_fast_ok(p) && (e = fp_entry_cached(t, code)) &&
          fpy_try_enter(p, t, e, NULL, p->cost[FPY_COST_CALL])))
        record_slow(fpy_record_py_enter_slow, p, t, code, ts);
    PyObject *result = fpy_eval_default(ts, frame, throwflag);
    /* p may be gone (disabled and freed) or cleared (t freed) meanwhile */
    if (active_epoch == epoch && p->generation == gen &&
        !(fpy_fast_ok(p) && fpy_try_leave(t, code, NULL, p->cost[FPY_COST_RETURN])))
        record_slow(fpy_record_py_leave_slow, p, t, code, ts);
    return result;
}

static int eval_attach(fpy_profiler_t *p)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (interp != PyInterpreterState_Main()) {
        PyErr_SetString(PyExc_RuntimeError, "fastprof: fast=True works in the main interpreter only");
        return -1;
    }
    if (active) {
        PyErr_SetString(PyExc_RuntimeError,
                        "fastprof: another profiler is already enabled with fast=True; "
                        "only one can be at a time");
        return -1;
    }
    if (!fpy_evaluator_is_default(interp)) {
        PyErr_SetString(
            PyExc_RuntimeError,
            "fastprof: fast=True needs the interpreter's frame evaluator, but another tool "
            "(torch.compile, a debugger, ...) has installed its own; fastprof does not replace "
            "it (use the default mode)");
        return -1;
    }
    p->eval.ts = NULL;
    active = p;
    active_epoch++;
    fpy_set_evaluator(interp, evaluate);
    fpy_evaluator_allow_specialization(interp, 1); /* calls still come here: fpy_compat.h */
    return 0;
}

static void eval_detach(fpy_profiler_t *p)
{
    if (active != p)
        return;
    /* restore the default only if the evaluator is still ours */
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (fpy_get_evaluator(interp) == evaluate) {
        fpy_set_default_evaluator(interp);
        fpy_evaluator_allow_specialization(interp, 0); /* the interpreter's default */
    }
    active = NULL;
    active_epoch++;
}

/* The record is marked stopped already: the evaluator sees that on its
 * next lookup, once its cached thread is forgotten. */
static void eval_stop_thread(fpy_profiler_t *p, PyThreadState *ts)
{
    (void)ts;
    p->eval.ts = NULL;
}

static fp_thread_t *eval_running_thread(fpy_profiler_t *p)
{
    PyThreadState *ts = PyThreadState_Get();
    if (active != p)
        return NULL;
    if (ts == p->eval.ts && ts->id == p->eval.ts_id && p->generation == p->eval.generation)
        return fpy_route(p, p->eval.thread);
    if (!p->threads_all && ts->id != p->owner_tid)
        return NULL;
    fp_thread_t *t = fp_thread_find(&p->core, ts->id);
    return fpy_route(p, t && !t->stopped ? t : NULL);
}

static void eval_forget_thread(fpy_profiler_t *p, fp_thread_t *t)
{
    if (p->eval.thread == t)
        p->eval.ts = NULL;
}

/* The state is only used while attached, and attach resets it. */
static void eval_init(fpy_profiler_t *p)
{
    (void)p;
}

/* A thread state freed in the child and reused by a later thread has
 * another id, which thread_of checks: nothing to forget. */
static void eval_after_fork(fpy_profiler_t *p)
{
    (void)p;
}

/* The state holds no Python reference (the evaluator holds none to the
 * profiler either: see record_slow). */
static int eval_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    (void)p;
    (void)visit;
    (void)arg;
    return 0;
}

static void eval_drop_refs(fpy_profiler_t *p)
{
    (void)p;
}

/* Nothing in the module state: the evaluator is a plain C function. */
static int eval_module_init(PyObject *module, fpy_module_state *st)
{
    (void)module;
    (void)st;
    return 0;
}

const fpy_source_ops fpy_eval_source = {
    .name = "evalframe",
    .module_init = eval_module_init,
    .init = eval_init,
    .attach = eval_attach,
    .detach = eval_detach,
    .stop_thread = eval_stop_thread,
    .running_thread = eval_running_thread,
    .forget_thread = eval_forget_thread,
    .after_fork = eval_after_fork,
    .traverse = eval_traverse,
    .clear = eval_drop_refs,
    .free = eval_drop_refs,
};

/* ---- test-only: another tool's evaluator ---- */

static PyObject *dummy_evaluate(PyThreadState *ts, fpy_eval_frame_t *frame, int throwflag)
{
    return fpy_eval_default(ts, frame, throwflag);
}

PyObject *fpy_eval_test_set_dummy_evaluator(PyObject *module, PyObject *on)
{
    (void)module;
    int install = PyObject_IsTrue(on);
    if (install < 0)
        return NULL;
    PyInterpreterState *interp = PyInterpreterState_Get();
    /* specializing as under fastprof's: the pass-through cost compares */
    if (install) {
        fpy_set_evaluator(interp, dummy_evaluate);
        fpy_evaluator_allow_specialization(interp, 1);
    } else if (fpy_get_evaluator(interp) == dummy_evaluate) {
        fpy_set_default_evaluator(interp);
        fpy_evaluator_allow_specialization(interp, 0);
    }
    return PyBool_FromLong(fpy_get_evaluator(interp) == evaluate);
}
