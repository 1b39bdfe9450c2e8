/* Memory profiling's reads (memory=True): the traced heap's totals; what
 * each row allocated itself, read from the heap owners the rows name
 * (fp_top_owner gives each frame's most precise row one: its call-path
 * node, else the edge it was called on, else its entry), one Python row per
 * owner; and each function's and edge's bytes including callees and peak,
 * which the accounting keeps on them. The Python side sums the rows into
 * functions and edges (data/memory.py). */
#include "fpy_profiler.h"

static int need_memory(fpy_profiler_t *p)
{
    if (p->heap)
        return 0;
    PyErr_SetString(PyExc_ValueError, "this profiler does not record memory (memory=False)");
    return -1;
}

PyObject *fpy_memory_totals(fpy_profiler_t *p, PyObject *Py_UNUSED(unused))
{
    if (need_memory(p) < 0)
        return NULL;
    fp_heap_totals_t t = fp_heap_totals(p->heap);
    return Py_BuildValue("{sKsKsKsKsKsO}", "current", (unsigned long long)t.current, "peak",
                         (unsigned long long)t.peak, "blocks", (unsigned long long)t.blocks,
                         "allocations", (unsigned long long)t.allocs, "lost", (unsigned long long)t.lost,
                         "numpy", fpy_numpy_hooked() ? Py_True : Py_False);
}

/* Appends (code, caller, thread, allocations, allocated, frees, freed,
 * net, live_at_peak) for owner `id` of `callee`'s row; 0 when it has none
 * or nothing to show, -1 with an exception set. */
static int add_row(fpy_profiler_t *p, PyObject *rows, fp_owner_t id, const fp_entry_t *callee,
                   const fp_entry_t *caller, const fp_thread_t *t)
{
    fp_heap_owner_stats_t s;
    if (!id || !callee->user || fp_heap_owner_read(p->heap, id, &s) < 0 || !s.allocs)
        return 0;
    PyObject *row = Py_BuildValue("(OOKKKKKKK)", (PyObject *)callee->user,
                                  caller && caller->user ? (PyObject *)caller->user : Py_None,
                                  (unsigned long long)t->id, (unsigned long long)s.allocs,
                                  (unsigned long long)s.alloc_bytes, (unsigned long long)s.frees,
                                  (unsigned long long)s.freed_bytes, (unsigned long long)s.live,
                                  (unsigned long long)s.live_at_peak);
    if (!row)
        return -1;
    int rc = PyList_Append(rows, row);
    Py_DECREF(row);
    return rc;
}

PyObject *fpy_memory_rows(fpy_profiler_t *p, PyObject *Py_UNUSED(unused))
{
    if (need_memory(p) < 0)
        return NULL;
    PyObject *rows = PyList_New(0);
    if (!rows)
        return NULL;
    /* Nothing below runs Python code: the records stay as they are. */
    for (const fp_thread_t *t = p->core.threads; t; t = t->hh.next) {
        for (const fp_entry_t *e = t->entries; e; e = e->hh.next)
            if (add_row(p, rows, e->mem_owner, e, NULL, t) < 0)
                goto fail;
        for (const fp_edge_t *g = t->edges; g; g = g->hh.next)
            if (add_row(p, rows, g->mem_owner, g->key.callee, g->key.caller, t) < 0)
                goto fail;
        for (const fp_node_t *n = t->nodes; n; n = n->hh.next)
            if (add_row(p, rows, n->mem_owner, n->key.entry,
                        n->key.parent ? n->key.parent->key.entry : NULL, t) < 0)
                goto fail;
    }
    return rows;
fail:
    Py_DECREF(rows);
    return NULL;
}

/* Appends (code, caller, thread, allocated including callees, peak) of a
 * function (caller NULL) or an edge; 0 when there is nothing to show. */
static int add_call(PyObject *calls, const fp_entry_t *callee, const fp_entry_t *caller,
                    const fp_thread_t *t, uint64_t incl, uint64_t peak)
{
    if ((!incl && !peak) || !callee->user || (caller && !caller->user))
        return 0;
    PyObject *row =
        Py_BuildValue("(OOKKK)", (PyObject *)callee->user, caller ? (PyObject *)caller->user : Py_None,
                      (unsigned long long)t->id, (unsigned long long)incl, (unsigned long long)peak);
    if (!row)
        return -1;
    int rc = PyList_Append(calls, row);
    Py_DECREF(row);
    return rc;
}

PyObject *fpy_memory_calls(fpy_profiler_t *p, PyObject *Py_UNUSED(unused))
{
    if (need_memory(p) < 0)
        return NULL;
    PyObject *calls = PyList_New(0);
    if (!calls)
        return NULL;
    for (const fp_thread_t *t = p->core.threads; t; t = t->hh.next) {
        for (const fp_entry_t *e = t->entries; e; e = e->hh.next)
            if (add_call(calls, e, NULL, t, e->mem_incl, e->mem_peak) < 0)
                goto fail;
        for (const fp_edge_t *g = t->edges; g; g = g->hh.next)
            if (add_call(calls, g->key.callee, g->key.caller, t, g->mem_incl, g->mem_peak) < 0)
                goto fail;
    }
    return calls;
fail:
    Py_DECREF(calls);
    return NULL;
}

PyObject *fpy_memory_vs_tracemalloc(fpy_profiler_t *p, PyObject *clear)
{
    if (need_memory(p) < 0)
        return NULL;
    int clear_first = PyObject_IsTrue(clear);
    if (clear_first < 0)
        return NULL;
    return fpy_heap_vs_tracemalloc(p->heap, clear_first);
}
