/* fpy_source: the event-source interface. An event source is how the
 * interpreter's call and return events reach a profiler: the C profile hook
 * of each thread (fpy_source_legacy.c, 3.9-3.11, prefix fpy_legacy_),
 * sys.monitoring callbacks (fpy_source_monitoring.c, 3.12+, fpy_mon_) or a
 * PEP 523 frame evaluator (fpy_source_evalframe.c, fast=True, fpy_eval_).
 *
 * Each source file defines one const fpy_source_ops (on the versions it is
 * compiled for) and owns one state struct, declared here because the
 * profiler embeds it: its event callbacks read it with no pointer to
 * follow. enable() picks the profiler's source (fast=True: fpy_eval_source,
 * else FPY_DEFAULT_SOURCE) and keeps it in `source`. The table is for
 * control: registering, unregistering, one thread's stop, a fork, and the
 * running thread's record asked from outside the events (a collection;
 * before 3.12, a line's own time). Events go straight from the
 * interpreter to the source's callbacks, which stay leaf functions with
 * the recording inlined (fpy_record_fast.h), never through the table. */
#ifndef FPY_SOURCE_H
#define FPY_SOURCE_H

#include "fpy_compat.h"

#include "fp_profiler.h"

#include <stdint.h>

struct fpy_profiler;
struct fpy_module_state;

typedef struct fpy_source_ops {
    const char *name; /* "legacy", "monitoring", "evalframe" (for a debugger) */
    /* Fills the source's part of the module state (its object type, event
     * flags); called by each module instance's exec. -1 with an exception
     * set on failure. */
    int (*module_init)(PyObject *module, struct fpy_module_state *st);
    /* The state of a new profiler (tp_new), before any attach. */
    void (*init)(struct fpy_profiler *p);
    /* Registers with the interpreter, so events reach `p`; -1 with an
     * exception set on failure (nothing left registered). */
    int (*attach)(struct fpy_profiler *p);
    /* Unregisters: no more events reach `p` (never fails; errors are
     * swallowed). */
    void (*detach)(struct fpy_profiler *p);
    /* disable(this_thread=True): the events of thread state `ts` (the
     * current one), whose record is marked `stopped` already, no longer
     * reach `p`; the other threads' go on. Never fails. */
    void (*stop_thread)(struct fpy_profiler *p, PyThreadState *ts);
    /* The record of the running thread if `p` records its events, else
     * NULL: a collection (fpy_gc.c) is charged where a call would be, a
     * line's own time (fpy_lines.c) read from its stack. */
    fp_thread_t *(*running_thread)(struct fpy_profiler *p);
    /* Record `t`, of a thread that has ended, is about to be freed
     * (fpy_thread_fold.c): nothing of the source may point at it after
     * this, attached or not. Never fails, runs no Python code. */
    void (*forget_thread)(struct fpy_profiler *p, fp_thread_t *t);
    /* In a fork child, while attached: only the forking thread survives. */
    void (*after_fork)(struct fpy_profiler *p);
    /* The state's Python references, for the profiler's tp_traverse,
     * tp_clear and dealloc (whatever source is attached: a profiler may
     * have used both of its sources). */
    int (*traverse)(struct fpy_profiler *p, visitproc visit, void *arg);
    void (*clear)(struct fpy_profiler *p);
    void (*free)(struct fpy_profiler *p);
} fpy_source_ops;

extern const fpy_source_ops fpy_legacy_source; /* 3.9-3.11 */
extern const fpy_source_ops fpy_mon_source;    /* 3.12+ */
extern const fpy_source_ops fpy_eval_source;   /* fast=True, every version */

/* The default mode's source on this version. */
#if FPY_USE_MONITORING
#define FPY_DEFAULT_SOURCE (&fpy_mon_source)
#else
#define FPY_DEFAULT_SOURCE (&fpy_legacy_source)
#endif

/* ---- fpy_source_legacy.c: the profile hook of each thread ---- */

/* What the profile hook's object starts with after PyObject_HEAD. The
 * enabling thread's hook object is the profiler itself (so
 * sys.getprofile() returns it, as with cProfile), other threads' are small
 * hook objects; the callback reads either one at the same offsets, at no
 * cost (fpy_source_legacy.c checks the two offsets agree). */
typedef struct fpy_legacy_hook_target {
    struct fpy_profiler *prof; /* the profiler's own: itself (borrowed) */
    fp_thread_t *thread;       /* the hooked thread's record */
} fpy_legacy_hook_target_t;

typedef struct fpy_legacy_state {
    fpy_legacy_hook_target_t hook; /* first: follows PyObject_HEAD (above) */
    PyObject *thread_starter;      /* given to threading.setprofile, or NULL */
    /* threading was not imported at enable(): give it thread_starter when
     * the program imports it (importing it ourselves would change the
     * program's sys.modules and ABC caches) */
    int threading_pending;
    /* {thread id: its hook}: a hook lives as long as its profiler, since a
     * thread that is between events may still hold it after disable() */
    PyObject *hooks;
} fpy_legacy_state_t;

/* ---- fpy_source_monitoring.c: sys.monitoring callbacks ---- */

/* The number of sys.monitoring events the source registers (its
 * event_table). */
#define FPY_MON_EVENTS 9

typedef struct fpy_mon_state {
    int tool_id;         /* -1 when not registered */
    PyObject *gen_watch; /* {frame identity: weakref to its generator} */
    PyObject *missing;   /* sys.monitoring.MISSING */
    /* the thread of the last event (fpy_thread_cache.c) */
    uintptr_t cached_os_thread; /* its pthread_self(), 0: none */
    uint64_t cached_epoch;      /* fpy_mon_os_threads_ended then */
    fp_thread_t *cached_thread; /* its record, NULL: not recorded */
} fpy_mon_state_t;

/* ---- fpy_source_evalframe.c: the PEP 523 frame evaluator ---- */

/* The thread of the last frame, valid while the profiler's `generation`
 * is `generation`. */
typedef struct fpy_eval_state {
    PyThreadState *ts;
    uint64_t ts_id, generation;
    fp_thread_t *thread; /* its record, NULL: not recorded */
} fpy_eval_state_t;

/* Module function _test_set_dummy_evaluator(on): test-only. */
PyObject *fpy_eval_test_set_dummy_evaluator(PyObject *module, PyObject *on);

#endif
