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

/* The records of the selection, one after another. */
#define FOR_SELECTED(t, p, one)                                                                         \
    for (t = (one) ? (one) : (p)->core.threads; t; t = (one) ? NULL : t->hh.next)

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

PyObject *fpy_memory_rows(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *one, *t;
    if (need_memory(p) < 0 || fpy_thread_selected(p, thread, &one) < 0)
        return NULL;
    PyObject *rows = PyList_New(0);
    if (!rows)
        return NULL;
    /* Nothing below runs Python code: the records stay as they are. */
    FOR_SELECTED(t, p, one)
    {
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

PyObject *fpy_memory_calls(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *one, *t;
    if (need_memory(p) < 0 || fpy_thread_selected(p, thread, &one) < 0)
        return NULL;
    PyObject *calls = PyList_New(0);
    if (!calls)
        return NULL;
    FOR_SELECTED(t, p, one)
    {
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

/* The counts of one call-path node of the merged tree: what its owners
 * allocated (summed over the threads' nodes that merge into it). */
typedef struct node_bytes {
    uint64_t allocs, alloc_bytes, frees, freed_bytes, live, live_at_peak;
} node_bytes_t;

/* Adds the owner stats of every node of `t` into `sums`, indexed by the
 * node of the merged tree `m` each merges into (found as fp_thread_merge
 * made it: parents first). -1 when out of memory. */
static int add_thread_nodes(fpy_profiler_t *p, fp_thread_t *m, size_t n_made, const fp_thread_t *t,
                            node_bytes_t *sums)
{
    if (!t->n_nodes)
        return 0;
    fp_node_t **map = PyMem_Calloc(t->n_nodes, sizeof *map);
    if (!map)
        return -1;
    int rc = 0;
    for (const fp_node_t *sn = t->nodes; sn; sn = sn->hh.next) {
        fp_entry_t *e = fp_entry_find(m, sn->key.entry->key);
        fp_node_t *n = e ? fp_node_get(m, sn->key.parent ? map[sn->key.parent->index] : NULL, e) : NULL;
        if (!n || n->index >= n_made) { /* (found, never made: the snapshot merged it) */
            rc = -1;
            break;
        }
        map[sn->index] = n;
        fp_heap_owner_stats_t s;
        if (!sn->mem_owner || fp_heap_owner_read(p->heap, sn->mem_owner, &s) < 0)
            continue;
        node_bytes_t *b = &sums[n->index];
        b->allocs += s.allocs;
        b->alloc_bytes += s.alloc_bytes;
        b->frees += s.frees;
        b->freed_bytes += s.freed_bytes;
        b->live += s.live;
        b->live_at_peak += s.live_at_peak;
    }
    PyMem_Free(map);
    return rc;
}

PyObject *fpy_memory_callpaths(fpy_profiler_t *p, PyObject *thread)
{
    fp_thread_t *one, *t;
    if (need_memory(p) < 0 || fpy_thread_selected(p, thread, &one) < 0)
        return NULL;
    fp_thread_t *m = fpy_stats_snapshot(p, thread);
    if (!m)
        return NULL;
    PyObject *result = NULL;
    size_t n_nodes = m->n_nodes;
    node_bytes_t *sums = PyMem_Calloc(n_nodes ? n_nodes : 1, sizeof *sums);
    if (!sums) {
        PyErr_NoMemory();
        goto done;
    }
    /* Nothing below runs Python code: the records stay as the snapshot saw them. */
    FOR_SELECTED(t, p, one)
    {
        if (add_thread_nodes(p, m, n_nodes, t, sums) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const double factor = 1.0 / p->clock.ticks_per_second;
    result = PyList_New(0);
    for (const fp_node_t *n = m->nodes; result && n; n = n->hh.next) {
        const node_bytes_t *b = &sums[n->index];
        PyObject *item = Py_BuildValue(
            "(nOKddKKKKKKKK)", n->key.parent ? (Py_ssize_t)n->key.parent->index : (Py_ssize_t)-1,
            (PyObject *)n->key.entry->user, (unsigned long long)n->callcount, n->owntime * factor,
            n->cumtime * factor, (unsigned long long)b->allocs, (unsigned long long)b->alloc_bytes,
            (unsigned long long)b->frees, (unsigned long long)b->freed_bytes,
            (unsigned long long)b->live, (unsigned long long)b->live_at_peak,
            (unsigned long long)n->mem_incl, (unsigned long long)n->mem_peak);
        if (!item || PyList_Append(result, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(result);
        } else {
            Py_DECREF(item);
        }
    }
done:
    PyMem_Free(sums);
    fpy_stats_snapshot_free(m);
    return result;
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
