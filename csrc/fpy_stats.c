/* From the core's tables to Python objects: getstats() in _lsprof's shape,
 * and callpaths().
 *
 * The tables are first merged into a private copy (pure C, so no other
 * thread runs meanwhile); the Python objects are then built from that copy,
 * which other threads' events or a clear() cannot touch. The copy borrows
 * the entries' user objects, so they are INCREF'd while it is in use. */
#include "fpy_profiler.h"

static PyStructSequence_Field entry_fields[] = {
    {"code", "code object or built-in function name"},
    {"callcount", "how many times this was called"},
    {"reccallcount", "how many times called recursively"},
    {"totaltime", "total time in this entry"},
    {"inlinetime", "inline time in this entry (not in subcalls)"},
    {"calls", "details of the calls"},
    {NULL, NULL},
};

static PyStructSequence_Field subentry_fields[] = {
    {"code", "called code object or built-in function name"},
    {"callcount", "how many times this is called"},
    {"reccallcount", "how many times this is called recursively"},
    {"totaltime", "total time spent in this call"},
    {"inlinetime", "inline time (not in further subcalls)"},
    {NULL, NULL},
};

static PyStructSequence_Desc entry_desc = {"fastprof._fastprof.profiler_entry", NULL, entry_fields, 6};
static PyStructSequence_Desc subentry_desc = {"fastprof._fastprof.profiler_subentry", NULL,
                                              subentry_fields, 5};

/* The record types are made per module instance (module state): a type
 * is a Python object, which interpreters must not share. */
int fpy_stats_module_init(PyObject *module, fpy_module_state *st)
{
    st->entry_type = PyStructSequence_NewType(&entry_desc);
    st->subentry_type = PyStructSequence_NewType(&subentry_desc);
    if (!st->entry_type || !st->subentry_type)
        return -1;
    if (PyModule_AddObject(module, "profiler_entry", Py_NewRef((PyObject *)st->entry_type)) < 0) {
        Py_DECREF(st->entry_type);
        return -1;
    }
    if (PyModule_AddObject(module, "profiler_subentry", Py_NewRef((PyObject *)st->subentry_type)) < 0) {
        Py_DECREF(st->subentry_type);
        return -1;
    }
    return 0;
}

static void user_refs(fp_thread_t *m, int incref)
{
    fp_entry_t *e;
    for (e = m->entries; e; e = e->hh.next) {
        if (incref)
            Py_INCREF((PyObject *)e->user);
        else
            Py_DECREF((PyObject *)e->user);
    }
}

/* Merges the threads selected by `thread` (None: all, else an id) into a
 * new private record with references held on its users; NULL with an
 * exception set on failure. */
int fpy_thread_selected(fpy_profiler_t *p, PyObject *thread, fp_thread_t **one)
{
    *one = NULL;
    if (thread == NULL || thread == Py_None)
        return 0;
    unsigned long long id = PyLong_AsUnsignedLongLong(thread);
    if (id == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (!(*one = fp_thread_find(&p->core, id))) {
        PyErr_Format(PyExc_KeyError,
                     "no profiled thread with id %llu (an ended thread's record may have been "
                     "folded into its group's: threads() lists the records)",
                     id);
        return -1;
    }
    return 0;
}

static fp_thread_t *snapshot(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *one;
    if (fpy_thread_selected(p, thread, &one) < 0)
        return NULL;
    fp_thread_t *m = fp_thread_new(0);
    if (!m)
        return (fp_thread_t *)PyErr_NoMemory();
    /* one thread: its record only (a lookup, so that reading each of N
     * threads costs N records, not N * N) */
    for (fp_thread_t *t = one ? one : p->core.threads; t; t = one ? NULL : t->hh.next) {
        if (fp_thread_merge(m, t) != FP_OK) {
            fp_thread_free(m, NULL, NULL);
            return (fp_thread_t *)PyErr_NoMemory();
        }
    }
    user_refs(m, 1);
    return m;
}

static void snapshot_free(fp_thread_t *m)
{
    user_refs(m, 0);
    fp_thread_free(m, NULL, NULL);
}

fp_thread_t *fpy_stats_snapshot(fpy_profiler_t *p, PyObject *thread)
{
    return snapshot(p, thread);
}

void fpy_stats_snapshot_free(fp_thread_t *m)
{
    snapshot_free(m);
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (fp_entry_t *const *)a;
    uintptr_t y = (uintptr_t) * (fp_entry_t *const *)b;
    return x < y ? -1 : x > y;
}

/* The entries of `m` sorted by address (PyMem_Free it), so an entry's
 * position can be found from its address; NULL with MemoryError. */
static fp_entry_t **entries_by_address(fp_thread_t *m)
{
    fp_entry_t **sorted = PyMem_Malloc((m->n_entries ? m->n_entries : 1) * sizeof *sorted);
    if (!sorted)
        return (fp_entry_t **)PyErr_NoMemory();
    size_t n = 0;
    for (fp_entry_t *e = m->entries; e; e = e->hh.next)
        sorted[n++] = e;
    qsort(sorted, n, sizeof *sorted, by_address);
    return sorted;
}

/* The position of `e` in `sorted` (it is there). */
static size_t entry_position(fp_entry_t *const *sorted, size_t n, const fp_entry_t *e)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)sorted[mid] < (uintptr_t)e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static PyObject *make_record(PyTypeObject *type, PyObject *code, uint64_t calls, uint64_t reccalls,
                             double tt, double it)
{
    PyObject *rec = PyStructSequence_New(type);
    if (!rec)
        return NULL;
    PyObject *items[5] = {Py_NewRef(code), PyLong_FromUnsignedLongLong(calls),
                          PyLong_FromUnsignedLongLong(reccalls), PyFloat_FromDouble(tt),
                          PyFloat_FromDouble(it)};
    for (int i = 0; i < 5; i++) {
        if (!items[i]) {
            for (int j = i; j < 5; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(rec);
            return NULL;
        }
        PyStructSequence_SetItem(rec, i, items[i]);
    }
    return rec;
}

PyObject *fpy_getstats(fpy_profiler_t *p, PyObject *thread)
{
    PyTypeObject *entry_type = p->state->entry_type, *subentry_type = p->state->subentry_type;
    if (!entry_type || !subentry_type) {
        PyErr_SetString(PyExc_RuntimeError, "fastprof: the _fastprof module was torn down");
        return NULL;
    }
    fp_thread_t *m = snapshot(p, thread);
    if (!m)
        return NULL;
    const double factor = 1.0 / p->clock.ticks_per_second;
    size_t n = m->n_entries;
    PyObject *result = PyList_New(0);
    /* calls[i]: the callee list of sorted[i], made when first needed */
    PyObject **calls = PyMem_Calloc(n ? n : 1, sizeof *calls);
    fp_entry_t **sorted = result && calls ? entries_by_address(m) : NULL;
    if (!sorted) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto error;
    }
    fp_entry_t *e;
    fp_edge_t *g;
    for (g = m->edges; g; g = g->hh.next) {
        size_t caller = entry_position(sorted, n, g->key.caller);
        const fp_entry_t *callee = g->key.callee;
        if (!calls[caller] && !(calls[caller] = PyList_New(0)))
            goto error;
        PyObject *sub = make_record(subentry_type, callee->user, g->callcount, g->reccallcount,
                                    g->cumtime * factor, g->owntime * factor);
        if (!sub || PyList_Append(calls[caller], sub) < 0) {
            Py_XDECREF(sub);
            goto error;
        }
        Py_DECREF(sub);
    }
    for (e = m->entries; e; e = e->hh.next) {
        if (e->callcount == 0)
            continue; /* as _lsprof: never completed */
        PyObject *rec = make_record(entry_type, e->user, e->callcount, e->reccallcount,
                                    e->cumtime * factor, e->owntime * factor);
        if (!rec)
            goto error;
        PyObject *calls_of_e = calls[entry_position(sorted, n, e)];
        PyObject *sub = Py_NewRef(calls_of_e ? calls_of_e : Py_None);
        PyStructSequence_SetItem(rec, 5, sub);
        if (PyList_Append(result, rec) < 0) {
            Py_DECREF(rec);
            goto error;
        }
        Py_DECREF(rec);
    }
    goto done;
error:
    Py_CLEAR(result);
done:
    if (calls) {
        for (size_t k = 0; k < n; k++)
            Py_XDECREF(calls[k]);
    }
    PyMem_Free(calls);
    PyMem_Free(sorted);
    snapshot_free(m);
    return result;
}

PyObject *fpy_callpaths(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *m = snapshot(p, thread);
    if (!m)
        return NULL;
    const double factor = 1.0 / p->clock.ticks_per_second;
    PyObject *result = PyList_New(0);
    if (!result)
        goto done;
    fp_node_t *n;
    for (n = m->nodes; n; n = n->hh.next) {
        const fp_node_t *parent = n->key.parent;
        const fp_entry_t *e = n->key.entry;
        PyObject *item = Py_BuildValue("(nOKdd)", parent ? (Py_ssize_t)parent->index : (Py_ssize_t)-1,
                                       (PyObject *)e->user, (unsigned long long)n->callcount,
                                       n->owntime * factor, n->cumtime * factor);
        if (!item || PyList_Append(result, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(item);
    }
done:
    snapshot_free(m);
    return result;
}
