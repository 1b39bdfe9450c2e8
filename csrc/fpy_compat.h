/* fpy_compat: the CPython version differences of the public C API, and
 * the named features the binding asks for.
 *
 * With fpy_cpython_internals.h (the private CPython internals fastprof
 * touches), the only files that test PY_VERSION_HEX. Elsewhere, code asks
 * for a named feature (FPY_USE_MONITORING, FPY_GENERATOR_CLOSE_IS_SILENT)
 * or calls a shim defined in one of the two; each says why. Shims that
 * backport a newer public API carry its upstream name (Py_NewRef,
 * PyErr_GetRaisedException, PyType_GetModuleByDef here;
 * PyThreadState_EnterTracing, which before 3.11 can only be written with
 * internals, in fpy_cpython_internals.h), so they go away unchanged with
 * the old versions. The version-specific source files are guarded whole
 * by these macros (fpy_source_legacy.c, fpy_source_monitoring.c,
 * fpy_thread_cache.c): setup.py compiles every .c file in csrc/, and on a
 * version that does not use one it compiles to nothing. */
#ifndef FPY_COMPAT_H
#define FPY_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

/* ---- named features ---- */

/* 3.12 replaced the per-thread C profile hook with sys.monitoring; the old
 * hook still works there but through a slower shim. 1: the event source
 * is fpy_source_monitoring.c, 0: fpy_source_legacy.c. */
#if PY_VERSION_HEX >= 0x030C0000
#define FPY_USE_MONITORING 1
#else
#define FPY_USE_MONITORING 0
#endif

/* 3.12 and 3.13's sys.monitoring makes a new int object for an event's
 * code offset or line number (beyond the small ints) before it calls the
 * callbacks; 3.14 takes them from a free list (fpy_heap_hooks.h). */
#if FPY_USE_MONITORING && PY_VERSION_HEX < 0x030E0000
#define FPY_EVENT_INTS_ALLOCATED 1
#else
#define FPY_EVENT_INTS_ALLOCATED 0
#endif

/* 3.13 closes a generator suspended outside any try block without running
 * it, so no monitoring event tells its end (fpy_source_monitoring.c
 * watches such generators with a weakref). */
#if PY_VERSION_HEX >= 0x030D0000
#define FPY_GENERATOR_CLOSE_IS_SILENT 1
#else
#define FPY_GENERATOR_CLOSE_IS_SILENT 0
#endif

/* ---- backports of newer public API, under their upstream names ---- */

/* Py_NewRef: 3.10. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

/* PyErr_GetRaisedException: 3.12. The exception being raised as one
 * normalised object with its traceback (new reference, or NULL if none),
 * and the error indicator cleared. */
#if PY_VERSION_HEX < 0x030C0000
static inline PyObject *PyErr_GetRaisedException(void)
{
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
}
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

/* ---- other version differences ---- */

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

/* Saving the exception in flight across a callback and restoring it as it
 * was (not normalised): 3.12 made the exception a single object. */
#if PY_VERSION_HEX >= 0x030C0000
typedef struct {
    PyObject *exc;
} fpy_exc_state;
static inline void fpy_exc_save(fpy_exc_state *s)
{
    s->exc = PyErr_GetRaisedException();
}
static inline void fpy_exc_restore(fpy_exc_state *s)
{
    PyErr_SetRaisedException(s->exc);
}
#else
typedef struct {
    PyObject *type, *value, *tb;
} fpy_exc_state;
static inline void fpy_exc_save(fpy_exc_state *s)
{
    PyErr_Fetch(&s->type, &s->value, &s->tb);
}
static inline void fpy_exc_restore(fpy_exc_state *s)
{
    PyErr_Restore(s->type, s->value, s->tb);
}
#endif

/* A code object's qualified name (3.11+: co_qualname, borrowed), NULL
 * before 3.11, which has none. */
static inline PyObject *fpy_code_qualname(PyCodeObject *code)
{
#if PY_VERSION_HEX >= 0x030B0000
    return code->co_qualname;
#else
    (void)code;
    return NULL;
#endif
}

/* Code flags of generator-like code: these frames can suspend. */
#define FPY_CO_SUSPENDABLE (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

#endif
