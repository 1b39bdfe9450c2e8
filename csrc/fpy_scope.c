/* only=: see fpy_scope.h. */
#include "fpy_scope.h"

static int remember(fpy_scope_t *s, PyCodeObject *code, int in_scope)
{
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *value = key ? Py_BuildValue("(Oi)", (PyObject *)code, in_scope) : NULL;
    int r = value ? PyDict_SetItem(s->decided, key, value) : -1;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return r;
}

/* -1: not decided yet (no exception), else 0/1 */
static int recall(fpy_scope_t *s, PyCodeObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *value = key ? PyDict_GetItemWithError(s->decided, key) : NULL;
    Py_XDECREF(key);
    if (!value) {
        PyErr_Clear();
        return -1;
    }
    return PyLong_AsLong(PyTuple_GET_ITEM(value, 1)) != 0;
}

#if FPY_USE_MONITORING
static int set_local(fpy_profiler_t *p, PyObject *mon, PyCodeObject *code, long events)
{
    PyObject *r =
        fpy_call_method(mon, "set_local_events", "(iOl)", p->mon.tool_id, (PyObject *)code, events);
    Py_XDECREF(r);
    return r ? 0 : -1;
}
#endif

int fpy_scope_decide(fpy_profiler_t *p, PyCodeObject *code)
{
    fpy_scope_t *s = p->scope;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    int in_scope = recall(s, code);
    if (in_scope < 0) {
        PyObject *r = PyObject_CallOneArg(s->decide, (PyObject *)code);
        in_scope = r ? PyObject_IsTrue(r) > 0 : 0;
        Py_XDECREF(r);
        if (!r && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
            /* a Ctrl-C, not an answer: given back, and decided next time */
            fpy_drop_error();
            fpy_exc_restore(&saved);
            return 0;
        }
        PyErr_Clear();
        /* not remembered (out of memory): decided again next time */
        if (remember(s, code, in_scope) < 0) {
            PyErr_Clear();
            fpy_exc_restore(&saved);
            return in_scope;
        }
#if FPY_USE_MONITORING
        if (in_scope && p->mon.tool_id >= 0) {
            PyObject *mon = PySys_GetObject("monitoring");
            if (!mon || set_local(p, mon, code, s->local_events) < 0)
                PyErr_Clear();
        }
#endif
    }
    size_t i = ((uintptr_t)code >> 4) % FPY_SCOPE_SLOTS;
    s->cache[i].code = code;
    s->cache[i].in_scope = in_scope;
    fpy_exc_restore(&saved);
    return in_scope;
}

PyObject *fpy_scope_set(fpy_profiler_t *p, PyObject *decide)
{
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "the scope cannot change while the profiler is enabled");
        return NULL;
    }
    if (decide != Py_None && !PyCallable_Check(decide)) {
        PyErr_SetString(PyExc_TypeError, "_set_scope() takes a callable or None");
        return NULL;
    }
    fpy_scope_free(p);
    if (decide == Py_None)
        Py_RETURN_NONE;
    fpy_scope_t *s = PyMem_Calloc(1, sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    s->decided = PyDict_New();
    if (!s->decided) {
        PyMem_Free(s);
        return NULL;
    }
    s->decide = Py_NewRef(decide);
    p->scope = s;
    Py_RETURN_NONE;
}

#if FPY_USE_MONITORING
int fpy_scope_attach(fpy_profiler_t *p, PyObject *mon, long local)
{
    fpy_scope_t *s = p->scope;
    s->local_events = local;
    if (!s->disable && !(s->disable = fpy_getattr(mon, "DISABLE")))
        return -1;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(s->decided, &pos, &key, &value)) {
        if (PyLong_AsLong(PyTuple_GET_ITEM(value, 1)) &&
            set_local(p, mon, (PyCodeObject *)PyTuple_GET_ITEM(value, 0), local) < 0)
            return -1;
    }
    return 0;
}

void fpy_scope_detach(fpy_profiler_t *p, PyObject *mon)
{
    fpy_scope_t *s = p->scope;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(s->decided, &pos, &key, &value)) {
        if (PyLong_AsLong(PyTuple_GET_ITEM(value, 1)))
            set_local(p, mon, (PyCodeObject *)PyTuple_GET_ITEM(value, 0), 0);
    }
    PyObject *r = fpy_call_method(mon, "restart_events", "()");
    Py_XDECREF(r);
    PyErr_Clear();
}
#endif

int fpy_scope_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    if (p->scope) {
        Py_VISIT(p->scope->decide);
        Py_VISIT(p->scope->decided);
    }
    return 0;
}

void fpy_scope_free(fpy_profiler_t *p)
{
    fpy_scope_t *s = p->scope;
    if (!s)
        return;
    p->scope = NULL;
    Py_XDECREF(s->decide);
    Py_XDECREF(s->decided);
#if FPY_USE_MONITORING
    Py_XDECREF(s->disable);
#endif
    PyMem_Free(s);
}
