/* The `_fastprof` module and its `Profiler` type: lifecycle, enable /
 * disable / clear, and reporting of errors met on the hot path. */
#include "fpy_profiler.h"

/* Every live profiler, so a fork child can fix them all up. */
static fpy_profiler_t *live_profilers;

static int parse_choice(const char *what, const char *value, const char *a, const char *b)
{
    if (strcmp(value, a) == 0)
        return 0;
    if (strcmp(value, b) == 0)
        return 1;
    PyErr_Format(PyExc_ValueError, "%s must be '%s' or '%s', not '%s'", what, a, b, value);
    return -1;
}

static int profiler_init(fpy_profiler_t *p, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"timer",   "timeunit",   "subcalls",  "builtins",  "threads",
                             "clock",   "coroutines", "callpaths", "max_depth", "gc", NULL};
    PyObject *timer = Py_None;
    double timeunit = 0.0;
    int subcalls = 1, builtins = 1, threads = 0, callpaths = 0, max_depth = 128, gc = 0;
    const char *clock = "wall", *coroutines = "call";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|Odpp$psspip", kwlist, &timer, &timeunit, &subcalls,
                                     &builtins, &threads, &clock, &coroutines, &callpaths, &max_depth,
                                     &gc))
        return -1;
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "cannot re-initialise an enabled profiler");
        return -1;
    }
    int cpu = parse_choice("clock", clock, "wall", "cpu");
    int wall_coroutines = parse_choice("coroutines", coroutines, "call", "wall");
    if (cpu < 0 || wall_coroutines < 0)
        return -1;
    if (timer != Py_None && !PyCallable_Check(timer)) {
        PyErr_SetString(PyExc_TypeError, "timer must be callable or None");
        return -1;
    }
    if (timeunit < 0.0 || max_depth < 1) {
        PyErr_SetString(PyExc_ValueError, timeunit < 0.0 ? "timeunit must be >= 0" : "max_depth must be >= 1");
        return -1;
    }
    fp_profiler_destroy(&p->core); /* a second __init__ starts afresh */
    fpy_drain_doomed(p);
    fp_profiler_init(&p->core, (subcalls ? FP_SUBCALLS : 0) | (callpaths ? FP_CALLPATHS : 0), max_depth,
                     fpy_release_user, p);
    Py_CLEAR(p->timer);
    if (timer != Py_None) {
        p->timer = Py_NewRef(timer);
        fp_clock_init_custom(&p->clock, NULL, NULL, timeunit > 0.0 ? 1.0 / timeunit : 1e9);
    } else if (cpu) {
        if (fp_clock_init_cpu(&p->clock) < 0) {
            PyErr_SetString(PyExc_OSError, "this platform has no per-thread CPU clock");
            return -1;
        }
    } else {
        fp_clock_init_wall(&p->clock, 1);
    }
    p->timeunit = timeunit;
    p->builtins = builtins;
    p->threads_all = threads;
    p->coroutines_wall = wall_coroutines;
    p->gc = gc;
    fpy_thread_cache_reset(p);
    p->generation++;
    return 0;
}

static PyObject *profiler_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    fpy_profiler_t *p = (fpy_profiler_t *)type->tp_alloc(type, 0);
    if (!p)
        return NULL;
    fp_profiler_init(&p->core, FP_SUBCALLS, 128, fpy_release_user, p);
    fp_clock_init_wall(&p->clock, 1);
    p->builtins = 1;
#if FPY_USE_MONITORING
    p->tool_id = -1;
#else
    p->hook.prof = p;
#endif
    p->next_live = live_profilers;
    if (live_profilers)
        live_profilers->prev_live = p;
    live_profilers = p;
    return (PyObject *)p;
}

/* Raises the error met on the hot path, once; 0 if there was none. */
static int report_pending(fpy_profiler_t *p)
{
    if (p->error) {
        PyObject *err = p->error;
        p->error = NULL;
        PyErr_SetObject((PyObject *)Py_TYPE(err), err);
        Py_DECREF(err);
        return -1;
    }
    if (p->core.nomem) {
        p->core.nomem = 0;
        PyErr_SetString(PyExc_MemoryError,
                        "fastprof ran out of memory while profiling; some calls were not recorded");
        return -1;
    }
    return 0;
}

static PyObject *profiler_enable(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    if (p->enabled)
        Py_RETURN_NONE;
    p->owner_tid = PyThreadState_Get()->id;
    fpy_thread_cache_reset(p);
    p->failed = 0;
    p->generation++;
    p->enabled = 1;
    if (fpy_source_start(p) < 0) {
        p->enabled = 0;
        return NULL;
    }
    if (fpy_gc_start(p) < 0) {
        fpy_source_stop(p);
        p->enabled = 0;
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Stops events and closes the frames still open, as cProfile does. */
static void stop(fpy_profiler_t *p)
{
    if (!p->enabled)
        return;
    fpy_gc_stop(p);
    fpy_source_stop(p);
    p->enabled = 0;
    p->generation++;
    fp_time_t now = p->failed ? p->last_now : fpy_now(p);
    /* A CPU clock is per thread: other threads' readings are not comparable
     * with ours, so their open frames close at their own last event. */
    uint64_t me = PyThreadState_Get()->id;
    int per_thread_clock = p->clock.kind == FP_CLOCK_CPU;
    fp_thread_t *t;
    for (t = p->core.threads; t; t = t->hh.next) {
        fp_thread_flush(&p->core, t, per_thread_clock && t->id != me ? t->last_now : now);
        t->stopped = 0;
    }
}

/* Stops recording the calling thread only (threads=True): its open frames
 * close now, the other threads go on until disable(). The CLI stops the
 * main thread so when the program ends, and profiles the threads python
 * then waits for. */
static int stop_this_thread(fpy_profiler_t *p)
{
    PyThreadState *me = PyThreadState_Get();
    fp_thread_t *t = fpy_thread_record(p, me);
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    if (t->stopped)
        return 0;
    /* no event of this thread is recorded from here on, so a custom timer
     * read below does not show up either */
    t->stopped = 1;
    fpy_source_stop_thread(p, me);
    fpy_thread_cache_reset(p);
    fp_thread_flush(&p->core, t, p->failed ? p->last_now : fpy_now(p));
    return 0;
}

static PyObject *profiler_disable(fpy_profiler_t *p, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"this_thread", NULL};
    int this_thread = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$p:disable", kwlist, &this_thread))
        return NULL;
    if (this_thread && p->enabled && p->threads_all) {
        int rc = stop_this_thread(p);
        fpy_drain_doomed(p);
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    stop(p);
    fpy_drain_doomed(p);
    if (report_pending(p) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* _toggle_with(callback, *args): disable(), then callback(error, was_enabled,
 * *args), then enable() if the callback returned true. error is the failure
 * disable() would raise (or None). Made for the signal toggle
 * (signal_toggle.py), as its handler: called from C, as the interpreter
 * calls a handler, it adds no frame to the profile (a Python handler's own
 * start would be recorded before it could stop), and no Python code runs
 * between the callback's decision and the enable, so a signal handled in
 * between cannot make them disagree. */
static PyObject *profiler_toggle_with(fpy_profiler_t *p, PyObject *args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1 || !PyCallable_Check(PyTuple_GET_ITEM(args, 0))) {
        PyErr_SetString(PyExc_TypeError, "_toggle_with(callback, *args) needs a callable");
        return NULL;
    }
    int was_enabled = p->enabled;
    stop(p);
    fpy_drain_doomed(p);
    PyObject *error = NULL;
    if (report_pending(p) < 0)
        error = fpy_err_take();
    PyObject *call_args = PyTuple_New(n + 1);
    if (!call_args) {
        Py_XDECREF(error);
        return NULL;
    }
    PyTuple_SET_ITEM(call_args, 0, error ? error : Py_NewRef(Py_None));
    PyTuple_SET_ITEM(call_args, 1, PyBool_FromLong(was_enabled));
    for (Py_ssize_t i = 1; i < n; i++)
        PyTuple_SET_ITEM(call_args, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *r = PyObject_Call(PyTuple_GET_ITEM(args, 0), call_args, NULL);
    Py_DECREF(call_args);
    if (!r)
        return NULL;
    int start = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (start < 0)
        return NULL;
    if (start)
        return profiler_enable(p, NULL);
    Py_RETURN_NONE;
}

static PyObject *profiler_clear(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    fp_profiler_clear(&p->core);
    p->generation++;
    fpy_drain_doomed(p);
    Py_RETURN_NONE;
}

/* getstats(thread=None) and callpaths(thread=None): the same argument, the
 * same pending error reported first. */
static PyObject *read_tables(fpy_profiler_t *p, PyObject *args, PyObject *kwds,
                             PyObject *(*read)(fpy_profiler_t *, PyObject *))
{
    static char *kwlist[] = {"thread", NULL};
    PyObject *thread = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O", kwlist, &thread))
        return NULL;
    if (report_pending(p) < 0)
        return NULL;
    return read(p, thread);
}

static PyObject *profiler_getstats(fpy_profiler_t *p, PyObject *args, PyObject *kwds)
{
    return read_tables(p, args, kwds, fpy_getstats);
}

static PyObject *profiler_callpaths(fpy_profiler_t *p, PyObject *args, PyObject *kwds)
{
    return read_tables(p, args, kwds, fpy_callpaths);
}

static PyObject *profiler_threads(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    PyObject *result = PyList_New(0);
    fp_thread_t *t;
    for (t = p->core.threads; result && t; t = t->hh.next) {
        PyObject *item = Py_BuildValue("(KKK)", (unsigned long long)t->id, (unsigned long long)t->ident,
                                       (unsigned long long)t->native_id);
        if (!item || PyList_Append(result, item) < 0)
            Py_CLEAR(result);
        Py_XDECREF(item);
    }
    return result;
}

static PyObject *profiler_memory(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSize_t(fp_profiler_memory(&p->core));
}

static PyObject *profiler_clock_info(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{sssd}", "clock", fp_clock_name(p->clock.kind), "ticks_per_second",
                         p->clock.ticks_per_second);
}

static PyObject *profiler_get_enabled(fpy_profiler_t *p, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(p->enabled);
}

static int profiler_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->timer);
    Py_VISIT(p->error);
    Py_VISIT(p->gc_callback);
#if !FPY_USE_MONITORING
    Py_VISIT(p->hooks);
#else
    Py_VISIT(p->gen_watch);
#endif
    return 0;
}

static int profiler_tp_clear(fpy_profiler_t *p)
{
    Py_CLEAR(p->timer);
    Py_CLEAR(p->error);
    Py_CLEAR(p->gc_callback); /* unreachable: not in gc.callbacks any more */
#if !FPY_USE_MONITORING
    if (!p->enabled)
        Py_CLEAR(p->hooks);
#else
    Py_CLEAR(p->gen_watch);
#endif
    return 0;
}

static void profiler_dealloc(fpy_profiler_t *p)
{
    PyObject_GC_UnTrack(p);
    if (p->prev_live)
        p->prev_live->next_live = p->next_live;
    else
        live_profilers = p->next_live;
    if (p->next_live)
        p->next_live->prev_live = p->prev_live;
    if (p->enabled) {
        fpy_gc_stop(p);
        fpy_source_stop(p);
        p->enabled = 0;
    }
    fp_profiler_destroy(&p->core);
    fpy_drain_doomed(p);
    PyMem_Free(p->doomed);
    Py_CLEAR(p->timer);
    Py_CLEAR(p->error);
#if FPY_USE_MONITORING
    Py_CLEAR(p->missing);
    Py_CLEAR(p->gen_watch);
#else
    Py_CLEAR(p->thread_starter);
    Py_CLEAR(p->hooks);
#endif
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyMethodDef profiler_methods[] = {
    {"enable", (PyCFunction)profiler_enable, METH_NOARGS, "Start collecting profiling information."},
    {"disable", (PyCFunction)(void (*)(void))profiler_disable, METH_VARARGS | METH_KEYWORDS,
     "disable(*, this_thread=False)\n\nStop collecting profiling information; frames still open are "
     "closed. this_thread=True (with threads=True): stop only the calling thread, the others "
     "go on until disable()."},
    {"_toggle_with", (PyCFunction)profiler_toggle_with, METH_VARARGS,
     "_toggle_with(callback, *args): disable(), then callback(error, was_enabled, *args), "
     "then enable() if it returned true; a signal handler that records no frame of its own."},
    {"clear", (PyCFunction)profiler_clear, METH_NOARGS, "Drop all profiling information collected so far."},
    {"getstats", (PyCFunction)(void (*)(void))profiler_getstats, METH_VARARGS | METH_KEYWORDS,
     "getstats(thread=None) -> list of profiler_entry, as _lsprof.Profiler.getstats()."},
    {"callpaths", (PyCFunction)(void (*)(void))profiler_callpaths, METH_VARARGS | METH_KEYWORDS,
     "callpaths(thread=None) -> list of (parent, code, calls, inlinetime, totaltime)."},
    {"threads", (PyCFunction)profiler_threads, METH_NOARGS,
     "threads() -> list of (id, ident, native_id) of the profiled threads."},
    {"memory", (PyCFunction)profiler_memory, METH_NOARGS, "Bytes used by the stats tables."},
    {"clock_info", (PyCFunction)profiler_clock_info, METH_NOARGS,
     "clock_info() -> {'clock': name, 'ticks_per_second': float}."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef profiler_getset[] = {
    {"enabled", (getter)profiler_get_enabled, NULL, "Whether the profiler is collecting.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* The type's name is what a profile's disable() row says: "{method
 * 'disable' of 'fastprof.Profile' objects}", the class the user called it
 * on, as wide as cProfile's "{method 'disable' of '_lsprof.Profiler'
 * objects}", so pstats tables come out as wide as cProfile's (CPython's
 * test_cprofile compares them to the character). */
PyTypeObject fpy_profiler_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fastprof.Profile",
    .tp_doc = "Profiler(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, threads=False,\n"
              "         clock='wall', coroutines='call', callpaths=False, max_depth=128, gc=False)\n\n"
              "The C profiler behind fastprof.Profile.",
    .tp_basicsize = sizeof(fpy_profiler_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = profiler_new,
    .tp_init = (initproc)profiler_init,
    .tp_dealloc = (destructor)profiler_dealloc,
    .tp_traverse = (traverseproc)profiler_traverse,
    .tp_clear = (inquiry)profiler_tp_clear,
    .tp_methods = profiler_methods,
    .tp_getset = profiler_getset,
};

static PyObject *mem_fail_after(PyObject *module, PyObject *arg)
{
    (void)module;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    fp_mem_fail_after(n);
    Py_RETURN_NONE;
}

/* In a fork child only the forking thread survives: the open frames of the
 * other threads would otherwise be closed at the next disable() with the
 * child's clock, inflating their times. Their finished calls are kept. */
static PyObject *after_fork_child(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    (void)module;
    uint64_t me = PyThreadState_Get()->id;
    fpy_profiler_t *p;
    for (p = live_profilers; p; p = p->next_live) {
        fp_thread_t *t;
        for (t = p->core.threads; t; t = t->hh.next) {
            if (t->id != me)
                fp_thread_abandon(t);
        }
        fpy_thread_cache_reset(p);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_after_fork_child", after_fork_child, METH_NOARGS, "Called in a fork child (os.register_at_fork)."},
    {"_mem_fail_after", mem_fail_after, METH_O,
     "Testing only: let the next n core allocations succeed and fail the rest (n < 0: never fail)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "fastprof._fastprof", "The C core of fastprof.", -1, module_methods,
};

/* os.register_at_fork(after_in_child=_after_fork_child) */
static int register_fork_handler(PyObject *m)
{
    PyObject *hook = PyObject_GetAttrString(m, "_after_fork_child");
    PyObject *os = hook ? PyImport_ImportModule("os") : NULL;
    PyObject *reg = os ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    PyObject *args = reg ? PyTuple_New(0) : NULL;
    PyObject *kw = args ? Py_BuildValue("{sO}", "after_in_child", hook) : NULL;
    PyObject *r = kw ? PyObject_Call(reg, args, kw) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(reg);
    Py_XDECREF(os);
    Py_XDECREF(hook);
    return r ? 0 : -1;
}

PyMODINIT_FUNC PyInit__fastprof(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyType_Ready(&fpy_profiler_type) < 0 || fpy_source_module_init(m) < 0 ||
        fpy_thread_cache_module_init() < 0 || fpy_gc_module_init(m) < 0 ||
        fpy_stats_module_init(m) < 0)
        goto error;
    if (PyModule_AddObject(m, "Profiler", Py_NewRef((PyObject *)&fpy_profiler_type)) < 0)
        goto error;
    if (PyModule_AddIntConstant(m, "USES_MONITORING", FPY_USE_MONITORING) < 0)
        goto error;
    if (register_fork_handler(m) < 0)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
