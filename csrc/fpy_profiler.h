/* fpy_profiler: the `_fastprof.Profiler` object shared by the binding's
 * files, and the functions they call in one another. All of them assume the
 * GIL is held. */
#ifndef FPY_PROFILER_H
#define FPY_PROFILER_H

#include "fpy_compat.h"
#include "fpy_cpython_internals.h"

#include "fpy_source.h"

#include "fp_profiler.h"
#include "fpy_heap_hooks.h"

/* What one instance of the `_fastprof` module owns (fpy_module.c): one per
 * interpreter that imports it, and one more per re-import. Everything that
 * is a Python object lives here, never in a C global, so interpreters
 * never share one. What stays process-wide, and why, is listed at the top
 * of fpy_module.c. */
typedef struct fpy_module_state {
    PyTypeObject *profiler_type; /* _fastprof.Profiler */
    PyTypeObject *entry_type;    /* profiler_entry (getstats) */
    PyTypeObject *subentry_type; /* profiler_subentry */
    /* the event source's per-thread object: the monitoring callback
     * (3.12+) or the hook object of threads other than the enabling one */
    PyTypeObject *source_type;
    PyObject *gc_callbacks;          /* gc.callbacks, the list the collector reads */
    PyObject *gc_name;               /* "<gc>", interned: the user object of <gc> rows */
    long mon_events[FPY_MON_EVENTS]; /* sys.monitoring.events flags */
    /* every live profiler of this module, for the after-fork handler */
    struct fpy_profiler *live_profilers;
} fpy_module_state;

/* The calibrated cost of one kind of event that no clock read of its own
 * sees: `pre` of it comes before the event's (first) clock read, so it is
 * taken out of the interval that read ends (the one before the event),
 * and `whole` - `pre` after it, taken out of the interval after. On the
 * fast path, which reads the clock once, `whole` is the whole event,
 * callback included; on the general path what is outside its two reads.
 * Where each part falls matters as soon as two kinds of events differ:
 * on 3.12+ the CALL event of a call site comes before the callee's
 * PY_START, so it is all `pre` of the call, in the caller's time. */
typedef struct fpy_cost {
    fp_time_t pre, whole;
} fpy_cost_t;

/* The kinds of events calibrated apart (_set_compensation's names). */
enum fpy_cost_kind {
    FPY_COST_CALL,     /* a Python function's call (3.12+: PY_START, after the call site's
                          CALL event when builtins are on) */
    FPY_COST_RETURN,   /* its return */
    FPY_COST_RESUME,   /* a generator or coroutine's resume (and before 3.12 its first
                          start: the legacy hook tells a generator by its code's flags) */
    FPY_COST_YIELD,    /* its yield (and before 3.12 its last return) */
    FPY_COST_C_CALL,   /* a C function's call */
    FPY_COST_C_RETURN, /* its return */
    FPY_COST_LINE,     /* a line event of a LineCounter bound to this profiler */
    /* 3.12+ with builtins: the CALL and C_RETURN events of a callable that
     * is neither a Python function nor a C function cProfile records (a
     * class, a partial...): charged whole at the CALL, nothing recorded */
    FPY_COST_UNRECORDED_CALL,
    /* 3.12+ with builtins: a call site's CALL event for a Python function
     * (run inline: its PY_START follows), charged whole at the CALL; a
     * function started without one (a property, `+`, from C) is not */
    FPY_COST_CALL_SITE,
    FPY_COST_KINDS
};

typedef struct fpy_profiler {
    PyObject_HEAD
    /* The default mode's source's state (FPY_DEFAULT_SOURCE): the one of
     * this version only. First: the legacy hook target must follow
     * PyObject_HEAD (fpy_source.h). */
    union {
        fpy_legacy_state_t legacy;
        fpy_mon_state_t mon;
    };
    fp_profiler_t core;
    fp_clock_t clock;
    PyObject *timer; /* custom timer callable, or NULL */
    double timeunit;
    int builtins;
    int threads_all;     /* every thread, not only the enabling one */
    int coroutines_wall; /* generators: one call from start to finish */
    int gc;              /* record collections as <gc> (fpy_gc.c) */
    int enabled;
    /* Events may take the fast paths (fpy_fast_ok): enabled, the TSC, and
     * memory off (the general path says which row allocates). One field,
     * so the test costs the event path nothing more than `enabled` did. */
    int fast_events;
    /* With memory on, the general path first tries the memory-aware fast
     * paths (fpy_record.c): enabled, the TSC, memory on. */
    int fast_memory;
    /* memory=True: the allocator hooks count into `heap` (fpy_heap_hooks.c)
     * while enabled; core.heap points at it, so the rows get owners */
    int memory;
    fp_heap_t *heap;
    int hooks_stuck;     /* a stop found them wrapped by another tool: said once */
    uint64_t generation; /* bumped by enable/disable/clear: events that
                            straddle one (a custom timer can release the
                            GIL) are dropped */
    uint64_t owner_tid;  /* thread state id of the enabling thread */
    PyObject *error;     /* pending exception from the timer, reported once */
    int failed;          /* the timer failed: ignore events until disable */
    fp_time_t last_now;  /* last good clock reading */
    /* Take the profiler's own time out of every time (each thread's
     * `offset`, fp_charge): on by default, off for compensate=False and a
     * custom timer (cProfile's raw times). The delivery costs, in clock
     * ticks, are the calibrated parts of an event that no clock read sees:
     * on the general path what comes before its first read and after its
     * last; on the fast path the whole event, which reads the clock once
     * (python/fastprof/calibration.py sets them with _set_compensation). */
    int compensate;
    fpy_cost_t cost[FPY_COST_KINDS]; /* per kind of event (fpy_cost_kind) */
    /* Users (code objects, names) released by the core, DECREF'd once the
     * core is consistent again, since a DECREF may run arbitrary code. */
    PyObject **doomed;
    size_t n_doomed, cap_doomed;
    /* fpy_gc.c: the callable in gc.callbacks while enabled, and the
     * collection being recorded (one at a time: collections never overlap) */
    PyObject *gc_callback;
    fp_thread_t *gc_thread; /* where <gc> is open, NULL: none */
    uint64_t gc_generation; /* the profiler's generation at its start */
    int gc_untimed;         /* started inside a clock read: zero time */
    int busy;               /* inside a custom timer or naming a C function:
                               a collection then is counted, not timed */
    /* every live profiler of its module, for the after-fork handler */
    struct fpy_profiler *next_live, *prev_live;
    /* The module that made the profiler's class (a strong reference, kept
     * until dealloc so that `state` outlives the profiler) and its state,
     * found once at creation: nothing on the event path looks it up. */
    PyObject *module;
    fpy_module_state *state;
    /* only=: the code objects recorded (fpy_scope.c); NULL: all */
    struct fpy_scope *scope;
    int fast; /* fast=True: the frame evaluator is the source */
    /* the source attached by the last enable() (fpy_source.h) */
    const fpy_source_ops *source;
    fpy_eval_state_t eval; /* fast=True's source's state */
    /* request routing (fpy_route.c): var NULL: off */
    struct {
        PyObject *var;     /* contextvars.ContextVar holding the request id */
        PyObject *open;    /* set of the request ids still recorded */
        fp_thread_t *base; /* one-slot cache: thread record and request id */
        uint64_t request;  /* ... to the record they route to (NULL: none) */
        fp_thread_t *rec;
        struct fpy_route_on *base_on; /* ... and the thread's `on`, if any */
        int cached;
        /* what each thread did for each open request, and which thread
         * is in which request's context now (fpy_route.c) */
        struct fpy_route_part *parts;
        struct fpy_route_on *on;
        int wall_tsc; /* their wall clock: the TSC, else CLOCK_MONOTONIC */
        double wall_ns_per_tick;
        fp_time_t cpu_every; /* wall ticks between reads of a thread's CPU clock */
    } route;
    /* ended threads' records folded into their group's (fpy_thread_fold.c) */
    struct {
        size_t at;      /* records at which a new thread sweeps again */
        int hold;       /* reads of several steps under way: fold nothing */
        uint64_t *gone; /* ids folded away since the Python side took them */
        size_t n_gone, cap_gone;
    } fold;
} fpy_profiler_t;

/* Whether the frames of `code` are parked when they suspend: generators
 * and coroutines with coroutines='wall', one call from start to finish. */
FP_FORCE_INLINE int fpy_frame_parks(const fpy_profiler_t *p, const PyCodeObject *code)
{
    return p->coroutines_wall && (code->co_flags & FPY_CO_SUSPENDABLE);
}

/* Memory on: what the profiler allocates itself while it handles an event
 * (names of C functions, Python code it calls) belongs to no row, only to
 * the totals (as tracemalloc counts it); at the event's end the calling
 * thread's allocations belong to t's top row again. */
static inline void fpy_memory_pause(fpy_profiler_t *p, fp_thread_t *t)
{
    if (p->core.heap)
        fpy_heap_pause(t);
}

static inline void fpy_memory_follow(fpy_profiler_t *p, fp_thread_t *t)
{
    if (p->core.heap)
        fpy_heap_follow(&p->core, t);
}

/* ---- fpy_record.c: turning interpreter events into core calls ---- */

/* Calls the custom timer: a failure sets `failed` and the pending error
 * and returns the last good reading. Runs Python code, which may release
 * the GIL. */
fp_time_t fpy_now_custom(fpy_profiler_t *p);

/* Reads the profiler's clock (see fpy_now_custom for a custom timer). */
static inline fp_time_t fpy_now(fpy_profiler_t *p)
{
    if (p->clock.kind == FP_CLOCK_TSC)
        return fp_tsc_read();
    if (p->clock.kind != FP_CLOCK_CUSTOM)
        return fp_clock_now(&p->clock);
    return fpy_now_custom(p);
}

/* The delivery cost of a Python frame's enter (`first`: a first start,
 * PY_START) or leave (`suspending`: a yield), constants in each callback. */
FP_FORCE_INLINE fpy_cost_t fpy_delivery_enter(const fpy_profiler_t *p, int first)
{
    return p->cost[first ? FPY_COST_CALL : FPY_COST_RESUME];
}

FP_FORCE_INLINE fpy_cost_t fpy_delivery_leave(const fpy_profiler_t *p, int suspending)
{
    return p->cost[suspending ? FPY_COST_YIELD : FPY_COST_RETURN];
}

/* Program time on `t` of the reading `raw` taken at the start of an event
 * of cost `cost` (fp_program_time of the reading less the part of the
 * event before it), or the reading itself when compensation is off. */
FP_FORCE_INLINE fp_time_t fpy_program_time(const fpy_profiler_t *p, fp_thread_t *t, fp_time_t raw,
                                           fpy_cost_t cost)
{
    return p->compensate ? fp_program_time(t, raw - cost.pre) : raw;
}

/* The event of `t` that read `raw` at its start ends: with compensation
 * on, the clock is read once more and the event's time, plus its
 * delivery cost, goes to the thread's account (fp_charge). A custom timer
 * (tests only: _set_compensation) is called again, as its first read was. */
static inline void fpy_charge(fpy_profiler_t *p, fp_thread_t *t, fp_time_t raw, fpy_cost_t cost)
{
    if (!p->compensate)
        return;
    fp_time_t done = p->clock.kind == FP_CLOCK_TSC ? fp_tsc_read() : fpy_now(p);
    fp_charge(t, raw, done, cost.whole);
}

/* The thread record for thread state `tstate`, created (and labelled with
 * the thread's ident) if new; NULL on OOM. */
fp_thread_t *fpy_thread_record(fpy_profiler_t *p, PyThreadState *tstate);

/* A thread makes its first event (or its first since clear()), before its
 * record `id` exists: the records of ended threads are folded if due
 * (fpy_fold_ended), then the Python side (Profile._thread_started) writes
 * the thread's name down while its Thread object is on its stack, since
 * short-lived threads are gone by the time the stats are read, and answers
 * its name's group, returned here (0: none), which the caller sets on the
 * record it makes. Runs Python code (no event is reported inside an event
 * callback), which may release the GIL, disable or clear the profiler:
 * callers look again afterwards. Errors are dropped. */
uint64_t fpy_thread_started(fpy_profiler_t *p, uint64_t id);

/* Whether this OS thread is inside fpy_thread_started (a collection then
 * is not recorded: it belongs to the profiler's own work). */
int fpy_naming_thread(void);

/* The general path of each event (fpy_record_<event>_slow): the sources
 * call fpy_record_<event> (fpy_record_fast.h), which comes here when its
 * fast path refuses. Each takes the record of the thread the event
 * happened in (never NULL) and handles every case. */

/* A Python frame is entered: it starts or resumes (`frame`: its identity,
 * for generators in wall mode; may be NULL when not needed). `first`: 1
 * if the event says it is a first start (PY_START), 0 if it may be either. */
void fpy_record_py_enter_slow(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code, const void *frame,
                              int first);

/* A Python frame is left: it returns to its caller, or yields if
 * `suspending`. */
void fpy_record_py_leave_slow(fpy_profiler_t *p, fp_thread_t *t, PyCodeObject *code, const void *frame,
                              int suspending);

/* A call of C callable `callable` is entered; `key` is its fpy_cfunc_key
 * (never NULL: the source skips other callables, as cProfile does, before
 * it looks up the thread). `self_arg` is the first argument on 3.12+ (to
 * name method descriptors), NULL before. The frame's identity is
 * `callable`, so its return can be matched without the key. */
void fpy_record_c_enter_slow(fpy_profiler_t *p, fp_thread_t *t, const void *key, PyObject *callable,
                             PyObject *self_arg);

/* A call of C callable `callable` is left. The key is computed here, off
 * the fast path (fpy_cfunc_key with `self_arg` and `missing`); a callable
 * without one was not recorded and its return is ignored. */
void fpy_record_c_leave_slow(fpy_profiler_t *p, fp_thread_t *t, PyObject *callable, PyObject *self_arg,
                             PyObject *missing);

/* Whether the profiler still wants events of the generation `gen`. */
static inline int fpy_live(const fpy_profiler_t *p, uint64_t gen)
{
    return p->enabled && !p->failed && p->generation == gen;
}

/* Release callback for the core: queue `user` for Py_DECREF. */
void fpy_release_user(void *user, void *ctx);

/* DECREF everything queued by fpy_release_user. */
void fpy_drain_doomed(fpy_profiler_t *p);

/* ---- fpy_thread_fold.c: ended threads' records folded per name group ---- */

/* The ids of group records: this bit and the group's number (thread
 * state ids stay far below it; routed records have bit 63). */
#define FPY_FOLDED_BIT ((uint64_t)1 << 62)

/* How many ended threads keep a record of their own (the newest ones). */
#define FPY_KEEP_ENDED 64

/* Folds the records of the threads that have ended, but the newest
 * FPY_KEEP_ENDED, into their group's record (`now`: whatever the count,
 * for a read; else only when the records have doubled since the last
 * sweep). Nothing while a read holds the folds. Never fails (out of memory
 * leaves records for a later sweep), keeps any exception in flight, runs
 * no Python code but the release of the names of C functions. */
void fpy_fold_ended(fpy_profiler_t *p, int now);

/* The ids folded away since the last call, as a tuple (new reference, or
 * NULL with an exception set). */
PyObject *fpy_take_gone(fpy_profiler_t *p);

/* _hold_folds(on) (METH_O), _thread_groups() */
PyObject *fpy_hold_folds(fpy_profiler_t *p, PyObject *on);
PyObject *fpy_thread_groups(fpy_profiler_t *p);

/* A profiler made afresh (__init__) / freed. */
void fpy_fold_reset(fpy_profiler_t *p);
void fpy_fold_free(fpy_profiler_t *p);

/* ---- fpy_attr.c: calls into Python modules by interned name, their
 * errors dropped ---- */

/* getattr(obj, name) (new reference, or NULL with an exception set). */
PyObject *fpy_getattr(PyObject *obj, const char *name);

/* obj.name(*args), args built by Py_BuildValue from `fmt`, which must make
 * a tuple: "(is)", "(O)". New reference, or NULL with an exception set. */
PyObject *fpy_call_method(PyObject *obj, const char *name, const char *fmt, ...);

/* Drops the error of Python code the binding ran from C (a callback, a
 * timer, threading.setprofile): never the program's to see. Except a
 * KeyboardInterrupt: that is a SIGINT whose handler ran inside that code
 * (the interpreter runs handlers at any bytecode). It is the program's:
 * SIGINT is tripped again, so its handler runs again at the program's next
 * bytecode instead of the Ctrl-C being lost. */
void fpy_drop_error(void);

/* ---- C functions: keys (here, inline) and names (fpy_names.c) ---- */

/* Whether method descriptor `descr` binds to `self_arg` (3.12+: the first
 * argument, or sys.monitoring.MISSING when there is none). */
static inline int fpy_descr_binds(PyMethodDescrObject *descr, PyObject *self_arg, PyObject *missing)
{
    return self_arg && self_arg != missing &&
           (Py_IS_TYPE(self_arg, PyDescr_TYPE(descr)) ||
            PyType_IsSubtype(Py_TYPE(self_arg), PyDescr_TYPE(descr)));
}

/* The key cProfile uses for a C callable (its PyMethodDef), or NULL if
 * `callable` is not a C function cProfile records. */
static inline const void *fpy_cfunc_key(PyObject *callable, PyObject *self_arg, PyObject *missing)
{
    /* Exact types first: most callables are one of these, and the subtype
     * walk of PyCFunction_Check costs more than the rest of the event. */
    PyTypeObject *type = Py_TYPE(callable);
    if (type == &PyCFunction_Type || type == &PyCMethod_Type)
        return ((PyCFunctionObject *)callable)->m_ml;
    if (type == &PyFunction_Type || type == &PyType_Type || type == &PyMethod_Type)
        return NULL;
    /* 3.12+ calls `obj.method(...)` through the unbound method descriptor;
     * cProfile binds it to get the builtin method, whose PyMethodDef is the
     * descriptor's. We take the PyMethodDef without creating the object.
     * No self, or a self the descriptor cannot bind (`bytes.find(str())`,
     * gh-132250): the call raises TypeError and cProfile records nothing. */
    if (type == &PyMethodDescr_Type)
        return fpy_descr_binds((PyMethodDescrObject *)callable, self_arg, missing)
                   ? ((PyMethodDescrObject *)callable)->d_method
                   : NULL;
    if (PyCFunction_Check(callable))
        return ((PyCFunctionObject *)callable)->m_ml;
    return NULL;
}

/* The name cProfile gives that C callable, e.g. "<built-in method
 * builtins.len>" or "<method 'append' of 'list' objects>" (new reference),
 * or NULL with an exception set. */
PyObject *fpy_cfunc_name(PyObject *callable, PyObject *self_arg);

/* ---- fpy_gc.c: garbage collections as the pseudo-function <gc> ---- */

/* Puts p's collection callback in gc.callbacks (if p->gc); -1 with an
 * exception set on failure. Called by enable() once events flow. */
int fpy_gc_attach(fpy_profiler_t *p);

/* Takes it out again (never fails; never runs Python code). */
void fpy_gc_detach(fpy_profiler_t *p);

int fpy_gc_module_init(PyObject *module, fpy_module_state *st);

/* ---- fpy_lines.c: LineCounter, line-level profiling's per-line
 *      accounting (its event sources: sys.monitoring callbacks on 3.12+,
 *      the trace function of fpy_lines_legacy.c before) ---- */
int fpy_lines_module_init(PyObject *module);

/* ---- fpy_heap_rows.c: memory profiling's reads ---- */

/* _memory_totals(), _memory_rows(), _memory_calls(), _memory_callpaths(),
 * _memory_vs_tracemalloc(clear); see
 * docs/binding-api.md. */
PyObject *fpy_memory_totals(fpy_profiler_t *p, PyObject *unused);
/* (thread: None for every record, or a record's id) */
PyObject *fpy_memory_rows(fpy_profiler_t *p, PyObject *thread);
PyObject *fpy_memory_calls(fpy_profiler_t *p, PyObject *thread);
PyObject *fpy_memory_callpaths(fpy_profiler_t *p, PyObject *thread);
PyObject *fpy_memory_vs_tracemalloc(fpy_profiler_t *p, PyObject *clear);

/* ---- fpy_stats.c: tables to Python objects ---- */

/* getstats(thread=None) and callpaths(thread=None); see docs/binding-api.md. */
PyObject *fpy_getstats(fpy_profiler_t *p, PyObject *thread);
PyObject *fpy_callpaths(fpy_profiler_t *p, PyObject *thread);
int fpy_stats_module_init(PyObject *module, fpy_module_state *st);

/* The threads selected by `thread` (None: all, else an id) merged into a
 * private record whose users are referenced (free it with
 * fpy_stats_snapshot_free); NULL with an exception set. */
fp_thread_t *fpy_stats_snapshot(fpy_profiler_t *p, PyObject *thread);
/* The record `thread` names (an id; `*one` NULL for None: all), 0; -1
 * with an exception set (a KeyError for an id no record has). */
int fpy_thread_selected(fpy_profiler_t *p, PyObject *thread, fp_thread_t **one);
void fpy_stats_snapshot_free(fp_thread_t *m);

/* ---- fpy_stats_dict.c: pstats dicts of getstats() entries, or of the
 *      profiler's tables directly ---- */

/* The pstats key of a profiled function's user object (a code object, a
 * C function's name as a str, or an object with a code's co_ attributes):
 * new reference, NULL with an exception set. */
PyObject *fpy_code_key(PyObject *code);

/* _entries_stats(entries) (module function; METH_O). */
PyObject *fpy_entries_stats(PyObject *module, PyObject *entries);

/* _stats_and_codes(thread=None): (pstats dict, the codes of its entries), what
 * entries_to_stats(getstats(thread)) and the entries' codes are. */
PyObject *fpy_stats_and_codes(fpy_profiler_t *p, PyObject *thread);

/* ---- fpy_stats_marshal.c: one thread's pstats table as marshal bytes ---- */

/* _stats_marshal(skip_file, hides_c_function) (METH_VARARGS). */
PyObject *fpy_stats_marshal(fpy_profiler_t *p, PyObject *args);

/* ---- fpy_stats_fold.c: one profiler's threads added into another's ---- */

/* _fold_into(other, pairs) (METH_VARARGS). */
PyObject *fpy_stats_fold(fpy_profiler_t *p, PyObject *args);

/* ---- fpy_stats_sum.c: a pstats dict added into a running sum ---- */

/* _add_stats(out, table, keys, chosen=None) (module function; METH_VARARGS). */
PyObject *fpy_add_stats(PyObject *module, PyObject *args);

#endif
