/* Event source for Python 3.9-3.11: the C profile hook of each thread
 * (what cProfile uses). The hook's object argument names the profiler and
 * the thread's record, so each event finds both directly: in the enabling
 * thread it is the profiler itself (sys.getprofile() returns it, as with
 * cProfile), in other threads a small per-thread hook object with the same
 * layout (fpy_legacy_hook_target_t). threads=True also hooks the threads already
 * running, and new threads through threading.setprofile.
 *
 * Its table is fpy_legacy_source (at the end), its state p->legacy (fpy_source.h). */
#include "fpy_record_fast.h"
#include "fpy_route.h"
#include "fpy_scope.h"
#include "fpy_thread_ids.h"

#if !FPY_USE_MONITORING

/* The hook object of a thread other than the enabling one. Its `prof` is
 * a strong reference, NULL once cleared by the GC; `thread` is the hooked
 * thread's record (records live as long as their profiler). */
typedef struct {
    PyObject_HEAD
    fpy_legacy_hook_target_t target; /* at the offset of the profiler's */
} fpy_hook_t;

_Static_assert(offsetof(fpy_hook_t, target) == offsetof(fpy_profiler_t, legacy.hook),
               "the callback reads a hook and a profiler at the same offsets");

/* What the callback reads from either kind of hook object. */
#define HOOK_TARGET(obj) (&((fpy_hook_t *)(obj))->target)

static void hook_dealloc(fpy_hook_t *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->target.prof);
    PyObject_GC_Del(self);
    Py_DECREF(type); /* a heap type: each instance holds it */
}

static int hook_traverse(fpy_hook_t *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->target.prof);
    return 0;
}

static int hook_clear(fpy_hook_t *self)
{
    Py_CLEAR(self->target.prof);
    return 0;
}

/* A heap type per module instance (module state source_type). */
static PyType_Slot hook_slots[] = {
    {Py_tp_dealloc, (void *)hook_dealloc},
    {Py_tp_traverse, (void *)hook_traverse},
    {Py_tp_clear, (void *)hook_clear},
    {0, NULL},
};

static PyType_Spec hook_spec = {
    .name = "fastprof._fastprof._Hook",
    .basicsize = sizeof(fpy_hook_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | FPY_TPFLAGS_IMMUTABLE_NO_NEW,
    .slots = hook_slots,
};

static void hook_new_threads_if_threading(fpy_profiler_t *p);

/* The hook. `scoped` (only=): the frame is the function called or
 * returning, or the caller of a C function: its events are all ignored out
 * of scope. Two hooks (callback, callback_scoped), so that the common case
 * pays nothing for the test. */
FP_FORCE_INLINE int on_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg, int scoped)
{
    fpy_profiler_t *p = HOOK_TARGET(obj)->prof;
    fp_thread_t *t;
    const void *key;
    if (!p)
        return 0;
    t = fpy_route(p, HOOK_TARGET(obj)->thread);
    if (!t || (scoped && !fpy_in_scope(p, fpy_frame_code(frame)))) {
        if (what == PyTrace_RETURN && p->legacy.threading_pending &&
            !(fpy_frame_code(frame)->co_flags & CO_NEWLOCALS))
            hook_new_threads_if_threading(p);
        return 0;
    }
    switch (what) {
    case PyTrace_CALL: {
        /* a generator's events are charged as resumes and yields, which
         * cost less than a plain call and return; `first` (a plain call)
         * changes nothing else for code that does not park */
        PyCodeObject *code = fpy_frame_code(frame);
        fpy_record_py_enter(p, t, code, frame, !(code->co_flags & FPY_CO_SUSPENDABLE));
        break;
    }
    case PyTrace_RETURN: {
        PyCodeObject *code = fpy_frame_code(frame);
        /* parking frames: whether this is a yield; others: a generator's
         * every leave is charged as a yield (nothing else reads it) */
        int suspending = (code->co_flags & FPY_CO_SUSPENDABLE) &&
                         (!fpy_frame_parks(p, code) || fpy_frame_is_suspending(frame));
        fpy_record_py_leave(p, t, code, frame, suspending);
        /* a module (or class) body ended: perhaps threading's */
        if (p->legacy.threading_pending && !(code->co_flags & CO_NEWLOCALS))
            hook_new_threads_if_threading(p);
        break;
    }
    case PyTrace_C_CALL:
        if (p->builtins && (key = fpy_cfunc_key(arg, NULL, NULL)))
            fpy_record_c_enter(p, t, key, arg, NULL);
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (p->builtins)
            fpy_record_c_leave(p, t, arg, NULL, NULL);
        break;
    default:
        break;
    }
    return 0;
}

static int callback(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    return on_event(obj, frame, what, arg, 0);
}

static int callback_scoped(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    return on_event(obj, frame, what, arg, 1);
}

/* The hook for `p`'s threads (the scope cannot change while enabled). */
static Py_tracefunc hook_func(fpy_profiler_t *p)
{
    return p->scope ? callback_scoped : callback;
}

static int is_our_hook(PyThreadState *ts, fpy_profiler_t *p)
{
    /* with our callback, the object is one of ours: a hook or a profiler */
    PyObject *obj = fpy_profile_obj(ts);
    Py_tracefunc func = fpy_profile_func(ts);
    return (func == callback || func == callback_scoped) && obj && HOOK_TARGET(obj)->prof == p;
}

/* The hook of thread `tid`, made if missing; borrowed (p->legacy.hooks owns it),
 * NULL with an exception set on failure. Allocates: may run the GC. */
static PyObject *hook_for(fpy_profiler_t *p, uint64_t tid)
{
    if (!p->legacy.hooks && !(p->legacy.hooks = PyDict_New()))
        return NULL;
    PyObject *key = PyLong_FromUnsignedLongLong(tid);
    if (!key)
        return NULL;
    PyObject *hook = PyDict_GetItemWithError(p->legacy.hooks, key);
    if (!hook && !PyErr_Occurred() && !p->state->source_type)
        PyErr_SetString(PyExc_RuntimeError, "fastprof: the _fastprof module was torn down");
    if (!hook && !PyErr_Occurred()) {
        fpy_hook_t *h = PyObject_GC_New(fpy_hook_t, p->state->source_type);
        if (h) {
            h->target.prof = (fpy_profiler_t *)Py_NewRef((PyObject *)p);
            h->target.thread = NULL;
            PyObject_GC_Track(h);
            if (PyDict_SetItem(p->legacy.hooks, key, (PyObject *)h) == 0)
                hook = (PyObject *)h;
            Py_DECREF(h);
        }
    }
    Py_DECREF(key);
    return hook;
}

/* Installs the already made hook of thread state `ts` (any thread; we hold
 * the GIL). Nothing here allocates a GC object, so the caller may be in
 * the middle of a walk over the thread states. */
static int install_hook(fpy_profiler_t *p, PyThreadState *ts)
{
    if (is_our_hook(ts, p))
        return 0;
    PyObject *hook = (PyObject *)p; /* the enabling thread's */
    if (ts->id != p->owner_tid) {
        PyObject *key = PyLong_FromUnsignedLongLong(ts->id);
        hook = key && p->legacy.hooks ? PyDict_GetItemWithError(p->legacy.hooks, key) : NULL;
        Py_XDECREF(key);
        if (!hook)
            return PyErr_Occurred() ? -1 : 0; /* a thread born meanwhile */
    }
    fp_thread_t *t = fpy_thread_record(p, ts);
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    HOOK_TARGET(hook)->thread = t;
    return fpy_set_profile(ts, hook_func(p), hook);
}

/* Hooks thread state `ts`, which must stay alive meanwhile (the current
 * thread's, or one just found without releasing the GIL). */
static int hook_thread(fpy_profiler_t *p, PyThreadState *ts)
{
    uint64_t tid = ts->id;
    if (tid != p->owner_tid && !hook_for(p, tid))
        return -1;
    return install_hook(p, ts);
}

/* Hooks every thread of the interpreter. Hooks are made first, from ids
 * (fpy_thread_ids.h: making one can run the GC). */
static int hook_all_threads(fpy_profiler_t *p, PyInterpreterState *interp)
{
    uint64_t *ids;
    size_t n;
    if (fpy_thread_ids(interp, NULL, NULL, &ids, &n) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = ids[i] == p->owner_tid || hook_for(p, ids[i]) ? 0 : -1;
    PyMem_Free(ids);
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts && rc == 0;
         ts = PyThreadState_Next(ts))
        rc = install_hook(p, ts);
    return rc;
}

/* threading.setprofile target: runs first thing in each new thread. It
 * swaps itself for the C hook and records the call that triggered it. */
static PyObject *thread_starter(PyObject *self, PyObject *args)
{
    fpy_profiler_t *p = (fpy_profiler_t *)self;
    PyObject *frame, *event, *arg;
    if (!PyArg_ParseTuple(args, "OUO", &frame, &event, &arg))
        return NULL;
    if (!p->enabled || !p->threads_all)
        Py_RETURN_NONE;
    PyThreadState *tstate = PyThreadState_Get();
    int fresh = !fp_thread_find(&p->core, tstate->id);
    uint64_t group = 0;
    if (fresh) {
        group = fpy_thread_started(p, tstate->id);
        if (!p->enabled || !p->threads_all)
            Py_RETURN_NONE; /* disabled meanwhile */
    }
    if (hook_thread(p, tstate) < 0)
        return NULL;
    fp_thread_t *t = fresh ? fp_thread_find(&p->core, tstate->id) : NULL;
    if (t)
        t->group = group;
    if (PyFrame_Check(frame) && PyUnicode_CompareWithASCIIString(event, "call") == 0)
        hook_func(p)(fpy_profile_obj(tstate), (PyFrameObject *)frame, PyTrace_CALL, Py_None);
    Py_RETURN_NONE;
}

static PyMethodDef thread_starter_def = {"_thread_starter", thread_starter, METH_VARARGS, NULL};

/* sys.modules["threading"] (new reference), or NULL without an exception */
static PyObject *imported_threading(void)
{
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *m = PyDict_Check(modules) ? PyDict_GetItemString(modules, "threading") : NULL;
    Py_XINCREF(m);
    return m;
}

/* threading.setprofile(func) if the program has imported threading (and
 * it has got as far as defining setprofile): 1 done, 0 not yet, -1 error */
static int call_threading_setprofile(PyObject *func)
{
    PyObject *threading = imported_threading();
    if (!threading)
        return 0;
    int has = PyObject_HasAttrString(threading, "setprofile");
    PyObject *r = has ? fpy_call_method(threading, "setprofile", "(O)", func) : NULL;
    Py_DECREF(threading);
    Py_XDECREF(r);
    return !has ? 0 : r ? 1 : -1;
}

static void hook_new_threads_if_threading(fpy_profiler_t *p)
{
    fpy_exc_state saved;
    fpy_exc_save(&saved); /* a return event may come with an exception in flight */
    int rc = p->legacy.thread_starter ? call_threading_setprofile(p->legacy.thread_starter) : 1;
    if (rc != 0)
        p->legacy.threading_pending = 0;
    if (rc < 0)
        fpy_drop_error();
    fpy_exc_restore(&saved);
}

static void legacy_detach(fpy_profiler_t *p);

static int legacy_attach(fpy_profiler_t *p)
{
    PyThreadState *me = PyThreadState_Get();
    if (!p->threads_all)
        return hook_thread(p, me);
    /* threading.setprofile runs Python code: call it before hooking, so it
     * does not show up in the stats */
    p->legacy.thread_starter = PyCFunction_New(&thread_starter_def, (PyObject *)p);
    int rc = p->legacy.thread_starter ? call_threading_setprofile(p->legacy.thread_starter) : -1;
    if (rc < 0)
        goto error;
    p->legacy.threading_pending = rc == 0;
    if (hook_all_threads(p, me->interp) < 0)
        goto error;
    return 0;
error:
    legacy_detach(p);
    return -1;
}

static void legacy_detach(fpy_profiler_t *p)
{
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    /* unhook first, so that undoing threading.setprofile is not recorded */
    PyThreadState *me = PyThreadState_Get();
    PyThreadState *ts;
    for (ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        if (is_our_hook(ts, p) && fpy_set_profile(ts, NULL, NULL) < 0)
            PyErr_Clear();
    }
    p->legacy.threading_pending = 0;
    if (p->legacy.thread_starter) {
        /* only undo threading.setprofile if it is still ours */
        PyObject *threading = imported_threading();
        PyObject *cur = threading ? fpy_getattr(threading, "_profile_hook") : NULL;
        if (cur == p->legacy.thread_starter && call_threading_setprofile(Py_None) < 0)
            fpy_drop_error();
        Py_XDECREF(cur);
        Py_XDECREF(threading);
        fpy_drop_error();
        Py_CLEAR(p->legacy.thread_starter);
    }
    fpy_exc_restore(&saved);
}

static void legacy_stop_thread(fpy_profiler_t *p, PyThreadState *ts)
{
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    if (is_our_hook(ts, p) && fpy_set_profile(ts, NULL, NULL) < 0)
        PyErr_Clear();
    fpy_exc_restore(&saved);
}

static fp_thread_t *legacy_running_thread(fpy_profiler_t *p)
{
    PyThreadState *ts = PyThreadState_Get();
    return is_our_hook(ts, p) ? fpy_route(p, HOOK_TARGET(fpy_profile_obj(ts))->thread) : NULL;
}

/* The hook of an ended thread (its thread state dropped its reference)
 * goes: the hooks of a server's short-lived threads would pile up. */
static void legacy_forget_thread(fpy_profiler_t *p, fp_thread_t *t)
{
    if (p->legacy.hook.thread == t)
        p->legacy.hook.thread = NULL;
    if (!p->legacy.hooks)
        return;
    PyObject *key = PyLong_FromUnsignedLongLong(t->id);
    PyObject *hook = key ? PyDict_GetItemWithError(p->legacy.hooks, key) : NULL;
    if (hook && HOOK_TARGET(hook)->thread == t) {
        HOOK_TARGET(hook)->thread = NULL;
        /* its dealloc drops a reference to the profiler, never the last:
         * the caller holds one */
        if (PyDict_DelItem(p->legacy.hooks, key) < 0)
            PyErr_Clear();
    }
    Py_XDECREF(key);
    PyErr_Clear(); /* out of memory: the hook stays, pointing at nothing */
}

/* Each thread's hook names its record: nothing cached to forget. */
static void legacy_after_fork(fpy_profiler_t *p)
{
    (void)p;
}

static void legacy_init(fpy_profiler_t *p)
{
    p->legacy.hook.prof = p;
}

static int legacy_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->legacy.hooks);
    return 0;
}

/* Not while enabled: install_hook still finds the threads' hooks there. */
static void legacy_clear(fpy_profiler_t *p)
{
    if (!p->enabled)
        Py_CLEAR(p->legacy.hooks);
}

static void legacy_free(fpy_profiler_t *p)
{
    Py_CLEAR(p->legacy.thread_starter);
    Py_CLEAR(p->legacy.hooks);
}

static int legacy_module_init(PyObject *module, fpy_module_state *st)
{
    st->source_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &hook_spec, NULL);
    return st->source_type ? 0 : -1;
}

const fpy_source_ops fpy_legacy_source = {
    .name = "legacy",
    .module_init = legacy_module_init,
    .init = legacy_init,
    .attach = legacy_attach,
    .detach = legacy_detach,
    .stop_thread = legacy_stop_thread,
    .running_thread = legacy_running_thread,
    .forget_thread = legacy_forget_thread,
    .after_fork = legacy_after_fork,
    .traverse = legacy_traverse,
    .clear = legacy_clear,
    .free = legacy_free,
};

#endif
