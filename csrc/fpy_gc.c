/* Garbage collections recorded as the pseudo-function `<gc>` (pstats key
 * ('~', 0, '<gc>')), called by whatever function was running when the
 * collection started, so a collection's pause is its own row instead of
 * landing in the tottime of whichever function happened to allocate.
 *
 * The source is gc.callbacks ("start" and "stop" of each collection). The
 * callback is a C function: a Python one would itself be profiled.
 * Collections never overlap (the collector refuses to start while one is
 * running, even when a finalizer releases the GIL), so one open <gc> per
 * profiler is enough. */
#include "fpy_profiler.h"

/* gc.callbacks (the list the collector reads: a module attribute rebound
 * later would not be read by the collector, so it is taken once) and the
 * entries' user object, the name cProfile-style tools show, are in the
 * module state (gc_callbacks, gc_name): each interpreter has its own.
 * The key of <gc> entries: an address no code object or PyMethodDef has. */
static const char gc_key;

/* The clock at an edge of a collection. A custom timer runs with events
 * off, or its own calls would be recorded under <gc>. */
static fp_time_t gc_now(fpy_profiler_t *p)
{
    if (p->clock.kind != FP_CLOCK_CUSTOM)
        return fpy_now(p);
    PyThreadState *ts = PyThreadState_Get();
    PyThreadState_EnterTracing(ts);
    fp_time_t now = fpy_now_custom(p);
    PyThreadState_LeaveTracing(ts);
    return now;
}

static fp_entry_t *gc_entry(fpy_profiler_t *p, fp_thread_t *t)
{
    fp_entry_t *e = fp_entry_find(t, &gc_key);
    if (e)
        return e;
    PyObject *gc_name = p->state->gc_name;
    if (!gc_name)
        return NULL; /* the module is being torn down: a dropped call */
    e = fp_entry_add(t, &gc_key, Py_NewRef(gc_name));
    if (!e) {
        Py_DECREF(gc_name); /* an interned string: no code runs */
        p->core.nomem = 1;
    }
    return e;
}

static void gc_phase_start(fpy_profiler_t *p)
{
    if (p->gc_thread || !p->enabled || p->failed || fpy_naming_thread())
        return;
    fp_thread_t *t = p->source->running_thread(p);
    if (!t)
        return; /* a thread this profiler does not record */
    uint64_t gen = p->generation;
    /* Inside a clock read (a custom timer that allocated) or the naming
     * of a C function, the event being recorded has not got its place on
     * the stack yet: count the collection at the thread's last time, so
     * no time is charged twice. */
    int untimed = p->busy;
    fp_time_t raw = untimed ? 0 : gc_now(p);
    if (!fpy_live(p, gen))
        return;
    fp_time_t now = untimed ? t->last_now : fpy_program_time(p, t, raw, (fpy_cost_t){0, 0});
    fp_enter(&p->core, t, gc_entry(p, t), NULL, now); /* NULL entry: a dropped call */
    if (!untimed)
        fpy_charge(p, t, raw, (fpy_cost_t){0, 0}); /* the callback's own time, not the collection's */
    p->gc_thread = t;
    p->gc_generation = gen;
    p->gc_untimed = untimed;
}

static void gc_phase_stop(fpy_profiler_t *p)
{
    fp_thread_t *t = p->gc_thread;
    if (!t)
        return;
    p->gc_thread = NULL;
    /* disabled or cleared meanwhile (by a finalizer): the frame is gone */
    if (!fpy_live(p, p->gc_generation))
        return;
    int untimed = p->gc_untimed;
    fp_time_t raw = untimed ? 0 : gc_now(p);
    if (!fpy_live(p, p->gc_generation))
        return;
    fp_leave(&p->core, t, &gc_key,
             untimed ? t->last_now : fpy_program_time(p, t, raw, (fpy_cost_t){0, 0}));
    if (!untimed)
        fpy_charge(p, t, raw, (fpy_cost_t){0, 0});
}

/* gc.callbacks entry: callback(phase, info). */
static PyObject *gc_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    fpy_profiler_t *p = (fpy_profiler_t *)self;
    if (nargs < 1 || !PyUnicode_Check(args[0]))
        Py_RETURN_NONE;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    if (PyUnicode_CompareWithASCIIString(args[0], "start") == 0)
        gc_phase_start(p);
    else if (PyUnicode_CompareWithASCIIString(args[0], "stop") == 0)
        gc_phase_stop(p);
    fpy_exc_restore(&saved);
    Py_RETURN_NONE;
}

static PyMethodDef gc_callback_def = {
    "_gc_callback", (PyCFunction)(void (*)(void))gc_callback, METH_FASTCALL,
    "Records a garbage collection as <gc> (in gc.callbacks while enabled)."};

int fpy_gc_attach(fpy_profiler_t *p)
{
    p->gc_thread = NULL;
    if (!p->gc)
        return 0;
    PyObject *gc_callbacks = p->state->gc_callbacks;
    if (!gc_callbacks) {
        PyErr_SetString(PyExc_RuntimeError, "fastprof: the _fastprof module was torn down");
        return -1;
    }
    if (!p->gc_callback && !(p->gc_callback = PyCFunction_New(&gc_callback_def, (PyObject *)p)))
        return -1;
    if (PyList_Append(gc_callbacks, p->gc_callback) < 0) {
        Py_CLEAR(p->gc_callback);
        return -1;
    }
    return 0;
}

void fpy_gc_detach(fpy_profiler_t *p)
{
    p->gc_thread = NULL;
    PyObject *gc_callbacks = p->state->gc_callbacks;
    if (!p->gc_callback || !gc_callbacks)
        return;
    /* Ours only, by identity; a user may have reordered or cleared the
     * list. Removing an item while the collector walks the list is safe:
     * it reads the length on each step and holds the callable it calls. */
    for (Py_ssize_t i = PyList_GET_SIZE(gc_callbacks) - 1; i >= 0; i--) {
        if (PyList_GET_ITEM(gc_callbacks, i) == p->gc_callback) {
            if (PyList_SetSlice(gc_callbacks, i, i + 1, NULL) < 0)
                PyErr_Clear(); /* shrinking a list does not fail */
            break;
        }
    }
    /* the list held another reference: this does not free the callable,
     * whose profiler (m_self) the caller holds anyway */
    Py_CLEAR(p->gc_callback);
}

int fpy_gc_module_init(PyObject *module, fpy_module_state *st)
{
    (void)module;
    PyObject *gc = PyImport_ImportModule("gc");
    if (!gc)
        return -1;
    st->gc_callbacks = PyObject_GetAttrString(gc, "callbacks");
    Py_DECREF(gc);
    if (!st->gc_callbacks)
        return -1;
    if (!PyList_Check(st->gc_callbacks)) {
        PyErr_SetString(PyExc_TypeError, "gc.callbacks is not a list");
        return -1;
    }
    st->gc_name = PyUnicode_InternFromString("<gc>");
    return st->gc_name ? 0 : -1;
}
