/* Event source for Python 3.12+: C functions (METH_FASTCALL, bound to the
 * profiler) registered directly as sys.monitoring callbacks, which costs
 * less than the legacy profile hook that 3.12 emulates on top of
 * sys.monitoring. Events arrive from every thread; fpy_mon_thread_for
 * (fpy_thread_cache.c) keeps each thread's stack apart and filters threads
 * when threads=False.
 *
 * Its table is fpy_mon_source (at the end), its state p->mon (fpy_source.h). */
#include "fpy_record_fast.h"
#include "fpy_scope.h"
#include "fpy_thread_cache.h"

#if FPY_USE_MONITORING

/* Tool ids tried in order: the profiler slot first, then two unassigned
 * ones, so fastprof can run alongside cProfile or another fastprof. */
static const int tool_ids[] = {2, 3, 4};

static PyObject *frame_ident(void)
{
    /* Only generator frames in wall mode need an identity: their frame
     * object lives as long as the generator. Borrowed on purpose: it is
     * only compared, never dereferenced. */
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    Py_XDECREF(f);
    return (PyObject *)f;
}

/* A Python frame is entered (PY_START, PY_RESUME, PY_THROW) or left
 * (PY_RETURN, PY_UNWIND, PY_YIELD): args are (code, offset, ...).
 * py_enter and py_leave are inline in each callback: one shared
 * out-of-line copy would put a call back in every event. */

FP_FORCE_INLINE PyObject *py_enter(fpy_profiler_t *p, PyObject *const *args, Py_ssize_t nargs, int first)
{
    if (p && nargs >= 1 && PyCode_Check(args[0])) {
        PyCodeObject *code = (PyCodeObject *)args[0];
        fp_thread_t *t = fpy_mon_thread_for(p);
        if (t) {
            const void *ident = NULL;
            if (fpy_frame_parks(p, code))
                ident = frame_ident();
            fpy_record_py_enter(p, t, code, ident, first);
        }
    }
    Py_RETURN_NONE;
}

#if FPY_GENERATOR_CLOSE_IS_SILENT
/* 3.13 closes a generator suspended outside any try block without running
 * it: no event tells its end. A weakref to the generator does: its
 * callback marks the parked frame dead, so it closes where it parked. */
static PyObject *on_generator_gone(PyObject *self, PyObject *wr)
{
    /* self: (profiler, thread id, frame identity) */
    fpy_profiler_t *p = (fpy_profiler_t *)PyTuple_GET_ITEM(self, 0);
    PyObject *ident_obj = PyTuple_GET_ITEM(self, 2);
    fp_thread_t *t = fp_thread_find(&p->core, PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(self, 1)));
    if (t)
        fp_mark_dead(t, PyLong_AsVoidPtr(ident_obj));
    if (p->mon.gen_watch && PyDict_GetItemWithError(p->mon.gen_watch, ident_obj) == wr &&
        PyDict_DelItem(p->mon.gen_watch, ident_obj) < 0)
        PyErr_Clear();
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef generator_gone_def = {"_on_generator_gone", on_generator_gone, METH_O, NULL};

/* Watches the generator of the frame just parked under `ident` (once). */
static void watch_generator(fpy_profiler_t *p, fp_thread_t *t, const void *ident)
{
    fp_parked_t *park = fp_parked_find(t, ident);
    if (!park || park->frame.watched)
        return;
    park->frame.watched = 1;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    PyFrameObject *frame = PyThreadState_GetFrame(PyThreadState_Get());
    PyObject *gen = frame ? PyFrame_GetGenerator(frame) : NULL;
    PyObject *state = gen ? Py_BuildValue("(OKN)", (PyObject *)p, (unsigned long long)t->id,
                                          PyLong_FromVoidPtr((void *)ident))
                          : NULL;
    PyObject *cb = state ? PyCFunction_New(&generator_gone_def, state) : NULL;
    PyObject *wr = cb ? PyWeakref_NewRef(gen, cb) : NULL;
    if (wr && (p->mon.gen_watch || (p->mon.gen_watch = PyDict_New())))
        PyDict_SetItem(p->mon.gen_watch, PyTuple_GET_ITEM(state, 2), wr);
    Py_XDECREF(wr);
    Py_XDECREF(cb);
    Py_XDECREF(state);
    Py_XDECREF(gen);
    Py_XDECREF(frame);
    PyErr_Clear();
    fpy_exc_restore(&saved);
}
#endif

FP_FORCE_INLINE PyObject *py_leave(fpy_profiler_t *p, PyObject *const *args, Py_ssize_t nargs,
                                   int suspending)
{
    if (p && nargs >= 1 && PyCode_Check(args[0])) {
        PyCodeObject *code = (PyCodeObject *)args[0];
        fp_thread_t *t = fpy_mon_thread_for(p);
        if (t) {
            const void *ident = NULL;
            if (suspending && fpy_frame_parks(p, code))
                ident = frame_ident();
            fpy_record_py_leave(p, t, code, ident, suspending);
#if FPY_GENERATOR_CLOSE_IS_SILENT
            if (ident)
                watch_generator(p, t, ident);
#endif
        }
    }
    Py_RETURN_NONE;
}

/* The callbacks registered with sys.monitoring: small objects with their
 * own vectorcall, called directly by the interpreter (a builtin function
 * would add its own call layer to every event). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    fpy_profiler_t *prof; /* strong reference; NULL once cleared by the GC */
} fpy_callback_t;

#define PROFILER_OF(callback) (((fpy_callback_t *)(callback))->prof)

FP_FORCE_INLINE PyObject *on_start(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)kwnames;
    return py_enter(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf), 1);
}

FP_FORCE_INLINE PyObject *on_resume(PyObject *cb, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    (void)kwnames;
    return py_enter(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf), 0);
}

FP_FORCE_INLINE PyObject *on_return(PyObject *cb, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    (void)kwnames;
    return py_leave(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf), 0);
}

/* only=: PY_START, PY_THROW and PY_UNWIND stay global events, the others
 * are local to the code objects in scope (fpy_scope.c); these three see
 * every code object, and ignore those out of scope. Registered instead of
 * the three above only with only=, so the common case pays nothing. */
FP_FORCE_INLINE int out_of_scope(fpy_profiler_t *p, PyObject *const *args, Py_ssize_t nargs)
{
    return p && p->scope && nargs >= 1 && PyCode_Check(args[0]) &&
           !fpy_in_scope(p, (PyCodeObject *)args[0]);
}

FP_FORCE_INLINE PyObject *on_start_scoped(PyObject *cb, PyObject *const *args, size_t nargsf,
                                          PyObject *kwnames)
{
    fpy_profiler_t *p = PROFILER_OF(cb);
    if (out_of_scope(p, args, PyVectorcall_NARGS(nargsf)))
        return Py_NewRef(p->scope->disable); /* never again for this code */
    return on_start(cb, args, nargsf, kwnames);
}

FP_FORCE_INLINE PyObject *on_resume_scoped(PyObject *cb, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames)
{
    if (out_of_scope(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf)))
        Py_RETURN_NONE;
    return on_resume(cb, args, nargsf, kwnames);
}

FP_FORCE_INLINE PyObject *on_return_scoped(PyObject *cb, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames)
{
    if (out_of_scope(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf)))
        Py_RETURN_NONE;
    return on_return(cb, args, nargsf, kwnames);
}

FP_FORCE_INLINE PyObject *on_yield(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)kwnames;
    return py_leave(PROFILER_OF(cb), args, PyVectorcall_NARGS(nargsf), 1);
}

/* Whether the interpreter runs `callable` in its own eval loop, with no
 * C_RETURN after its CALL: a Python function, or a method of one. */
FP_FORCE_INLINE int runs_inline(PyObject *callable)
{
    return Py_IS_TYPE(callable, &PyFunction_Type) ||
           (Py_IS_TYPE(callable, &PyMethod_Type) && PyFunction_Check(PyMethod_GET_FUNCTION(callable)));
}

/* CALL, C_RETURN, C_RAISE: (code, offset, callable, arg0). CALL comes for
 * every callable. A C function cProfile records is recorded; the others'
 * events are charged their calibrated cost, whole, to the thread's
 * account: a Python function's CALL (its call site's, the caller's time;
 * its PY_START is a call's), and the CALL and later C_RETURN of anything
 * else (a class, a partial), which nothing records. */
FP_FORCE_INLINE PyObject *on_call(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)kwnames;
    fpy_profiler_t *p = PROFILER_OF(cb);
    if (!p || PyVectorcall_NARGS(nargsf) < 4)
        Py_RETURN_NONE;
    enum fpy_cost_kind kind = FPY_COST_CALL_SITE;
    if (!runs_inline(args[2])) {
        const void *key = fpy_cfunc_key(args[2], args[3], p->mon.missing);
        if (key) {
            fp_thread_t *t = fpy_mon_thread_for(p);
            if (t)
                fpy_record_c_enter(p, t, key, args[2], args[3]);
            Py_RETURN_NONE;
        }
        kind = FPY_COST_UNRECORDED_CALL;
    }
    if (p->compensate) { /* (counted even when calibrated at 0: an event the note spreads over) */
        fp_thread_t *t = fpy_mon_thread_for(p);
        if (t) {
            t->offset += p->cost[kind].whole;
            t->extra_events++;
        }
    }
    Py_RETURN_NONE;
}

FP_FORCE_INLINE PyObject *on_c_return(PyObject *cb, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames)
{
    (void)kwnames;
    fpy_profiler_t *p = PROFILER_OF(cb);
    if (!p || PyVectorcall_NARGS(nargsf) < 4)
        Py_RETURN_NONE;
    /* A method descriptor called without a self it binds to is not
     * recorded (fpy_cfunc_key): its return must not close a recorded call
     * of the same descriptor further out, so it is not recorded either. */
    if (Py_IS_TYPE(args[2], &PyMethodDescr_Type) &&
        !fpy_descr_binds((PyMethodDescrObject *)args[2], args[3], p->mon.missing))
        Py_RETURN_NONE;
    fp_thread_t *t = fpy_mon_thread_for(p);
    if (t)
        fpy_record_c_leave(p, t, args[2], args[3], p->mon.missing);
    Py_RETURN_NONE;
}

static const vectorcallfunc callback_fns[] = {on_start, on_resume, on_return,
                                              on_yield, on_call,   on_c_return};
static const vectorcallfunc scoped_callback_fns[] = {on_start_scoped, on_resume_scoped, on_return_scoped,
                                                     on_yield,        on_call,          on_c_return};

#if FPY_EVENT_INTS_ALLOCATED
/* memory=True on 3.12 and 3.13: the event's offset, an int the interpreter
 * made for the callbacks, is not the program's allocation (fpy_heap_hooks.h);
 * then the event as without memory. Registered only then: other profiles
 * pay nothing for it. */
#define MEMORY_CALLBACK(name, then)                                                                     \
    static PyObject *name(PyObject *cb, PyObject *const *args, size_t nargsf, PyObject *kwnames)        \
    {                                                                                                   \
        if (PyVectorcall_NARGS(nargsf) >= 2)                                                            \
            fpy_heap_disown_event_int(args[1]);                                                         \
        return then(cb, args, nargsf, kwnames);                                                         \
    }
MEMORY_CALLBACK(on_start_memory, on_start)
MEMORY_CALLBACK(on_resume_memory, on_resume)
MEMORY_CALLBACK(on_return_memory, on_return)
MEMORY_CALLBACK(on_start_scoped_memory, on_start_scoped)
MEMORY_CALLBACK(on_resume_scoped_memory, on_resume_scoped)
MEMORY_CALLBACK(on_return_scoped_memory, on_return_scoped)
MEMORY_CALLBACK(on_yield_memory, on_yield)
MEMORY_CALLBACK(on_call_memory, on_call)
MEMORY_CALLBACK(on_c_return_memory, on_c_return)
static const vectorcallfunc memory_callback_fns[] = {on_start_memory,  on_resume_memory,
                                                     on_return_memory, on_yield_memory,
                                                     on_call_memory,   on_c_return_memory};
static const vectorcallfunc memory_scoped_callback_fns[] = {
    on_start_scoped_memory, on_resume_scoped_memory, on_return_scoped_memory,
    on_yield_memory,        on_call_memory,          on_c_return_memory};
#endif

static void callback_dealloc(fpy_callback_t *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->prof);
    PyObject_GC_Del(self);
    Py_DECREF(type); /* a heap type: each instance holds it */
}

static int callback_traverse(fpy_callback_t *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->prof);
    return 0;
}

static int callback_clear(fpy_callback_t *self)
{
    Py_CLEAR(self->prof);
    return 0;
}

/* A heap type per module instance (module state source_type); the
 * interpreter calls its instances through their vectorcall slot. */
static PyMemberDef callback_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(fpy_callback_t, vectorcall), Py_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot callback_slots[] = {
    {Py_tp_call, (void *)PyVectorcall_Call},     {Py_tp_dealloc, (void *)callback_dealloc},
    {Py_tp_traverse, (void *)callback_traverse}, {Py_tp_clear, (void *)callback_clear},
    {Py_tp_members, callback_members},           {0, NULL},
};

static PyType_Spec callback_spec = {
    .name = "fastprof._fastprof._Callback",
    .basicsize = sizeof(fpy_callback_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = callback_slots,
};

static PyObject *new_callback(fpy_profiler_t *p, PyTypeObject *type, vectorcallfunc fn)
{
    fpy_callback_t *cb = PyObject_GC_New(fpy_callback_t, type);
    if (!cb)
        return NULL;
    cb->vectorcall = fn;
    cb->prof = (fpy_profiler_t *)Py_NewRef((PyObject *)p);
    PyObject_GC_Track(cb);
    return (PyObject *)cb;
}

/* Events by name: their flags are read from sys.monitoring.events, not
 * hard-coded. C_RETURN and C_RAISE come with CALL (set_events refuses
 * them alone) but need their own callback. */
static const struct {
    const char *event;
    int callback; /* index into callback_fns */
    int builtins_only;
    int implied_by_call;
    int global_only; /* sys.monitoring has no local form of it */
    int decides;     /* only=: decides the scope of each code object */
} event_table[] = {
    {"PY_START", 0, 0, 0, 0, 1},  {"PY_RESUME", 1, 0, 0, 0, 0}, {"PY_THROW", 1, 0, 0, 1, 0},
    {"PY_RETURN", 2, 0, 0, 0, 0}, {"PY_UNWIND", 2, 0, 0, 1, 0}, {"PY_YIELD", 3, 0, 0, 0, 0},
    {"CALL", 4, 1, 0, 0, 0},      {"C_RETURN", 5, 1, 1, 0, 0},  {"C_RAISE", 5, 1, 1, 0, 0},
};

#define N_EVENTS ((int)(sizeof event_table / sizeof event_table[0]))
_Static_assert(N_EVENTS == FPY_MON_EVENTS, "fpy_module_state.mon_events has room for each event");

/* sys.monitoring.events.<event_table[i].event> are read once per module
 * instance into its state's mon_events. */

/* sys.monitoring (new reference), or NULL with an exception set. */
static PyObject *monitoring_module(void)
{
    PyObject *mon = PySys_GetObject("monitoring");
    if (!mon)
        PyErr_SetString(PyExc_RuntimeError, "fastprof: sys.monitoring is missing");
    return Py_XNewRef(mon);
}

/* Claims a free tool id; -1 with ValueError if none is free. */
static int claim_tool_id(PyObject *mon)
{
    for (size_t i = 0; i < sizeof tool_ids / sizeof tool_ids[0]; i++) {
        PyObject *r = fpy_call_method(mon, "use_tool_id", "(is)", tool_ids[i], "fastprof");
        if (r) {
            Py_DECREF(r);
            return tool_ids[i];
        }
        if (!PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();
    }
    PyErr_SetString(PyExc_ValueError,
                    "cannot enable fastprof: sys.monitoring tool ids 2-4 are all in use "
                    "(other profilers are active)");
    return -1;
}

static void mon_detach(fpy_profiler_t *p);

static int mon_attach(fpy_profiler_t *p)
{
    fpy_mon_thread_cache_reset(p);
    PyTypeObject *callback_type = p->state->source_type;
    if (!callback_type) {
        PyErr_SetString(PyExc_RuntimeError, "fastprof: the _fastprof module was torn down");
        return -1;
    }
    PyObject *mon = monitoring_module();
    if (!mon)
        return -1;
    long mask = 0, local = 0;
    if (!p->mon.missing) {
        p->mon.missing = fpy_getattr(mon, "MISSING");
        if (!p->mon.missing)
            goto error;
    }
    p->mon.tool_id = claim_tool_id(mon);
    if (p->mon.tool_id < 0)
        goto error;
    for (int i = 0; i < N_EVENTS; i++) {
        if (event_table[i].builtins_only && !p->builtins)
            continue;
        long flag = p->state->mon_events[i];
        const vectorcallfunc *fns = p->scope ? scoped_callback_fns : callback_fns;
#if FPY_EVENT_INTS_ALLOCATED
        if (p->core.heap)
            fns = p->scope ? memory_scoped_callback_fns : memory_callback_fns;
#endif
        PyObject *fn = new_callback(p, callback_type, fns[event_table[i].callback]);
        if (!fn)
            goto error;
        PyObject *r = fpy_call_method(mon, "register_callback", "(ilO)", p->mon.tool_id, flag, fn);
        Py_DECREF(fn);
        if (!r)
            goto error;
        Py_DECREF(r);
        if (!event_table[i].implied_by_call)
            mask |= flag;
        if (!event_table[i].implied_by_call && !event_table[i].global_only && !event_table[i].decides)
            local |= flag;
    }
    if (p->scope) {
        mask &= ~local;
        if (fpy_scope_attach(p, mon, local) < 0)
            goto error;
    }
    PyObject *r = fpy_call_method(mon, "set_events", "(il)", p->mon.tool_id, mask);
    if (!r)
        goto error;
    Py_DECREF(r);
    Py_DECREF(mon);
    return 0;
error:
    Py_DECREF(mon);
    mon_detach(p);
    return -1;
}

static void mon_detach(fpy_profiler_t *p)
{
    if (p->mon.tool_id < 0)
        return;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    PyObject *mon = monitoring_module();
    if (mon) {
        if (p->scope)
            fpy_scope_detach(p, mon);
        PyObject *r = fpy_call_method(mon, "set_events", "(ii)", p->mon.tool_id, 0);
        Py_XDECREF(r);
        for (int i = 0; i < N_EVENTS; i++) {
            r = fpy_call_method(mon, "register_callback", "(ilO)", p->mon.tool_id,
                                p->state->mon_events[i], Py_None);
            Py_XDECREF(r);
        }
        r = fpy_call_method(mon, "free_tool_id", "(i)", p->mon.tool_id);
        Py_XDECREF(r);
        Py_DECREF(mon);
    }
    PyErr_Clear();
    p->mon.tool_id = -1;
    fpy_exc_restore(&saved);
}

/* Events come from every thread: fpy_mon_thread_for_slow drops the stopped
 * thread's once the cache forgets it. */
static void mon_stop_thread(fpy_profiler_t *p, PyThreadState *ts)
{
    (void)ts;
    fpy_mon_thread_cache_reset(p);
}

static fp_thread_t *mon_running_thread(fpy_profiler_t *p)
{
    return fpy_mon_thread_for(p);
}

static void mon_forget_thread(fpy_profiler_t *p, fp_thread_t *t)
{
    if (p->mon.cached_thread == t)
        fpy_mon_thread_cache_reset(p);
}

/* The other threads are gone without their exits being told: a new one
 * may get the thread pointer of one of them. */
static void mon_after_fork(fpy_profiler_t *p)
{
    fpy_mon_thread_cache_reset(p);
}

static void mon_init(fpy_profiler_t *p)
{
    p->mon.tool_id = -1;
}

static int mon_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->mon.gen_watch);
    return 0;
}

static void mon_clear(fpy_profiler_t *p)
{
    Py_CLEAR(p->mon.gen_watch);
}

static void mon_free(fpy_profiler_t *p)
{
    Py_CLEAR(p->mon.missing);
    Py_CLEAR(p->mon.gen_watch);
}

static int mon_module_init(PyObject *module, fpy_module_state *st)
{
    if (fpy_mon_thread_cache_init() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "fastprof: cannot make its thread-exit key");
        return -1;
    }
    PyObject *mon = monitoring_module();
    PyObject *events = mon ? fpy_getattr(mon, "events") : NULL;
    Py_XDECREF(mon);
    if (!events)
        return -1;
    for (int i = 0; i < N_EVENTS; i++) {
        PyObject *flag = fpy_getattr(events, event_table[i].event);
        st->mon_events[i] = flag ? PyLong_AsLong(flag) : -1;
        Py_XDECREF(flag);
        if (st->mon_events[i] < 0) {
            Py_DECREF(events);
            return -1;
        }
    }
    Py_DECREF(events);
    st->source_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &callback_spec, NULL);
    return st->source_type ? 0 : -1;
}

const fpy_source_ops fpy_mon_source = {
    .name = "monitoring",
    .module_init = mon_module_init,
    .init = mon_init,
    .attach = mon_attach,
    .detach = mon_detach,
    .stop_thread = mon_stop_thread,
    .running_thread = mon_running_thread,
    .forget_thread = mon_forget_thread,
    .after_fork = mon_after_fork,
    .traverse = mon_traverse,
    .clear = mon_clear,
    .free = mon_free,
};

#endif
