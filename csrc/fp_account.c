/* The accounting of calls and times on a thread's shadow stack, with
 * cProfile's definitions:
 *   callcount     every call;  reccallcount  calls while already active;
 *   owntime (pstats' tottime)  time in the function's own code;
 *   cumtime                    time including callees, for outermost
 *                              activations only.
 * Edges (caller->callee) and call-path nodes are counted the same way. */
#include "fp_account_fast.h"

/* How far down the stack a return looks for its frame before it is taken
 * for the return of a frame entered before profiling started. */
#define FP_LEAVE_SEARCH 32

static __attribute__((noinline)) fp_status grow_stack(fp_profiler_t *p, fp_thread_t *t)
{
    size_t cap = t->capacity ? t->capacity * 2 : 64;
    fp_frame_t *stack = fp_realloc(t->stack, cap * sizeof *stack);
    if (!stack) {
        p->nomem = 1;
        return FP_ENOMEM;
    }
    t->stack = stack;
    t->capacity = cap;
    return FP_OK;
}

/* Makes room for one more frame on the stack (pushes nothing). */
FP_FORCE_INLINE fp_status ensure_stack_room(fp_profiler_t *p, fp_thread_t *t)
{
    return t->depth < t->capacity ? FP_OK : grow_stack(p, t);
}

/* ---- memory: the thread's allocation counts as a second clock ---- */

/* The memory readings of the frame at `index`, or NULL (no room: out of
 * memory). Grown to the stack's capacity, new slots not running. */
static fp_mem_frame_t *mem_slot(fp_profiler_t *p, fp_thread_t *t, size_t index)
{
    if (index < t->mem_capacity)
        return &t->mem_stack[index];
    size_t cap = t->capacity > index ? t->capacity : index + 1;
    fp_mem_frame_t *stack = fp_realloc(t->mem_stack, cap * sizeof *stack);
    if (!stack) {
        p->nomem = 1;
        return NULL;
    }
    memset(stack + t->mem_capacity, 0, (cap - t->mem_capacity) * sizeof *stack);
    t->mem_stack = stack;
    t->mem_capacity = cap;
    return &stack[index];
}

/* The frame about to be pushed at t->depth starts (carry NULL) or resumes
 * (carry: what it ran up before) running: its readings, and the running
 * high point starts again from here. */
static void mem_start(fp_profiler_t *p, fp_thread_t *t, const fp_mem_frame_t *carry)
{
    if (!p->heap)
        return;
    fp_mem_frame_t *f = mem_slot(p, t, t->depth);
    if (!f)
        return;
    *f = carry ? *carry : (fp_mem_frame_t){0};
    fp_mem_clock_t *m = t->mem;
    if (!m)
        return;
    f->running = 1;
    f->alloc0 = m->allocated;
    f->live0 = m->live;
    f->saved_max = m->frame_max;
    m->frame_max = m->live;
}

/* The frame just taken off the stack (its slot is t->depth) stops
 * running (returns or suspends): what this run allocated and how high it
 * went join what it ran up before, and its high point is its caller's
 * too; what it allocated is its caller's callees' (root_sub_alloc with no
 * caller). Returns its readings, or NULL when memory is off. */
static fp_mem_frame_t *mem_stop(fp_profiler_t *p, fp_thread_t *t)
{
    if (!p->heap || t->depth >= t->mem_capacity)
        return NULL;
    fp_mem_frame_t *f = &t->mem_stack[t->depth];
    fp_mem_clock_t *m = t->mem;
    if (!f->running || !m)
        return f;
    f->running = 0;
    uint64_t run = m->allocated - f->alloc0;
    f->incl_acc += run;
    if (t->depth == 0)
        t->root_sub_alloc += run;
    else if (t->depth - 1 < t->mem_capacity)
        t->mem_stack[t->depth - 1].sub_alloc += run;
    int64_t rise = m->frame_max - f->live0;
    if (rise > f->rise_acc)
        f->rise_acc = rise;
    if (f->saved_max > m->frame_max)
        m->frame_max = f->saved_max;
    return f;
}

/* A finished call's bytes including callees (outermost activations, as
 * cumtime) and its rise, into each of its rows; after fp_deactivate. */
static void mem_book(const fp_frame_t *f, const fp_mem_frame_t *m)
{
    if (!m)
        return;
    uint64_t incl = m->incl_acc, rise = (uint64_t)m->rise_acc;
    fp_entry_t *e = f->entry;
    if (e->reclevel == 0)
        e->mem_incl += incl;
    if (rise > e->mem_peak)
        e->mem_peak = rise;
    if (f->edge) {
        if (f->edge->reclevel == 0)
            f->edge->mem_incl += incl;
        if (rise > f->edge->mem_peak)
            f->edge->mem_peak = rise;
    }
    if (f->node) {
        if (f->node->reclevel == 0)
            f->node->mem_incl += incl;
        if (rise > f->node->mem_peak)
            f->node->mem_peak = rise;
    }
}

/* Takes the top frame off and books it as returning at `now`. */
static void book_top(fp_profiler_t *p, fp_thread_t *t, fp_time_t now)
{
    fp_frame_t *f = fp_deactivate(t, now);
    mem_book(f, mem_stop(p, t));
    fp_book(f, now);
}

static fp_node_t *child_node(fp_profiler_t *p, fp_thread_t *t, fp_node_t *parent, fp_entry_t *e)
{
    if (parent && parent->key.entry == e)
        return parent; /* direct recursion folds into one node */
    if (parent && parent->depth >= p->max_depth)
        parent = parent->key.parent; /* past the bound: siblings, not deeper */
    fp_node_t *node = fp_node_get(t, parent, e);
    if (!node)
        p->nomem = 1;
    return node;
}

void fp_enter(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now)
{
    t->last_now = now;
    if (!e || t->lost || ensure_stack_room(p, t) != FP_OK) {
        /* Once a push is dropped, everything nested in it is dropped too:
         * its return must not pop the caller's frame. */
        if (!e)
            p->nomem = 1; /* the binding could not get an entry */
        t->lost++;
        return;
    }
    fp_frame_t f = {.entry = e, .ident = ident, .t0 = now, .seg = now};
    fp_frame_t *caller = t->depth ? &t->stack[t->depth - 1] : NULL;
    if (caller && (p->flags & FP_SUBCALLS)) {
        f.edge = fp_edge_get(t, caller->entry, e);
        if (!f.edge)
            p->nomem = 1;
    }
    if (p->flags & FP_CALLPATHS)
        f.node = child_node(p, t, caller ? caller->node : NULL, e);
    mem_start(p, t, NULL);
    fp_activate(t, &f);
}

/* Index of the frame of `key` within the top FP_LEAVE_SEARCH frames, or -1. */
static long find_frame(const fp_thread_t *t, const void *key)
{
    size_t stop = t->depth > FP_LEAVE_SEARCH ? t->depth - FP_LEAVE_SEARCH : 0;
    for (size_t i = t->depth; i > stop; i--) {
        if (t->stack[i - 1].entry->key == key)
            return (long)(i - 1);
    }
    return -1;
}

/* Closes the frames above `index`, which missed their return events. */
static void close_above(fp_profiler_t *p, fp_thread_t *t, long index, fp_time_t now)
{
    while ((long)t->depth > index + 1)
        book_top(p, t, now);
}

void fp_leave(fp_profiler_t *p, fp_thread_t *t, const void *key, fp_time_t now)
{
    t->last_now = now;
    if (t->lost) {
        t->lost--;
        return;
    }
    if (t->depth == 0 || t->stack[t->depth - 1].entry->key != key) {
        long i = find_frame(t, key); /* a missed return, or never entered */
        if (i < 0)
            return;
        close_above(p, t, i, now);
    }
    book_top(p, t, now);
}

void fp_suspend(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident, fp_time_t now)
{
    t->last_now = now;
    if (t->lost) {
        t->lost--;
        return;
    }
    long i = find_frame(t, key);
    if (i < 0)
        return;
    close_above(p, t, i, now);
    fp_parked_t *park = fp_malloc(sizeof *park);
    if (park) {
        park->ident = ident;
        park->dead = 0;
        if (!FP_HASH_ADD(t->parked, ident, sizeof park->ident, park)) {
            fp_free(park);
            park = NULL;
        }
    }
    fp_frame_t *f = fp_deactivate(t, now);
    fp_mem_frame_t *m = mem_stop(p, t);
    if (!park) {
        p->nomem = 1;
        mem_book(f, m);
        fp_book(f, now); /* cannot park it: count the run so far as one call */
        return;
    }
    park->frame = *f;
    park->mem = m ? *m : (fp_mem_frame_t){0};
    park->frame.seg = now; /* while parked, `seg` is when it stopped */
}

void fp_resume(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now)
{
    fp_parked_t *park;
    t->last_now = now;
    HASH_FIND(hh, t->parked, &ident, sizeof ident, park);
    if (!park) {
        fp_enter(p, t, e, ident, now);
        return;
    }
    if (t->lost || ensure_stack_room(p, t) != FP_OK) {
        t->lost++;
        return;
    }
    HASH_DEL(t->parked, park);
    fp_frame_t f = park->frame;
    mem_start(p, t, &park->mem);
    fp_free(park);
    f.susp += now - f.seg;
    f.seg = now;
    fp_activate(t, &f);
}

/* Books a parked frame as returning at `at` and frees the record (its
 * memory: what it ran up before it parked). */
static void close_parked(fp_profiler_t *p, fp_thread_t *t, fp_parked_t *park, fp_time_t at)
{
    HASH_DEL(t->parked, park);
    fp_frame_t f = park->frame;
    /* A parked frame is not active: book it as if it had resumed and
     * returned at once, its suspension counted up to `at` (its memory:
     * what it ran up before it parked). */
    if (p->heap) {
        fp_mem_frame_t *m = mem_slot(p, t, t->depth);
        if (m)
            *m = park->mem; /* not running: mem_stop adds nothing */
    }
    fp_free(park);
    f.susp += at - f.seg;
    f.seg = at;
    fp_activate(t, &f);
    book_top(p, t, at);
}

fp_parked_t *fp_parked_find(fp_thread_t *t, const void *ident)
{
    fp_parked_t *park;
    HASH_FIND(hh, t->parked, &ident, sizeof ident, park);
    return park;
}

void fp_mark_dead(fp_thread_t *t, const void *ident)
{
    fp_parked_t *park = fp_parked_find(t, ident);
    if (park)
        park->dead = 1;
}

void fp_start(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident, fp_time_t now)
{
    fp_parked_t *stale = fp_parked_find(t, ident);
    if (stale && !t->lost && ensure_stack_room(p, t) == FP_OK)
        close_parked(p, t, stale, stale->frame.seg);
    fp_enter(p, t, e, ident, now);
}

void fp_thread_flush(fp_profiler_t *p, fp_thread_t *t, fp_time_t now)
{
    while (t->depth > 0)
        book_top(p, t, now);
    t->lost = 0;
    fp_parked_t *park, *tmp;
    HASH_ITER(hh, t->parked, park, tmp)
    {
        close_parked(p, t, park, park->dead ? park->frame.seg : now);
    }
}

/* The heap owner of a frame's most precise row (as fp_top_owner), 0 when
 * it has none yet. */
static fp_owner_t frame_owner(const fp_frame_t *f)
{
    return f->node ? f->node->mem_owner : f->edge ? f->edge->mem_owner : f->entry->mem_owner;
}

int fp_try_enter_memory(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident,
                        fp_time_t now, fp_owner_t *owner)
{
    size_t depth = t->depth;
    if (t->lost || depth == 0 || depth >= t->capacity || depth >= t->mem_capacity || !t->mem ||
        (p->flags & FP_CALLPATHS))
        return 0;
    fp_edge_t *edge = NULL;
    if (p->flags & FP_SUBCALLS) {
        edge = fp_edge_cached(t, t->stack[depth - 1].entry, e);
        if (!edge)
            return 0;
    }
    fp_owner_t o = edge ? edge->mem_owner : e->mem_owner;
    if (!o)
        return 0; /* its first call: the general path gives the row an owner */
    t->last_now = now;
    fp_frame_t f = {.entry = e, .edge = edge, .ident = ident, .t0 = now, .seg = now};
    mem_start(p, t, NULL); /* (its slot exists: depth < mem_capacity) */
    fp_activate(t, &f);
    *owner = o;
    return 1;
}

int fp_try_leave_memory(fp_profiler_t *p, fp_thread_t *t, const void *key, const void *ident,
                        fp_time_t now, fp_owner_t *owner)
{
    size_t depth = t->depth;
    if (t->lost || depth == 0)
        return 0;
    const fp_frame_t *top = &t->stack[depth - 1];
    if (ident ? top->ident != ident : top->entry->key != key)
        return 0;
    fp_owner_t o = depth > 1 ? frame_owner(&t->stack[depth - 2]) : FP_OWNER_NONE;
    if (depth > 1 && !o)
        return 0;
    t->last_now = now;
    book_top(p, t, now);
    *owner = o;
    return 1;
}

fp_owner_t fp_top_owner(fp_profiler_t *p, fp_thread_t *t)
{
    if (!p->heap || !t->depth)
        return FP_OWNER_NONE;
    fp_frame_t *f = &t->stack[t->depth - 1];
    fp_owner_t *slot = f->node   ? &f->node->mem_owner
                       : f->edge ? &f->edge->mem_owner
                                 : &f->entry->mem_owner;
    if (!*slot)
        *slot = fp_heap_new_owner(p->heap);
    return *slot;
}
