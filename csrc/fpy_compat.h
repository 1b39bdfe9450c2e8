/* fpy_compat: every CPython version difference the binding depends on.
 * The only file that tests PY_VERSION_HEX; each shim says why. */
#ifndef FPY_COMPAT_H
#define FPY_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

/* Py_NewRef arrived in 3.10. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

/* 3.12 replaced the per-thread C profile hook with sys.monitoring; the old
 * hook still works there but through a slower shim. */
#if PY_VERSION_HEX >= 0x030C0000
#define FPY_USE_MONITORING 1
#else
#define FPY_USE_MONITORING 0
#endif

/* Saving the exception in flight across a callback: 3.12 made the
 * exception a single object. */
#if PY_VERSION_HEX >= 0x030C0000
typedef struct { PyObject *exc; } fpy_exc_state;
static inline void fpy_exc_save(fpy_exc_state *s) { s->exc = PyErr_GetRaisedException(); }
static inline void fpy_exc_restore(fpy_exc_state *s) { PyErr_SetRaisedException(s->exc); }
#else
typedef struct { PyObject *type, *value, *tb; } fpy_exc_state;
static inline void fpy_exc_save(fpy_exc_state *s) { PyErr_Fetch(&s->type, &s->value, &s->tb); }
static inline void fpy_exc_restore(fpy_exc_state *s) { PyErr_Restore(s->type, s->value, s->tb); }
#endif

/* Takes the exception being raised as one normalised object with its
 * traceback (new reference, or NULL if none). */
static inline PyObject *fpy_err_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (!type)
        return NULL;
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

#if !FPY_USE_MONITORING
/* The code object of a frame, borrowed. 3.9/3.10 expose f_code; 3.11
 * made PyFrameObject opaque and PyFrame_GetCode returns a new reference,
 * which the frame keeps alive anyway. */
static inline PyCodeObject *fpy_frame_code(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code);
    return code;
#else
    return frame->f_code;
#endif
}

/* Whether a generator frame that is returning to its caller is suspending
 * (yield / await) rather than finishing. Each version records it in a
 * different place just before the return event fires:
 * 3.9 sets f_stacktop only when suspending; 3.10 has f_state; 3.11 keeps
 * the state in the generator (FRAME_SUSPENDED is -1 in pycore_frame.h). */
static inline int fpy_frame_is_suspending(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *gen = PyFrame_GetGenerator(frame);
    if (!gen)
        return 0;
    int suspended = ((PyGenObject *)gen)->gi_frame_state == -1;
    Py_DECREF(gen);
    return suspended;
#elif PY_VERSION_HEX >= 0x030A0000
    return frame->f_state == FRAME_SUSPENDED;
#else
    return frame->f_stacktop != NULL;
#endif
}
#endif

/* Code flags of generator-like code: these frames can suspend. */
#define FPY_CO_SUSPENDABLE (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

/* A type attribute lookup that neither raises nor runs code (borrowed). */
static inline PyObject *fpy_type_lookup(PyTypeObject *type, PyObject *name)
{
    return _PyType_Lookup(type, name);
}

/* Running Python code (a custom timer) from a garbage-collection callback
 * without that code being profiled: the interpreter delivers no profile or
 * monitoring events while a thread is "tracing". 3.11 made it an API; 3.10
 * keeps use_tracing in the C frame, 3.9 in the thread state. */
static inline void fpy_tracing_enter(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing++;
    ts->cframe->use_tracing = 0;
#else
    ts->tracing++;
    ts->use_tracing = 0;
#endif
}

static inline void fpy_tracing_leave(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing--;
    ts->cframe->use_tracing = ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
#else
    ts->tracing--;
    ts->use_tracing = ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
#endif
}

/* ---- module state (fpy_module.c) ---- */

/* Heap types made from specs behave as the static types did: attributes
 * cannot be set and the internal ones cannot be instantiated from Python.
 * 3.10 added both flags; 3.9 has neither (its internal types can then be
 * instantiated, and their instances do nothing). */
#if PY_VERSION_HEX >= 0x030A0000
#define FPY_TPFLAGS_IMMUTABLE Py_TPFLAGS_IMMUTABLETYPE
#define FPY_TPFLAGS_IMMUTABLE_NO_NEW (Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION)
#else
#define FPY_TPFLAGS_IMMUTABLE 0
#define FPY_TPFLAGS_IMMUTABLE_NO_NEW 0
#endif

/* PyType_GetModuleByDef, public since 3.11, backported under its upstream
 * name from public 3.9 calls: the module of the first class in `type`'s
 * MRO made by PyType_FromModuleAndSpec with a module of definition `def`
 * (borrowed), or NULL with TypeError. It finds the module from a Python
 * subclass too (fastprof.Profile), which PyType_GetModule alone does not. */
#if PY_VERSION_HEX < 0x030B0000
static inline PyObject *PyType_GetModuleByDef(PyTypeObject *type, struct PyModuleDef *def)
{
    PyObject *mro = type->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE))
            continue;
        PyObject *module = PyType_GetModule(base);
        if (!module)
            PyErr_Clear(); /* a heap type not made with a module */
        else if (PyModule_GetDef(module) == def)
            return module;
    }
    PyErr_Format(PyExc_TypeError, "PyType_GetModuleByDef: no superclass of '%s' has the given module",
                 type->tp_name);
    return NULL;
}
#endif

#endif
