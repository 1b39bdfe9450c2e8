#include "fp_heap.h"

#include <sched.h>
#include <string.h>

#include "fp_mem.h"

enum {
    INITIAL_BITS = 12, /* 4,096 slots: 64 KiB */
    SPINS_BEFORE_YIELD = 64
};

/* The paths every allocation and free takes (the lock, the probe, the
 * counts) are inlined into them: a call each would be a tenth of the cost
 * of tracking a block. */
#define HEAP_INLINE static inline __attribute__((always_inline))

/* ---- the lock ---------------------------------------------------------- */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static __attribute__((noinline)) void wait_for_lock(fp_heap_t *h)
{
    unsigned spins = 0;
    do {
        /* Wait on a plain read, so the waiting core does not keep taking
         * the line from the holder. The holder never waits for anything
         * (no GIL, no hooked allocator), so it is out soon; yield in case
         * it was preempted. */
        while (__atomic_load_n(&h->lock, __ATOMIC_RELAXED)) {
            if (++spins < SPINS_BEFORE_YIELD)
                cpu_relax();
            else {
                spins = 0;
                sched_yield();
            }
        }
    } while (__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE));
}

HEAP_INLINE void lock_heap(fp_heap_t *h)
{
    if (__builtin_expect(__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE), 0))
        wait_for_lock(h);
}

HEAP_INLINE void unlock_heap(fp_heap_t *h)
{
    __atomic_store_n(&h->lock, 0, __ATOMIC_RELEASE);
}

void fp_heap_lock(fp_heap_t *h)
{
    lock_heap(h);
}

void fp_heap_unlock(fp_heap_t *h)
{
    unlock_heap(h);
}

/* ---- owners ------------------------------------------------------------ */

HEAP_INLINE fp_heap_owner_t *owner_at(fp_heap_t *h, fp_owner_t id)
{
    return &h->owners[id / FP_HEAP_OWNER_CHUNK][id % FP_HEAP_OWNER_CHUNK];
}

/* Before an owner's `live` changes: if the peak has risen since the owner
 * last changed, its `live` now is what it held at that peak. */
HEAP_INLINE void stamp(fp_heap_t *h, fp_heap_owner_t *o)
{
    if (o->peak_ver != h->peak_ver) {
        o->live_at_peak = o->live;
        o->peak_ver = h->peak_ver;
    }
}

/* The owner that counts for `id` (merges form chains: short ones, made
 * only when thread records are folded). */
HEAP_INLINE fp_owner_t resolve(fp_heap_t *h, fp_owner_t id)
{
    if (id >= h->n_owners)
        return FP_OWNER_NONE; /* an id of before a reset */
    while (id && id != FP_OWNER_DROPPED && owner_at(h, id)->merged_into)
        id = owner_at(h, id)->merged_into;
    return id == FP_OWNER_DROPPED ? FP_OWNER_NONE : id;
}

/* (ids resolved by the caller) */
HEAP_INLINE void count_alloc(fp_heap_t *h, fp_owner_t id, uint64_t size)
{
    fp_heap_owner_t *o = id ? owner_at(h, id) : NULL;
    if (o) {
        stamp(h, o);
        o->allocs++;
        o->alloc_bytes += size;
        o->live += size;
    }
    h->allocs++;
    h->current += size;
    if (h->current > h->peak) {
        h->peak = h->current;
        h->peak_ver++;
        /* The other owners have not changed since: their `live` is what
         * they hold at this peak. This one's is too, now. */
        if (o) {
            o->live_at_peak = o->live;
            o->peak_ver = h->peak_ver;
        }
    }
}

HEAP_INLINE void count_free(fp_heap_t *h, fp_owner_t id, uint64_t size)
{
    if (id) {
        fp_heap_owner_t *o = owner_at(h, id);
        stamp(h, o);
        o->frees++;
        o->freed_bytes += size;
        o->live -= size;
    }
    h->current -= size;
}

/* ---- the slot array ---------------------------------------------------- */

HEAP_INLINE size_t home(const fp_heap_t *h, uintptr_t ptr)
{
    /* Blocks are at least 8-aligned: drop the bits that never vary, then a
     * Fibonacci hash (its top bits are the well-mixed ones). */
    return (size_t)(((uint64_t)(ptr >> 3) * 0x9E3779B97F4A7C15ull) >> h->shift);
}

/* The slot holding `ptr`, or the empty slot where it would go. */
HEAP_INLINE size_t probe(const fp_heap_t *h, uintptr_t ptr)
{
    size_t i = home(h, ptr);
    while (h->slots[i].ptr && h->slots[i].ptr != ptr)
        i = (i + 1) & h->mask;
    return i;
}

static int alloc_slots(fp_heap_t *h, unsigned bits)
{
    fp_heap_slot_t *slots = fp_calloc((size_t)1 << bits, sizeof *slots);
    if (!slots)
        return -1;
    h->slots = slots;
    h->mask = ((size_t)1 << bits) - 1;
    h->full_at = (h->mask + 1) * 7 / 10;
    h->shift = 64 - bits;
    return 0;
}

/* Doubles the slot array; -1 (nothing changed) when out of memory. */
static int grow(fp_heap_t *h)
{
    fp_heap_slot_t *old = h->slots;
    size_t old_cap = h->mask + 1;
    if (alloc_slots(h, 64 - h->shift + 1) < 0)
        return -1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ptr)
            h->slots[probe(h, old[i].ptr)] = old[i];
    fp_free(old);
    return 0;
}

/* Empties slot i, moving later slots of its run back so that every block
 * stays reachable from its home slot without tombstones. */
HEAP_INLINE void remove_slot(fp_heap_t *h, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & h->mask;
        if (!h->slots[j].ptr)
            break;
        /* The block at j may fill the hole at i if i is not before its
         * home on its probe path. */
        size_t from_home = (j - home(h, h->slots[j].ptr)) & h->mask;
        if (from_home >= ((j - i) & h->mask)) {
            h->slots[i] = h->slots[j];
            i = j;
        }
    }
    h->slots[i].ptr = 0;
    h->used--;
}

/* ---- blocks of 4 GiB or more ------------------------------------------- */

static size_t huge_index(const fp_heap_t *h, uintptr_t ptr)
{
    for (size_t i = 0; i < h->n_huge; i++)
        if (h->huge[i].ptr == ptr)
            return i;
    return h->n_huge;
}

static int huge_add(fp_heap_t *h, uintptr_t ptr, uint64_t size)
{
    if (h->n_huge == h->cap_huge) {
        size_t cap = h->cap_huge ? 2 * h->cap_huge : 4;
        fp_heap_huge_t *huge = fp_realloc(h->huge, cap * sizeof *huge);
        if (!huge)
            return -1;
        h->huge = huge;
        h->cap_huge = cap;
    }
    h->huge[h->n_huge++] = (fp_heap_huge_t){ptr, size};
    return 0;
}

/* The size of the block in slot i, taking it out of the huge list. */
HEAP_INLINE uint64_t slot_size_taken(fp_heap_t *h, size_t i)
{
    if (h->slots[i].size != FP_HEAP_HUGE)
        return h->slots[i].size;
    size_t k = huge_index(h, h->slots[i].ptr);
    uint64_t size = h->huge[k].size;
    h->huge[k] = h->huge[--h->n_huge];
    return size;
}

/* ---- the interface ----------------------------------------------------- */

int fp_heap_init(fp_heap_t *h)
{
    memset(h, 0, sizeof *h);
    h->n_owners = 1; /* id 0 is nobody */
    return alloc_slots(h, INITIAL_BITS);
}

void fp_heap_fini(fp_heap_t *h)
{
    fp_free(h->slots);
    fp_free(h->huge);
    fp_free(h->free_ids);
    for (size_t c = 0; c < FP_HEAP_OWNER_CHUNKS && h->owners[c]; c++)
        fp_free(h->owners[c]);
    memset(h, 0, sizeof *h);
}

void fp_heap_track(fp_heap_t *h, const void *ptr, uint64_t size, fp_owner_t owner)
{
    fp_heap_track_seen(h, ptr, size, owner, UINT64_MAX);
}

/* fp_heap_track_seen's rare cases, the lock held: slot i holds a block
 * freed behind the hooks' back, the table is full, or the block is huge. */
static __attribute__((noinline)) void track_rare(fp_heap_t *h, uintptr_t p, uint64_t size,
                                                 fp_owner_t owner, size_t i)
{
    if (h->slots[i].ptr) {
        /* Freed behind the hooks' back: count the old block freed. */
        count_free(h, resolve(h, h->slots[i].owner), slot_size_taken(h, i));
    } else if (h->used >= h->full_at) {
        if (grow(h) < 0)
            goto lost;
        i = probe(h, p);
    }
    uint32_t slot_size = (uint32_t)size;
    if (size >= FP_HEAP_HUGE) {
        if (huge_add(h, p, size) < 0) {
            if (h->slots[i].ptr)
                remove_slot(h, i);
            goto lost;
        }
        slot_size = FP_HEAP_HUGE;
    }
    if (!h->slots[i].ptr)
        h->used++;
    h->slots[i] = (fp_heap_slot_t){p, slot_size, owner};
    count_alloc(h, owner, size);
    return;
lost:
    h->lost++;
}

void fp_heap_track_seen(fp_heap_t *h, const void *ptr, uint64_t size, fp_owner_t owner, uint64_t seen)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!p)
        return;
    lock_heap(h);
    if (owner && seen < h->sweeps && owner < h->n_owners && owner_at(h, owner)->recycled_at > seen)
        owner = FP_OWNER_NONE; /* handed out again since it was read */
    owner = resolve(h, owner); /* (stored resolved: a stale id counts nowhere, ever) */
    size_t i = probe(h, p);
    if (__builtin_expect(h->slots[i].ptr || h->used >= h->full_at || size >= FP_HEAP_HUGE, 0)) {
        track_rare(h, p, size, owner, i);
    } else {
        h->used++;
        h->slots[i] = (fp_heap_slot_t){p, (uint32_t)size, owner};
        count_alloc(h, owner, size);
    }
    unlock_heap(h);
}

fp_heap_block_t fp_heap_take(fp_heap_t *h, const void *ptr)
{
    fp_heap_block_t b = {0, FP_OWNER_NONE, 0, 0};
    uintptr_t p = (uintptr_t)ptr;
    if (!p)
        return b;
    lock_heap(h);
    size_t i = probe(h, p);
    if (h->slots[i].ptr) {
        b.found = 1;
        b.owner = resolve(h, h->slots[i].owner); /* (merged since, perhaps) */
        b.seen = h->sweeps;
        b.size = slot_size_taken(h, i);
        remove_slot(h, i);
        count_free(h, b.owner, b.size);
    }
    unlock_heap(h);
    return b;
}

void fp_heap_untake(fp_heap_t *h, const void *ptr, fp_heap_block_t b)
{
    if (!b.found)
        return;
    uintptr_t p = (uintptr_t)ptr;
    lock_heap(h);
    size_t i = probe(h, p);
    if (h->slots[i].ptr) {
        /* Another thread was handed this address meanwhile: it cannot have
         * been, since the block was never freed. Keep the newer block. */
        unlock_heap(h);
        return;
    }
    /* The block was in the table a moment ago; its slot may have moved,
     * but no growth is needed unless others filled the table meanwhile. */
    if (h->used >= h->full_at) {
        if (grow(h) < 0)
            goto lost;
        i = probe(h, p);
    }
    uint32_t slot_size = (uint32_t)b.size;
    if (b.size >= FP_HEAP_HUGE) {
        if (huge_add(h, p, b.size) < 0)
            goto lost;
        slot_size = FP_HEAP_HUGE;
    }
    fp_owner_t id = b.owner;
    if (id && b.seen < h->sweeps && (id >= h->n_owners || owner_at(h, id)->recycled_at > b.seen))
        id = FP_OWNER_NONE; /* handed out again since the take */
    id = resolve(h, id);
    h->slots[i] = (fp_heap_slot_t){p, slot_size, id};
    h->used++;
    if (id) {
        fp_heap_owner_t *o = owner_at(h, id);
        stamp(h, o);
        o->frees--;
        o->freed_bytes -= b.size;
        o->live += b.size;
    }
    /* Back to at most what it was before the take: no new peak. */
    h->current += b.size;
    unlock_heap(h);
    return;
lost:
    h->lost++;
    unlock_heap(h);
}

uint64_t fp_heap_disown(fp_heap_t *h, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!p)
        return 0;
    uint64_t size = 0;
    lock_heap(h);
    size_t i = probe(h, p);
    if (h->slots[i].ptr && h->slots[i].owner) {
        size = h->slots[i].size;
        if (size == FP_HEAP_HUGE)
            size = h->huge[huge_index(h, p)].size;
        fp_owner_t id = resolve(h, h->slots[i].owner);
        if (id) {
            fp_heap_owner_t *o = owner_at(h, id);
            stamp(h, o);
            o->allocs--;
            o->alloc_bytes -= size;
            o->live -= size;
        }
        h->slots[i].owner = FP_OWNER_NONE;
    }
    unlock_heap(h);
    return size;
}

/* An id out of the free list, stamped: whatever the peak so far, this
 * owner held 0. */
static fp_owner_t take_free_id(fp_heap_t *h)
{
    fp_owner_t id = h->free_ids[--h->n_free];
    owner_at(h, id)->peak_ver = h->peak_ver;
    return id;
}

/* Retired id `id` is free from now on (its counts zeroed); 0, or -1 when
 * the free list has no room (the id stays retired). */
static int free_id(fp_heap_t *h, fp_owner_t id)
{
    if (h->n_free == h->cap_free) {
        size_t cap = h->cap_free ? h->cap_free * 2 : 1024;
        fp_owner_t *ids = fp_realloc(h->free_ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        h->free_ids = ids;
        h->cap_free = cap;
    }
    fp_heap_owner_t *o = owner_at(h, id);
    *o = (fp_heap_owner_t){.recycled_at = (uint32_t)h->sweeps};
    h->free_ids[h->n_free++] = id;
    return 0;
}

/* The sweep (fp_heap_new_owner): every block of a retired owner goes to
 * the owner that counts for it now, and the retired ids are free. */
static void sweep(fp_heap_t *h)
{
    __atomic_store_n(&h->sweeps, h->sweeps + 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i <= h->mask; i++) {
        fp_owner_t o = h->slots[i].owner;
        if (h->slots[i].ptr && o && owner_at(h, o)->merged_into)
            h->slots[i].owner = resolve(h, o);
    }
    for (fp_owner_t id = 1; id < h->n_owners; id++) {
        if (owner_at(h, id)->merged_into && free_id(h, id) == 0)
            h->retired--;
    }
}

static int sweep_due(const fp_heap_t *h)
{
    size_t live = h->n_owners - 1 - h->retired - h->n_free;
    return h->retired >= FP_HEAP_SWEEP_MIN && h->retired >= live && h->retired >= (h->mask + 1) / 16;
}

fp_owner_t fp_heap_new_owner(fp_heap_t *h)
{
    fp_owner_t id = FP_OWNER_NONE;
    lock_heap(h);
    if (!h->n_free && sweep_due(h))
        sweep(h);
    if (h->n_free) {
        id = take_free_id(h);
        unlock_heap(h);
        return id;
    }
    size_t chunk = h->n_owners / FP_HEAP_OWNER_CHUNK;
    if (chunk < FP_HEAP_OWNER_CHUNKS) {
        if (!h->owners[chunk])
            h->owners[chunk] = fp_calloc(FP_HEAP_OWNER_CHUNK, sizeof(fp_heap_owner_t));
        if (h->owners[chunk]) {
            id = h->n_owners++;
            /* Stamped now: whatever the peak so far, this owner held 0. */
            owner_at(h, id)->peak_ver = h->peak_ver;
        }
    }
    unlock_heap(h);
    return id;
}

void fp_heap_owner_merge(fp_heap_t *h, fp_owner_t dst, fp_owner_t src)
{
    lock_heap(h);
    if (dst < h->n_owners && src < h->n_owners) {
        dst = resolve(h, dst);
        src = resolve(h, src);
    }
    if (dst && src && dst != src && dst < h->n_owners && src < h->n_owners) {
        fp_heap_owner_t *d = owner_at(h, dst), *o = owner_at(h, src);
        stamp(h, d);
        stamp(h, o); /* both at the current peak: their sum held it */
        d->allocs += o->allocs;
        d->alloc_bytes += o->alloc_bytes;
        d->frees += o->frees;
        d->freed_bytes += o->freed_bytes;
        d->live += o->live;
        d->live_at_peak += o->live_at_peak;
        *o = (fp_heap_owner_t){
            .peak_ver = h->peak_ver, .merged_into = dst, .recycled_at = o->recycled_at};
        h->retired++;
    }
    unlock_heap(h);
}

void fp_heap_owner_drop(fp_heap_t *h, fp_owner_t id)
{
    lock_heap(h);
    if (id && id < h->n_owners && !owner_at(h, id)->merged_into) {
        fp_heap_owner_t *o = owner_at(h, id);
        *o = (fp_heap_owner_t){.merged_into = FP_OWNER_DROPPED, .recycled_at = o->recycled_at};
        h->retired++;
    }
    unlock_heap(h);
}

int fp_heap_owner_read(fp_heap_t *h, fp_owner_t id, fp_heap_owner_stats_t *out)
{
    lock_heap(h);
    if (id == FP_OWNER_NONE || id >= h->n_owners) {
        unlock_heap(h);
        return -1;
    }
    const fp_heap_owner_t *o = owner_at(h, resolve(h, id)); /* (dropped: id 0, all zeros) */
    out->allocs = o->allocs;
    out->alloc_bytes = o->alloc_bytes;
    out->frees = o->frees;
    out->freed_bytes = o->freed_bytes;
    out->live = o->live;
    out->live_at_peak = o->peak_ver == h->peak_ver ? o->live_at_peak : o->live;
    unlock_heap(h);
    return 0;
}

fp_heap_totals_t fp_heap_totals(fp_heap_t *h)
{
    lock_heap(h);
    fp_heap_totals_t t = {h->current, h->peak, h->used, h->allocs, h->lost};
    unlock_heap(h);
    return t;
}

void fp_heap_clear(fp_heap_t *h)
{
    lock_heap(h);
    memset(h->slots, 0, (h->mask + 1) * sizeof *h->slots);
    h->used = 0;
    h->n_huge = 0;
    for (fp_owner_t id = 1; id < h->n_owners; id++) {
        fp_heap_owner_t *o = owner_at(h, id); /* (retired ones stay retired) */
        *o = (fp_heap_owner_t){.merged_into = o->merged_into, .recycled_at = o->recycled_at};
    }
    h->current = h->peak = h->peak_ver = h->allocs = h->lost = 0;
    unlock_heap(h);
}

void fp_heap_forget_owners(fp_heap_t *h)
{
    lock_heap(h);
    /* Numbered from 1 again, each stamped with this sweep, so that a
     * thread's cached id of before counts for nobody. */
    __atomic_store_n(&h->sweeps, h->sweeps + 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i <= h->mask; i++)
        h->slots[i].owner = FP_OWNER_NONE;
    for (fp_owner_t id = 1; id < h->n_owners; id++)
        *owner_at(h, id) =
            (fp_heap_owner_t){.recycled_at = (uint32_t)h->sweeps, .peak_ver = h->peak_ver};
    h->n_owners = 1;
    h->retired = h->n_free = 0;
    unlock_heap(h);
}

void fp_heap_reset(fp_heap_t *h)
{
    lock_heap(h);
    fp_heap_slot_t *old = h->slots;
    size_t old_mask = h->mask;
    unsigned old_shift = h->shift;
    if (old_mask + 1 > ((size_t)1 << INITIAL_BITS) && alloc_slots(h, INITIAL_BITS) == 0)
        fp_free(old);
    else {
        h->slots = old;
        h->mask = old_mask;
        h->shift = old_shift;
        memset(h->slots, 0, (h->mask + 1) * sizeof *h->slots);
    }
    h->used = 0;
    fp_free(h->huge);
    h->huge = NULL;
    h->n_huge = h->cap_huge = 0;
    for (size_t c = 0; c < FP_HEAP_OWNER_CHUNKS && h->owners[c]; c++) {
        fp_free(h->owners[c]);
        h->owners[c] = NULL;
    }
    h->n_owners = 1;
    fp_free(h->free_ids);
    h->free_ids = NULL;
    h->retired = h->n_free = h->cap_free = 0;
    h->current = h->peak = h->peak_ver = h->allocs = h->lost = 0;
    __atomic_store_n(&h->epoch, h->epoch + 1, __ATOMIC_RELEASE);
    unlock_heap(h);
}

size_t fp_heap_self_bytes(fp_heap_t *h)
{
    lock_heap(h);
    size_t bytes = (h->mask + 1) * sizeof(fp_heap_slot_t) + h->cap_huge * sizeof(fp_heap_huge_t) +
                   h->cap_free * sizeof(fp_owner_t);
    for (size_t c = 0; c < FP_HEAP_OWNER_CHUNKS && h->owners[c]; c++)
        bytes += FP_HEAP_OWNER_CHUNK * sizeof(fp_heap_owner_t);
    unlock_heap(h);
    return bytes;
}
