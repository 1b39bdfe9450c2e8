/* LineCounter: the line events of line-level profiling
 * (python/fastprof/line_profiling.py), in C since they run on every line
 * of the functions profiled. On 3.12+ its methods are the sys.monitoring
 * callbacks: Python decides which code objects are profiled (add()) and
 * sets their local events; before 3.12 a C trace function
 * (fpy_lines_legacy.c) feeds the same accounting (fpy_lines.h). This
 * counts each line's hits and times it: from its LINE event to the next
 * event of the same frame (LINE, a backward JUMP within one line, return,
 * yield, unwind). Each frame's open line is kept by frame object, so
 * threads and generators need no stacks.
 *
 * Own time (bind()): a line's time minus the time of the calls made while
 * it was open, as the profiler measures them. Both ends of a line read the
 * profiler's clock and its stack: when the top frame is this code's, its
 * `subt` (callee time so far) is the calls' time, so own = the change of
 * (now - subt). A code object gets own times only if every one of its
 * lines could be measured so (`own_lost` otherwise: see own_mark).
 *
 * Routing by request (fastprof.middleware, fpy_route.h): while the bound
 * profiler routes its events by a context variable, a line is counted for
 * the request its context holds when it starts (its hit then; its time
 * when it ends, into the same request's table), or not at all outside
 * open requests; its own time is read from the request's record of the
 * thread, where the profiler put the frame. Each request has its own
 * tables (`requests`), read by stats(request) and freed by drop(request).
 * Routing off, an event pays one branch for it (lc_now). */
#include "fpy_lines.h"
#include "fpy_route.h"
#include "fpy_thread_cache.h"

#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What own_mark can say of a line's run. */
enum { OWN_LOST = 0, OWN_EXACT = 1 };

/* The record whose stack holds the running frame, as own_mark reads it,
 * or NULL when p cannot say (see own_mark). */
static fp_thread_t *mark_thread(line_counter_t *lc)
{
    fpy_profiler_t *p = lc->prof;
    if (!p || !p->enabled || p->failed)
        return NULL;
#if FPY_USE_MONITORING
    if (p->mon.tool_id < 0 || p->mon.tool_id >= lc->tool_id)
        return NULL;
#endif
    /* routing by request: the record of the thread's request, whose stack
     * holds the frame (read once per event, by lc_now) */
    fp_thread_t *t = lc->ev_rec;
    if (__builtin_expect(p->route.var == NULL, 1)) {
#if FPY_USE_MONITORING
        /* a tool id: p's source is the monitoring one, whose thread cache
         * is read inline (a line event is as hot as a call event) */
        t = fpy_mon_thread_for(p);
#else
        t = p->source->running_thread(p);
#endif
    }
    return t && !t->stopped && !t->lost ? t : NULL;
}

/* Own-time mark of the running frame of `code` at `now` (p's clock): now
 * minus the time its callees took so far, as p's stack says, when p's top
 * frame on this thread is that frame (OWN_EXACT). When p's stack on this
 * recorded thread is empty and p records every function, the frame began
 * before profiling did (every frame begun since is on the stack while it
 * runs its own lines), as when attaching to a running service: its
 * callees are the calls that returned to the empty stack (root_subt), so
 * its own times are exact too. OWN_LOST when it cannot say: p not
 * recording (stopped, timer failed, thread not recorded, frames dropped),
 * or its top frame another function's. Before 3.12 the interpreter calls
 * the trace function before the profile hook at a return, so the frame is
 * still on p's stack. On 3.12+ only if these callbacks run before p's for
 * the same event (a higher tool id: sys.monitoring calls the highest
 * first), so that at PY_RETURN the frame is still on p's stack: else the
 * caller, maybe of the same code, would be read. */
/* Where the running frame of `code` is in record `t` (of lc's profiler):
 * its top frame (TOP_CODE), or before it on an empty stack when the
 * profiler records every function (TOP_ROOT, see own_mark), or unknown. */
enum { TOP_UNKNOWN, TOP_CODE, TOP_ROOT };

static inline int code_frame_at(const line_counter_t *lc, const fp_thread_t *t, PyObject *code)
{
    if (t->depth == 0)
        return lc->prof->scope ? TOP_UNKNOWN : TOP_ROOT;
    const fp_frame_t *f = &t->stack[t->depth - 1];
    return f->entry && f->entry->key == (const void *)code ? TOP_CODE : TOP_UNKNOWN;
}

static int own_mark(line_counter_t *lc, PyObject *code, fp_time_t now, fp_time_t *mark)
{
    fp_thread_t *t = mark_thread(lc);
    if (!t)
        return OWN_LOST;
    switch (code_frame_at(lc, t, code)) {
    case TOP_ROOT:
        *mark = now - t->root_subt;
        return OWN_EXACT;
    case TOP_CODE:
        *mark = now - t->stack[t->depth - 1].subt;
        return OWN_EXACT;
    default:
        return OWN_LOST;
    }
}

/* Memory on: what the thread running a frame of `code` has allocated so
 * far for rows (`alloc`), how much of it is alive (`live`), and, when the
 * frame is p's top one (own_ok), its own-bytes mark: `alloc` less what its
 * callees allocated, as own_mark's for time. `m` NULL: memory off, or no
 * reading. */
typedef struct {
    fp_mem_clock_t *m;
    uint64_t alloc, own;
    int64_t live;
    int own_ok;
} mem_reading_t;

static mem_reading_t mem_reading(line_counter_t *lc, PyObject *code)
{
    mem_reading_t r = {NULL, 0, 0, 0, 0};
    if (!lc->prof || !lc->prof->core.heap)
        return r;
    fp_thread_t *t = mark_thread(lc);
    if (!t || !t->mem)
        return r;
    r.m = t->mem;
    r.alloc = t->mem->allocated;
    r.live = t->mem->live;
    switch (code_frame_at(lc, t, code)) {
    case TOP_ROOT:
        r.own_ok = 1;
        r.own = r.alloc - t->root_sub_alloc;
        break;
    case TOP_CODE:
        if (t->depth - 1 < t->mem_capacity && t->mem_stack[t->depth - 1].running) {
            r.own_ok = 1;
            r.own = r.alloc - t->mem_stack[t->depth - 1].sub_alloc;
        }
        break;
    default:
        break;
    }
    return r;
}

/* The recorded thread of the running OS thread in `p` (routed: its
 * request's record), or NULL. */
static fp_thread_t *running_thread(fpy_profiler_t *p)
{
#if FPY_USE_MONITORING
    if (p->mon.tool_id < 0)
        return NULL;
    return fpy_route(p, fpy_mon_thread_for(p));
#else
    return fpy_route(p, p->source->running_thread(p));
#endif
}

/* Program time on `t` of a line event that read `raw` at its start, the
 * thread's last event's time from now on: the profile's next readings on
 * this thread are no earlier (fp_program_time), so the calls a line run
 * makes lie within it, and its own time is never negative. */
static uint64_t line_program_time(fpy_profiler_t *p, fp_thread_t *t, fp_time_t raw)
{
    fp_time_t now = fp_program_time(t, raw - p->cost[FPY_COST_LINE].pre);
    t->last_now = now;
    return (uint64_t)now;
}

/* lc_now of a profiler routing by request: the event's request too. */
static uint64_t lc_now_routed(line_counter_t *lc, fpy_profiler_t *p, fp_time_t raw)
{
    fp_thread_t *t = p->enabled && !p->failed ? running_thread(p) : NULL;
    lc->ev_rec = t;
    if (!t) {
        lc->ev_request = FPY_LINES_NOWHERE; /* no open request here */
        return (uint64_t)raw;
    }
    lc->ev_request = (t->id >> 32) & FPY_ROUTE_MAX_REQUEST;
    if (!p->compensate)
        return (uint64_t)raw;
    lc->ev_thread = t;
    return line_program_time(p, t, raw);
}

/* The clock at a line event's start: the bound profiler's program time on
 * this thread (its account of its own time taken out, as the profile's
 * times: own times are their differences), else nanoseconds. With
 * compensation the event's own time is charged by lc_done. */
static uint64_t lc_now(line_counter_t *lc)
{
    fpy_profiler_t *p = lc->prof;
    lc->ev_request = 0;
    lc->ev_thread = NULL;
    if (!p) {
        lc->ev_outside = 0;
        return (uint64_t)(lc->ev_raw = (fp_time_t)now_ns());
    }
    fp_time_t raw = fpy_now(p);
    lc->ev_raw = raw;
    lc->ev_outside = !p->enabled || p->failed;
    if (__builtin_expect(p->route.var != NULL, 0))
        return lc_now_routed(lc, p, raw);
    if (!p->compensate || !p->enabled || p->failed)
        return (uint64_t)raw;
    fp_thread_t *t = running_thread(p);
    if (!t)
        return (uint64_t)raw;
    lc->ev_thread = t;
    return line_program_time(p, t, raw);
}

/* The line event that called lc_now ends: its time goes to the thread's
 * account (the profile and the lines then leave it out alike). */
static void lc_done(line_counter_t *lc)
{
    fp_thread_t *t = lc->ev_thread;
    if (!t)
        return;
    lc->ev_thread = NULL;
    fpy_profiler_t *p = lc->prof;
    if (p && p->enabled) {
        fpy_charge(p, t, lc->ev_raw, p->cost[FPY_COST_LINE]);
        t->extra_events++;
    }
}

static request_lines_t *find_request(line_counter_t *lc, uint64_t request);

/* The request of the running thread's events now, without a clock read
 * (lc_now's, for an event that reads none): 0 when not routing. */
static uint64_t current_request(line_counter_t *lc)
{
    fpy_profiler_t *p = lc->prof;
    if (!p || !p->route.var)
        return 0;
    fp_thread_t *t = p->enabled && !p->failed ? running_thread(p) : NULL;
    return t ? (t->id >> 32) & FPY_ROUTE_MAX_REQUEST : FPY_LINES_NOWHERE;
}

/* Lines of `request` were lost for lack of memory: that request's stats()
 * says so, and no other's. 0 (not routed), or a request not known here
 * (its own table could not be made): everyone's; FPY_LINES_NOWHERE (no
 * open request): nothing was to be counted; FPY_LINES_ASK: the running
 * thread's request now. */
static void lost_lines(line_counter_t *lc, uint64_t request)
{
    if (request == FPY_LINES_ASK)
        request = current_request(lc);
    if (request == FPY_LINES_NOWHERE)
        return;
    request_lines_t *rl = request ? find_request(lc, request) : NULL;
    if (rl)
        rl->nomem = 1;
    else
        lc->nomem = 1;
}

/* The per-line arrays of a table, all of 8-byte slots. */
enum { N_LINE_ARRAYS = 6 };
static void line_arrays(code_lines_t *cl, void **out[N_LINE_ARRAYS])
{
    out[0] = (void **)&cl->hits;
    out[1] = (void **)&cl->ns;
    out[2] = (void **)&cl->own;
    out[3] = (void **)&cl->alloc;
    out[4] = (void **)&cl->net;
    out[5] = (void **)&cl->own_alloc;
}

static void free_line_arrays(code_lines_t *cl)
{
    void **arrays[N_LINE_ARRAYS];
    line_arrays(cl, arrays);
    for (int k = 0; k < N_LINE_ARRAYS; k++) {
        fp_free(*arrays[k]);
        *arrays[k] = NULL;
    }
}

/* The slot of `line` in `cl` (a table of `request`'s), grown to hold it;
 * -1 when out of memory. */
static int slot_of(line_counter_t *lc, code_lines_t *cl, uint64_t request, int line)
{
    if (cl->n && line >= cl->base && line < cl->base + cl->n)
        return line - cl->base;
    int lo = cl->n ? (line < cl->base ? line : cl->base) : line;
    int hi = cl->n ? (line >= cl->base + cl->n ? line + 1 : cl->base + cl->n) : line + 1;
    int n = hi - lo + 8;
    void **arrays[N_LINE_ARRAYS];
    void *grown[N_LINE_ARRAYS];
    line_arrays(cl, arrays);
    for (int k = 0; k < N_LINE_ARRAYS; k++) {
        grown[k] = fp_calloc((size_t)n, sizeof(uint64_t));
        if (!grown[k]) {
            while (k-- > 0)
                fp_free(grown[k]);
            lost_lines(lc, request);
            return -1;
        }
        if (cl->n)
            memcpy((uint64_t *)grown[k] + (cl->base - lo), *arrays[k], (size_t)cl->n * sizeof(uint64_t));
    }
    free_line_arrays(cl);
    for (int k = 0; k < N_LINE_ARRAYS; k++)
        *arrays[k] = grown[k];
    cl->base = lo;
    cl->n = n;
    return line - lo;
}

/* A new table of `code`'s lines in `*head`; NULL when out of memory. */
static code_lines_t *new_code_lines(code_lines_t **head, PyObject *code)
{
    code_lines_t *cl = fp_calloc(1, sizeof *cl);
    if (!cl)
        return NULL;
    cl->key = code;
    cl->code = Py_NewRef(code);
    if (!FP_HASH_ADD(*head, key, sizeof cl->key, cl)) {
        Py_DECREF(code);
        fp_free(cl);
        return NULL;
    }
    return cl;
}

static void free_code_lines(code_lines_t **head)
{
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, *head, cl, tmp)
    {
        HASH_DEL(*head, cl);
        Py_DECREF(cl->code);
        free_line_arrays(cl);
        fp_free(cl);
    }
}

static request_lines_t *find_request(line_counter_t *lc, uint64_t request)
{
    request_lines_t *rl = lc->last_req;
    if (rl && rl->request == request)
        return rl;
    HASH_FIND(hh, lc->requests, &request, sizeof request, rl);
    if (rl)
        lc->last_req = rl;
    return rl;
}

/* The table of `code`'s lines for `request` (routed), made if `make` (a
 * line starts in an open request); NULL for FPY_LINES_NOWHERE, a request
 * dropped (not `make`), or out of memory (`nomem`). */
static code_lines_t *routed_lines(line_counter_t *lc, uint64_t request, PyObject *code, int make)
{
    if (request == FPY_LINES_NOWHERE)
        return NULL;
    if (lc->last_cl && lc->last_cl_request == request && lc->last_cl->code == code)
        return lc->last_cl;
    request_lines_t *rl = find_request(lc, request);
    if (!rl) {
        if (!make)
            return NULL;
        rl = fp_calloc(1, sizeof *rl);
        if (!rl) {
            lc->nomem = 1;
            return NULL;
        }
        rl->request = request;
        if (!FP_HASH_ADD(lc->requests, request, sizeof rl->request, rl)) {
            fp_free(rl);
            lc->nomem = 1;
            return NULL;
        }
        lc->last_req = rl;
    }
    code_lines_t *cl;
    HASH_FIND_PTR(rl->codes, &code, cl);
    if (!cl && make) {
        cl = new_code_lines(&rl->codes, code);
        if (!cl)
            rl->nomem = 1;
    }
    if (cl) {
        lc->last_cl = cl;
        lc->last_cl_request = request;
    }
    return cl;
}

/* Memory on: the bytes of the run of `fl`'s line ending now, into slot i
 * of `cl`, when its start was read on the same thread. */
static void charge_bytes(line_counter_t *lc, frame_line_t *fl, code_lines_t *cl, int i)
{
    if (!fl->mem)
        return;
    mem_reading_t r = mem_reading(lc, cl->code);
    if (r.m != fl->mem)
        return;
    uint64_t alloc = r.alloc - fl->a0;
    cl->has_bytes = 1;
    cl->alloc[i] += alloc;
    cl->net[i] += r.live - fl->live0;
    if (fl->own_alloc_ok && r.own_ok) {
        uint64_t own = r.own - fl->oa0; /* within [0, alloc] by construction */
        cl->own_alloc[i] += own > alloc ? alloc : own;
    } else {
        cl->own_alloc_lost = 1;
    }
}

/* The open line of `fl` ends at `t`, its own time read then; `at_stop`:
 * it is still open at the stop, at the clock's raw reading lc->ev_raw.
 * The profiler's stack is gone then, so that unfinished run is in the
 * line's time only (from raw readings), and the function's other own
 * times stay exact. */
static void charge(line_counter_t *lc, frame_line_t *fl, uint64_t t, int at_stop)
{
    if (fl->line <= 0)
        return;
    code_lines_t *cl = fl->request ? routed_lines(lc, fl->request, fl->lines->code, 0) : fl->lines;
    if (!cl)
        return; /* not counted, or its request dropped since the line began */
    int i = slot_of(lc, cl, fl->request, fl->line);
    if (i < 0)
        return;
    if (at_stop) {
        cl->ns[i] += lc->ev_raw > fl->raw0 ? (uint64_t)(lc->ev_raw - fl->raw0) : 0;
        return;
    }
    charge_bytes(lc, fl, cl, i);
    uint64_t span = t > fl->t0 ? t - fl->t0 : 0;
    cl->ns[i] += span;
    fp_time_t m = 0;
    if (fl->own_ok == OWN_EXACT && own_mark(lc, cl->code, (fp_time_t)t, &m) == OWN_EXACT) {
        /* within [0, span] by construction (line_program_time); kept
         * there should a clock step say otherwise */
        int64_t own = (int64_t)(m - fl->m0);
        cl->own[i] += own < 0 ? 0 : (uint64_t)own > span ? (int64_t)span : own;
    } else {
        cl->own_lost = 1;
    }
}

/* `fl`'s line starts at `t`, the event's clock reading lc->ev_raw. */
static void start_run(line_counter_t *lc, frame_line_t *fl, uint64_t t)
{
    fl->t0 = t;
    fl->raw0 = lc->ev_raw;
}

/* `fl`'s line starts at `t`: the own-time mark then. */
static void start_own(line_counter_t *lc, frame_line_t *fl, uint64_t t)
{
    fl->own_ok = own_mark(lc, fl->lines->code, (fp_time_t)t, &fl->m0);
    mem_reading_t r = mem_reading(lc, fl->lines->code);
    fl->mem = r.m;
    fl->a0 = r.alloc;
    fl->live0 = r.live;
    fl->oa0 = r.own;
    fl->own_alloc_ok = r.own_ok;
}

static code_lines_t *find_code(line_counter_t *lc, PyObject *code)
{
    code_lines_t *cl;
    HASH_FIND_PTR(lc->codes, &code, cl);
    return cl;
}

/* The open line of `frame` (only compared) of `code`, made if `make` (for
 * an event of `request`, or FPY_LINES_ASK: lost to it when out of memory). */
static frame_line_t *frame_line(line_counter_t *lc, const void *key, PyObject *code, int make,
                                uint64_t request)
{
    frame_line_t *fl;
    HASH_FIND_PTR(lc->frames, &key, fl);
    if (fl && fl->lines->code == code)
        return fl;
    if (!make)
        return NULL;
    code_lines_t *cl = find_code(lc, code);
    if (!cl)
        return NULL;
    if (!fl) { /* else: a frame whose exit was not seen, address reused */
        fl = fp_calloc(1, sizeof *fl);
        if (!fl) {
            lost_lines(lc, request);
            return NULL;
        }
        fl->key = key;
        if (!FP_HASH_ADD(lc->frames, key, sizeof fl->key, fl)) {
            fp_free(fl);
            lost_lines(lc, request);
            return NULL;
        }
    }
    fl->lines = cl;
    fl->line = 0;
    return fl;
}

/* The open line of the running frame of `code`, made if `make`. */
static frame_line_t *frame_of(line_counter_t *lc, PyObject *code, int make)
{
    PyFrameObject *frame = PyEval_GetFrame();
    return frame ? frame_line(lc, frame, code, make, lc->ev_request) : NULL;
}

int fpy_lines_line(line_counter_t *lc, const void *frame, PyObject *code, int line, int make)
{
    /* not made: looked up first, so that frames not counted read no clock */
    frame_line_t *fl = make ? NULL : frame_line(lc, frame, code, 0, 0);
    if (!make && !fl)
        return 0;
    uint64_t t = lc_now(lc);
    if (lc->ev_outside)
        return 1;
    if (make)
        fl = frame_line(lc, frame, code, 1, lc->ev_request);
    if (!fl) {
        lc_done(lc);
        return 0;
    }
    charge(lc, fl, t, 0);
    fl->request = lc->ev_request;
    code_lines_t *cl = fl->request ? routed_lines(lc, fl->request, code, 1) : fl->lines;
    int i = cl ? slot_of(lc, cl, fl->request, line) : -1;
    if (i >= 0)
        cl->hits[i]++;
    fl->line = line;
    start_run(lc, fl, t);
    start_own(lc, fl, t);
    lc_done(lc);
    return 1;
}

/* Memory on (the bound profiler's): the event's ints, made for the
 * callbacks, are not the program's allocations (fpy_heap_hooks.h). */
static inline void disown_event_ints(line_counter_t *lc, PyObject *const *args, Py_ssize_t from,
                                     Py_ssize_t nargs)
{
#if FPY_EVENT_INTS_ALLOCATED
    if (lc->prof && lc->prof->core.heap)
        for (Py_ssize_t i = from; i < nargs; i++)
            fpy_heap_disown_event_int(args[i]);
#else
    (void)lc, (void)args, (void)from, (void)nargs;
#endif
}

static void new_line(line_counter_t *lc, PyObject *code, int line)
{
    PyFrameObject *frame = PyEval_GetFrame();
    if (frame)
        fpy_lines_line(lc, frame, code, line, 1);
}

void fpy_lines_enter(line_counter_t *lc, const void *frame, PyObject *code)
{
    frame_line_t *fl = frame_line(lc, frame, code, 1, FPY_LINES_ASK);
    if (fl)
        fl->line = 0; /* a generator's frame resumed: its last line ended at its yield */
}

int fpy_lines_counts(line_counter_t *lc, PyObject *code)
{
    return find_code(lc, code) != NULL;
}

static PyObject *lc_line(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    disown_event_ints(lc, args, 1, nargs < 2 ? nargs : 2);
    if (nargs >= 2 && PyCode_Check(args[0]) && PyLong_Check(args[1]))
        new_line(lc, args[0], (int)PyLong_AsLong(args[1]));
    Py_RETURN_NONE;
}

/* sys.settrace reports a backward jump within one line as a new line */
static PyObject *lc_jump(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    disown_event_ints(lc, args, 1, nargs < 3 ? nargs : 3);
    if (nargs < 3 || !PyCode_Check(args[0]))
        Py_RETURN_NONE;
    long src = PyLong_AsLong(args[1]), dst = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    PyCodeObject *code = (PyCodeObject *)args[0];
    int to = dst < src ? PyCode_Addr2Line(code, (int)dst) : -1;
    if (to < 0 || to != PyCode_Addr2Line(code, (int)src))
        return Py_NewRef(lc->disable);
    new_line(lc, args[0], to);
    Py_RETURN_NONE;
}

/* What a frame event does to the frame's open line, read at `t`. */
typedef void (*frame_step_fn)(line_counter_t *lc, frame_line_t *fl, PyObject *const *args, uint64_t t);

/* The shape of the frame events: `args[0]` a code object (of at least
 * `min_args` arguments), the clock read first, then `step` on the frame's
 * open line (made first if `make`). */
static inline PyObject *frame_event(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs,
                                    Py_ssize_t min_args, int make, frame_step_fn step)
{
    disown_event_ints(lc, args, 1, nargs < 2 ? nargs : 2);
    if (nargs < min_args || !PyCode_Check(args[0]))
        Py_RETURN_NONE;
    uint64_t t = lc_now(lc);
    if (lc->ev_outside)
        Py_RETURN_NONE;
    frame_line_t *fl = frame_of(lc, args[0], make);
    if (fl)
        step(lc, fl, args, t);
    lc_done(lc);
    Py_RETURN_NONE;
}

/* PY_RESUME, PY_THROW: until the next line, the time is the resumed line's.
 * The profiler's callbacks come after these (own_mark): it has not put the
 * frame back on its stack yet. When it puts it back as a new activation
 * (not parked), whose callee time starts at 0, the mark is now; a parked
 * frame brings back its callee time from before: not known here. */
static void resume_line(line_counter_t *lc, frame_line_t *fl, PyObject *const *args, uint64_t t)
{
    int line = PyCode_Addr2Line((PyCodeObject *)args[0], (int)PyLong_AsLong(args[1]));
    PyErr_Clear();
    fl->line = line > 0 ? line : 0;
    start_run(lc, fl, t);
    fl->request = lc->ev_request;
    if (fl->request) /* its table, for the time charged at the line's end */
        (void)routed_lines(lc, fl->request, args[0], 1);
    fl->m0 = (fp_time_t)t;
    fl->own_ok = lc->prof && !fpy_frame_parks(lc->prof, (PyCodeObject *)args[0]) ? OWN_EXACT : OWN_LOST;
    /* the same for bytes: a new activation's callees will have allocated
     * nothing yet when the profiler puts it back */
    mem_reading_t r = mem_reading(lc, args[0]);
    fl->mem = r.m;
    fl->a0 = fl->oa0 = r.alloc;
    fl->live0 = r.live;
    fl->own_alloc_ok = fl->own_ok == OWN_EXACT;
}

static PyObject *lc_resume(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    return frame_event(lc, args, nargs, 2, 1, resume_line);
}

/* PY_RETURN, PY_YIELD, PY_UNWIND: the open line ends */
static void end_frame(line_counter_t *lc, frame_line_t *fl, PyObject *const *args, uint64_t t)
{
    (void)args;
    charge(lc, fl, t, 0);
    HASH_DEL(lc->frames, fl);
    fp_free(fl);
}

void fpy_lines_exit(line_counter_t *lc, const void *frame, PyObject *code)
{
    frame_line_t *fl = frame_line(lc, frame, code, 0, 0);
    if (!fl)
        return;
    uint64_t t = lc_now(lc);
    if (!lc->ev_outside)
        end_frame(lc, fl, NULL, t);
    lc_done(lc);
}

static PyObject *lc_exit(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    return frame_event(lc, args, nargs, 1, 0, end_frame);
}

int fpy_lines_add(line_counter_t *lc, PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "add() takes a code object");
        return -1;
    }
    if (find_code(lc, code))
        return 0;
    if (!new_code_lines(&lc->codes, code)) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* call_unowned(fn, *args): fn(*args), what it allocates no function's
 * (memory profiling): line profiling's own Python code, run in a
 * sys.monitoring callback while the program's row is the thread's. */
static PyObject *lc_call_unowned(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    (void)lc;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_unowned() takes a callable");
        return NULL;
    }
    fp_owner_t owner = fpy_heap_hold_owner();
    PyObject *r = PyObject_Vectorcall(args[0], args + 1, (size_t)(nargs - 1), NULL);
    fpy_heap_restore_owner(owner);
    return r;
}

/* add(code) (in the PY_START callback): out of memory, that code's lines
 * are lost, which the stats of the request running (all, not routed) say;
 * never the program's error. */
static PyObject *lc_add(line_counter_t *lc, PyObject *code)
{
    if (fpy_lines_add(lc, code) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_MemoryError))
            return NULL;
        PyErr_Clear();
        lost_lines(lc, FPY_LINES_ASK);
    }
    Py_RETURN_NONE;
}

/* Forgets the open lines; `charge_open`: their unfinished runs end now.
 * Their threads' program times are not at hand, so a run gets the clock's
 * raw reading since it began, which a wall clock (or a custom timer) gives
 * for any thread; the CPU clock's reading is the stopping thread's only,
 * so with it the unfinished runs are left out (a line's time is its
 * finished runs', as disable_and_flush closes other threads' frames at
 * their last event). */
static void drop_frames(line_counter_t *lc, int charge_open)
{
    fpy_profiler_t *p = lc->prof;
    if (p && p->clock.kind == FP_CLOCK_CPU)
        charge_open = 0;
    if (charge_open)
        lc->ev_raw = p ? fpy_now(p) : (fp_time_t)now_ns();
    frame_line_t *fl, *tmp;
    HASH_ITER(hh, lc->frames, fl, tmp)
    {
        if (charge_open)
            charge(lc, fl, 0, 1);
        HASH_DEL(lc->frames, fl);
        fp_free(fl);
    }
}

/* close(): the lines still open (frames running at stop) end now */
static PyObject *lc_close(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    drop_frames(lc, 1);
    Py_RETURN_NONE;
}

static void drop_request(line_counter_t *lc, request_lines_t *rl)
{
    HASH_DEL(lc->requests, rl);
    free_code_lines(&rl->codes);
    fp_free(rl);
    lc->last_req = NULL;
    lc->last_cl = NULL;
}

static void drop_requests(line_counter_t *lc)
{
    request_lines_t *rl, *tmp;
    HASH_ITER(hh, lc->requests, rl, tmp)
    {
        drop_request(lc, rl);
    }
}

/* drop(request): a routed request's counts are freed (its lines still
 * open count nowhere) */
static PyObject *lc_drop(line_counter_t *lc, PyObject *arg)
{
    unsigned long long r = PyLong_AsUnsignedLongLong(arg);
    if (r == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (r == 0 || r > FPY_ROUTE_MAX_REQUEST) {
        PyErr_SetString(PyExc_ValueError, "request id out of range");
        return NULL;
    }
    request_lines_t *rl = find_request(lc, (uint64_t)r);
    if (rl)
        drop_request(lc, rl);
    Py_RETURN_NONE;
}

static PyObject *lc_clear(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    drop_frames(lc, 0);
    drop_requests(lc);
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, lc->codes, cl, tmp)
    {
        void **arrays[N_LINE_ARRAYS];
        line_arrays(cl, arrays);
        for (int k = 0; k < N_LINE_ARRAYS && cl->n; k++)
            memset(*arrays[k], 0, (size_t)cl->n * sizeof(uint64_t));
        cl->own_lost = cl->own_alloc_lost = cl->has_bytes = 0;
    }
    Py_RETURN_NONE;
}

static double ticks_per_second(line_counter_t *lc)
{
    return lc->prof ? lc->prof->clock.ticks_per_second : 1e9;
}

/* stats(): {code: {lineno: (hits, seconds)}} of the lines that ran;
 * own_stats(): {code: {lineno: own seconds}} of those, for the code objects
 * bound to a profiler whose every line's own time was measured;
 * memory_stats(): {code: {lineno: (allocated, net, own allocated or
 * None)}} of those, for the code objects measured in bytes (the bound
 * profiler's memory on), own bytes where every line's were measured;
 * stats(request), ...: those of a routed request */
enum lines_kind { LINES_TIMES, LINES_OWN, LINES_BYTES };

static PyObject *line_value(line_counter_t *lc, code_lines_t *cl, int i, enum lines_kind kind, double hz)
{
    if (kind == LINES_OWN)
        return PyFloat_FromDouble((double)cl->own[i] / hz);
    if (kind == LINES_TIMES)
        return Py_BuildValue("(Kd)", (unsigned long long)cl->hits[i], cl->ns[i] / hz);
    int own_known = !cl->own_lost && !cl->own_alloc_lost && lc->prof;
    PyObject *own = own_known ? PyLong_FromUnsignedLongLong(cl->own_alloc[i]) : Py_NewRef(Py_None);
    return own ? Py_BuildValue("(KLN)", (unsigned long long)cl->alloc[i], (long long)cl->net[i], own)
               : NULL;
}

static PyObject *lines_dict(line_counter_t *lc, enum lines_kind kind, PyObject *args)
{
    static const char *const formats[] = {"|K:stats", "|K:own_stats", "|K:memory_stats"};
    unsigned long long request = 0;
    if (!PyArg_ParseTuple(args, formats[kind], &request))
        return NULL;
    if (request > FPY_ROUTE_MAX_REQUEST) {
        PyErr_SetString(PyExc_ValueError, "request id out of range");
        return NULL;
    }
    if (lc->nomem) {
        lc->nomem = 0;
        PyErr_SetString(PyExc_MemoryError, "fastprof: line stats lost for lack of memory");
        return NULL;
    }
    code_lines_t *codes = lc->codes;
    if (request) {
        request_lines_t *rl = find_request(lc, (uint64_t)request);
        if (rl && rl->nomem) {
            rl->nomem = 0;
            PyErr_Format(PyExc_MemoryError,
                         "fastprof: line stats of request %llu lost for lack of memory", request);
            return NULL;
        }
        codes = rl ? rl->codes : NULL;
    }
    double hz = ticks_per_second(lc);
    PyObject *out = PyDict_New();
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, codes, cl, tmp)
    {
        if ((kind == LINES_OWN && (!lc->prof || cl->own_lost)) ||
            (kind == LINES_BYTES && !cl->has_bytes))
            continue;
        PyObject *lines = out ? PyDict_New() : NULL;
        if (!lines || PyDict_SetItem(out, cl->code, lines) < 0)
            goto error;
        Py_DECREF(lines);
        for (int i = 0; i < cl->n; i++) {
            if (!cl->hits[i] && !cl->ns[i])
                continue;
            PyObject *k = PyLong_FromLong(cl->base + i);
            PyObject *v = line_value(lc, cl, i, kind, hz);
            int r = k && v ? PyDict_SetItem(lines, k, v) : -1;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (r < 0)
                goto error;
        }
        continue;
    error:
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *lc_stats(line_counter_t *lc, PyObject *args)
{
    return lines_dict(lc, LINES_TIMES, args);
}

static PyObject *lc_own_stats(line_counter_t *lc, PyObject *args)
{
    return lines_dict(lc, LINES_OWN, args);
}

static PyObject *lc_memory_stats(line_counter_t *lc, PyObject *args)
{
    return lines_dict(lc, LINES_BYTES, args);
}

/* bind(profiler, tool_id): time lines with the profiler's clock and measure
 * their own time against its stack; before any line is counted */
static PyObject *lc_bind(line_counter_t *lc, PyObject *args)
{
    PyObject *prof;
    int tool_id;
    if (!PyArg_ParseTuple(args, "Oi:bind", &prof, &tool_id))
        return NULL;
    fpy_module_state *st = PyType_GetModuleState(Py_TYPE(lc));
    if (!st || !PyObject_TypeCheck(prof, st->profiler_type)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes a fastprof profiler");
        return NULL;
    }
    if (lc->prof != (fpy_profiler_t *)prof) {
        code_lines_t *cl, *tmp;
        HASH_ITER(hh, lc->codes, cl, tmp)
        {
            if (cl->n) {
                PyErr_SetString(PyExc_RuntimeError, "bind() after lines were counted");
                return NULL;
            }
        }
        if (lc->requests) {
            PyErr_SetString(PyExc_RuntimeError, "bind() after lines were counted");
            return NULL;
        }
        drop_frames(lc, 0);
        Py_XSETREF(lc->prof, (fpy_profiler_t *)Py_NewRef(prof));
    }
    lc->tool_id = tool_id;
    Py_RETURN_NONE;
}

static PyObject *lc_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *disable;
    static char *kwlist[] = {"disable", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:LineCounter", kwlist, &disable))
        return NULL;
    line_counter_t *lc = (line_counter_t *)type->tp_alloc(type, 0);
    if (lc)
        lc->disable = Py_NewRef(disable);
    return (PyObject *)lc;
}

/* The profiler holds its line recorder, which holds this: a cycle the
 * collector must see through. */
static int lc_traverse(line_counter_t *lc, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(lc));
    Py_VISIT(lc->prof);
    Py_VISIT(lc->decide);
    return 0;
}

static int lc_clear_refs(line_counter_t *lc)
{
    Py_CLEAR(lc->prof);
    Py_CLEAR(lc->decide);
    return 0;
}

static void lc_dealloc(line_counter_t *lc)
{
    PyTypeObject *type = Py_TYPE(lc);
    PyObject_GC_UnTrack(lc);
    drop_frames(lc, 0);
    Py_CLEAR(lc->prof);
    free_code_lines(&lc->codes);
    drop_requests(lc);
    Py_CLEAR(lc->disable);
#if !FPY_USE_MONITORING
    fpy_lines_trace_free(lc);
#endif
    Py_CLEAR(lc->decide);
    type->tp_free((PyObject *)lc);
    Py_DECREF(type);
}

static PyMethodDef lc_methods[] = {
    {"add", (PyCFunction)lc_add, METH_O, "add($self, code, /)\n--\n\nCount the lines of code."},
    {"line", (PyCFunction)(void (*)(void))lc_line, METH_FASTCALL,
     "line($self, code, line, /)\n--\n\nThe LINE callback."},
    {"jump", (PyCFunction)(void (*)(void))lc_jump, METH_FASTCALL,
     "jump($self, code, src, dst, /)\n--\n\nThe JUMP callback."},
    {"resume", (PyCFunction)(void (*)(void))lc_resume, METH_FASTCALL,
     "resume($self, code, offset, /, *rest)\n--\n\nThe PY_RESUME and PY_THROW callback."},
    {"exit", (PyCFunction)(void (*)(void))lc_exit, METH_FASTCALL,
     "exit($self, code, offset, value, /)\n--\n\nThe PY_RETURN, PY_YIELD and PY_UNWIND callback."},
    {"close", (PyCFunction)lc_close, METH_NOARGS,
     "close($self, /)\n--\n\nEnd the lines still open, now."},
    {"clear", (PyCFunction)lc_clear, METH_NOARGS, "clear($self, /)\n--\n\nZero every count."},
    {"stats", (PyCFunction)lc_stats, METH_VARARGS,
     "stats($self, request=0, /)\n--\n\n{code: {lineno: (hits, seconds)}}; of a routed request "
     "if given."},
    {"own_stats", (PyCFunction)lc_own_stats, METH_VARARGS,
     "own_stats($self, request=0, /)\n--\n\n{code: {lineno: own seconds}} of the code objects "
     "whose own times are exact; of a routed request if given."},
    {"call_unowned", (PyCFunction)(void (*)(void))lc_call_unowned, METH_FASTCALL,
     "call_unowned($self, fn, /, *args)\n--\n\nfn(*args), what it allocates counted for no "
     "function (memory profiling)."},
    {"memory_stats", (PyCFunction)lc_memory_stats, METH_VARARGS,
     "memory_stats($self, request=0, /)\n--\n\n{code: {lineno: (allocated, net, own allocated or "
     "None)}} of the code objects measured in bytes (the bound profiler's memory on); of a routed "
     "request if given."},
    {"drop", (PyCFunction)lc_drop, METH_O,
     "drop($self, request, /)\n--\n\nFree a routed request's counts."},
    {"bind", (PyCFunction)lc_bind, METH_VARARGS,
     "bind($self, profiler, tool_id, /)\n--\n\nTime lines with the profiler's clock and measure "
     "their own time against its stack; tool_id: these callbacks' sys.monitoring tool id."},
#if !FPY_USE_MONITORING
    FPY_LINES_TRACE_METHODS
#endif
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lc_slots[] = {
    {Py_tp_new, (void *)lc_new},
    {Py_tp_dealloc, (void *)lc_dealloc},
    {Py_tp_traverse, (void *)lc_traverse},
    {Py_tp_clear, (void *)lc_clear_refs},
    {Py_tp_methods, lc_methods},
#if !FPY_USE_MONITORING
    {Py_tp_call, (void *)fpy_lines_trace_call},
#endif
    {Py_tp_doc, "LineCounter(disable)\n--\n\nLine hits and times of the code objects added."},
    {0, NULL},
};

static PyType_Spec lc_spec = {
    .name = "fastprof._fastprof.LineCounter",
    .basicsize = sizeof(line_counter_t),
#ifdef Py_TPFLAGS_IMMUTABLETYPE
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
#else
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
#endif
    .slots = lc_slots,
};

int fpy_lines_module_init(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &lc_spec, NULL);
    if (!type)
        return -1;
    int r = PyModule_AddObject(module, "LineCounter", type);
    if (r < 0)
        Py_DECREF(type);
    return r;
}
