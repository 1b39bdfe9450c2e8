/* Lookup-or-create for the per-thread tables. */
#include "fp_profiler.h"

int fp_hash_oom;

fp_entry_t *fp_entry_find_slow(fp_thread_t *t, const void *key)
{
    fp_entry_t *e;
    HASH_FIND(hh, t->entries, &key, sizeof key, e);
    if (e) {
        fp_cached_entry_t *slot = fp_entry_slot(t, key);
        slot->key = key;
        slot->entry = e;
    }
    return e;
}

fp_entry_t *fp_entry_add(fp_thread_t *t, const void *key, void *user)
{
    fp_entry_t *e = fp_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = key;
    if (!FP_HASH_ADD(t->entries, key, sizeof e->key, e)) {
        fp_free(e);
        return NULL;
    }
    e->user = user;
    t->n_entries++;
    fp_cached_entry_t *slot = fp_entry_slot(t, key);
    slot->key = key;
    slot->entry = e;
    return e;
}

fp_edge_t *fp_edge_get_slow(fp_thread_t *t, fp_entry_t *caller, fp_entry_t *callee)
{
    fp_edge_t *edge;
    fp_edge_key_t key = {.caller = caller, .callee = callee};
    HASH_FIND(hh, t->edges, &key, sizeof key, edge);
    if (!edge) {
        edge = fp_calloc(1, sizeof *edge);
        if (!edge)
            return NULL;
        edge->key = key;
        if (!FP_HASH_ADD(t->edges, key, sizeof edge->key, edge)) {
            fp_free(edge);
            return NULL;
        }
        t->n_edges++;
    }
    callee->last_edge = edge;
    *fp_edge_slot(t, caller, callee) = edge;
    return edge;
}

fp_node_t *fp_node_get(fp_thread_t *t, fp_node_t *parent, fp_entry_t *entry)
{
    fp_node_t *node = entry->last_node; /* as for edges: loops repeat paths */
    if (node && node->key.parent == parent)
        return node;
    fp_node_key_t key = {.parent = parent, .entry = entry};
    HASH_FIND(hh, t->nodes, &key, sizeof key, node);
    if (node) {
        entry->last_node = node;
        return node;
    }
    node = fp_calloc(1, sizeof *node);
    if (!node)
        return NULL;
    node->key = key;
    node->depth = parent ? parent->depth + 1 : 1;
    node->index = t->n_nodes;
    if (!FP_HASH_ADD(t->nodes, key, sizeof node->key, node)) {
        fp_free(node);
        return NULL;
    }
    t->n_nodes++;
    entry->last_node = node;
    return node;
}
