/* LineCounter's event source on 3.9-3.11: a C trace function
 * (PyEval_SetTrace), in place of a Python one, for the line events of the
 * functions line-level profiling counts (python/fastprof/line_profiling.py,
 * SettraceRecorder). The interpreter calls it with every frame's call
 * event (a generator's resumption too): it decides the frame's code once
 * (the recorder's decide(), remembered here by code object) and switches
 * the line events of frames not counted off (f_trace_lines) while they
 * run, so they pay the call and return events only. Lines, returns (yields and unwinds
 * too) go to the accounting of fpy_lines.c. An exception event changes
 * nothing: the line goes on. The trace slot is not the profile hook's
 * (PyEval_SetProfile): both run.
 *
 * Threads: trace_start() installs it in the calling thread; the recorder
 * gives thread_trace to threading.settrace, which installs it in each new
 * thread on that thread's first call event (as the profiler's
 * thread_starter does with threading.setprofile), and trace_threads()
 * in the threads already running; trace_stop() takes it out of all. */
#include "fpy_lines.h"
#include "fpy_thread_ids.h"

#if !FPY_USE_MONITORING

/* Whether the lines of `code` are counted; decides on first sight. */
static int decide(line_counter_t *lc, PyObject *code, PyFrameObject *frame)
{
    if (fpy_lines_counts(lc, code))
        return 1;
    code_skipped_t *sk;
    HASH_FIND_PTR(lc->skipped, &code, sk);
    if (sk || !lc->decide)
        return 0;
    /* (what deciding allocates is no function's: memory profiling) */
    fp_owner_t owner = fpy_heap_hold_owner();
    PyObject *r = PyObject_CallFunctionObjArgs(lc->decide, code, (PyObject *)frame, NULL);
    fpy_heap_restore_owner(owner);
    int counted = r && r != Py_None;
    if (counted && fpy_lines_add(lc, code) < 0) {
        counted = 0;
        Py_CLEAR(r);
    }
    /* never the profiled program's error: told, and the code not counted
     * (a Ctrl-C handled in it is given back) */
    if (!r && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
        fpy_drop_error();
    else if (!r)
        PyErr_WriteUnraisable(lc->decide);
    Py_XDECREF(r);
    if (counted)
        return 1;
    /* remembered as not counted; out of memory it is decided again next
     * time, and no line is lost */
    sk = fp_calloc(1, sizeof *sk);
    if (!sk)
        return 0;
    sk->key = code;
    sk->code = Py_NewRef(code);
    if (!FP_HASH_ADD(lc->skipped, key, sizeof sk->key, sk)) {
        Py_DECREF(code);
        fp_free(sk);
    }
    return 0;
}

/* Line events are switched off in a frame only while it runs under this
 * tracer: its return (or yield) switches them back on, and so does
 * trace_stop() for the frames of its thread, so that a debugger or
 * coverage tracing later sees every line. */
static int lc_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    line_counter_t *lc = (line_counter_t *)obj;
    (void)arg;
    if (what == PyTrace_RETURN) {
        fpy_frame_trace_lines(frame, 1);
        if (lc->trace_on)
            fpy_lines_exit(lc, frame, (PyObject *)fpy_frame_code(frame));
        return 0;
    }
    if (!lc->trace_on) { /* stopped: a thread it could not be taken out of */
        if (what == PyTrace_CALL || what == PyTrace_LINE)
            fpy_frame_trace_lines(frame, 0);
        return 0;
    }
    PyObject *code = (PyObject *)fpy_frame_code(frame);
    if (what == PyTrace_CALL) {
        if (decide(lc, code, frame))
            fpy_lines_enter(lc, frame, code);
        else
            fpy_frame_trace_lines(frame, 0);
    } else if (what == PyTrace_LINE) {
        /* a frame running since before start: no call event seen, not counted */
        if (!fpy_lines_line(lc, frame, code, fpy_frame_event_line(frame), 0))
            fpy_frame_trace_lines(frame, 0);
    } /* an exception: the line goes on */
    return 0;
}

PyObject *fpy_lines_trace_start(line_counter_t *lc, PyObject *decide_fn)
{
    if (!PyCallable_Check(decide_fn)) {
        PyErr_SetString(PyExc_TypeError, "trace_start() takes a callable");
        return NULL;
    }
    Py_XSETREF(lc->decide, Py_NewRef(decide_fn));
    lc->trace_on = 1;
    PyEval_SetTrace(lc_trace, (PyObject *)lc);
    Py_RETURN_NONE;
}

/* Line events back on in the running frames of thread `ts` (a later
 * debugger's tracer sees them), as trace_stop() does in its own thread. */
static void trace_lines_on(PyThreadState *ts)
{
    PyFrameObject *top = PyThreadState_GetFrame(ts); /* a new reference */
    for (PyFrameObject *f = top; f; f = fpy_frame_back(f))
        fpy_frame_trace_lines(f, 1);
    Py_XDECREF(top);
}

struct retrace {
    line_counter_t *lc;
    int install;
    PyThreadState *me;
};

/* Whether `ts` is one retrace_other_threads() changes. */
static int retrace_wanted(PyThreadState *ts, void *arg)
{
    struct retrace *r = arg;
    if (ts == r->me)
        return 0;
    return r->install ? !fpy_has_trace(ts) : fpy_trace_obj(ts, lc_trace) == (PyObject *)r->lc;
}

/* In each other thread of the interpreter: where no trace function is set,
 * lc_trace with `lc` (install); where lc_trace with `lc` is, none (!install).
 * 0, or -1 with an exception set. */
static int retrace_other_threads(line_counter_t *lc, int install)
{
    struct retrace r = {lc, install, PyThreadState_Get()};
    PyInterpreterState *interp = PyThreadState_GetInterpreter(r.me);
    uint64_t *ids;
    size_t n;
    if (fpy_thread_ids(interp, retrace_wanted, &r, &ids, &n) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        PyThreadState *ts = fpy_thread_by_id(interp, ids[i]);
        if (!ts || !retrace_wanted(ts, &r))
            continue;
        rc = install ? fpy_set_trace(ts, lc_trace, (PyObject *)lc) : fpy_set_trace(ts, NULL, NULL);
        if (rc == 0 && !install)
            trace_lines_on(ts);
    }
    PyMem_Free(ids);
    return rc;
}

/* trace_threads(): the trace function in the other running threads of
 * the interpreter too (threads=True: the worker threads a service made
 * before profiling began, as the profiler hooks them), where no trace
 * function (a debugger's, coverage's) is set. Their frames running since
 * before are not counted (no call event seen: fpy_lines_line). */
PyObject *fpy_lines_trace_threads(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    if (!lc->trace_on) {
        PyErr_SetString(PyExc_RuntimeError, "trace_threads() after trace_start() only");
        return NULL;
    }
    if (retrace_other_threads(lc, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *fpy_lines_trace_stop(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    lc->trace_on = 0;
    if (fpy_trace_obj(PyThreadState_Get(), lc_trace) == (PyObject *)lc)
        PyEval_SetTrace(NULL, NULL);
    /* the other threads it went into (trace_threads, thread_trace) are left
     * as they were: no tracer. A failure leaves it stopped there (it
     * returns at once), and is raised. */
    int rc = retrace_other_threads(lc, 0);
    for (PyFrameObject *f = PyEval_GetFrame(); f; f = fpy_frame_back(f))
        fpy_frame_trace_lines(f, 1);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *fpy_lines_thread_trace(line_counter_t *lc, PyObject *args)
{
    PyObject *frame, *event, *arg;
    if (!PyArg_ParseTuple(args, "OUO", &frame, &event, &arg))
        return NULL;
    if (!lc->trace_on)
        Py_RETURN_NONE;
    PyEval_SetTrace(lc_trace, (PyObject *)lc);
    if (PyFrame_Check(frame) && PyUnicode_CompareWithASCIIString(event, "call") == 0)
        lc_trace((PyObject *)lc, (PyFrameObject *)frame, PyTrace_CALL, Py_None);
    Py_RETURN_NONE;
}

/* Calling the counter is thread_trace: sys.gettrace() returns it while it
 * traces, and a program that restores what it read (sys.settrace(old))
 * gets it back as a Python trace function, which puts the C one back. */
PyObject *fpy_lines_trace_call(line_counter_t *lc, PyObject *args, PyObject *kwargs)
{
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "LineCounter() takes no keyword arguments");
        return NULL;
    }
    return fpy_lines_thread_trace(lc, args);
}

void fpy_lines_trace_free(line_counter_t *lc)
{
    code_skipped_t *sk, *tmp;
    HASH_ITER(hh, lc->skipped, sk, tmp)
    {
        HASH_DEL(lc->skipped, sk);
        Py_DECREF(sk->code);
        fp_free(sk);
    }
}

#endif
