/* The `_fastprof` module and its `Profiler` type: lifecycle, enable /
 * disable / clear, and reporting of errors met on the hot path.
 *
 * The module uses multi-phase initialisation (PEP 489) and keeps what it
 * owns in its module state (fpy_module_state), as CPython's own _lsprof
 * does: importing it twice (a re-import, another interpreter) gives two
 * independent modules, with their own types, strings and live-profiler
 * lists. Each profiler finds its module's state once, when it is created,
 * and keeps a pointer to it: the event path never looks it up.
 *
 * What stays process-wide, and why:
 *  - fpy_thread_cache.c: the pthread key that tells when an OS thread
 *    exits, and the count of such exits. OS threads and pthread keys
 *    belong to the process; the counter is atomic.
 *  - fpy_record.c: `naming_thread`, thread-local: it marks what this OS
 *    thread is doing, whatever the interpreter.
 *  - fp_clock.c: the TSC rate once calibrated (the machine's), atomic.
 *  - fp_mem.c: the fault-injection counter (_mem_fail_after, testing
 *    only), atomic.
 *  - fpy_source_evalframe.c: the fast profiler that the frame evaluator
 *    feeds (`active`) and its attach count. The evaluator is a plain C
 *    function the interpreter calls, with no object to carry it; fast
 *    mode is refused outside the main interpreter, so the main GIL guards
 *    both.
 *  - fpy_heap_hooks.c: memory profiling's allocator hooks, what they
 *    wrapped, the heap they count into (`recording`, atomic), the heaps
 *    kept for reuse, and the thread-local row of each OS thread. Python's
 *    allocators belong to the process, whatever the interpreter, so one
 *    memory profile runs at a time in a process.
 *  - constant tables (event names, tool ids to try, method tables, type
 *    specs): never written.
 * sys.monitoring tool ids, gc.callbacks, the thread states walked on
 * 3.9-3.11 and os.register_at_fork's handlers are per interpreter in
 * CPython itself, so one module instance per interpreter uses them
 * without sharing.
 *
 * Slots: Py_mod_multiple_interpreters is PER_INTERPRETER_GIL_SUPPORTED
 * (3.12+), since the above is all that is shared and it is safe without a
 * common GIL. Py_mod_gil is GIL_USED (3.13+): the event path assumes the
 * GIL serialises events (a profiler's tables are updated from every
 * thread without locks), so a free-threaded build must keep the GIL on
 * while fastprof is imported. */
#include "fpy_route.h"
#include "fpy_scope.h"

static struct PyModuleDef module_def;

/* The sources a profiler may attach on this version: the default mode's
 * and fast=True's. A profiler may have used both (a second __init__), so
 * its lifecycle (init, traverse, clear, free) goes through each. */
static const fpy_source_ops *const sources[] = {FPY_DEFAULT_SOURCE, &fpy_eval_source};
#define N_SOURCES (sizeof sources / sizeof sources[0])

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
    static char *kwlist[] = {"timer", "timeunit",   "subcalls",  "builtins",  "threads",
                             "clock", "coroutines", "callpaths", "max_depth", "gc",
                             "fast",  "compensate", "memory",    NULL};
    PyObject *timer = Py_None;
    double timeunit = 0.0;
    /* builtins: -1 when not given (fast=True then means False) */
    int subcalls = 1, builtins = -1, threads = 0, callpaths = 0, max_depth = 128, gc = 0, fast = 0,
        compensate = 1, memory = 0;
    const char *clock = "wall", *coroutines = "call";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|Odpp$psspipppp", kwlist, &timer, &timeunit, &subcalls,
                                     &builtins, &threads, &clock, &coroutines, &callpaths, &max_depth,
                                     &gc, &fast, &compensate, &memory))
        return -1;
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "cannot re-initialise an enabled profiler");
        return -1;
    }
    int cpu = parse_choice("clock", clock, "wall", "cpu");
    int wall_coroutines = parse_choice("coroutines", coroutines, "call", "wall");
    if (cpu < 0 || wall_coroutines < 0)
        return -1;
#ifdef FPY_EVALFRAME_UNAVAILABLE
    if (fast) {
        PyErr_SetString(PyExc_RuntimeError, FPY_EVALFRAME_UNAVAILABLE);
        return -1;
    }
#endif
    if (fast && builtins == 1) {
        PyErr_SetString(
            PyExc_ValueError,
            "fast=True profiles Python functions only: builtins=True cannot be combined with it");
        return -1;
    }
    if (fast && wall_coroutines) {
        PyErr_SetString(
            PyExc_ValueError,
            "fast=True supports coroutines='call' only (coroutines='wall' needs the default mode)");
        return -1;
    }
    if (builtins < 0)
        builtins = !fast;
    if (timer != Py_None && !PyCallable_Check(timer)) {
        PyErr_SetString(PyExc_TypeError, "timer must be callable or None");
        return -1;
    }
    if (timeunit < 0.0 || max_depth < 1) {
        PyErr_SetString(PyExc_ValueError,
                        timeunit < 0.0 ? "timeunit must be >= 0" : "max_depth must be >= 1");
        return -1;
    }
    if (memory && !p->heap && !(p->heap = fpy_heap_acquire()))
        return -1;
    fp_profiler_destroy(&p->core); /* a second __init__ starts afresh */
    fpy_fold_reset(p);
    fpy_route_free(p); /* (its parts pointed at the records) */
    fpy_drain_doomed(p);
    fp_profiler_init(&p->core, (subcalls ? FP_SUBCALLS : 0) | (callpaths ? FP_CALLPATHS : 0), max_depth,
                     fpy_release_user, p);
    p->memory = memory;
    if (p->heap) {
        fp_heap_clear(p->heap);
        fp_heap_forget_owners(p->heap); /* its owners were the rows just dropped */
    }
    p->core.heap = memory ? p->heap : NULL;
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
    p->fast = fast;
    /* a custom timer gets raw times, as in cProfile (its test suite's
     * numbers are exact); only _set_compensation turns it on then */
    p->compensate = compensate && timer == Py_None;
    memset(p->cost, 0, sizeof p->cost);
    p->generation++;
    return 0;
}

static PyObject *profiler_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    /* `type` may be a Python subclass (fastprof.Profile): the module is
     * that of the class in its MRO that this module made */
    PyObject *module = PyType_GetModuleByDef(type, &module_def);
    if (!module)
        return NULL;
    fpy_profiler_t *p = (fpy_profiler_t *)type->tp_alloc(type, 0);
    if (!p)
        return NULL;
    p->module = Py_NewRef(module);
    p->state = PyModule_GetState(module);
    fp_profiler_init(&p->core, FP_SUBCALLS, 128, fpy_release_user, p);
    fp_clock_init_wall(&p->clock, 1);
    p->builtins = 1;
    p->compensate = 1;
    for (size_t i = 0; i < N_SOURCES; i++)
        sources[i]->init(p);
    p->next_live = p->state->live_profilers;
    if (p->next_live)
        p->next_live->prev_live = p;
    p->state->live_profilers = p;
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

static void set_enabled(fpy_profiler_t *p, int on)
{
    p->enabled = on;
    p->fast_events = on && p->clock.kind == FP_CLOCK_TSC && !p->memory;
    p->fast_memory = on && p->clock.kind == FP_CLOCK_TSC && p->memory;
}

/* Memory: the hooks stop counting for p. If another tool wrapped them
 * meanwhile they stay in its chain, passing calls through, and the next
 * disable() says so (`hooks_stuck`). */
static void stop_heap(fpy_profiler_t *p)
{
    if (p->memory && !fpy_heap_stop())
        p->hooks_stuck = 1;
}

static PyObject *profiler_enable(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    if (p->enabled)
        Py_RETURN_NONE;
    p->owner_tid = PyThreadState_Get()->id;
    p->source = p->fast ? &fpy_eval_source : FPY_DEFAULT_SOURCE;
    p->failed = 0;
    p->generation++;
    set_enabled(p, 1);
    if (p->source->attach(p) < 0) {
        set_enabled(p, 0);
        return NULL;
    }
    if (fpy_gc_attach(p) < 0) {
        p->source->detach(p);
        set_enabled(p, 0);
        return NULL;
    }
    /* Memory last (and first to stop): what attaching the event source
     * allocates (3.12+: instrumenting code objects) is the profiler's,
     * not the program's. */
    if (p->memory && fpy_heap_start(p->heap) < 0) {
        fpy_gc_detach(p);
        p->source->detach(p);
        set_enabled(p, 0);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Stops events and closes the frames still open, as cProfile does. */
static void disable_and_flush(fpy_profiler_t *p)
{
    if (!p->enabled)
        return;
    stop_heap(p);
    fpy_gc_detach(p);
    p->source->detach(p);
    set_enabled(p, 0);
    p->generation++;
    fp_time_t now = p->failed ? p->last_now : fpy_now(p);
    /* A CPU clock is per thread: other threads' readings are not comparable
     * with ours, so their open frames close at their own last event. */
    uint64_t me = PyThreadState_Get()->id;
    int per_thread_clock = p->clock.kind == FP_CLOCK_CPU;
    fp_thread_t *t;
    for (t = p->core.threads; t; t = t->hh.next) {
        fp_thread_flush(&p->core, t,
                        per_thread_clock && t->id != me
                            ? t->last_now
                            : fpy_program_time(p, t, now, (fpy_cost_t){0, 0}));
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
    /* what the thread allocates from here on belongs to no row */
    fpy_memory_pause(p, t);
    p->source->stop_thread(p, me);
    fp_thread_flush(&p->core, t,
                    fpy_program_time(p, t, p->failed ? p->last_now : fpy_now(p), (fpy_cost_t){0, 0}));
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
    disable_and_flush(p);
    fpy_drain_doomed(p);
    if (report_pending(p) < 0)
        return NULL;
    if (p->hooks_stuck == 1) {
        p->hooks_stuck = 2;
        if (PyErr_WarnEx(PyExc_RuntimeWarning,
                         "fastprof: another tool wrapped the allocators while memory was "
                         "profiled; fastprof's hooks stay inside its chain (passing every call "
                         "through), and the memory counts may miss what it did not pass on",
                         1) < 0)
            return NULL;
    }
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
    disable_and_flush(p);
    fpy_drain_doomed(p);
    PyObject *error = NULL;
    if (report_pending(p) < 0)
        error = PyErr_GetRaisedException();
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
    int enable_again = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (enable_again < 0)
        return NULL;
    if (enable_again)
        return profiler_enable(p, NULL);
    Py_RETURN_NONE;
}

static PyObject *profiler_clear(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    fp_profiler_clear(&p->core);
    if (p->heap) {
        fp_heap_clear(p->heap);
        fp_heap_forget_owners(p->heap); /* its owners were the rows just dropped */
    }
    fpy_route_clear_times(p);
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

/* The methods that read one of the tables that way. */
#define READS_TABLES(method, read)                                                                      \
    static PyObject *method(fpy_profiler_t *p, PyObject *args, PyObject *kwds)                          \
    {                                                                                                   \
        return read_tables(p, args, kwds, read);                                                        \
    }
READS_TABLES(profiler_getstats, fpy_getstats)
READS_TABLES(profiler_stats_and_codes, fpy_stats_and_codes)
READS_TABLES(profiler_callpaths, fpy_callpaths)
READS_TABLES(profiler_memory_rows, fpy_memory_rows)
READS_TABLES(profiler_memory_calls, fpy_memory_calls)
READS_TABLES(profiler_memory_callpaths, fpy_memory_callpaths)

static PyObject *profiler_threads(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    fpy_fold_ended(p, 1); /* ended threads beyond the newest few: their group's record */
    PyObject *result = PyList_New(0);
    fp_thread_t *t;
    for (t = p->core.threads; result && t; t = t->hh.next) {
        /* a thread whose every event returned from a frame begun before
         * profiling (a runner's thread waking up) has nothing to show */
        if (t->n_entries == 0)
            continue;
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
    fpy_fold_ended(p, 1);
    return PyLong_FromSize_t(fp_profiler_memory(&p->core) + fpy_route_memory(p) +
                             (p->core.heap ? fp_heap_self_bytes(p->core.heap) : 0));
}

static PyObject *profiler_thread_groups(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    return fpy_thread_groups(p);
}

static PyObject *profiler_take_folded(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    return fpy_take_gone(p);
}

static PyObject *profiler_clock_info(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{sssd}", "clock", fp_clock_name(p->clock.kind), "ticks_per_second",
                         p->clock.ticks_per_second);
}

static const char *const cost_names[FPY_COST_KINDS] = {
    "call", "return", "resume", "yield", "c_call", "c_return", "line", "unrecorded_call", "call_site"};

/* _set_compensation(on, py, c, line, resume, costs): see the stub
 * (_fastprof.pyi). */
static PyObject *profiler_set_compensation(fpy_profiler_t *p, PyObject *args)
{
    int on;
    long long py = 0, c = 0, line = 0, resume = -1;
    PyObject *costs = Py_None;
    if (!PyArg_ParseTuple(args, "p|LLLLO:_set_compensation", &on, &py, &c, &line, &resume, &costs))
        return NULL;
    if (resume < 0)
        resume = py;
    /* each kind's (pre, whole); by default all of it before the read (an
     * unrecorded call and a call site: 0, they are only ever calibrated) */
    long long v[FPY_COST_KINDS][2] = {{py, py},         {py, py}, {resume, resume},
                                      {resume, resume}, {c, c},   {c, c},
                                      {line, line},     {0, 0},   {0, 0}};
    if (costs != Py_None && !PyDict_Check(costs)) {
        PyErr_SetString(PyExc_TypeError, "costs must be a dict {kind: (pre, whole)}");
        return NULL;
    }
    for (int i = 0; costs != Py_None && i < FPY_COST_KINDS; i++) {
        PyObject *item = PyDict_GetItemString(costs, cost_names[i]); /* borrowed */
        if (item && (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "LL", &v[i][0], &v[i][1]))) {
            PyErr_Format(PyExc_TypeError, "cost of %s must be a tuple (pre, whole) of ints",
                         cost_names[i]);
            return NULL;
        }
    }
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "cannot change the compensation of an enabled profiler");
        return NULL;
    }
    for (int i = 0; i < FPY_COST_KINDS; i++) {
        if (v[i][0] < 0 || v[i][1] < v[i][0]) {
            PyErr_SetString(PyExc_ValueError, "delivery costs must be 0 <= pre <= whole");
            return NULL;
        }
    }
    p->compensate = on;
    for (int i = 0; i < FPY_COST_KINDS; i++)
        p->cost[i] = on ? (fpy_cost_t){v[i][0], v[i][1]} : (fpy_cost_t){0, 0};
    Py_RETURN_NONE;
}

/* _compensation(): {'compensate': bool, 'removed': seconds, 'extra_events':
 * the events charged that are no call's start or end, 'delivery': (py, c,
 * line) in clock ticks (wholes of a return, a C call, a line), 'resume':
 * ticks, 'costs': {kind: (pre, whole)}}. */
static PyObject *profiler_compensation(fpy_profiler_t *p, PyObject *Py_UNUSED(ignored))
{
    fp_time_t removed = 0;
    unsigned long long extra = 0;
    for (fp_thread_t *t = p->core.threads; t; t = t->hh.next) {
        removed += t->offset;
        extra += t->extra_events;
    }
    double tps = p->clock.ticks_per_second > 0.0 ? p->clock.ticks_per_second : 1e9;
    PyObject *costs = PyDict_New();
    for (int i = 0; costs && i < FPY_COST_KINDS; i++) {
        PyObject *v = Py_BuildValue("(LL)", (long long)p->cost[i].pre, (long long)p->cost[i].whole);
        if (!v || PyDict_SetItemString(costs, cost_names[i], v) < 0)
            Py_CLEAR(costs);
        Py_XDECREF(v);
    }
    if (!costs)
        return NULL;
    return Py_BuildValue("{sOsdsKs(LLL)sLsN}", "compensate", p->compensate ? Py_True : Py_False,
                         "removed", (double)removed / tps, "extra_events", extra, "delivery",
                         (long long)p->cost[FPY_COST_RETURN].whole,
                         (long long)p->cost[FPY_COST_C_CALL].whole,
                         (long long)p->cost[FPY_COST_LINE].whole, "resume",
                         (long long)p->cost[FPY_COST_RESUME].whole, "costs", costs);
}

static PyObject *profiler_get_enabled(fpy_profiler_t *p, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(p->enabled);
}

static int profiler_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(p)); /* a heap type: each instance holds it */
    Py_VISIT(p->module);
    Py_VISIT(p->timer);
    Py_VISIT(p->error);
    Py_VISIT(p->gc_callback);
    if (fpy_scope_traverse(p, visit, arg))
        return -1;
    if (fpy_route_traverse(p, visit, arg))
        return -1;
    for (size_t i = 0; i < N_SOURCES; i++) {
        int r = sources[i]->traverse(p, visit, arg);
        if (r)
            return r;
    }
    return 0;
}

static int profiler_tp_clear(fpy_profiler_t *p)
{
    Py_CLEAR(p->timer);
    Py_CLEAR(p->error);
    Py_CLEAR(p->gc_callback); /* unreachable: not in gc.callbacks any more */
    if (!p->enabled)
        fpy_scope_free(p);
    if (!p->enabled)
        fpy_route_clear(p);
    for (size_t i = 0; i < N_SOURCES; i++)
        sources[i]->clear(p);
    return 0;
}

/* tp_clear leaves `module` alone: `state` must stay valid until dealloc
 * (the list below, the source's event flags), and dropping the module
 * there is not needed to break a cycle (its own m_clear does that). */
static void profiler_dealloc(fpy_profiler_t *p)
{
    PyTypeObject *type = Py_TYPE(p);
    PyObject_GC_UnTrack(p);
    if (p->prev_live)
        p->prev_live->next_live = p->next_live;
    else
        p->state->live_profilers = p->next_live;
    if (p->next_live)
        p->next_live->prev_live = p->prev_live;
    if (p->enabled) {
        stop_heap(p);
        fpy_gc_detach(p);
        p->source->detach(p);
        set_enabled(p, 0);
    }
    fp_profiler_destroy(&p->core);
    fpy_heap_release(p->heap);
    fpy_fold_free(p);
    fpy_scope_free(p);
    fpy_route_clear(p);
    fpy_route_free(p);
    fpy_drain_doomed(p);
    PyMem_Free(p->doomed);
    Py_CLEAR(p->timer);
    Py_CLEAR(p->error);
    for (size_t i = 0; i < N_SOURCES; i++)
        sources[i]->free(p);
    PyObject *module = p->module;
    type->tp_free((PyObject *)p);
    Py_DECREF(type);
    Py_DECREF(module); /* last: the state lives in it */
}

/* The docstrings open with text signatures ("name($self, ...)\n--\n\n"),
 * so inspect.signature() reads them; tests/test_stub.py compares them with
 * _fastprof.pyi. */
static PyMethodDef profiler_methods[] = {
    {"enable", (PyCFunction)profiler_enable, METH_NOARGS,
     "enable($self, /)\n--\n\nStart collecting profiling information."},
    {"disable", (PyCFunction)(void (*)(void))profiler_disable, METH_VARARGS | METH_KEYWORDS,
     "disable($self, /, *, this_thread=False)\n--\n\nStop collecting profiling information; frames "
     "still "
     "open are closed. this_thread=True (with threads=True): stop only the calling thread, the others "
     "go on until disable()."},
    {"_toggle_with", (PyCFunction)profiler_toggle_with, METH_VARARGS,
     "_toggle_with($self, callback, /, *args)\n--\n\ndisable(), then callback(error, was_enabled, "
     "*args), "
     "then enable() if it returned true; a signal handler that records no frame of its own."},
    {"_memory_totals", (PyCFunction)fpy_memory_totals, METH_NOARGS,
     "_memory_totals($self, /)\n--\n\nmemory=True: the traced heap's totals, a dict."},
    {"_memory_rows", (PyCFunction)(void (*)(void))profiler_memory_rows, METH_VARARGS | METH_KEYWORDS,
     "_memory_rows($self, /, thread=None)\n--\n\nmemory=True: each row's self allocations per thread "
     "record (thread: that record's only), a list of (code, caller, thread, allocations, allocated, "
     "frees, freed, net, live_at_peak)."},
    {"_memory_calls", (PyCFunction)(void (*)(void))profiler_memory_calls, METH_VARARGS | METH_KEYWORDS,
     "_memory_calls($self, /, thread=None)\n--\n\nmemory=True: each function's and edge's bytes "
     "including callees and peak per thread record (thread: that record's only), a list of (code, "
     "caller, thread, allocated_incl, peak)."},
    {"_memory_callpaths", (PyCFunction)(void (*)(void))profiler_memory_callpaths,
     METH_VARARGS | METH_KEYWORDS,
     "_memory_callpaths($self, /, thread=None)\n--\n\nmemory=True, callpaths=True: callpaths(thread), "
     "each node followed by (allocations, allocated, frees, freed, net, live_at_peak, allocated_incl, "
     "peak)."},
    {"_memory_vs_tracemalloc", (PyCFunction)fpy_memory_vs_tracemalloc, METH_O,
     "_memory_vs_tracemalloc($self, clear, /)\n--\n\nTesting only: clear both, or read both "
     "at one moment."},
    {"_set_scope", (PyCFunction)fpy_scope_set, METH_O,
     "_set_scope($self, decide, /)\n--\n\nonly=: record only code objects for which decide(code) is "
     "true (and the C functions they call); None: everything. Only while disabled."},
    {"_route_by", (PyCFunction)fpy_route_by, METH_VARARGS,
     "_route_by($self, var, open, /)\n--\n\nRecord each event in the record of its thread and of the "
     "request whose id (an int) the ContextVar var holds, if that id is in the set open; events "
     "without one are not recorded. None: off. Only while disabled."},
    {"_drop_route", (PyCFunction)fpy_route_drop, METH_O,
     "_drop_route($self, request, /)\n--\n\nDrop the records of request id request (after reading "
     "them)."},
    {"_route_times", (PyCFunction)fpy_route_times, METH_O,
     "_route_times($self, request, /)\n--\n\n[(record id, ident, seconds, CPU seconds, profiler "
     "seconds, removed seconds, extra events)]: each thread's time in the context of request id "
     "request, the profiler's cost taken out of its record and the events charged that are no "
     "call's start or end; the calling thread's ends."},
    {"clear", (PyCFunction)profiler_clear, METH_NOARGS,
     "clear($self, /)\n--\n\nDrop all profiling information collected so far."},
    {"getstats", (PyCFunction)(void (*)(void))profiler_getstats, METH_VARARGS | METH_KEYWORDS,
     "getstats($self, /, thread=None)\n--\n\nA list of profiler_entry, as _lsprof.Profiler.getstats()."},
    {"_stats_and_codes", (PyCFunction)(void (*)(void))profiler_stats_and_codes,
     METH_VARARGS | METH_KEYWORDS,
     "_stats_and_codes($self, /, thread=None)\n--\n\n(pstats dict, codes): "
     "entries_to_stats(getstats(thread)) and the entries' codes, without the entries."},
    {"_stats_marshal", (PyCFunction)fpy_stats_marshal, METH_VARARGS,
     "_stats_marshal($self, skip_file, hides_c_function, /)\n--\n\n"
     "Private: (table, qualnames, codes, files, calls, thread id) of a profile one thread "
     "recorded: the marshal bytes of its pstats table without the rows of file skip_file (nor a "
     "C function only they called whose name hides_c_function(name) accepts) and of the "
     "trailer's qualified names, the rows' codes and files, the calls; None: use "
     "_stats_and_codes."},
    {"_fold_into", (PyCFunction)fpy_stats_fold, METH_VARARGS,
     "_fold_into($self, other, pairs, /)\n--\n\n"
     "Private: add the stats of this profiler's threads into another profiler's, never enabled; "
     "pairs: (thread id here, thread id there) of each thread to add. Line stats are not added."},
    {"callpaths", (PyCFunction)(void (*)(void))profiler_callpaths, METH_VARARGS | METH_KEYWORDS,
     "callpaths($self, /, thread=None)\n--\n\nA list of (parent, code, calls, inlinetime, totaltime)."},
    {"threads", (PyCFunction)profiler_threads, METH_NOARGS,
     "threads($self, /)\n--\n\nA list of (id, ident, native_id) of the profiled threads that "
     "recorded a call."},
    {"memory", (PyCFunction)profiler_memory, METH_NOARGS,
     "memory($self, /)\n--\n\nBytes used by the stats tables (and with memory=True, the table of "
     "the blocks alive and their owners)."},
    {"_hold_folds", (PyCFunction)fpy_hold_folds, METH_O,
     "_hold_folds($self, on, /)\n--\n\nPrivate: on: fold the records of ended threads now, "
     "then no more until the matching _hold_folds(False) (a read of several steps)."},
    {"_thread_groups", (PyCFunction)profiler_thread_groups, METH_NOARGS,
     "_thread_groups($self, /)\n--\n\nPrivate: {record id: (group, threads)} of the records "
     "that ended threads were folded into."},
    {"_take_folded", (PyCFunction)profiler_take_folded, METH_NOARGS,
     "_take_folded($self, /)\n--\n\nPrivate: the ids of the records folded away since the "
     "last call (or _thread_started), as a tuple."},
    {"clock_info", (PyCFunction)profiler_clock_info, METH_NOARGS,
     "clock_info($self, /)\n--\n\n{'clock': name, 'ticks_per_second': float}."},
    {"_set_compensation", (PyCFunction)profiler_set_compensation, METH_VARARGS,
     "_set_compensation($self, on, py=0, c=0, line=0, resume=-1, costs=None, /)\n--\n\n"
     "Private: compensation on or off (on even with a custom timer: tests), and the "
     "delivery cost of each kind of event in clock ticks, all before the event's clock "
     "read (resume < 0: py's); costs: {kind: (pre, whole)} for kinds call, return, resume, "
     "yield, c_call, c_return, line, unrecorded_call, call_site (pre: the part before the "
     "read; the last two, 3.12+, are charged whole at a CALL event). Only while disabled."},
    {"_compensation", (PyCFunction)profiler_compensation, METH_NOARGS,
     "_compensation($self, /)\n--\n\n"
     "Private: {'compensate': bool, 'removed': seconds, 'delivery': (py, c, line) ticks, "
     "'resume': ticks, 'costs': {kind: (pre, whole) ticks}}."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef profiler_getset[] = {
    {"enabled", (getter)profiler_get_enabled, NULL, "Whether the profiler is collecting.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot profiler_slots[] = {
    {Py_tp_doc, "Profile(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, threads=False, "
                "clock='wall', coroutines='call', callpaths=False, max_depth=128, gc=False, fast=False, "
                "compensate=True, memory=False)\n--\n\n"
                "The C profiler behind fastprof.Profile."},
    {Py_tp_new, (void *)profiler_new},
    {Py_tp_init, (void *)profiler_init},
    {Py_tp_dealloc, (void *)profiler_dealloc},
    {Py_tp_traverse, (void *)profiler_traverse},
    {Py_tp_clear, (void *)profiler_tp_clear},
    {Py_tp_methods, profiler_methods},
    {Py_tp_getset, profiler_getset},
    {0, NULL},
};

/* The type's name is what a profile's disable() row says: "{method
 * 'disable' of 'fastprof.Profile' objects}", the class the user called it
 * on, as wide as cProfile's "{method 'disable' of '_lsprof.Profiler'
 * objects}", so pstats tables come out as wide as cProfile's (CPython's
 * test_cprofile compares them to the character). A heap type per module
 * instance (module state profiler_type). */
static PyType_Spec profiler_spec = {
    .name = "fastprof.Profile",
    .basicsize = sizeof(fpy_profiler_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | FPY_TPFLAGS_IMMUTABLE,
    .slots = profiler_slots,
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
 * other threads are closed at their thread's last event before the fork
 * (at the next disable() the child's clock would inflate them). Closed, not
 * dropped: a recursive call finished inside an open one keeps its own time,
 * so its outermost call must keep the cumulative time that covers it.
 * Each module instance registers its own handler, for its own profilers. */
static PyObject *after_fork_child(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    fpy_module_state *st = PyModule_GetState(module);
    uint64_t me = PyThreadState_Get()->id;
    fpy_profiler_t *p;
    for (p = st->live_profilers; p; p = p->next_live) {
        fp_thread_t *t;
        for (t = p->core.threads; t; t = t->hh.next) {
            if (t->id != me)
                fp_thread_flush(&p->core, t, t->last_now);
        }
        if (p->enabled)
            p->source->after_fork(p);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_after_fork_child", after_fork_child, METH_NOARGS,
     "_after_fork_child($module, /)\n--\n\nCalled in a fork child (os.register_at_fork)."},
    {"_mem_fail_after", mem_fail_after, METH_O,
     "_mem_fail_after($module, n, /)\n--\n\n"
     "Testing only: let the next n core allocations succeed and fail the rest (n < 0: never fail)."},
    {"_entries_stats", fpy_entries_stats, METH_O,
     "_entries_stats($module, entries, /)\n--\n\n"
     "getstats() entries as a pstats dict (fastprof.profiler.entries_to_stats's loop)."},
    {"_add_stats", fpy_add_stats, METH_VARARGS,
     "_add_stats($module, out, table, keys, chosen=None, /)\n--\n\n"
     "Add pstats dict table into the sum out, rows as lists, keys chosen by keys "
     "(fastprof.model.add_stats's loop)."},
    {"_test_set_dummy_evaluator", fpy_eval_test_set_dummy_evaluator, METH_O,
     "_test_set_dummy_evaluator($module, on, /)\n--\n\n"
     "Testing only: install (on) or remove a pass-through PEP 523 frame evaluator that is not "
     "fastprof's, as another tool would."},
    {NULL, NULL, 0, NULL},
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

static int module_exec(PyObject *m)
{
    fpy_module_state *st = PyModule_GetState(m);
    st->profiler_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &profiler_spec, NULL);
    if (!st->profiler_type)
        return -1;
    for (size_t i = 0; i < N_SOURCES; i++) {
        if (sources[i]->module_init(m, st) < 0)
            return -1;
    }
    if (fpy_gc_module_init(m, st) < 0 || fpy_stats_module_init(m, st) < 0 ||
        fpy_lines_module_init(m) < 0)
        return -1;
    if (PyModule_AddObject(m, "Profiler", Py_NewRef((PyObject *)st->profiler_type)) < 0) {
        Py_DECREF(st->profiler_type);
        return -1;
    }
    if (PyModule_AddIntConstant(m, "USES_MONITORING", FPY_USE_MONITORING) < 0)
        return -1;
    return register_fork_handler(m);
}

static int module_traverse(PyObject *m, visitproc visit, void *arg)
{
    fpy_module_state *st = PyModule_GetState(m);
    if (!st)
        return 0;
    Py_VISIT(st->profiler_type);
    Py_VISIT(st->entry_type);
    Py_VISIT(st->subentry_type);
    Py_VISIT(st->source_type);
    Py_VISIT(st->gc_callbacks);
    Py_VISIT(st->gc_name);
    return 0;
}

/* Live profilers hold the module (and so this state) until they are
 * freed: their list needs no clearing. A profiler still alive after this
 * clear raises an error where it would need an object cleared here
 * (fpy_gc.c, fpy_stats.c, the sources). */
static int module_clear(PyObject *m)
{
    fpy_module_state *st = PyModule_GetState(m);
    if (!st)
        return 0;
    Py_CLEAR(st->profiler_type);
    Py_CLEAR(st->entry_type);
    Py_CLEAR(st->subentry_type);
    Py_CLEAR(st->source_type);
    Py_CLEAR(st->gc_callbacks);
    Py_CLEAR(st->gc_name);
    return 0;
}

static void module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
#ifdef Py_mod_multiple_interpreters /* 3.12+; see the top of this file */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil /* 3.13+ */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "fastprof._fastprof",
    .m_doc = "The C core of fastprof.",
    .m_size = sizeof(fpy_module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__fastprof(void)
{
    return PyModuleDef_Init(&module_def);
}
