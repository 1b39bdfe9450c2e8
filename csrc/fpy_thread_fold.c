/* Records of threads that have ended, folded into one record per name
 * group, so that a service that starts a thread per request keeps a
 * bounded number of records and reads them in time linear in its threads.
 *
 * A record belongs to a thread state (its id is the state's unique id);
 * the thread has ended once no thread state of the interpreter has that
 * id. A sweep lists the live ids once, keeps the records of live threads
 * and of the FPY_KEEP_ENDED threads that ended last as they are, drops the
 * ended records that recorded nothing, and folds the older ended ones
 * (fp_thread_fold) into the record of their group: the number the Python
 * side gave the thread's name when it started (Profile._thread_started;
 * 0: no name, or too many groups), at id FPY_FOLDED_BIT | group. The
 * totals do not change; what a per-thread view keeps of a folded thread
 * is its group's record (docs/threads-coroutines.md).
 *
 * When: a new thread's first event sweeps once the records have doubled
 * since the last sweep (so each thread costs O(1) sweeping, amortized, and
 * the records stay under twice the live threads + kept ones + groups +
 * 64), and the reads that list records (threads(), memory(), _hold_folds)
 * sweep first. A read of several steps holds the folds (_hold_folds), so
 * the records it listed stay there until it is done.
 *
 * Safety: a folded record is freed. Before that, every pointer to it is
 * dropped: the sources' (a 3.9-3.11 thread's hook, the 3.12+ and fast
 * mode thread caches: fpy_source_ops.forget_thread), the routing cache;
 * the record of the collection in progress is never folded (a live
 * thread's anyway); and the profiler's generation is bumped, so an event
 * of another thread that let the GIL go between getting its record and
 * using it (a custom timer, naming a C function) drops itself. Only a
 * live thread runs events, and its record is not folded; the one case a
 * live thread's events go to a record of an ended thread state is 3.12+'s
 * cache by OS thread, when PyGILState_Ensure gives a native thread a new
 * thread state: its next event, the cache reset, gets a record of its own.
 *
 * Free threading: a free-threaded build keeps the GIL on while fastprof
 * is imported (Py_mod_gil); a sweep would otherwise need to stop the
 * world, both to walk the thread states and to free a record another
 * thread's event may be using. */
#include "fpy_profiler.h"
#include "fpy_route.h"
#include "fpy_thread_ids.h"

#include <stdlib.h>

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether `id` is among the `n` sorted `live` ids. */
static int is_live(const uint64_t *live, size_t n, uint64_t id)
{
    return bsearch(&id, live, n, sizeof id, by_id) != NULL;
}

/* Notes `id` as folded away, for the Python side to forget its name
 * (best effort: a name kept too long costs a few bytes, never a wrong
 * answer, since record ids are never reused). */
static void note_gone(fpy_profiler_t *p, uint64_t id)
{
    if (p->fold.n_gone == p->fold.cap_gone) {
        size_t cap = p->fold.cap_gone ? 2 * p->fold.cap_gone : 64;
        uint64_t *grown = PyMem_Realloc(p->fold.gone, cap * sizeof *grown);
        if (!grown)
            return;
        p->fold.gone = grown;
        p->fold.cap_gone = cap;
    }
    p->fold.gone[p->fold.n_gone++] = id;
}

/* Nothing may point at `t` after this: it is about to be freed. */
static void forget(fpy_profiler_t *p, fp_thread_t *t)
{
    FPY_DEFAULT_SOURCE->forget_thread(p, t);
    fpy_eval_source.forget_thread(p, t);
    fpy_route_forget_thread(p, t);
}

/* Folds (or drops, if empty) the ended record `t`; 0, or -1 when out of
 * memory (`t` stays as it was, to be folded by a later sweep). */
static int fold_one(fpy_profiler_t *p, fp_thread_t *t)
{
    uint64_t id = t->id;
    if (t->n_entries == 0) {
        forget(p, t);
        fp_thread_drop(&p->core, t);
        note_gone(p, id);
        return 0;
    }
    uint64_t group = t->group < FPY_FOLDED_BIT ? t->group : 0;
    fp_thread_t *g = fp_thread_get(&p->core, FPY_FOLDED_BIT | group);
    if (!g) {
        p->core.nomem = 0; /* nothing was lost: the record stays */
        return -1;
    }
    g->group = group;
    forget(p, t);
    if (fp_thread_fold(&p->core, g, t) != FP_OK)
        return -1;
    note_gone(p, id);
    return 0;
}

void fpy_fold_ended(fpy_profiler_t *p, int now)
{
    size_t count = HASH_COUNT(p->core.threads);
    if (p->fold.hold || (!now && count < p->fold.at))
        return;
    fpy_exc_state saved;
    fpy_exc_save(&saved);
    uint64_t *live = NULL;
    size_t n_live = 0;
    fp_thread_t **ended = NULL;
    if (fpy_thread_ids(PyThreadState_Get()->interp, NULL, NULL, &live, &n_live) < 0 ||
        !(ended = PyMem_Malloc((count ? count : 1) * sizeof *ended)))
        goto done; /* out of memory: try again at the next sweep */
    qsort(live, n_live, sizeof *live, by_id);
    size_t n_ended = 0;
    for (fp_thread_t *t = p->core.threads; t; t = t->hh.next) {
        if (t->foldable && t != p->gc_thread && !is_live(live, n_live, t->id))
            ended[n_ended++] = t; /* in creation order: the oldest first */
    }
    size_t n_kept = 0, changed = 0;
    /* the newest ended records with stats stay apart, the rest fold */
    for (size_t i = n_ended; i-- > 0;) {
        if (ended[i]->n_entries && n_kept < FPY_KEEP_ENDED) {
            ended[i] = NULL;
            n_kept++;
        }
    }
    for (size_t i = 0; i < n_ended; i++) {
        if (!ended[i])
            continue;
        if (fold_one(p, ended[i]) < 0)
            break;
        changed++;
    }
    if (changed) {
        /* an event that holds a record across a GIL release drops itself;
         * a collection in progress is on a live record: it carries on */
        int carry = p->gc_thread && p->gc_generation == p->generation;
        p->generation++;
        if (carry)
            p->gc_generation = p->generation;
        fpy_drain_doomed(p); /* names of C functions (str) and code objects
                                their group's record holds too: no code runs */
    }
done:
    PyErr_Clear();
    PyMem_Free(live);
    PyMem_Free(ended);
    p->fold.at = 2 * HASH_COUNT(p->core.threads) + 64;
    fpy_exc_restore(&saved);
}

PyObject *fpy_take_gone(fpy_profiler_t *p)
{
    PyObject *ids = PyTuple_New((Py_ssize_t)p->fold.n_gone);
    if (!ids)
        return NULL;
    for (size_t i = 0; i < p->fold.n_gone; i++) {
        PyObject *id = PyLong_FromUnsignedLongLong(p->fold.gone[i]);
        if (!id) {
            Py_DECREF(ids);
            return NULL;
        }
        PyTuple_SET_ITEM(ids, (Py_ssize_t)i, id);
    }
    p->fold.n_gone = 0;
    return ids;
}

PyObject *fpy_hold_folds(fpy_profiler_t *p, PyObject *on)
{
    int hold = PyObject_IsTrue(on);
    if (hold < 0)
        return NULL;
    if (hold) {
        fpy_fold_ended(p, 1);
        p->fold.hold++;
    } else if (p->fold.hold > 0) {
        p->fold.hold--;
    }
    Py_RETURN_NONE;
}

PyObject *fpy_thread_groups(fpy_profiler_t *p)
{
    PyObject *out = PyDict_New();
    for (fp_thread_t *t = p->core.threads; out && t; t = t->hh.next) {
        if ((t->id >> 62) != 1 || !t->n_entries)
            continue; /* not a group's record (a routed one has bit 63), or empty */
        PyObject *id = PyLong_FromUnsignedLongLong(t->id);
        PyObject *v =
            id ? Py_BuildValue("(KK)", (unsigned long long)t->group, (unsigned long long)t->folded)
               : NULL;
        if (!v || PyDict_SetItem(out, id, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(id);
        Py_XDECREF(v);
    }
    return out;
}

void fpy_fold_reset(fpy_profiler_t *p)
{
    p->fold.at = 0;
    p->fold.n_gone = 0;
}

void fpy_fold_free(fpy_profiler_t *p)
{
    PyMem_Free(p->fold.gone);
    p->fold.gone = NULL;
    p->fold.n_gone = p->fold.cap_gone = 0;
}
