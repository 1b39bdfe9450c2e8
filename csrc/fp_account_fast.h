/* The accounting every event runs, inline: putting a frame on a thread's
 * stack and booking it when it returns (cProfile's definitions, see
 * fp_account.c), and fp_try_enter / fp_try_leave, which do the common call
 * and return without calling anything, so the binding's fast paths stay
 * leaf functions. They refuse (return 0, changing nothing) whatever needs
 * more (first frame, full stack, new edge, call paths, dropped frames, a
 * missed return): the caller then uses fp_enter / fp_leave. */
#ifndef FP_ACCOUNT_FAST_H
#define FP_ACCOUNT_FAST_H

#include "fp_profiler.h"

/* Puts `f` on top of the stack (which has room) and counts it as active. */
FP_FORCE_INLINE void fp_activate(fp_thread_t *t, const fp_frame_t *f)
{
    t->stack[t->depth++] = *f;
    f->entry->reclevel++;
    if (f->edge)
        f->edge->reclevel++;
    if (f->node)
        f->node->reclevel++;
}

/* Takes the top frame off the stack, charging the running segment to the
 * caller (none on the stack: to root_subt); returns a pointer to it (valid
 * until the next push). */
FP_FORCE_INLINE fp_frame_t *fp_deactivate(fp_thread_t *t, fp_time_t now)
{
    fp_frame_t *f = &t->stack[--t->depth];
    if (t->depth > 0)
        t->stack[t->depth - 1].subt += now - f->seg;
    else
        t->root_subt += now - f->seg;
    f->entry->reclevel--;
    if (f->edge)
        f->edge->reclevel--;
    if (f->node)
        f->node->reclevel--;
    return f;
}

/* Books a finished call described by a deactivated frame. */
FP_FORCE_INLINE void fp_book(const fp_frame_t *f, fp_time_t now)
{
    fp_time_t cum = now - f->t0;
    fp_time_t own = cum - f->susp - f->subt;
    fp_entry_t *e = f->entry;
    e->callcount++;
    e->owntime += own;
    if (e->reclevel == 0)
        e->cumtime += cum;
    else
        e->reccallcount++;
    if (f->edge) {
        fp_edge_t *g = f->edge;
        g->callcount++;
        g->owntime += own;
        if (g->reclevel == 0)
            g->cumtime += cum;
        else
            g->reccallcount++;
    }
    if (f->node) {
        fp_node_t *n = f->node;
        n->callcount++;
        n->owntime += own;
        if (n->reclevel == 0)
            n->cumtime += cum;
    }
}

/* fp_enter(p, t, e, ident, now) if it needs nothing more; 1 if done. */
FP_FORCE_INLINE int fp_try_enter(fp_profiler_t *p, fp_thread_t *t, fp_entry_t *e, const void *ident,
                                 fp_time_t now)
{
    size_t depth = t->depth;
    if (t->lost || depth == 0 || depth >= t->capacity || (p->flags & FP_CALLPATHS))
        return 0;
    fp_edge_t *edge = NULL;
    if (p->flags & FP_SUBCALLS) {
        edge = fp_edge_cached(t, t->stack[depth - 1].entry, e);
        if (!edge)
            return 0;
    }
    t->last_now = now;
    fp_frame_t f = {.entry = e, .edge = edge, .ident = ident, .t0 = now, .seg = now};
    fp_activate(t, &f);
    return 1;
}

/* fp_leave(p, t, key, now) when the top frame is the one of `key` or, if
 * `ident` is not NULL, the one entered with that identity; 1 if done. */
FP_FORCE_INLINE int fp_try_leave(fp_thread_t *t, const void *key, const void *ident, fp_time_t now)
{
    size_t depth = t->depth;
    if (t->lost || depth == 0)
        return 0;
    const fp_frame_t *top = &t->stack[depth - 1];
    if (ident ? top->ident != ident : top->entry->key != key)
        return 0;
    t->last_now = now;
    fp_book(fp_deactivate(t, now), now);
    return 1;
}

#endif
