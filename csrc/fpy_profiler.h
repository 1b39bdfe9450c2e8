/* fpy_profiler: the `_fastprof.Profiler` object shared by the binding's
 * files, and the functions they call in one another. All of them assume the
 * GIL is held. */
#ifndef FPY_PROFILER_H
#define FPY_PROFILER_H

#include "fpy_compat.h"
#include "fpy_cpython_internals.h"

#include "fp_profiler.h"

#include <pthread.h>

#if !FPY_USE_MONITORING
/* <=3.11: what the profile hook's object starts with after PyObject_HEAD.
 * The enabling thread's hook object is the profiler itself (so
 * sys.getprofile() returns it, as with cProfile), other threads' are small
 * hook objects (fpy_source_legacy.c); the callback reads either one at the
 * same offsets, at no cost. */
typedef struct fpy_hook_target {
    struct fpy_profiler *prof; /* the profiler's own: itself (borrowed) */
    fp_thread_t *thread;       /* the hooked thread's record */
} fpy_hook_target_t;
#endif

/* The number of sys.monitoring events the 3.12+ source registers
 * (fpy_source_monitoring.c's event_table). */
#define FPY_MONITORING_EVENTS 9

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
    PyObject *gc_callbacks;                        /* gc.callbacks, the list the collector reads */
    PyObject *gc_name;                             /* "<gc>", interned: the user object of <gc> rows */
    long monitoring_events[FPY_MONITORING_EVENTS]; /* sys.monitoring.events flags */
    /* every live profiler of this module, for the after-fork handler */
    struct fpy_profiler *live_profilers;
} fpy_module_state;

typedef struct fpy_profiler {
    PyObject_HEAD
#if !FPY_USE_MONITORING
    fpy_hook_target_t hook; /* must follow PyObject_HEAD (see above) */
#endif
    fp_profiler_t core;
    fp_clock_t clock;
    PyObject *timer; /* custom timer callable, or NULL */
    double timeunit;
    int builtins;
    int threads_all;     /* every thread, not only the enabling one */
    int coroutines_wall; /* generators: one call from start to finish */
    int gc;              /* record collections as <gc> (fpy_gc.c) */
    int enabled;
    uint64_t generation; /* bumped by enable/disable/clear: events that
                            straddle one (a custom timer can release the
                            GIL) are dropped */
    uint64_t owner_tid;  /* thread state id of the enabling thread */
    PyObject *error;     /* pending exception from the timer, reported once */
    int failed;          /* the timer failed: ignore events until disable */
    fp_time_t last_now;  /* last good clock reading */
    /* Users (code objects, names) released by the core, DECREF'd once the
     * core is consistent again, since a DECREF may run arbitrary code. */
    PyObject **doomed;
    size_t n_doomed, cap_doomed;
#if FPY_USE_MONITORING
    /* the thread of the last event (fpy_thread_cache.c) */
    uintptr_t cached_os_thread; /* its pthread_self(), 0: none */
    uint64_t cached_epoch;      /* fpy_os_threads_ended then */
    fp_thread_t *cached_thread; /* its record, NULL: not recorded */
#endif
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
#if FPY_USE_MONITORING
    int tool_id;         /* -1 when not registered */
    PyObject *gen_watch; /* {frame identity: weakref to its generator} */
    PyObject *missing;   /* sys.monitoring.MISSING */
#else
    PyObject *thread_starter; /* given to threading.setprofile, or NULL */
    /* threading was not imported at enable(): give it thread_starter when
     * the program imports it (importing it ourselves would change the
     * program's sys.modules and ABC caches) */
    int threading_pending;
    /* {thread id: its hook}: a hook lives as long as its profiler, since a
     * thread that is between events may still hold it after disable() */
    PyObject *hooks;
#endif
    /* fast=True (fpy_source_evalframe.c), last so that the default mode's
     * fields keep their places: the source, and the thread of the last
     * frame, valid while `generation` is fast_generation */
    int fast;
    PyThreadState *fast_ts;
    uint64_t fast_ts_id, fast_generation;
    fp_thread_t *fast_thread; /* its record, NULL: not recorded */
} fpy_profiler_t;

/* Whether the frames of `code` are parked when they suspend: generators
 * and coroutines with coroutines='wall', one call from start to finish. */
FP_FORCE_INLINE int fpy_frame_parks(const fpy_profiler_t *p, const PyCodeObject *code)
{
    return p->coroutines_wall && (code->co_flags & FPY_CO_SUSPENDABLE);
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

/* The thread record for thread state `tstate`, created (and labelled with
 * the thread's ident) if new; NULL on OOM. */
fp_thread_t *fpy_thread_record(fpy_profiler_t *p, PyThreadState *tstate);

/* A thread makes its first event (or its first since clear()), before its
 * record `id` exists: the Python side (Profile._thread_started) writes its
 * name down while its Thread object is on its stack, since short-lived
 * threads are gone by the time the stats are read. Runs Python code (no
 * event is reported inside an event callback), which may release the GIL,
 * disable or clear the profiler: callers look again afterwards. Errors are
 * dropped. */
void fpy_thread_started(fpy_profiler_t *p, uint64_t id);

/* Whether this OS thread is inside fpy_thread_started (a collection then
 * is not recorded: it belongs to the profiler's own work). */
int fpy_naming_thread(void);

/* ---- fpy_thread_cache.c: the thread of an event, on 3.12+ ---- */

#if FPY_USE_MONITORING
/* OS threads seen by a profiler that have exited since the module loaded. */
extern uint64_t fpy_os_threads_ended;

/* Makes the process-wide thread-exit key, once per process (any module
 * instance or interpreter may call it). */
int fpy_thread_cache_module_init(void);

/* Forgets the cached thread (enable, clear, fork child). */
void fpy_thread_cache_reset(fpy_profiler_t *p);

fp_thread_t *fpy_thread_for_slow(fpy_profiler_t *p, uintptr_t os_thread);

/* This OS thread's identity: the thread pointer, which is what
 * pthread_self() returns, read inline where the compiler can. */
static inline uintptr_t fpy_os_thread_self(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/* The record of the thread running this event, or NULL when its events
 * are not recorded (threads=False and not the enabling thread) or memory
 * ran out. */
static inline fp_thread_t *fpy_thread_for(fpy_profiler_t *p)
{
    uintptr_t os_thread = fpy_os_thread_self();
    if (os_thread == p->cached_os_thread &&
        p->cached_epoch == __atomic_load_n(&fpy_os_threads_ended, __ATOMIC_RELAXED))
        return p->cached_thread;
    return fpy_thread_for_slow(p, os_thread);
}
#else
/* <=3.11: each thread's hook names its record; nothing to cache. */
static inline int fpy_thread_cache_module_init(void)
{
    return 0;
}

static inline void fpy_thread_cache_reset(fpy_profiler_t *p)
{
    (void)p;
}
#endif

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

/* ---- fpy_attr.c: calls into Python modules by interned name ---- */

/* getattr(obj, name) (new reference, or NULL with an exception set). */
PyObject *fpy_getattr(PyObject *obj, const char *name);

/* obj.name(*args), args built by Py_BuildValue from `fmt`, which must make
 * a tuple: "(is)", "(O)". New reference, or NULL with an exception set. */
PyObject *fpy_call_method(PyObject *obj, const char *name, const char *fmt, ...);

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

/* ---- event sources: fpy_source_legacy.c (<= 3.11) or
 *      fpy_source_monitoring.c (>= 3.12) ---- */

/* Registers with the interpreter, so events reach `p`; -1 with an
 * exception set on failure. */
int fpy_source_attach(fpy_profiler_t *p);

/* Unregisters: no more events reach `p` (never fails; errors are
 * swallowed). */
void fpy_source_detach(fpy_profiler_t *p);

/* Unregisters for thread state `ts` only (the current one): its events no
 * longer reach `p`, whose record of it is marked `stopped` already; the
 * other threads' go on. Never fails. */
void fpy_source_detach_thread(fpy_profiler_t *p, PyThreadState *ts);

/* The record of the running thread if `p` records its events, else NULL
 * (a collection is recorded where the source would record a call). */
fp_thread_t *fpy_source_thread(fpy_profiler_t *p);

/* Fills the source's part of the module state (its type, event flags);
 * called by each module instance's exec. */
int fpy_source_module_init(PyObject *module, fpy_module_state *st);

/* ---- fpy_source_evalframe.c: the PEP 523 source, fast=True ----
 * The same four jobs as the fpy_source_* functions above; the fpy_events_*
 * wrappers pick the profiler's source. */
int fpy_evalframe_attach(fpy_profiler_t *p);
void fpy_evalframe_detach(fpy_profiler_t *p);
fp_thread_t *fpy_evalframe_thread(fpy_profiler_t *p);

/* Module function _test_set_dummy_evaluator(on): test-only. */
PyObject *fpy_test_set_dummy_evaluator(PyObject *module, PyObject *on);

static inline int fpy_events_attach(fpy_profiler_t *p)
{
    return p->fast ? fpy_evalframe_attach(p) : fpy_source_attach(p);
}

static inline void fpy_events_detach(fpy_profiler_t *p)
{
    if (p->fast)
        fpy_evalframe_detach(p);
    else
        fpy_source_detach(p);
}

/* The thread's record is marked stopped already: the evaluator sees that
 * on its next lookup, once its cached thread is forgotten. */
static inline void fpy_events_detach_thread(fpy_profiler_t *p, PyThreadState *ts)
{
    if (p->fast)
        p->fast_ts = NULL;
    else
        fpy_source_detach_thread(p, ts);
}

static inline fp_thread_t *fpy_events_thread(fpy_profiler_t *p)
{
    return p->fast ? fpy_evalframe_thread(p) : fpy_source_thread(p);
}

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

/* ---- fpy_stats.c: tables to Python objects ---- */

/* getstats(thread=None) and callpaths(thread=None); see docs/binding-api.md. */
PyObject *fpy_getstats(fpy_profiler_t *p, PyObject *thread);
PyObject *fpy_callpaths(fpy_profiler_t *p, PyObject *thread);
int fpy_stats_module_init(PyObject *module, fpy_module_state *st);

#endif
