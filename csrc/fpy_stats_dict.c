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
 * Bad input raises TypeError (or what reading a code's attributes raised).
 *
 * Profiler._stats_and_codes(thread=None) builds the same dict from the profiler's
 * tables directly, without the entries (each test's profile of `pytest
 * --fastprof-per-test`): the entries getstats() would list, in its order,
 * each one's numbers as getstats() makes them. */
#include "fpy_profiler.h"

#include <stdlib.h>

PyObject *fpy_code_key(PyObject *code)
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
    key = PyErr_Occurred() ? NULL : fpy_code_key(code);
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

/* The row of one entry (code, nc calls, rc recursive, ct cumtime, tt own
 * time) added into stats; -1: error. */
static int add_row(PyObject *stats, PyObject *labels, PyObject *code, PyObject *nc, PyObject *rc,
                   PyObject *ct, PyObject *tt)
{
    PyObject *key = label(labels, code);
    PyObject *cc = key ? PyNumber_Subtract(nc, rc) : NULL;
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

static int add_entry(PyObject *stats, PyObject *labels, PyObject *e)
{
    return add_row(stats, labels, PyTuple_GET_ITEM(e, 0), PyTuple_GET_ITEM(e, 1), PyTuple_GET_ITEM(e, 2),
                   PyTuple_GET_ITEM(e, 3), PyTuple_GET_ITEM(e, 4));
}

/* The edge from the function keyed func to code (nc, rc, ct, tt as a
 * row's) added into code's row, if it has one; -1: error. */
static int add_edge(PyObject *stats, PyObject *labels, PyObject *func, PyObject *code, PyObject *nc,
                    PyObject *rc, PyObject *ct, PyObject *tt)
{
    PyObject *callee = label(labels, code);
    if (!callee)
        return -1;
    PyObject *row = PyDict_GetItemWithError(stats, callee); /* borrowed */
    Py_DECREF(callee);
    if (!row)
        return PyErr_Occurred() ? -1 : 0; /* a callee without an entry: left out */
    PyObject *cc = PyNumber_Subtract(nc, rc);
    if (!cc)
        return -1;
    PyObject *callers = PyTuple_GET_ITEM(row, 4);
    PyObject *prev = PyDict_GetItemWithError(callers, func); /* borrowed */
    PyObject *edge = NULL;
    if (prev)
        edge = sum4(nc, cc, tt, ct, prev);
    else if (!PyErr_Occurred())
        edge = PyTuple_Pack(4, nc, cc, tt, ct);
    int r = edge ? PyDict_SetItem(callers, func, edge) : -1;
    Py_XDECREF(edge);
    Py_DECREF(cc);
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
        PyObject *s = fields_of(PyTuple_GET_ITEM(subs, i), 5,
                                "a subentry (code, callcount, reccallcount, "
                                "totaltime, inlinetime)");
        r = s ? add_edge(stats, labels, func, PyTuple_GET_ITEM(s, 0), PyTuple_GET_ITEM(s, 1),
                         PyTuple_GET_ITEM(s, 2), PyTuple_GET_ITEM(s, 3), PyTuple_GET_ITEM(s, 4))
              : -1;
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
        PyObject *e =
            fields_of(PyList_GET_ITEM(list, i), 6,
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

/* ---- Profiler._stats_and_codes: from the tables ---- */

/* An edge and its place in the snapshot's list of edges. */
typedef struct {
    fp_edge_t *g;
    size_t order;
} edge_ref;

/* By caller, then in the order of the snapshot's edges (getstats()'s order
 * of an entry's calls). */
static int by_caller(const void *a, const void *b)
{
    const edge_ref *x = a, *y = b;
    uintptr_t p = (uintptr_t)x->g->key.caller, q = (uintptr_t)y->g->key.caller;
    if (p != q)
        return p < q ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The four numbers of a row or an edge, as getstats() makes them. */
static int numbers(PyObject **out, uint64_t calls, uint64_t reccalls, double ct, double tt)
{
    out[0] = PyLong_FromUnsignedLongLong(calls);
    out[1] = PyLong_FromUnsignedLongLong(reccalls);
    out[2] = PyFloat_FromDouble(ct);
    out[3] = PyFloat_FromDouble(tt);
    return out[0] && out[1] && out[2] && out[3] ? 0 : -1;
}

static void numbers_free(PyObject **x)
{
    for (int i = 0; i < 4; i++)
        Py_CLEAR(x[i]);
}

/* The edges of entry e, e's key func, added into their callees' rows. */
static int add_edges_of(PyObject *stats, PyObject *labels, const fp_entry_t *e, const edge_ref *refs,
                        size_t n, double factor)
{
    size_t lo = 0, hi = n; /* the first edge of caller e */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)refs[mid].g->key.caller < (uintptr_t)e)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || refs[lo].g->key.caller != e)
        return 0;
    PyObject *func = label(labels, (PyObject *)e->user);
    int r = func ? 0 : -1;
    for (size_t i = lo; r == 0 && i < n && refs[i].g->key.caller == e; i++) {
        const fp_edge_t *g = refs[i].g;
        PyObject *x[4] = {NULL, NULL, NULL, NULL};
        r = numbers(x, g->callcount, g->reccallcount, g->cumtime * factor, g->owntime * factor);
        if (r == 0)
            r = add_edge(stats, labels, func, (PyObject *)g->key.callee->user, x[0], x[1], x[2], x[3]);
        numbers_free(x);
    }
    Py_XDECREF(func);
    return r;
}

PyObject *fpy_stats_and_codes(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *m = fpy_stats_snapshot(p, thread);
    if (!m)
        return NULL;
    const double factor = 1.0 / p->clock.ticks_per_second;
    size_t n = 0;
    fp_edge_t *g;
    for (g = m->edges; g; g = g->hh.next)
        n++;
    edge_ref *refs = PyMem_Malloc((n ? n : 1) * sizeof *refs);
    PyObject *stats = refs ? PyDict_New() : NULL;
    PyObject *labels = stats ? PyDict_New() : NULL; /* id(code) -> key */
    PyObject *codes = labels ? PyList_New(0) : NULL;
    PyObject *result = NULL;
    if (!codes) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    n = 0;
    for (g = m->edges; g; g = g->hh.next, n++) {
        refs[n].g = g;
        refs[n].order = n;
    }
    qsort(refs, n, sizeof *refs, by_caller);
    fp_entry_t *e;
    /* the rows first (getstats() lists the entries that completed a call),
     * then the edges of each, into the rows of their callees */
    for (e = m->entries; e; e = e->hh.next) {
        if (e->callcount == 0)
            continue;
        PyObject *x[4] = {NULL, NULL, NULL, NULL};
        int r = numbers(x, e->callcount, e->reccallcount, e->cumtime * factor, e->owntime * factor);
        if (r == 0)
            r = add_row(stats, labels, (PyObject *)e->user, x[0], x[1], x[2], x[3]);
        numbers_free(x);
        if (r < 0 || PyList_Append(codes, (PyObject *)e->user) < 0)
            goto done;
    }
    for (e = m->entries; e; e = e->hh.next) {
        if (e->callcount != 0 && add_edges_of(stats, labels, e, refs, n, factor) < 0)
            goto done;
    }
    result = PyTuple_Pack(2, stats, codes);
done:
    Py_XDECREF(codes);
    Py_XDECREF(labels);
    Py_XDECREF(stats);
    PyMem_Free(refs);
    fpy_stats_snapshot_free(m);
    return result;
}
