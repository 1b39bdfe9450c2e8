/* Profiler and thread-record lifecycle, memory accounting, merging. */
#include "fp_profiler.h"

#include <string.h>

void fp_profiler_init(fp_profiler_t *p, unsigned flags, int32_t max_depth, fp_release_fn release,
                      void *release_ctx)
{
    memset(p, 0, sizeof *p);
    p->flags = flags;
    p->max_depth = max_depth > 0 ? max_depth : 1;
    p->release = release;
    p->release_ctx = release_ctx;
}

fp_thread_t *fp_thread_new(uint64_t id)
{
    fp_thread_t *t = fp_calloc(1, sizeof *t);
    if (t)
        t->id = id;
    return t;
}

/* Drops the stats, stack and parked frames of `t`, keeping the record. */
static void thread_reset(fp_thread_t *t, fp_release_fn release, void *ctx)
{
    fp_entry_t *e, *etmp;
    HASH_ITER(hh, t->entries, e, etmp)
    {
        HASH_DEL(t->entries, e);
        if (release && e->user)
            release(e->user, ctx);
        fp_free(e);
    }
    fp_edge_t *g, *gtmp;
    HASH_ITER(hh, t->edges, g, gtmp)
    {
        HASH_DEL(t->edges, g);
        fp_free(g);
    }
    fp_node_t *n, *ntmp;
    HASH_ITER(hh, t->nodes, n, ntmp)
    {
        HASH_DEL(t->nodes, n);
        fp_free(n);
    }
    fp_parked_t *k, *ktmp;
    HASH_ITER(hh, t->parked, k, ktmp)
    {
        HASH_DEL(t->parked, k);
        fp_free(k);
    }
    memset(t->cache, 0, sizeof t->cache);
    memset(t->edge_cache, 0, sizeof t->edge_cache);
    fp_free(t->stack);
    t->stack = NULL;
    t->depth = t->capacity = t->lost = 0;
    fp_free(t->mem_stack);
    t->mem_stack = NULL;
    t->mem_capacity = 0;
    t->offset = 0; /* no frame is open: program time may jump ahead */
    t->extra_events = 0;
    t->root_subt = 0;
    t->root_sub_alloc = 0;
    t->n_entries = t->n_edges = t->n_nodes = 0;
    t->folded = 0; /* the threads folded in: their stats are gone */
}

void fp_thread_free(fp_thread_t *t, fp_release_fn release, void *ctx)
{
    if (!t)
        return;
    thread_reset(t, release, ctx);
    fp_free(t);
}

void fp_profiler_clear(fp_profiler_t *p)
{
    fp_thread_t *t, *tmp;
    HASH_ITER(hh, p->threads, t, tmp)
    {
        thread_reset(t, p->release, p->release_ctx);
    }
    p->nomem = 0;
}

void fp_profiler_destroy(fp_profiler_t *p)
{
    fp_thread_t *t, *tmp;
    HASH_ITER(hh, p->threads, t, tmp)
    {
        HASH_DEL(p->threads, t);
        fp_thread_free(t, p->release, p->release_ctx);
    }
    p->nomem = 0;
}

void fp_thread_drop(fp_profiler_t *p, fp_thread_t *t)
{
    HASH_DEL(p->threads, t);
    fp_thread_free(t, p->release, p->release_ctx);
}

void fp_thread_discard(fp_profiler_t *p, fp_thread_t *t)
{
    if (p->heap) {
        for (const fp_entry_t *e = t->entries; e; e = e->hh.next)
            fp_heap_owner_drop(p->heap, e->mem_owner);
        for (const fp_edge_t *g = t->edges; g; g = g->hh.next)
            fp_heap_owner_drop(p->heap, g->mem_owner);
        for (const fp_node_t *n = t->nodes; n; n = n->hh.next)
            fp_heap_owner_drop(p->heap, n->mem_owner);
    }
    fp_thread_drop(p, t);
}

fp_thread_t *fp_thread_find(fp_profiler_t *p, uint64_t id)
{
    fp_thread_t *t;
    HASH_FIND(hh, p->threads, &id, sizeof id, t);
    return t;
}

fp_thread_t *fp_thread_get(fp_profiler_t *p, uint64_t id)
{
    fp_thread_t *t = fp_thread_find(p, id);
    if (t)
        return t;
    t = fp_thread_new(id);
    if (t && !FP_HASH_ADD(p->threads, id, sizeof t->id, t)) {
        fp_free(t);
        t = NULL;
    }
    if (!t)
        p->nomem = 1;
    return t;
}

static size_t thread_memory(const fp_thread_t *t)
{
    size_t bytes =
        sizeof *t + t->capacity * sizeof(fp_frame_t) + t->mem_capacity * sizeof(fp_mem_frame_t);
    bytes += t->n_entries * sizeof(fp_entry_t) + t->n_edges * sizeof(fp_edge_t) +
             t->n_nodes * sizeof(fp_node_t) + HASH_COUNT(t->parked) * sizeof(fp_parked_t);
    if (t->entries)
        bytes += HASH_OVERHEAD(hh, t->entries) - t->n_entries * sizeof(UT_hash_handle);
    if (t->edges)
        bytes += HASH_OVERHEAD(hh, t->edges) - t->n_edges * sizeof(UT_hash_handle);
    if (t->nodes)
        bytes += HASH_OVERHEAD(hh, t->nodes) - t->n_nodes * sizeof(UT_hash_handle);
    return bytes;
}

size_t fp_profiler_memory(const fp_profiler_t *p)
{
    size_t bytes = 0;
    const fp_thread_t *t;
    for (t = p->threads; t; t = t->hh.next)
        bytes += thread_memory(t);
    return bytes;
}

/* Memory profiling's bytes including callees add up; the peak of one call
 * is the larger one. */
static void add_memory(uint64_t *incl, uint64_t *peak, uint64_t src_incl, uint64_t src_peak)
{
    *incl += src_incl;
    if (src_peak > *peak)
        *peak = src_peak;
}

/* The entry of `dst` matching the key of `src_entry`, created if missing. */
static fp_entry_t *merged_entry(fp_thread_t *dst, const fp_entry_t *src_entry)
{
    fp_entry_t *e = fp_entry_find(dst, src_entry->key);
    return e ? e : fp_entry_add(dst, src_entry->key, src_entry->user);
}

fp_status fp_thread_merge(fp_thread_t *dst, const fp_thread_t *src)
{
    const fp_entry_t *se;
    for (se = src->entries; se; se = se->hh.next) {
        fp_entry_t *e = merged_entry(dst, se);
        if (!e)
            return FP_ENOMEM;
        e->callcount += se->callcount;
        e->reccallcount += se->reccallcount;
        e->cumtime += se->cumtime;
        e->owntime += se->owntime;
        add_memory(&e->mem_incl, &e->mem_peak, se->mem_incl, se->mem_peak);
    }
    const fp_edge_t *sg;
    for (sg = src->edges; sg; sg = sg->hh.next) {
        fp_entry_t *a = merged_entry(dst, sg->key.caller);
        fp_entry_t *b = merged_entry(dst, sg->key.callee);
        fp_edge_t *g = a && b ? fp_edge_get(dst, a, b) : NULL;
        if (!g)
            return FP_ENOMEM;
        g->callcount += sg->callcount;
        g->reccallcount += sg->reccallcount;
        g->cumtime += sg->cumtime;
        g->owntime += sg->owntime;
        add_memory(&g->mem_incl, &g->mem_peak, sg->mem_incl, sg->mem_peak);
    }
    /* Nodes come parents first (creation order), so each parent has been
     * merged before its children; `map` takes a source index to the merged
     * node. */
    if (!src->n_nodes)
        return FP_OK;
    fp_node_t **map = fp_calloc(src->n_nodes, sizeof *map);
    if (!map)
        return FP_ENOMEM;
    const fp_node_t *sn;
    fp_status rc = FP_OK;
    for (sn = src->nodes; sn; sn = sn->hh.next) {
        const fp_node_t *sparent = sn->key.parent;
        fp_entry_t *e = merged_entry(dst, sn->key.entry);
        fp_node_t *n = e ? fp_node_get(dst, sparent ? map[sparent->index] : NULL, e) : NULL;
        if (!n) {
            rc = FP_ENOMEM;
            break;
        }
        map[sn->index] = n;
        n->callcount += sn->callcount;
        n->cumtime += sn->cumtime;
        n->owntime += sn->owntime;
        add_memory(&n->mem_incl, &n->mem_peak, sn->mem_incl, sn->mem_peak);
    }
    fp_free(map);
    return rc;
}

/* What a fold created in its destination, to take out again when it runs
 * out of memory: entries (each borrowing the user of the source entry in
 * `from` until the fold commits), edges and call-path nodes; `map` takes
 * a source node's index to its destination node. One block. */
typedef struct fold_made {
    fp_entry_t **entries;
    fp_entry_t **from;
    fp_edge_t **edges;
    fp_node_t **nodes;
    fp_node_t **map;
    size_t n_entries, n_edges, n_nodes;
} fold_made_t;

static int fold_made_alloc(fold_made_t *m, const fp_thread_t *src)
{
    size_t n = 2 * src->n_entries + src->n_edges + 2 * src->n_nodes;
    void **block = fp_calloc(n ? n : 1, sizeof *block);
    if (!block)
        return -1;
    m->entries = (fp_entry_t **)block;
    m->from = m->entries + src->n_entries;
    m->edges = (fp_edge_t **)(m->from + src->n_entries);
    m->nodes = (fp_node_t **)(m->edges + src->n_edges);
    m->map = m->nodes + src->n_nodes;
    m->n_entries = m->n_edges = m->n_nodes = 0;
    return 0;
}

/* Takes what the fold made out of `dst` again: it is as it was (its caches
 * emptied, as they may point at what is taken out). */
static void fold_undo(fp_thread_t *dst, fold_made_t *m)
{
    for (size_t i = 0; i < m->n_nodes; i++) {
        HASH_DEL(dst->nodes, m->nodes[i]);
        fp_free(m->nodes[i]);
    }
    dst->n_nodes -= m->n_nodes; /* the newest indices: the others stay dense */
    for (size_t i = 0; i < m->n_edges; i++) {
        HASH_DEL(dst->edges, m->edges[i]);
        fp_free(m->edges[i]);
    }
    dst->n_edges -= m->n_edges;
    for (size_t i = 0; i < m->n_entries; i++) {
        HASH_DEL(dst->entries, m->entries[i]);
        fp_free(m->entries[i]);
    }
    dst->n_entries -= m->n_entries;
    memset(dst->cache, 0, sizeof dst->cache);
    memset(dst->edge_cache, 0, sizeof dst->edge_cache);
    for (fp_entry_t *e = dst->entries; e; e = e->hh.next) {
        e->last_edge = NULL;
        e->last_node = NULL;
    }
}

/* First step of a fold: every entry, edge and node of `src` gets one in
 * `dst` (new ones at zero), noted in `m`; -1 when out of memory. */
static int fold_make(fp_thread_t *dst, const fp_thread_t *src, fold_made_t *m)
{
    for (fp_entry_t *se = src->entries; se; se = se->hh.next) {
        if (fp_entry_find(dst, se->key))
            continue;
        fp_entry_t *e = fp_entry_add(dst, se->key, se->user);
        if (!e)
            return -1;
        m->entries[m->n_entries] = e;
        m->from[m->n_entries++] = se;
    }
    for (const fp_edge_t *sg = src->edges; sg; sg = sg->hh.next) {
        size_t before = dst->n_edges;
        fp_edge_t *g = fp_edge_get(dst, fp_entry_find(dst, sg->key.caller->key),
                                   fp_entry_find(dst, sg->key.callee->key));
        if (!g)
            return -1;
        if (dst->n_edges != before)
            m->edges[m->n_edges++] = g;
    }
    /* parents come first (creation order), so each one is mapped already */
    for (const fp_node_t *sn = src->nodes; sn; sn = sn->hh.next) {
        const fp_node_t *sparent = sn->key.parent;
        size_t before = dst->n_nodes;
        fp_node_t *n = fp_node_get(dst, sparent ? m->map[sparent->index] : NULL,
                                   fp_entry_find(dst, sn->key.entry->key));
        if (!n)
            return -1;
        if (dst->n_nodes != before)
            m->nodes[m->n_nodes++] = n;
        m->map[sn->index] = n;
    }
    return 0;
}

/* Memory profiling: what src's rows allocated counts for dst's from now on
 * (a row of dst with no owner yet takes src's). */
static void fold_owner(fp_heap_t *h, fp_owner_t *dst, fp_owner_t src)
{
    if (!src)
        return;
    if (*dst)
        fp_heap_owner_merge(h, *dst, src);
    else
        *dst = src;
}

static void fold_owners(fp_heap_t *h, fp_thread_t *dst, const fp_thread_t *src, fold_made_t *m)
{
    for (const fp_entry_t *se = src->entries; se; se = se->hh.next)
        fold_owner(h, &fp_entry_find(dst, se->key)->mem_owner, se->mem_owner);
    for (const fp_edge_t *sg = src->edges; sg; sg = sg->hh.next)
        fold_owner(h,
                   &fp_edge_get(dst, fp_entry_find(dst, sg->key.caller->key),
                                fp_entry_find(dst, sg->key.callee->key))
                        ->mem_owner,
                   sg->mem_owner);
    for (const fp_node_t *sn = src->nodes; sn; sn = sn->hh.next)
        fold_owner(h, &m->map[sn->index]->mem_owner, sn->mem_owner);
}

fp_status fp_thread_fold(fp_profiler_t *p, fp_thread_t *dst, fp_thread_t *src)
{
    fp_thread_flush(p, src, src->last_now);
    fold_made_t m;
    if (fold_made_alloc(&m, src) < 0)
        return FP_ENOMEM;
    if (fold_make(dst, src, &m) < 0) {
        fold_undo(dst, &m);
        fp_free(m.entries);
        return FP_ENOMEM;
    }
    /* nothing fails from here on */
    for (const fp_entry_t *se = src->entries; se; se = se->hh.next) {
        fp_entry_t *e = fp_entry_find(dst, se->key);
        e->callcount += se->callcount;
        e->reccallcount += se->reccallcount;
        e->cumtime += se->cumtime;
        e->owntime += se->owntime;
        add_memory(&e->mem_incl, &e->mem_peak, se->mem_incl, se->mem_peak);
    }
    for (const fp_edge_t *sg = src->edges; sg; sg = sg->hh.next) {
        fp_edge_t *g = fp_edge_get(dst, fp_entry_find(dst, sg->key.caller->key),
                                   fp_entry_find(dst, sg->key.callee->key));
        g->callcount += sg->callcount;
        g->reccallcount += sg->reccallcount;
        g->cumtime += sg->cumtime;
        g->owntime += sg->owntime;
        add_memory(&g->mem_incl, &g->mem_peak, sg->mem_incl, sg->mem_peak);
    }
    for (const fp_node_t *sn = src->nodes; sn; sn = sn->hh.next) {
        fp_node_t *n = m.map[sn->index];
        n->callcount += sn->callcount;
        n->cumtime += sn->cumtime;
        n->owntime += sn->owntime;
        add_memory(&n->mem_incl, &n->mem_peak, sn->mem_incl, sn->mem_peak);
    }
    for (size_t i = 0; i < m.n_entries; i++)
        m.from[i]->user = NULL; /* dst's now: not released with src */
    if (p->heap)
        fold_owners(p->heap, dst, src, &m);
    fp_free(m.entries);
    dst->offset += src->offset;
    dst->extra_events += src->extra_events;
    dst->folded += src->folded ? src->folded : 1;
    fp_thread_drop(p, src);
    return FP_OK;
}
