/* _add_stats(out, table, keys, chosen=None): one pstats dict added into a
 * running sum, the loop of fastprof.model.add_stats in C (it calls this;
 * `pytest --fastprof-per-test` adds every test's table into the session's).
 *
 * table: {key: (cc, nc, tt, ct, {caller: edge})}, each row a sequence of
 * five, each edge a sequence (pstats' four numbers). out: {key: [cc, nc,
 * tt, ct, {caller: edge tuple}]}, the sum as lists (model.stats_result
 * makes the pstats dict). Every key and caller is the one keys(key) gives
 * (model.KeyChooser, or any callable); chosen, if a dict, holds keys(key)
 * for the keys asked before (KeyChooser's memo), read first. The sums are
 * Python's own additions, in Python's order: the same numbers as the loop
 * in Python. Bad input raises TypeError (or what keys raised); rows added
 * before it stay added, as in the Python loop. */
#include "fpy_profiler.h"

/* keys(key), from chosen when it has it (new reference; NULL: error). */
static PyObject *chosen_key(PyObject *key, PyObject *keys, PyObject *chosen)
{
    if (chosen) {
        PyObject *got = PyDict_GetItemWithError(chosen, key); /* borrowed */
        if (got)
            return Py_NewRef(got);
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) /* (TypeError: unhashable, a list) */
                return NULL;
            PyErr_Clear();
        }
    }
    return PyObject_CallOneArg(keys, key);
}

/* row[i] += value, row a list; -1: error. */
static int add_into(PyObject *row, Py_ssize_t i, PyObject *value)
{
    PyObject *cur = PyList_GetItem(row, i); /* checked: Python code may have run */
    if (!cur)
        return -1;
    Py_INCREF(cur); /* (an __add__ could change row) */
    PyObject *sum = PyNumber_Add(cur, value);
    Py_DECREF(cur);
    return sum ? PyList_SetItem(row, i, sum) : -1; /* (steals sum; i may be gone: IndexError) */
}

/* prev + edge, element by element (zip: the shorter length), as a tuple. */
static PyObject *edge_sum(PyObject *prev, PyObject *edge)
{
    PyObject *a = PySequence_Tuple(prev); /* (a tuple: itself) */
    PyObject *b = a ? PySequence_Tuple(edge) : NULL;
    PyObject *out = NULL;
    if (!b)
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(a);
    if (PyTuple_GET_SIZE(b) < n)
        n = PyTuple_GET_SIZE(b);
    out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *s = PyNumber_Add(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i));
        if (!s)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, s);
    }
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return out;
}

/* The callers of one row added into edges (a dict); -1: error. */
static int add_callers(PyObject *edges, PyObject *callers, PyObject *keys, PyObject *chosen)
{
    if (!PyDict_Check(callers)) {
        PyErr_Format(PyExc_TypeError, "a row's callers must be a dict, not %.100s",
                     Py_TYPE(callers)->tp_name);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *caller, *edge; /* borrowed */
    while (PyDict_Next(callers, &pos, &caller, &edge)) {
        /* keys() may run code that changes callers */
        Py_INCREF(caller);
        Py_INCREF(edge);
        PyObject *key = chosen_key(caller, keys, chosen);
        Py_DECREF(caller);
        PyObject *prev = key ? PyDict_GetItemWithError(edges, key) : NULL; /* borrowed */
        PyObject *value = NULL;
        if (prev)
            value = edge_sum(prev, edge);
        else if (key && !PyErr_Occurred())
            value = PySequence_Tuple(edge);
        int r = value ? PyDict_SetItem(edges, key, value) : -1;
        Py_XDECREF(value);
        Py_XDECREF(key);
        Py_DECREF(edge);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* The sum's row of key (new reference), made [0, 0, 0.0, 0.0, {}] if new. */
static PyObject *sum_row(PyObject *out, PyObject *key)
{
    PyObject *cur = PyDict_GetItemWithError(out, key); /* borrowed */
    if (cur) {
        if (!PyList_Check(cur) || PyList_GET_SIZE(cur) != 5) {
            PyErr_SetString(PyExc_TypeError, "the sum's rows must be lists [cc, nc, tt, ct, {}]");
            return NULL;
        }
        return Py_NewRef(cur);
    }
    if (PyErr_Occurred())
        return NULL;
    cur = Py_BuildValue("[iiddN]", 0, 0, 0.0, 0.0, PyDict_New());
    if (cur && PyDict_SetItem(out, key, cur) < 0)
        Py_CLEAR(cur);
    return cur;
}

/* One row of table added; -1: error. */
static int add_row(PyObject *out, PyObject *key, PyObject *row, PyObject *keys, PyObject *chosen)
{
    PyObject *fields = PySequence_Tuple(row); /* (a tuple: itself; a list: a copy) */
    if (!fields)
        return -1;
    int r = -1;
    PyObject *cur = NULL, *edges = NULL;
    if (PyTuple_GET_SIZE(fields) != 5) {
        PyErr_Format(PyExc_TypeError, "a pstats row has 5 fields (cc, nc, tt, ct, callers), not %zd",
                     PyTuple_GET_SIZE(fields));
        goto done;
    }
    PyObject *k = chosen_key(key, keys, chosen);
    cur = k ? sum_row(out, k) : NULL;
    Py_XDECREF(k);
    if (!cur)
        goto done;
    for (Py_ssize_t i = 0; i < 4; i++) {
        if (add_into(cur, i, PyTuple_GET_ITEM(fields, i)) < 0)
            goto done;
    }
    edges = PyList_GetItem(cur, 4);
    if (!edges || !PyDict_Check(edges)) {
        if (edges)
            PyErr_SetString(PyExc_TypeError, "the sum's rows must be lists [cc, nc, tt, ct, {}]");
        edges = NULL;
        goto done;
    }
    Py_INCREF(edges);
    r = add_callers(edges, PyTuple_GET_ITEM(fields, 4), keys, chosen);
done:
    Py_XDECREF(edges);
    Py_XDECREF(cur);
    Py_DECREF(fields);
    return r;
}

PyObject *fpy_add_stats(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *out, *table, *keys, *chosen = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!O|O:_add_stats", &PyDict_Type, &out, &PyDict_Type, &table, &keys,
                          &chosen))
        return NULL;
    if (!PyCallable_Check(keys)) {
        PyErr_Format(PyExc_TypeError, "keys must be callable, not %.100s", Py_TYPE(keys)->tp_name);
        return NULL;
    }
    if (chosen != Py_None && !PyDict_Check(chosen)) {
        PyErr_Format(PyExc_TypeError, "chosen must be a dict or None, not %.100s",
                     Py_TYPE(chosen)->tp_name);
        return NULL;
    }
    chosen = chosen == Py_None ? NULL : chosen;
    /* a copy of the items: keys() is Python code that could change table */
    PyObject *items = PyDict_Items(table);
    if (!items)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        if (add_row(out, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), keys, chosen) < 0) {
            Py_DECREF(items);
            return NULL;
        }
    }
    Py_DECREF(items);
    Py_RETURN_NONE;
}
