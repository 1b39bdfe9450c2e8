/* Names of C functions, exactly as cProfile (_lsprof) makes them, so that
 * rows match between the two profilers (their keys: fpy_cfunc_key in
 * fpy_profiler.h, inline as every C call event asks for one). */
#include "fpy_profiler.h"

/* repr(o). PyObject_Repr runs pending signal handlers first: a Ctrl-C that
 * comes as a C function is named raises its KeyboardInterrupt here. That
 * is the program's, not the name's: the repr is made again (the right
 * name, as cProfile's) and SIGINT tripped again, for the program's next
 * bytecode. */
static PyObject *repr_keeping_ctrl_c(PyObject *o)
{
    PyObject *res = PyObject_Repr(o);
    if (res || !PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
        return res;
    PyErr_Clear();
    res = PyObject_Repr(o);
    PyErr_SetInterrupt();
    return res;
}

/* The name of a builtin function or method object. */
static PyObject *name_of_cfunction(PyCFunctionObject *fn)
{
    const char *ml_name = fn->m_ml->ml_name;
    if (fn->m_self == NULL) {
        /* a plain built-in function: "<module.name>", "<name>" for builtins */
        PyObject *mod = fn->m_module, *modname = NULL;
        if (mod && PyUnicode_Check(mod)) {
            modname = Py_NewRef(mod);
        } else if (mod && PyModule_Check(mod)) {
            modname = PyModule_GetNameObject(mod);
            if (!modname)
                PyErr_Clear();
        }
        if (modname) {
            PyObject *res = NULL;
            if (PyUnicode_CompareWithASCIIString(modname, "builtins") != 0)
                res = PyUnicode_FromFormat("<%U.%s>", modname, ml_name);
            Py_DECREF(modname);
            if (res)
                return res;
        }
        return PyUnicode_FromFormat("<%s>", ml_name);
    }
    /* a built-in method: repr(getattr(type(__self__), __name__)). The name
     * is interned: the type-attribute cache keeps the name it was asked
     * for, and a fresh string per lookup would stay alive there. */
    PyObject *name = PyUnicode_InternFromString(ml_name);
    if (name) {
        PyObject *mo = fpy_type_lookup(Py_TYPE(fn->m_self), name);
        Py_DECREF(name);
        if (mo) {
            Py_INCREF(mo);
            PyObject *res = repr_keeping_ctrl_c(mo);
            Py_DECREF(mo);
            if (res)
                return res;
        }
    }
    fpy_drop_error();
    PyObject *modname = fn->m_module;
    if (modname && PyUnicode_Check(modname))
        return PyUnicode_FromFormat("<built-in method %U.%s>", modname, ml_name);
    return PyUnicode_FromFormat("<built-in method %s>", ml_name);
}

PyObject *fpy_cfunc_name(PyObject *callable, PyObject *self_arg)
{
    if (PyCFunction_Check(callable))
        return name_of_cfunction((PyCFunctionObject *)callable);
    /* a method descriptor: name the bound method, as cProfile does */
    descrgetfunc get = Py_TYPE(callable)->tp_descr_get;
    PyObject *bound = get ? get(callable, self_arg, (PyObject *)Py_TYPE(self_arg)) : NULL;
    if (!bound)
        return NULL;
    PyObject *res = PyCFunction_Check(bound) ? name_of_cfunction((PyCFunctionObject *)bound)
                                             : repr_keeping_ctrl_c(callable);
    Py_DECREF(bound);
    return res;
}
