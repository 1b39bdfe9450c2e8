/* Attribute access and method calls by interned name, for the binding's
 * calls into Python modules (sys.monitoring, threading), and the errors of
 * the Python code it runs dropped (fpy_drop_error).
 *
 * CPython's type-attribute cache (3.10+) picks its slot by the address of
 * the name string and keeps a reference to it. PyObject_GetAttrString and
 * PyObject_CallMethod make a fresh string per call, which then lingers in
 * a new slot: thousands of enable() calls would keep thousands of strings.
 * An interned name is the same string, hence the same slot, every time. */
#include "fpy_profiler.h"

#include <stdarg.h>

PyObject *fpy_getattr(PyObject *obj, const char *name)
{
    PyObject *key = PyUnicode_InternFromString(name);
    if (!key)
        return NULL;
    PyObject *value = PyObject_GetAttr(obj, key);
    Py_DECREF(key);
    return value;
}

PyObject *fpy_call_method(PyObject *obj, const char *name, const char *fmt, ...)
{
    PyObject *method = fpy_getattr(obj, name);
    if (!method)
        return NULL;
    va_list va;
    va_start(va, fmt);
    PyObject *args = Py_VaBuildValue(fmt, va);
    va_end(va);
    PyObject *result = args ? PyObject_Call(method, args, NULL) : NULL;
    Py_XDECREF(args);
    Py_DECREF(method);
    return result;
}

void fpy_drop_error(void)
{
    int interrupted = PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt);
    PyErr_Clear();
    if (interrupted)
        PyErr_SetInterrupt();
}
