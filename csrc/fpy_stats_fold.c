/* Profiler._fold_into(other, pairs): add this profiler's stats into those
 * of `other`, a profiler that is never enabled and sums many profiles
 * (`pytest --fastprof-per-test`: the session's sum, each test's tables
 * added before they are cleared for the next test; adding them as pstats
 * dicts cost more than the rest of a test's file).
 *
 * pairs: (this profiler's thread id, other's thread id) per thread to add;
 * the records of `other` are made on first use, labelled with the first
 * source's ident. Entries, edges and call-path nodes are matched by key
 * (fp_thread_merge); the entries new to `other` take a reference to their
 * users, which `other` releases as its own. The threads' removed cost
 * (compensation) is added too. Line stats are not: the caller sums those
 * its own way. Both profilers must count in the same clock's ticks. */
#include "fpy_profiler.h"

/* The last entry of t's table (uthash keeps them in insertion order), or NULL. */
static fp_entry_t *last_entry(fp_thread_t *t)
{
    if (!t->entries)
        return NULL;
    return ELMT_FROM_HH(t->entries->hh.tbl, t->entries->hh.tbl->tail);
}

static int fold_thread(fp_thread_t *dst, const fp_thread_t *src)
{
    fp_entry_t *last = last_entry(dst);
    fp_status rc = fp_thread_merge(dst, src);
    /* the entries added borrow the source's users: each is taken, even
     * after a failed merge (dst releases every user it holds) */
    fp_entry_t *e;
    for (e = last ? last->hh.next : dst->entries; e; e = e->hh.next)
        Py_XINCREF((PyObject *)e->user);
    if (rc != FP_OK) {
        PyErr_NoMemory();
        return -1;
    }
    dst->offset += src->offset;
    dst->extra_events += src->extra_events;
    if (!dst->ident && !dst->native_id) {
        dst->ident = src->ident;
        dst->native_id = src->native_id;
    }
    return 0;
}

PyObject *fpy_stats_fold(fpy_profiler_t *p, PyObject *args)
{
    PyObject *other, *pairs;
    if (!PyArg_ParseTuple(args, "O!O:_fold_into", p->state->profiler_type, &other, &pairs))
        return NULL;
    fpy_profiler_t *d = (fpy_profiler_t *)other;
    if (d == p || d->enabled) {
        PyErr_SetString(PyExc_ValueError, "_fold_into: the sum must be another profiler, not enabled");
        return NULL;
    }
    if (d->clock.kind != p->clock.kind || d->clock.ticks_per_second != p->clock.ticks_per_second) {
        PyErr_SetString(PyExc_ValueError, "_fold_into: the two profilers count different clocks");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(pairs, "_fold_into: pairs must be a sequence of (id, id)");
    if (!seq)
        return NULL;
    int r = 0;
    for (Py_ssize_t i = 0; r == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        unsigned long long from, to;
        r = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "KK;_fold_into: a pair is (id, id)",
                             &from, &to)
                ? 0
                : -1;
        if (r < 0)
            break;
        const fp_thread_t *src = fp_thread_find(&p->core, from);
        if (!src)
            continue;
        fp_thread_t *dst = fp_thread_get(&d->core, to);
        r = dst ? fold_thread(dst, src) : (PyErr_NoMemory(), -1);
    }
    Py_DECREF(seq);
    if (r < 0) {
        d->core.nomem = 0; /* reported here, not again by the sum's next read */
        return NULL;
    }
    Py_RETURN_NONE;
}
