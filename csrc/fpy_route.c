/* Request routing (fpy_route.h): which record an event goes to when the
 * profiler routes by request (fastprof.middleware).
 *
 * The request id is read from a contextvars.ContextVar, so it follows the
 * request wherever its work runs: asyncio tasks (each step runs in its
 * task's context, and a task started by the request copies it), worker
 * threads of anyio / asgiref / run_in_executor (which run the function in
 * a copy of the caller's context). An event whose context holds no open
 * request is not recorded. A record is made per (thread, request): a
 * request's events never share a shadow stack or a table with another's.
 *
 * Each (thread, request) is a part of its request (`parts`, by record id):
 * its record, and how long the thread was in the request's context, wall
 * and CPU time, from its first event there to its first event elsewhere
 * (a thread is "on" a part meanwhile: `on`, by thread record id). So a
 * request's profile can say where the time its records do not hold went:
 * an async request's task suspended (its loop thread's time on it is all
 * the task ran), a thread waiting for the GIL (on the CPU for less than its
 * time on the request). The clocks are read only when a thread changes
 * request, never per event: the wall clock is the TSC where there is one;
 * a thread's CPU clock is a system call (0.1-3 us), read at most once per
 * CPU_READ_EVERY of wall time per thread (an asyncio event loop changes
 * request at every task step), the thread taken to be on the CPU in
 * between. `parts` holds the open requests' parts only (a drop frees a
 * request's parts and records); `on`, one entry per thread that ran a
 * request, until its thread record goes (fpy_route_forget_thread).
 *
 * Cost per event while routing: one PyContextVar_Get (CPython caches the
 * value per thread and context version) and a compare against a one-slot
 * cache; a miss (another thread or request) looks the request up in the
 * `open` set and its part, and when the thread changed request, reads the
 * two clocks. */
#include "fpy_route.h"

/* Seconds of wall time between two reads of a thread's CPU clock. */
#define CPU_READ_EVERY 50e-6

struct fpy_route_part {
    uint64_t id; /* its record's id (fpy_route.h) */
    fp_thread_t *rec;
    fp_time_t run; /* wall ticks in the request's context ... */
    fp_time_t cpu; /* ... and ns of the thread's CPU clock */
    fp_time_t own; /* the profiler's own time meanwhile (clock ticks) */
    UT_hash_handle hh;
};

/* A thread that has run a request: the part it is on now (NULL: none),
 * the last one (to come back to it without a look-up) and the readings
 * when it came to the part. Kept until its thread record goes. */
struct fpy_route_on {
    uint64_t thread; /* the thread record's id */
    struct fpy_route_part *part, *last;
    fp_time_t wall, cpu, own;
    UT_hash_handle hh;
};

/* This OS thread's last reading of its CPU clock, at wall time `wall` (on
 * the clock `tsc` says): whatever profiler reads it. */
static _Thread_local struct {
    int valid, tsc;
    fp_time_t wall, cpu;
} last_read;

static fp_time_t wall_now(const fpy_profiler_t *p)
{
    return p->route.wall_tsc ? fp_tsc_read() : fp_clock_ns(CLOCK_MONOTONIC);
}

/* The running thread's CPU time (ns) at wall time `wall`: read, or if it
 * was read less than CPU_READ_EVERY before, that reading plus the wall
 * time since. */
static fp_time_t cpu_now(const fpy_profiler_t *p, fp_time_t wall)
{
    if (last_read.valid && last_read.tsc == p->route.wall_tsc && wall >= last_read.wall &&
        wall - last_read.wall < p->route.cpu_every)
        return last_read.cpu + (fp_time_t)((double)(wall - last_read.wall) * p->route.wall_ns_per_tick);
    last_read.valid = 1;
    last_read.tsc = p->route.wall_tsc;
    last_read.wall = wall;
    last_read.cpu = fp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return last_read.cpu;
}

static void forget(fpy_profiler_t *p)
{
    p->route.cached = 0;
    p->route.base = NULL;
    p->route.rec = NULL;
    p->route.base_on = NULL;
}

/* The request id `value` holds: 0 for none (not an int, out of range). */
static uint64_t request_of(PyObject *value)
{
    if (!value || !PyLong_CheckExact(value))
        return 0;
    uint64_t request = (uint64_t)PyLong_AsUnsignedLongLongMask(value);
    return request > FPY_ROUTE_MAX_REQUEST ? 0 : request;
}

/* The part of `request` on thread record `t`, made (with its record) on
 * first use; NULL when out of memory (nomem set). */
static uint64_t part_id(const fp_thread_t *t, uint64_t request)
{
    return FPY_ROUTE_BIT | (request << 32) | (t->id & 0xffffffffu);
}

static struct fpy_route_part *part_get(fpy_profiler_t *p, fp_thread_t *t, uint64_t request)
{
    uint64_t id = part_id(t, request);
    struct fpy_route_part *part;
    HASH_FIND(hh, p->route.parts, &id, sizeof id, part);
    if (part)
        return part;
    part = fp_calloc(1, sizeof *part);
    if (!part) {
        p->core.nomem = 1;
        return NULL;
    }
    part->id = id;
    part->rec = fp_thread_get(&p->core, id);
    if (part->rec && !FP_HASH_ADD(p->route.parts, id, sizeof part->id, part)) {
        fp_thread_drop(&p->core, part->rec); /* new and empty */
        part->rec = NULL;
        p->core.nomem = 1;
    }
    if (!part->rec) {
        fp_free(part);
        return NULL;
    }
    part->rec->ident = t->ident;
    part->rec->native_id = t->native_id;
    return part;
}

/* Thread `on` leaves its part now: its time there is added to the part. */
static void charge(struct fpy_route_on *on, fp_time_t wall, fp_time_t cpu)
{
    struct fpy_route_part *part = on->part;
    fp_time_t own = part->rec->offset - on->own; /* (clear() resets offset) */
    part->run += wall > on->wall ? wall - on->wall : 0;
    part->cpu += cpu > on->cpu ? cpu - on->cpu : 0;
    part->own += own > 0 ? own : 0;
}

/* The running thread, record `t`, whose `on` is `on` (NULL: none yet),
 * is in the context of `part` (NULL: of no open request) from this event
 * on. Returns its `on` (NULL: none, or out of memory: not timed). */
static struct fpy_route_on *switch_to(fpy_profiler_t *p, const fp_thread_t *t, struct fpy_route_on *on,
                                      struct fpy_route_part *part)
{
    if (on ? on->part == part : part == NULL)
        return on;
    fp_time_t wall = wall_now(p), cpu = cpu_now(p, wall);
    if (on && on->part)
        charge(on, wall, cpu);
    if (!on) {
        on = fp_calloc(1, sizeof *on);
        if (!on)
            return NULL;
        on->thread = t->id;
        if (!FP_HASH_ADD(p->route.on, thread, sizeof on->thread, on)) {
            fp_free(on);
            return NULL;
        }
    }
    on->part = part;
    if (part) {
        on->last = part;
        on->wall = wall;
        on->cpu = cpu;
        on->own = part->rec->offset;
    }
    return on;
}

static fp_thread_t *route(fpy_profiler_t *p, fp_thread_t *t)
{
    PyObject *value = NULL;
    if (PyContextVar_Get(p->route.var, NULL, &value) < 0) {
        PyErr_Clear(); /* out of memory making the thread's context */
        return NULL;
    }
    uint64_t request = request_of(value);
    if (p->route.cached && p->route.base == t && p->route.request == request) {
        Py_XDECREF(value);
        return p->route.rec;
    }
    struct fpy_route_on *on = p->route.base == t ? p->route.base_on : NULL;
    if (!on)
        HASH_FIND(hh, p->route.on, &t->id, sizeof t->id, on);
    struct fpy_route_part *part = NULL;
    if (request) {
        int open = PySet_Contains(p->route.open, value);
        if (open < 0)
            PyErr_Clear();
        if (open > 0) {
            part = on && on->last && on->last->id == part_id(t, request) ? on->last
                                                                         : part_get(p, t, request);
            if (!part) {
                Py_DECREF(value);
                return NULL; /* out of memory: try again next event */
            }
        }
    }
    Py_XDECREF(value);
    p->route.cached = 1;
    p->route.base = t;
    p->route.base_on = switch_to(p, t, on, part);
    p->route.request = request;
    p->route.rec = part ? part->rec : NULL;
    return p->route.rec;
}

fp_thread_t *fpy_route_slow(fpy_profiler_t *p, fp_thread_t *t)
{
    fp_thread_t *rec = route(p, t);
    if (!rec)
        fpy_memory_pause(p, NULL); /* what the thread allocates now is no request's */
    return rec;
}

PyObject *fpy_route_by(fpy_profiler_t *p, PyObject *args)
{
    PyObject *var, *open;
    if (!PyArg_ParseTuple(args, "OO:_route_by", &var, &open))
        return NULL;
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "_route_by() only while the profiler is disabled");
        return NULL;
    }
    if (var == Py_None) {
        fpy_route_clear(p);
        Py_RETURN_NONE;
    }
    if (!PyContextVar_CheckExact(var) || !PySet_Check(open)) {
        PyErr_SetString(PyExc_TypeError, "_route_by(var, open): a ContextVar and a set");
        return NULL;
    }
    fpy_route_clear(p);
    p->route.var = Py_NewRef(var);
    p->route.open = Py_NewRef(open);
    double hz = fp_tsc_usable() ? fp_tsc_hz() : 0.0;
    if (!p->route.parts) { /* (the parts' times are in the clock's ticks) */
        p->route.wall_tsc = hz > 0;
        p->route.wall_ns_per_tick = hz > 0 ? 1e9 / hz : 1.0;
        p->route.cpu_every = (fp_time_t)(CPU_READ_EVERY * (hz > 0 ? hz : 1e9));
    }
    Py_RETURN_NONE;
}

/* The request id `request` (an int) stands for, or 0 with an exception set. */
static uint64_t request_arg(PyObject *request)
{
    unsigned long long r = PyLong_AsUnsignedLongLong(request);
    if (r == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    if (r == 0 || r > FPY_ROUTE_MAX_REQUEST) {
        PyErr_SetString(PyExc_ValueError, "request id out of range");
        return 0;
    }
    return r;
}

static int part_of(const struct fpy_route_part *part, uint64_t request)
{
    return ((part->id >> 32) & FPY_ROUTE_MAX_REQUEST) == request;
}

PyObject *fpy_route_drop(fpy_profiler_t *p, PyObject *request)
{
    uint64_t r = request_arg(request);
    if (!r)
        return NULL;
    struct fpy_route_on *on;
    for (on = p->route.on; on; on = on->hh.next) {
        if (on->part && part_of(on->part, r))
            on->part = NULL; /* a thread still in its context: not timed further */
        if (on->last && part_of(on->last, r))
            on->last = NULL;
    }
    struct fpy_route_part *part, *next;
    HASH_ITER(hh, p->route.parts, part, next)
    {
        if (!part_of(part, r))
            continue;
        if (p->gc_thread == part->rec)
            p->gc_thread = NULL; /* the collection's end is not recorded */
        fp_thread_discard(&p->core, part->rec);
        HASH_DEL(p->route.parts, part);
        fp_free(part);
    }
    forget(p);
    /* an event straddling this (a custom timer runs Python code) holds a
     * record pointer: the generation makes it drop its event */
    p->generation++;
    fpy_drain_doomed(p);
    Py_RETURN_NONE;
}

PyObject *fpy_route_times(fpy_profiler_t *p, PyObject *request)
{
    uint64_t r = request_arg(request);
    if (!r)
        return NULL;
    /* the calling thread's stay ends here (the request ends in it): the
     * next event would end it, but may come late (only=, fast=True) */
    uint64_t me = (uint64_t)PyThreadState_GetID(PyThreadState_Get());
    struct fpy_route_on *on;
    HASH_FIND(hh, p->route.on, &me, sizeof me, on);
    if (on && on->part && part_of(on->part, r)) {
        fp_time_t wall = wall_now(p);
        charge(on, wall, cpu_now(p, wall));
        on->part = NULL;
        forget(p); /* its next event looks its request up again */
    }
    double tick = p->clock.ticks_per_second > 0 ? 1.0 / p->clock.ticks_per_second : 0.0;
    PyObject *out = PyList_New(0);
    struct fpy_route_part *part;
    for (part = p->route.parts; out && part; part = part->hh.next) {
        if (!part_of(part, r))
            continue;
        PyObject *item = Py_BuildValue(
            "(KKddddK)", (unsigned long long)part->id, (unsigned long long)part->rec->ident,
            part->run * p->route.wall_ns_per_tick * 1e-9, part->cpu * 1e-9, part->own * tick,
            part->rec->offset * tick, (unsigned long long)part->rec->extra_events);
        if (!item || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

void fpy_route_clear_times(fpy_profiler_t *p)
{
    struct fpy_route_part *part;
    for (part = p->route.parts; part; part = part->hh.next)
        part->run = part->cpu = part->own = 0;
    /* the stays under way end uncounted; each thread's next event starts
     * its stay again (another thread's CPU clock cannot be read here) */
    struct fpy_route_on *on, *on_next;
    HASH_ITER(hh, p->route.on, on, on_next)
    {
        HASH_DEL(p->route.on, on);
        fp_free(on);
    }
    forget(p);
}

size_t fpy_route_memory(const fpy_profiler_t *p)
{
    size_t bytes = HASH_COUNT(p->route.parts) * sizeof(struct fpy_route_part) +
                   HASH_COUNT(p->route.on) * sizeof(struct fpy_route_on);
    if (p->route.parts)
        bytes += HASH_OVERHEAD(hh, p->route.parts) - HASH_COUNT(p->route.parts) * sizeof(UT_hash_handle);
    if (p->route.on)
        bytes += HASH_OVERHEAD(hh, p->route.on) - HASH_COUNT(p->route.on) * sizeof(UT_hash_handle);
    return bytes;
}

void fpy_route_forget_thread(fpy_profiler_t *p, const fp_thread_t *t)
{
    if (p->route.base == t || p->route.rec == t)
        forget(p);
    struct fpy_route_on *on;
    HASH_FIND(hh, p->route.on, &t->id, sizeof t->id, on);
    if (on) { /* its thread has ended */
        HASH_DEL(p->route.on, on);
        fp_free(on);
    }
}

int fpy_route_traverse(fpy_profiler_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->route.var);
    Py_VISIT(p->route.open);
    return 0;
}

void fpy_route_clear(fpy_profiler_t *p)
{
    Py_CLEAR(p->route.var);
    Py_CLEAR(p->route.open);
    forget(p);
}

void fpy_route_free(fpy_profiler_t *p)
{
    fpy_route_clear_times(p);
    struct fpy_route_part *part, *next;
    HASH_ITER(hh, p->route.parts, part, next)
    {
        HASH_DEL(p->route.parts, part);
        fp_free(part);
    }
}
