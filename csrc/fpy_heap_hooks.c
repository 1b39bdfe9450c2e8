/* Memory profiling's allocator hooks: Python's three allocator domains
 * (raw, mem, object) wrapped so that every block they hand out and take
 * back reaches the traced heap (fp_heap.c).
 *
 * The rules the hooks live by:
 *  - No Python C API inside a hook: a hook runs in the middle of any
 *    allocation, with or without the GIL (raw domain), and on 3.9-3.11 the
 *    API can run the garbage collector in the middle of a resize.
 *  - A block is counted once: a thread-local depth (`guard`) lets only the
 *    outermost hook count, so an object allocation that falls through to
 *    the raw domain is one block, as tracemalloc counts it.
 *  - A free is taken out of the heap before the block is freed, so no
 *    other thread can be handed the address while it is still tracked.
 *  - Everything here is static and lives as long as the process: another
 *    tool that wrapped our hooks (tracemalloc started after us) may call
 *    them after we stopped, and they then pass the call through.
 *  - PyMem_SetAllocator copies a struct that GIL-less raw allocations read
 *    without a lock, so a reader may see our function with the old context.
 *    Each domain has its own functions, which know the allocator they
 *    wrapped, and the context they get is passed on to it unchanged when it
 *    is not ours.
 *
 * One memory profile at a time per process: the allocators are the
 * process's, whatever the interpreter. */
#include "fpy_heap_hooks.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

/* The heap the hooks count into (atomic); NULL: they pass every call
 * through. Heaps are never freed (fpy_heap_release keeps them for the next
 * memory profile), so a hook that read this just before a stop still
 * writes into a live heap. */
static fp_heap_t *recording;
static int installed;               /* our hooks are in the allocator chain */
static int stuck;                   /* another tool wrapped them: they stay, for good */
static PyMemAllocatorEx wrapped[3]; /* what each domain's hooks call */
static PyMemAllocatorEx ours[3];

static const PyMemAllocatorDomain domains[3] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};

/* Read on every allocation: with glibc, the initial-exec TLS model (a
 * fixed offset from the thread pointer) rather than a __tls_get_addr call
 * each time; glibc keeps room in the static TLS block for a module loaded
 * later that asks for it. */
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
#define FPY_FAST_TLS __attribute__((tls_model("initial-exec")))
#else
#define FPY_FAST_TLS
#endif

/* Per OS thread, no destructor (libc frees during thread teardown):
 * guard = hooks of this thread in progress; owner = the row the event path
 * last said this thread is in, an id of `owner_heap`'s. */
static _Thread_local struct {
    int guard;
    fp_owner_t owner;
    const fp_heap_t *owner_heap; /* (heaps are reused: and its epoch) */
    uint64_t owner_epoch;
    uint64_t owner_sweeps; /* the heap's sweeps when `owner` was read */
    fp_mem_clock_t *clock; /* this thread's allocation counts, or NULL */
} tl FPY_FAST_TLS;

/* A block allocated for a row: the thread's counts, which the accounting
 * reads as a clock (bytes including callees, the peak of a call). Only the
 * owning thread writes them. */
static inline void clock_alloc(uint64_t size)
{
    fp_mem_clock_t *m = tl.clock;
    if (m) {
        m->allocated += size;
        m->live += (int64_t)size;
        if (m->live > m->frame_max)
            m->frame_max = m->live;
    }
}

static inline void clock_free(fp_heap_block_t b)
{
    if (b.found && b.owner && tl.clock)
        tl.clock->live -= (int64_t)b.size;
}

/* The heap to count this call into, or NULL. */
static inline fp_heap_t *counting(void)
{
    return tl.guard ? NULL : __atomic_load_n(&recording, __ATOMIC_ACQUIRE);
}

static inline fp_owner_t owner_in(const fp_heap_t *h)
{
    return tl.owner_heap == h && tl.owner_epoch == __atomic_load_n(&h->epoch, __ATOMIC_ACQUIRE)
               ? tl.owner
               : FP_OWNER_NONE;
}

/* A new block, for the row this thread is in. */
static inline void track(fp_heap_t *h, void *ptr, uint64_t size)
{
    fp_owner_t owner = owner_in(h);
    fp_heap_track_seen(h, ptr, size, owner, tl.owner_sweeps);
    if (owner)
        clock_alloc(size);
}

fp_heap_t *fpy_heap_enter(void)
{
    fp_heap_t *h = counting();
    if (h)
        tl.guard++;
    return h;
}

void fpy_heap_leave(void)
{
    tl.guard--;
}

void fpy_heap_note_alloc(fp_heap_t *h, void *ptr, uint64_t size)
{
    track(h, ptr, size);
}

fp_heap_block_t fpy_heap_note_take(fp_heap_t *h, void *ptr)
{
    return fp_heap_take(h, ptr);
}

void fpy_heap_note_taken(fp_heap_block_t b)
{
    clock_free(b);
}

void fpy_heap_note_untake(fp_heap_t *h, void *ptr, fp_heap_block_t b)
{
    fp_heap_untake(h, ptr, b);
}

/* The context a domain's allocator expects: ours stands for the wrapped
 * allocator's own (see the top of this file). */
#define INNER_CTX(d, ctx) ((ctx) == (void *)&wrapped[d] ? wrapped[d].ctx : (ctx))

/* The hooks of domain d (inlined into each domain's own functions). */
static inline void *hook_malloc(int d, void *ctx, size_t size)
{
    void *inner = INNER_CTX(d, ctx);
    fp_heap_t *h = counting();
    if (!h)
        return wrapped[d].malloc(inner, size);
    tl.guard++;
    void *ptr = wrapped[d].malloc(inner, size);
    if (ptr)
        track(h, ptr, size);
    tl.guard--;
    return ptr;
}

static inline void *hook_calloc(int d, void *ctx, size_t nelem, size_t elsize)
{
    void *inner = INNER_CTX(d, ctx);
    fp_heap_t *h = counting();
    if (!h)
        return wrapped[d].calloc(inner, nelem, elsize);
    tl.guard++;
    void *ptr = wrapped[d].calloc(inner, nelem, elsize);
    if (ptr)
        track(h, ptr, (uint64_t)nelem * elsize);
    tl.guard--;
    return ptr;
}

static inline void *hook_realloc(int d, void *ctx, void *old, size_t size)
{
    void *inner = INNER_CTX(d, ctx);
    fp_heap_t *h = counting();
    if (!h)
        return wrapped[d].realloc(inner, old, size);
    tl.guard++;
    /* The old block leaves the heap first (another thread may be handed
     * its address the moment it is freed); it goes back if it stays. */
    fp_heap_block_t was = fp_heap_take(h, old);
    void *ptr = wrapped[d].realloc(inner, old, size);
    if (ptr) {
        clock_free(was);
        track(h, ptr, size);
    } else {
        fp_heap_untake(h, old, was);
    }
    tl.guard--;
    return ptr;
}

static inline void hook_free(int d, void *ctx, void *ptr)
{
    void *inner = INNER_CTX(d, ctx);
    fp_heap_t *h = counting();
    if (h)
        clock_free(fp_heap_take(h, ptr));
    wrapped[d].free(inner, ptr);
}

#define DEFINE_HOOKS(d, name)                                                                           \
    static void *name##_malloc(void *ctx, size_t size)                                                  \
    {                                                                                                   \
        return hook_malloc(d, ctx, size);                                                               \
    }                                                                                                   \
    static void *name##_calloc(void *ctx, size_t nelem, size_t elsize)                                  \
    {                                                                                                   \
        return hook_calloc(d, ctx, nelem, elsize);                                                      \
    }                                                                                                   \
    static void *name##_realloc(void *ctx, void *old, size_t size)                                      \
    {                                                                                                   \
        return hook_realloc(d, ctx, old, size);                                                         \
    }                                                                                                   \
    static void name##_free(void *ctx, void *ptr)                                                       \
    {                                                                                                   \
        hook_free(d, ctx, ptr);                                                                         \
    }

DEFINE_HOOKS(0, raw)
DEFINE_HOOKS(1, mem)
DEFINE_HOOKS(2, obj)

/* The short lists below (a few pointer moves under them) are shared by
 * threads that may hold no GIL, or different ones. */
static void spin_lock(int *lock)
{
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void spin_unlock(int *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* fork() copies the heap with its lock: take it first so that no other
 * thread holds it in the child. The forking thread's own allocations in
 * between (other fork handlers) pass through, or they would wait for the
 * lock it holds. Fork runs with the GIL, so `recording` stays put. */
static fp_heap_t *forking;

static void before_fork(void)
{
    forking = __atomic_load_n(&recording, __ATOMIC_ACQUIRE);
    if (forking) {
        tl.guard++;
        fp_heap_lock(forking);
    }
}

static void after_fork(void)
{
    if (forking) {
        fp_heap_unlock(forking);
        tl.guard--;
        forking = NULL;
    }
}

/* ---- heaps: one per memory profiler, kept for the next once it is done */

typedef struct kept_heap {
    fp_heap_t heap; /* first: a heap is its kept_heap */
    struct kept_heap *next;
} kept_heap_t;

static kept_heap_t *kept; /* heaps no profiler uses */
static int kept_lock;     /* a spinlock: interpreters with their own GIL
                             make and drop profilers at once */
static int fork_handler_set;

fp_heap_t *fpy_heap_acquire(void)
{
    if (!fork_handler_set) {
        if (pthread_atfork(before_fork, after_fork, after_fork) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "memory profiling: pthread_atfork failed");
            return NULL;
        }
        fork_handler_set = 1;
    }
    spin_lock(&kept_lock);
    kept_heap_t *k = kept;
    if (k)
        kept = k->next;
    spin_unlock(&kept_lock);
    if (k)
        return &k->heap;
    /* libc's: the hooks never see the heaps themselves */
    k = calloc(1, sizeof *k);
    if (!k || fp_heap_init(&k->heap) < 0) {
        free(k);
        PyErr_NoMemory();
        return NULL;
    }
    return &k->heap;
}

void fpy_heap_release(fp_heap_t *h)
{
    if (!h)
        return;
    fp_heap_reset(h);
    kept_heap_t *k = (kept_heap_t *)h;
    spin_lock(&kept_lock);
    k->next = kept;
    kept = k;
    spin_unlock(&kept_lock);
}

static int same_allocator(const PyMemAllocatorEx *a, const PyMemAllocatorEx *b)
{
    return a->ctx == b->ctx && a->malloc == b->malloc && a->calloc == b->calloc &&
           a->realloc == b->realloc && a->free == b->free;
}

/* Start and stop, for interpreters with their own GIL at once. */
static int control_lock;

static int heap_start(fp_heap_t *h);
static int heap_stop(void);

int fpy_heap_start(fp_heap_t *h)
{
    spin_lock(&control_lock);
    int rc = heap_start(h);
    spin_unlock(&control_lock);
    return rc;
}

int fpy_heap_stop(void)
{
    spin_lock(&control_lock);
    int intact = heap_stop();
    spin_unlock(&control_lock);
    return intact;
}

static int heap_start(fp_heap_t *h)
{
    if (stuck) {
        PyErr_SetString(PyExc_RuntimeError,
                        "memory profiling is unavailable in this process: another tool "
                        "wrapped fastprof's allocator hooks and they could not be removed");
        return -1;
    }
    if (__atomic_load_n(&recording, __ATOMIC_ACQUIRE)) {
        PyErr_SetString(PyExc_RuntimeError, "memory profiling is already on in this process "
                                            "(one memory profile at a time)");
        return -1;
    }
    if (!installed) {
        static void *(*const mallocs[3])(void *, size_t) = {raw_malloc, mem_malloc, obj_malloc};
        static void *(*const callocs[3])(void *, size_t, size_t) = {raw_calloc, mem_calloc, obj_calloc};
        static void *(*const reallocs[3])(void *, void *, size_t) = {raw_realloc, mem_realloc,
                                                                     obj_realloc};
        static void (*const frees[3])(void *, void *) = {raw_free, mem_free, obj_free};
        for (int d = 0; d < 3; d++) {
            PyMem_GetAllocator(domains[d], &wrapped[d]);
            ours[d] = (PyMemAllocatorEx){&wrapped[d], mallocs[d], callocs[d], reallocs[d], frees[d]};
        }
        for (int d = 0; d < 3; d++)
            PyMem_SetAllocator(domains[d], &ours[d]);
        installed = 1;
    }
    __atomic_store_n(&recording, h, __ATOMIC_RELEASE);
    fpy_numpy_hook();
    return 0;
}

static int heap_stop(void)
{
    __atomic_store_n(&recording, NULL, __ATOMIC_RELEASE);
    fpy_numpy_unhook();
    if (!installed)
        return 1;
    int intact = 1;
    for (int d = 0; d < 3; d++) {
        PyMemAllocatorEx now;
        PyMem_GetAllocator(domains[d], &now);
        if (same_allocator(&now, &ours[d]))
            PyMem_SetAllocator(domains[d], &wrapped[d]);
        else
            intact = 0;
    }
    installed = 0;
    /* A wrapper of ours (or one that replaced the chain) stays as it is:
     * our hooks inside it pass calls through for good, and `wrapped` must
     * never change again, so no other memory profile may start. */
    if (!intact)
        stuck = 1;
    return intact;
}

/* ---- each OS thread's allocation counts: never freed, reused ---- */

typedef struct thread_clock {
    fp_mem_clock_t clock; /* first: a clock is its thread_clock */
    struct thread_clock *next;
} thread_clock_t;

static thread_clock_t *spare_clocks; /* of threads that ended */
static int spare_lock;               /* a spinlock: thread exits need no GIL */
static pthread_key_t clock_key;      /* gives a thread's clock back at its exit */
static int clock_key_made;

static void give_back_clock(void *block)
{
    tl.clock = NULL; /* (this thread's last hooks count nothing more) */
    thread_clock_t *c = block;
    spin_lock(&spare_lock);
    c->next = spare_clocks;
    spare_clocks = c;
    spin_unlock(&spare_lock);
}

/* The calling thread's clock, made on its first event (the GIL held);
 * NULL when out of memory (its calls then have no bytes including callees
 * nor peak). */
static fp_mem_clock_t *thread_clock(void)
{
    if (tl.clock)
        return tl.clock;
    if (!clock_key_made) {
        if (pthread_key_create(&clock_key, give_back_clock) != 0)
            return NULL;
        clock_key_made = 1;
    }
    spin_lock(&spare_lock);
    thread_clock_t *c = spare_clocks;
    if (c)
        spare_clocks = c->next;
    spin_unlock(&spare_lock);
    if (!c && !(c = calloc(1, sizeof *c)))
        return NULL;
    if (pthread_setspecific(clock_key, c) != 0) {
        give_back_clock(c);
        return NULL;
    }
    tl.clock = &c->clock;
    return tl.clock;
}

void fpy_heap_pause(fp_thread_t *t)
{
    tl.owner = FP_OWNER_NONE;
    if (t)
        t->mem = thread_clock();
}

#if FPY_EVENT_INTS_ALLOCATED
void fpy_heap_disown_allocated_int(PyObject *obj)
{
    fp_heap_t *h = __atomic_load_n(&recording, __ATOMIC_ACQUIRE);
    if (!h)
        return;
    uint64_t size = fp_heap_disown(h, obj);
    fp_mem_clock_t *m = tl.clock;
    if (!size || !m)
        return;
    /* the thread's counts as without it: the int was its last allocation,
     * so a high point at `live` now is its doing */
    m->allocated -= size;
    if (m->frame_max == m->live)
        m->frame_max -= (int64_t)size;
    m->live -= (int64_t)size;
}
#endif

fp_owner_t fpy_heap_hold_owner(void)
{
    fp_owner_t owner = tl.owner;
    tl.owner = FP_OWNER_NONE;
    return owner;
}

void fpy_heap_restore_owner(fp_owner_t owner)
{
    tl.owner = owner;
}

int fpy_heap_fast_ready(const fp_profiler_t *core, const fp_thread_t *t)
{
    return tl.owner_heap == core->heap && tl.clock && t->mem == tl.clock &&
           tl.owner_epoch == __atomic_load_n(&core->heap->epoch, __ATOMIC_ACQUIRE) &&
           tl.owner_sweeps == __atomic_load_n(&core->heap->sweeps, __ATOMIC_ACQUIRE);
}

void fpy_heap_fast_owner(fp_owner_t owner)
{
    tl.owner = owner;
}

void fpy_heap_follow(fp_profiler_t *core, fp_thread_t *t)
{
    tl.owner = fp_top_owner(core, t); /* (may sweep: `sweeps` read after it) */
    tl.owner_heap = core->heap;
    tl.owner_epoch = __atomic_load_n(&core->heap->epoch, __ATOMIC_ACQUIRE);
    tl.owner_sweeps = __atomic_load_n(&core->heap->sweeps, __ATOMIC_ACQUIRE);
}

/* ---- testing only: the oracle, read at the same moment ---- */

PyObject *fpy_heap_vs_tracemalloc(fp_heap_t *h, int clear)
{
    PyObject *tm = PyImport_ImportModule("tracemalloc");
    PyObject *f = tm ? PyObject_GetAttrString(tm, clear ? "clear_traces" : "get_traced_memory") : NULL;
    Py_XDECREF(tm);
    if (!f)
        return NULL;
    /* Nothing is allocated between the two: each reads its state before it
     * builds its result, and a call of a builtin without arguments
     * allocates nothing on the way in. */
    PyObject *theirs;
    fp_heap_totals_t ours = {0, 0, 0, 0, 0};
    if (clear) {
        theirs = PyObject_CallNoArgs(f);
        fp_heap_clear(h);
    } else {
        ours = fp_heap_totals(h);
        theirs = PyObject_CallNoArgs(f);
    }
    Py_DECREF(f);
    if (!theirs || clear)
        return theirs;
    return Py_BuildValue("((KK)N)", (unsigned long long)ours.current, (unsigned long long)ours.peak,
                         theirs);
}
