/* Request routing (fpy_route.h): which record an event goes to when the
 * profiler routes by request (fastprof.middleware).
 *
 * The request id is read from a contextvars.ContextVar, so it follows the
 * request wherever its work runs: asyncio tasks (each step runs in its
 * task's context, and a task started by the request copies it), worker
 * threads of anyio / asgiref / run_in_executor (which run the function in
 * a copy of the caller's context). An event whose context holds no open
 * request is not recorded. A record is made per (thread, request): a
 * request's events never share a shadow stack or a table with another's.
 *
 * Cost per event while routing: one PyContextVar_Get (CPython caches the
 * value per thread and context version) and a compare against a one-slot
 * cache; a miss (another thread or request) looks the request up in the
 * `open` set and the record in the profiler's table. */
#include "fpy_route.h"

static void forget(fpy_profiler_t *p)
{
    p->route.cached = 0;
    p->route.base = NULL;
    p->route.rec = NULL;
}

fp_thread_t *fpy_route_slow(fpy_profiler_t *p, fp_thread_t *t)
{
    PyObject *value = NULL;
    if (PyContextVar_Get(p->route.var, NULL, &value) < 0) {
        PyErr_Clear(); /* out of memory making the thread's context */
        return NULL;
    }
    if (!value)
        return NULL; /* no request here: not recorded */
    uint64_t request = 0;
    if (PyLong_CheckExact(value)) {
        request = (uint64_t)PyLong_AsUnsignedLongLongMask(value);
        if (request > FPY_ROUTE_MAX_REQUEST)
            request = 0;
    }
    if (request == 0) {
        Py_DECREF(value);
        return NULL;
    }
    if (p->route.cached && p->route.base == t && p->route.request == request) {
        Py_DECREF(value);
        return p->route.rec;
    }
    int open = PySet_Contains(p->route.open, value);
    Py_DECREF(value);
    fp_thread_t *rec = NULL;
    if (open < 0)
        PyErr_Clear();
    if (open > 0) {
        uint64_t id = FPY_ROUTE_BIT | (request << 32) | (t->id & 0xffffffffu);
        rec = fp_thread_get(&p->core, id);
        if (!rec)
            return NULL; /* out of memory: try again next event */
        rec->ident = t->ident;
        rec->native_id = t->native_id;
    }
    p->route.cached = 1;
    p->route.base = t;
    p->route.request = request;
    p->route.rec = rec;
    return rec;
}

PyObject *fpy_route_by(fpy_profiler_t *p, PyObject *args)
{
    PyObject *var, *open;
    if (!PyArg_ParseTuple(args, "OO:_route_by", &var, &open))
        return NULL;
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "_route_by() only while the profiler is disabled");
        return NULL;
    }
    if (var == Py_None) {
        fpy_route_clear(p);
        Py_RETURN_NONE;
    }
    if (!PyContextVar_CheckExact(var) || !PySet_Check(open)) {
        PyErr_SetString(PyExc_TypeError, "_route_by(var, open): a ContextVar and a set");
        return NULL;
    }
    fpy_route_clear(p);
    p->route.var = Py_NewRef(var);
    p->route.open = Py_NewRef(open);
    Py_RETURN_NONE;
}

PyObject *fpy_route_drop(fpy_profiler_t *p, PyObject *request)
{
    unsigned long long r = PyLong_AsUnsignedLongLong(request);
    if (r == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (r == 0 || r > FPY_ROUTE_MAX_REQUEST) {
        PyErr_SetString(PyExc_ValueError, "request id out of range");
        return NULL;
    }
    fp_thread_t *t, *next;
    for (t = p->core.threads; t; t = next) {
        next = t->hh.next;
        if (!(t->id & FPY_ROUTE_BIT) || ((t->id >> 32) & FPY_ROUTE_MAX_REQUEST) != r)
            continue;
        if (p->gc_thread == t)
            p->gc_thread = NULL; /* the collection's end is not recorded */
        fp_thread_drop(&p->core, t);
    }
    forget(p);
    /* an event straddling this (a custom timer runs Python code) holds a
     * record pointer: the generation makes it drop its event */
    p->generation++;
    fpy_drain_doomed(p);
    Py_RETURN_NONE;
}

int fpy_route_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->route.var);
    Py_VISIT(p->route.open);
    return 0;
}

void fpy_route_clear(fpy_profiler_t *p)
{
    Py_CLEAR(p->route.var);
    Py_CLEAR(p->route.open);
    forget(p);
}
