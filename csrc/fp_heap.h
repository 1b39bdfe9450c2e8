/* fp_heap: the traced heap, for memory profiling.
 *
 * Every block the allocator hooks saw allocated and not yet freed, by
 * address, with its requested size and its *owner* (the row that allocated
 * it, an id the binding interns); per owner, what it allocated and what of
 * that was freed since, on whatever thread; the process's current and peak
 * traced bytes, and what each owner held at that peak.
 *
 * Pure C, like the rest of the core: the binding turns rows into owner ids
 * and allocator calls into fp_heap calls.
 *
 * Threading: unlike the rest of the core, every function here may be called
 * from any thread at any time (allocator hooks run with or without the GIL,
 * and interpreters with their own GIL share one allocator), so the heap
 * takes its own lock. It is a spinlock that never waits for anything else
 * and is never held across a hooked allocator; the only allocator called
 * under it is the core's own (fp_mem: libc, never a hooked one).
 *
 * Errors: the hooks cannot fail an allocation for the heap's sake. A block
 * the heap has no room for is left untracked and counted in `lost`, which
 * says that the totals are no longer exact. */
#ifndef FP_HEAP_H
#define FP_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* An owner id. 0 is nobody: a block allocated with owner 0 counts in the
 * totals only. */
typedef uint32_t fp_owner_t;
#define FP_OWNER_NONE ((fp_owner_t)0)

/* One tracked block: 16 bytes. Blocks of 4 GiB or more keep their size in
 * a side list (`huge`), this field says FP_HEAP_HUGE. */
typedef struct {
    uintptr_t ptr; /* 0: an empty slot */
    uint32_t size;
    fp_owner_t owner;
} fp_heap_slot_t;
#define FP_HEAP_HUGE UINT32_MAX

/* What the heap knows of one owner (fp_heap_owner_read). `live` is what it
 * allocated and is still alive (its `net` at the end). */
typedef struct {
    uint64_t allocs; /* blocks allocated */
    uint64_t alloc_bytes;
    uint64_t frees; /* of those, freed since (any thread) */
    uint64_t freed_bytes;
    uint64_t live;         /* alloc_bytes - freed_bytes */
    uint64_t live_at_peak; /* `live` when the process's traced bytes last
                              reached their peak */
} fp_heap_owner_stats_t;

/* An owner's counters as the heap keeps them: `live_at_peak` is valid only
 * while `peak_ver` is the heap's; otherwise the owner has not changed since
 * that peak and `live` is the answer (fp_heap_owner_read). */
typedef struct {
    uint64_t allocs, alloc_bytes, frees, freed_bytes, live;
    uint64_t live_at_peak, peak_ver;
    fp_owner_t merged_into; /* 0, the owner that counts for this one now, or
                               FP_OWNER_DROPPED: retired either way */
    uint32_t recycled_at;   /* the sweep that last handed this id out again */
} fp_heap_owner_t;
#define FP_OWNER_DROPPED ((fp_owner_t)UINT32_MAX)

enum {
    FP_HEAP_OWNER_CHUNK = 1024, /* owners per chunk: chunks never move */
    FP_HEAP_OWNER_CHUNKS = 4096 /* so at most 4,194,303 owners */
};

typedef struct {
    uintptr_t ptr;
    uint64_t size;
} fp_heap_huge_t;

typedef struct fp_heap {
    int lock;              /* the spinlock: 0 free, 1 held */
    fp_heap_slot_t *slots; /* open addressing, linear probing */
    size_t mask;           /* capacity - 1 (a power of two) */
    size_t used;           /* blocks in `slots` */
    size_t full_at;        /* grow before `used` passes it: 70% of capacity */
    unsigned shift;        /* 64 - log2(capacity), for the hash */
    fp_heap_huge_t *huge;  /* blocks of FP_HEAP_HUGE bytes or more */
    size_t n_huge, cap_huge;
    fp_heap_owner_t *owners[FP_HEAP_OWNER_CHUNKS];
    fp_owner_t n_owners;  /* ids 1 .. n_owners - 1 are in use */
    uint64_t current;     /* traced bytes now */
    uint64_t peak;        /* the most traced bytes since the last clear */
    uint64_t peak_ver;    /* counts the times `peak` rose */
    uint64_t epoch;       /* counts the resets: an owner id is an id of
                                one epoch (read without the lock) */
    uint64_t sweeps;      /* counts the times retired ids were handed out
                            again (read without the lock) */
    size_t retired;       /* owners merged or dropped, not handed out again */
    fp_owner_t *free_ids; /* retired ids no block names: handed out again */
    size_t n_free, cap_free;
    uint64_t allocs; /* blocks tracked since the last clear */
    uint64_t lost;   /* blocks left untracked for want of memory */
} fp_heap_t;

/* The whole heap at one moment (fp_heap_totals). */
typedef struct {
    uint64_t current; /* traced bytes now */
    uint64_t peak;    /* the most traced bytes since the last clear */
    uint64_t blocks;  /* blocks now */
    uint64_t allocs;  /* blocks allocated since the last clear */
    uint64_t lost;    /* blocks left untracked for want of memory: the
                         totals are exact only while this is 0 */
} fp_heap_totals_t;

/* What fp_heap_take found: the block's size and owner (found = 0: the heap
 * did not know the address: a block from before tracing, or a lost one). */
typedef struct {
    uint64_t size;
    fp_owner_t owner;
    int found;
    uint64_t seen; /* the heap's sweeps then (fp_heap_untake) */
} fp_heap_block_t;

/* An empty heap with room for a few thousand blocks; -1 when out of
 * memory (nothing to free then). */
int fp_heap_init(fp_heap_t *h);

/* Frees everything the heap holds; it must be fp_heap_init-ed again before
 * any other use. No other thread may be inside the heap. */
void fp_heap_fini(fp_heap_t *h);

/* A block of `size` bytes at `ptr` was allocated for `owner`. An address
 * already tracked was freed behind the hooks' back (allocated before a hook
 * was in place and freed through a path that bypasses it): its old block
 * is counted freed first, as tracemalloc does. */
void fp_heap_track(fp_heap_t *h, const void *ptr, uint64_t size, fp_owner_t owner);

/* fp_heap_track for an owner id read when the heap's `sweeps` was `seen`
 * (a thread's cached owner): an id handed out again since then is not that
 * owner any more, and the block counts in the totals only. */
void fp_heap_track_seen(fp_heap_t *h, const void *ptr, uint64_t size, fp_owner_t owner, uint64_t seen);

/* The block at `ptr` is about to be freed (or moved by a realloc): forget
 * it, count it freed, and say what it was. Call it *before* the allocator
 * frees the block, so no other thread can be handed the address while it is
 * still tracked. */
fp_heap_block_t fp_heap_take(fp_heap_t *h, const void *ptr);

/* Undoes fp_heap_take(h, ptr) = b, as if it had not happened: a realloc
 * that failed leaves its block where it was. */
void fp_heap_untake(fp_heap_t *h, const void *ptr, fp_heap_block_t b);

/* The block at `ptr` is not its owner's (the interpreter made it for a
 * profiler's callback): it counts for nobody from now on, in the totals
 * only, as if allocated so. Returns its size if it had an owner (what the
 * owner's counts were given back), else 0. */
uint64_t fp_heap_disown(fp_heap_t *h, const void *ptr);

/* A new owner id, 0 when there is no room (4 M owners) or memory.
 *
 * Ids are handed out again: `src` of a merge and a dropped id are retired,
 * and once retired ids are many (as many as live ones, and at least
 * FP_HEAP_SWEEP_MIN and a sixteenth of the slots: the sweep's cost stays a
 * small share of the work that made them), the next new owner first
 * sweeps: each block of a retired owner is given to the owner that counts
 * for it now (none for a dropped one), and the retired ids become free.
 * So a program that makes and ends threads (or requests) without end keeps
 * a bounded number of owners. */
fp_owner_t fp_heap_new_owner(fp_heap_t *h);
enum { FP_HEAP_SWEEP_MIN = 4096 };

/* Owner `src`'s counts are added into `dst`'s, and from now on what would
 * count for `src` (a free of one of its blocks) counts for `dst`: the rows
 * they stand for were merged (fp_thread_fold). `src` is retired: no row may
 * name it any more. */
void fp_heap_owner_merge(fp_heap_t *h, fp_owner_t dst, fp_owner_t src);

/* The row owner `id` stands for is gone (a request's record dropped): its
 * blocks count for nobody from now on, in the totals only, and the id is
 * retired. */
void fp_heap_owner_drop(fp_heap_t *h, fp_owner_t id);

/* Owner `id`'s counters (those of the owner it was merged into, if it
 * was); 0, or -1 for an id never handed out. */
int fp_heap_owner_read(fp_heap_t *h, fp_owner_t id, fp_heap_owner_stats_t *out);

fp_heap_totals_t fp_heap_totals(fp_heap_t *h);

/* Forget every block and zero every count, owners included (their ids stay
 * valid). The peak starts again from 0. */
void fp_heap_clear(fp_heap_t *h);

/* Every owner id is free again (the rows that named them were dropped):
 * blocks count for nobody, new ids are numbered from 1, and a thread's
 * cached id of before is not taken for the new owner of that number
 * (`sweeps` moves on). */
void fp_heap_forget_owners(fp_heap_t *h);

/* Back to as after fp_heap_init, its memory given back (a smaller slot
 * array when out of memory: the old one, emptied): every owner id is gone,
 * and `epoch` moves on.
 * Unlike fp_heap_fini, safe while another thread may still call in. */
void fp_heap_reset(fp_heap_t *h);

/* Bytes the heap itself holds (the slot array, the owners, the huge list). */
size_t fp_heap_self_bytes(fp_heap_t *h);

/* The lock, for fork: take it before fork() (so no other thread holds it in
 * the child's copy) and release it after, in the parent and the child. */
void fp_heap_lock(fp_heap_t *h);
void fp_heap_unlock(fp_heap_t *h);

#endif
