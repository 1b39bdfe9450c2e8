/* _entries_stats(entries): getstats() entries as a pstats dict, the loop of
 * fastprof.profiler.entries_to_stats in C (it calls this; every profile
 * taken, each test's with `pytest --fastprof-per-test`).
 *
 * entries: a list of (code, callcount, reccallcount, totaltime,
 * inlinetime, calls), calls None or a list of (code, callcount,
 * reccallcount, totaltime, inlinetime): getstats()'s profiler_entry and
 * profiler_subentry (tuples), or any sequences of those lengths. A code is
 * a code object, or a str (a C function: key ('~', 0, name)); any other
 * object is keyed by its co_filename, co_firstlineno and co_name.
 *
 * Result: {key: (cc, nc, tt, ct, {caller key: (nc, cc, tt, ct)})}, cc =
 * callcount - reccallcount; entries (and edges) sharing a key summed, new
 * numbers added to the old (Python's additions: the numbers of the Python
 * loop). An edge to a callee without an entry of its own is left out.
 * Bad input raises TypeError (or what reading a code's attributes raised). */
#include "fpy_profiler.h"

/* The pstats key of a code (new reference; NULL: error). */
static PyObject *code_key(PyObject *code)
{
    if (PyUnicode_Check(code))
        return Py_BuildValue("(siO)", "~", 0, code);
    if (PyCode_Check(code)) { /* (its public fields: no attribute lookups) */
        PyCodeObject *co = (PyCodeObject *)code;
        return Py_BuildValue("(OiO)", co->co_filename, co->co_firstlineno, co->co_name);
    }
    PyObject *file = PyObject_GetAttrString(code, "co_filename");
    PyObject *line = file ? PyObject_GetAttrString(code, "co_firstlineno") : NULL;
    PyObject *name = line ? PyObject_GetAttrString(code, "co_name") : NULL;
    PyObject *key = name ? PyTuple_Pack(3, file, line, name) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(line);
    Py_XDECREF(name);
    return key;
}

/* The key of a code, from labels (by address: distinct code objects may
 * compare equal) or made and remembered there (new reference). */
static PyObject *label(PyObject *labels, PyObject *code)
{
    PyObject *id = PyLong_FromVoidPtr(code);
    if (!id)
        return NULL;
    PyObject *key = PyDict_GetItemWithError(labels, id); /* borrowed */
    if (key) {
        Py_DECREF(id);
        return Py_NewRef(key);
    }
    key = PyErr_Occurred() ? NULL : code_key(code);
    if (key && PyDict_SetItem(labels, id, key) < 0)
        Py_CLEAR(key);
    Py_DECREF(id);
    return key;
}

/* entry as a tuple of n fields (new reference; NULL: TypeError). */
static PyObject *fields_of(PyObject *entry, Py_ssize_t n, const char *what)
{
    /* a tuple or a structseq (a tuple's subtype: its visible fields) as is */
    PyObject *t = PyTuple_Check(entry) ? Py_NewRef(entry) : PySequence_Tuple(entry);
    if (t && PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_TypeError, "%s has %zd fields, not %zd", what, PyTuple_GET_SIZE(t), n);
        Py_CLEAR(t);
    }
    return t;
}

/* (a + b, c + d, e + f, g + h): new numbers first (new reference). */
static PyObject *sum4(PyObject *a, PyObject *b, PyObject *c, PyObject *d, PyObject *prev)
{
    PyObject *x[4] = {a, b, c, d};
    PyObject *out = PyTuple_New(4);
    for (Py_ssize_t i = 0; out && i < 4; i++) {
        PyObject *s = PyNumber_Add(x[i], PyTuple_GET_ITEM(prev, i));
        if (!s)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, s);
    }
    return out;
}

/* The row of one entry added into stats; -1: error. */
static int add_entry(PyObject *stats, PyObject *labels, PyObject *e)
{
    PyObject *key = label(labels, PyTuple_GET_ITEM(e, 0));
    PyObject *nc = PyTuple_GET_ITEM(e, 1), *ct = PyTuple_GET_ITEM(e, 3), *tt = PyTuple_GET_ITEM(e, 4);
    PyObject *cc = key ? PyNumber_Subtract(nc, PyTuple_GET_ITEM(e, 2)) : NULL;
    PyObject *row = NULL;
    if (!cc)
        goto done;
    PyObject *prev = PyDict_GetItemWithError(stats, key); /* borrowed: a row made here */
    if (prev) {
        PyObject *s = sum4(cc, nc, tt, ct, prev);
        row = s ? PyTuple_Pack(5, PyTuple_GET_ITEM(s, 0), PyTuple_GET_ITEM(s, 1), PyTuple_GET_ITEM(s, 2),
                               PyTuple_GET_ITEM(s, 3), PyTuple_GET_ITEM(prev, 4))
                : NULL;
        Py_XDECREF(s);
    } else if (!PyErr_Occurred()) {
        row = Py_BuildValue("(OOOON)", cc, nc, tt, ct, PyDict_New());
    }
done:;
    int r = row ? PyDict_SetItem(stats, key, row) : -1;
    Py_XDECREF(row);
    Py_XDECREF(cc);
    Py_XDECREF(key);
    return r;
}

/* The edges of one entry (its calls) added into its callees' rows; -1: error. */
static int add_calls(PyObject *stats, PyObject *labels, PyObject *e)
{
    PyObject *calls = PyTuple_GET_ITEM(e, 5);
    if (calls == Py_None)
        return 0;
    PyObject *subs = PySequence_Tuple(calls);
    if (!subs)
        return -1;
    int r = 0;
    PyObject *func = PyTuple_GET_SIZE(subs) ? label(labels, PyTuple_GET_ITEM(e, 0)) : NULL;
    if (PyTuple_GET_SIZE(subs) && !func)
        r = -1;
    for (Py_ssize_t i = 0; r == 0 && i < PyTuple_GET_SIZE(subs); i++) {
        PyObject *s = fields_of(PyTuple_GET_ITEM(subs, i), 5, "a subentry (code, callcount, reccallcount, "
                                                             "totaltime, inlinetime)");
        PyObject *callee = s ? label(labels, PyTuple_GET_ITEM(s, 0)) : NULL;
        PyObject *row = callee ? PyDict_GetItemWithError(stats, callee) : NULL; /* borrowed */
        PyObject *nc = s ? PyTuple_GET_ITEM(s, 1) : NULL;
        PyObject *cc = row ? PyNumber_Subtract(nc, PyTuple_GET_ITEM(s, 2)) : NULL;
        PyObject *edge = NULL;
        if (cc) {
            PyObject *callers = PyTuple_GET_ITEM(row, 4);
            PyObject *prev = PyDict_GetItemWithError(callers, func); /* borrowed */
            if (prev)
                edge = sum4(nc, cc, PyTuple_GET_ITEM(s, 4), PyTuple_GET_ITEM(s, 3), prev);
            else if (!PyErr_Occurred())
                edge = PyTuple_Pack(4, nc, cc, PyTuple_GET_ITEM(s, 4), PyTuple_GET_ITEM(s, 3));
            if (!edge || PyDict_SetItem(callers, func, edge) < 0)
                r = -1;
        } else if (!callee || PyErr_Occurred()) {
            r = -1; /* (no row and no error: a callee without an entry, left out) */
        }
        Py_XDECREF(edge);
        Py_XDECREF(cc);
        Py_XDECREF(callee);
        Py_XDECREF(s);
    }
    Py_XDECREF(func);
    Py_DECREF(subs);
    return r;
}

PyObject *fpy_entries_stats(PyObject *Py_UNUSED(module), PyObject *arg)
{
    /* the entries as tuples, read twice: rows first, then the edges into them */
    PyObject *list = PySequence_List(arg);
    if (!list)
        return NULL;
    PyObject *stats = PyDict_New();
    PyObject *labels = stats ? PyDict_New() : NULL; /* id(code) -> key */
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; labels && i < n; i++) {
        PyObject *e = fields_of(PyList_GET_ITEM(list, i), 6,
                                "an entry (code, callcount, reccallcount, totaltime, inlinetime, calls)");
        if (!e || add_entry(stats, labels, e) < 0) {
            Py_XDECREF(e);
            Py_CLEAR(labels);
            break;
        }
        PyList_SetItem(list, i, e); /* the fields in the entry's place (stolen; i is in range) */
    }
    for (Py_ssize_t i = 0; labels && i < n; i++) {
        if (add_calls(stats, labels, PyList_GET_ITEM(list, i)) < 0)
            Py_CLEAR(labels);
    }
    if (!labels)
        Py_CLEAR(stats);
    Py_XDECREF(labels);
    Py_DECREF(list);
    return stats;
}
