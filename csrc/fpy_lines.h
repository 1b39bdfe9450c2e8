/* fpy_lines.h: LineCounter's state, shared by its two event sources:
 * the sys.monitoring callbacks in fpy_lines.c (3.12+) and the C trace
 * function in fpy_lines_legacy.c (3.9-3.11). Both feed the same per-line
 * accounting (fpy_lines_enter / _line / _exit). */
#ifndef FPY_LINES_H
#define FPY_LINES_H

#include "fpy_profiler.h"

#include "fp_hash.h"

typedef struct code_lines {
    const void *key; /* the code object (held in `code`) */
    PyObject *code;
    int base; /* line number of slot 0 */
    int n;    /* slots */
    uint64_t *hits;
    uint64_t *ns; /* clock ticks: ns, or the bound profiler's */
    int64_t *own; /* the same, the calls made from the line excluded */
    /* memory on (the bound profiler's): bytes allocated for rows on the
     * line's thread while it ran, the calls made from it included; the
     * change of the thread's live bytes meanwhile; the bytes without the
     * calls' (as `own`) */
    uint64_t *alloc;
    int64_t *net;
    uint64_t *own_alloc;
    int own_lost;       /* a line of it ran where own time was not exact */
    int own_alloc_lost; /* or its own bytes */
    int has_bytes;      /* a run of a line of it was measured in bytes */
    UT_hash_handle hh;
} code_lines_t;

typedef struct frame_line {
    const void *key; /* the frame object: only compared */
    code_lines_t *lines;
    int line; /* 0: none yet */
    uint64_t t0;
    /* the clock's reading at t0: a line still open at the stop ends on a
     * reading of another thread (drop_frames) */
    fp_time_t raw0;
    fp_time_t m0; /* own-time mark at t0 (own_mark), if own_ok */
    int own_ok;   /* own_mark's answer at t0 */
    /* memory on: the thread's allocation counts at t0 (mem_reading), NULL
     * when not read; its own-bytes mark, if own_alloc_ok */
    fp_mem_clock_t *mem;
    uint64_t a0, oa0;
    int64_t live0;
    int own_alloc_ok;
    /* routing by request (fpy_route.h): the request the open line counts
     * for (its table looked up when the line ends: a request dropped
     * meanwhile gets nothing); 0: not routed (`lines`), FPY_LINES_NOWHERE:
     * no open request, not counted */
    uint64_t request;
    UT_hash_handle hh;
} frame_line_t;

#define FPY_LINES_NOWHERE UINT64_MAX
#define FPY_LINES_ASK (UINT64_MAX - 1) /* an event's request not read yet */

/* The line counts of one request while the bound profiler routes by
 * request (fastprof.middleware): code objects as in `codes`. */
typedef struct request_lines {
    uint64_t request;
    code_lines_t *codes;
    int nomem; /* some of its lines lost for lack of memory: stats(request) says so */
    UT_hash_handle hh;
} request_lines_t;

/* A code object the trace function was told not to count (held). */
typedef struct code_skipped {
    const void *key;
    PyObject *code;
    UT_hash_handle hh;
} code_skipped_t;

typedef struct {
    PyObject_HEAD
    code_lines_t *codes;
    frame_line_t *frames;
    PyObject *disable;    /* sys.monitoring.DISABLE */
    int nomem;            /* lines lost for lack of memory, not of one known request */
    fpy_profiler_t *prof; /* bind(): its clock, and own times; NULL: none */
    int tool_id;          /* the sys.monitoring tool id of these callbacks */
    /* The line event being recorded: its first clock reading and, when the
     * bound profiler compensates, the thread record whose account the
     * event's time goes to (lc_done). */
    fp_time_t ev_raw;
    fp_thread_t *ev_thread;
    /* the bound profiler is not recording (not started yet, stopped, its
     * timer failed): the event counts nothing and ends nothing (a line
     * open then is open at the stop: close() ends it) */
    int ev_outside;
    /* its request when routing (frame_line_t.request's values) */
    uint64_t ev_request;
    request_lines_t *requests; /* routed counts, by request id */
    request_lines_t *last_req; /* the last one looked up, or NULL */
    code_lines_t *last_cl;     /* the last table looked up in them, or NULL, */
    uint64_t last_cl_request;  /* and its request */
    fp_thread_t *ev_rec;       /* routing: the event's record (lc_now), for own_mark */
    /* the trace function (fpy_lines_legacy.c) */
    PyObject *decide;        /* decide(code, frame): None if not counted */
    code_skipped_t *skipped; /* code objects decided not counted */
    int trace_on;            /* between trace_start() and trace_stop() */
} line_counter_t;

/* Whether the lines of `code` are counted (add()). */
int fpy_lines_counts(line_counter_t *lc, PyObject *code);

/* add(code); -1 with an exception set on failure. */
int fpy_lines_add(line_counter_t *lc, PyObject *code);

/* A new activation of `frame` (a frame object, only compared) of counted
 * `code` starts: no line open yet. */
void fpy_lines_enter(line_counter_t *lc, const void *frame, PyObject *code);

/* `frame` of `code` starts line `line`: 0 if the frame is not known (no
 * enter(), and not `make`), 1 if counted. */
int fpy_lines_line(line_counter_t *lc, const void *frame, PyObject *code, int line, int make);

/* `frame` of `code` returns, yields or unwinds: its open line ends. */
void fpy_lines_exit(line_counter_t *lc, const void *frame, PyObject *code);

#if !FPY_USE_MONITORING
/* fpy_lines_legacy.c: LineCounter's trace_start / trace_stop /
 * thread_trace methods, its call (tp_call), and freeing what they keep. */
PyObject *fpy_lines_trace_start(line_counter_t *lc, PyObject *decide);
PyObject *fpy_lines_trace_stop(line_counter_t *lc, PyObject *ignored);
PyObject *fpy_lines_trace_threads(line_counter_t *lc, PyObject *ignored);
PyObject *fpy_lines_thread_trace(line_counter_t *lc, PyObject *args);
PyObject *fpy_lines_trace_call(line_counter_t *lc, PyObject *args, PyObject *kwargs);
void fpy_lines_trace_free(line_counter_t *lc);
#define FPY_LINES_TRACE_METHODS                                                                         \
    {"trace_start", (PyCFunction)fpy_lines_trace_start, METH_O,                                         \
     "trace_start($self, decide, /)\n--\n\nCount lines through a C trace function in this thread; "     \
     "decide(code, frame) is None for code not counted."},                                              \
        {"trace_threads", (PyCFunction)fpy_lines_trace_threads, METH_NOARGS,                            \
         "trace_threads($self, /)\n--\n\nThe C trace function in the other running threads too, "       \
         "where none is set."},                                                                         \
        {"trace_stop", (PyCFunction)fpy_lines_trace_stop, METH_NOARGS,                                  \
         "trace_stop($self, /)\n--\n\nStop counting; removes the trace function of this thread."},      \
        {"thread_trace", (PyCFunction)fpy_lines_thread_trace, METH_VARARGS,                             \
         "thread_trace($self, frame, event, arg, /)\n--\n\nthreading.settrace target: installs the C "  \
         "trace function in a new thread."},
#endif

#endif
