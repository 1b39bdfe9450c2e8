/* Memory profiling of numpy's array data: numpy (1.22 and later, NEP 49)
 * allocates the data of its arrays through a "data handler", by default
 * one of its own whose functions call libc (before 2.5) or Python's raw
 * domain (2.5 and later) behind a small cache of freed blocks. While memory
 * is profiled, the default handler's four functions are swapped for ours,
 * which count each block into the heap (as tracemalloc counts it, at the
 * handler) and call numpy's; the raw-domain hook inside them then counts
 * nothing (the guard), so a buffer is one block on every numpy.
 *
 * numpy is never imported here: the handler is looked for when profiling
 * starts and, until found, at each new function the profile sees (numpy
 * imported later). Handlers that a program sets itself
 * (PyDataMem_SetHandler) are not seen unless they call Python's
 * allocators. */
#include "fpy_heap_hooks.h"

/* numpy's public ABI (numpy/ndarraytypes.h: PyDataMemAllocator and
 * PyDataMem_Handler, version 1), declared here: numpy is not a build
 * dependency. Its free takes the block's size. */
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} npy_allocator_v1;

typedef struct {
    char name[127];
    uint8_t version; /* 1 */
    npy_allocator_v1 allocator;
} npy_handler_v1;

/* Slots of numpy's C API table (numpy/__multiarray_api.h). */
enum {
    API_FEATURE_VERSION = 211,   /* PyArray_GetNDArrayCFeatureVersion */
    API_DEFAULT_HANDLER = 306,   /* &PyDataMem_DefaultHandler */
    FEATURE_DATA_HANDLERS = 0x0f /* NPY_1_22_API_VERSION */
};

static npy_handler_v1 *handler;    /* numpy's default handler, once found */
static npy_allocator_v1 numpy_own; /* its functions, before ours */
static int looked_for_good;        /* numpy was found without handlers */

static void *np_malloc(void *ctx, size_t size)
{
    fp_heap_t *h = fpy_heap_enter();
    void *ptr = numpy_own.malloc(ctx, size);
    if (h) {
        if (ptr)
            fpy_heap_note_alloc(h, ptr, size);
        fpy_heap_leave();
    }
    return ptr;
}

static void *np_calloc(void *ctx, size_t nelem, size_t elsize)
{
    fp_heap_t *h = fpy_heap_enter();
    void *ptr = numpy_own.calloc(ctx, nelem, elsize);
    if (h) {
        if (ptr)
            fpy_heap_note_alloc(h, ptr, (uint64_t)nelem * elsize);
        fpy_heap_leave();
    }
    return ptr;
}

static void *np_realloc(void *ctx, void *old, size_t size)
{
    fp_heap_t *h = fpy_heap_enter();
    if (!h)
        return numpy_own.realloc(ctx, old, size);
    fp_heap_block_t was = fpy_heap_note_take(h, old);
    void *ptr = numpy_own.realloc(ctx, old, size);
    if (ptr) {
        fpy_heap_note_taken(was);
        fpy_heap_note_alloc(h, ptr, size);
    } else {
        fpy_heap_note_untake(h, old, was);
    }
    fpy_heap_leave();
    return ptr;
}

static void np_free(void *ctx, void *ptr, size_t size)
{
    fp_heap_t *h = fpy_heap_enter();
    if (h)
        fpy_heap_note_taken(fpy_heap_note_take(h, ptr));
    numpy_own.free(ctx, ptr, size);
    if (h)
        fpy_heap_leave();
}

/* numpy's C API table, if its core module is loaded; NULL otherwise (an
 * error met on the way is dropped: no numpy is no error). */
static void **numpy_api(void)
{
    static const char *const names[] = {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"};
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    for (size_t i = 0; modules && PyDict_Check(modules) && i < 2; i++) {
        PyObject *mod = PyDict_GetItemString(modules, names[i]); /* borrowed */
        PyObject *capsule = mod ? PyObject_GetAttrString(mod, "_ARRAY_API") : NULL;
        void **api =
            capsule && PyCapsule_CheckExact(capsule) ? PyCapsule_GetPointer(capsule, NULL) : NULL;
        Py_XDECREF(capsule);
        PyErr_Clear();
        if (api)
            return api;
    }
    return NULL;
}

/* Finds numpy's default handler, once numpy is loaded. */
static npy_handler_v1 *find_handler(void)
{
    if (handler || looked_for_good)
        return handler;
    void **api = numpy_api();
    if (!api)
        return NULL; /* not loaded (yet) */
    unsigned int (*feature_version)(void) = (unsigned int (*)(void))api[API_FEATURE_VERSION];
    if (feature_version() < FEATURE_DATA_HANDLERS) {
        looked_for_good = 1; /* a numpy older than 1.22: libc only */
        return NULL;
    }
    PyObject *capsule = *(PyObject **)api[API_DEFAULT_HANDLER];
    npy_handler_v1 *h = capsule ? PyCapsule_GetPointer(capsule, "mem_handler") : NULL;
    PyErr_Clear();
    if (!h || h->version != 1) {
        looked_for_good = 1;
        return NULL;
    }
    handler = h;
    return handler;
}

static int ours(const npy_allocator_v1 *a)
{
    return a->malloc == np_malloc;
}

void fpy_numpy_hook(void)
{
    npy_handler_v1 *h = find_handler();
    if (!h || ours(&h->allocator))
        return;
    numpy_own = h->allocator;
    /* Other threads may be allocating arrays: each pointer is replaced
     * whole, and ours call what was there. */
    __atomic_store_n(&h->allocator.free, np_free, __ATOMIC_RELEASE);
    __atomic_store_n(&h->allocator.realloc, np_realloc, __ATOMIC_RELEASE);
    __atomic_store_n(&h->allocator.calloc, np_calloc, __ATOMIC_RELEASE);
    __atomic_store_n(&h->allocator.malloc, np_malloc, __ATOMIC_RELEASE);
}

int fpy_numpy_hooked(void)
{
    return handler && ours(&handler->allocator);
}

void fpy_numpy_unhook(void)
{
    if (!fpy_numpy_hooked())
        return;
    /* Ours stay callable (static): a call already in one finishes. */
    __atomic_store_n(&handler->allocator.malloc, numpy_own.malloc, __ATOMIC_RELEASE);
    __atomic_store_n(&handler->allocator.calloc, numpy_own.calloc, __ATOMIC_RELEASE);
    __atomic_store_n(&handler->allocator.realloc, numpy_own.realloc, __ATOMIC_RELEASE);
    __atomic_store_n(&handler->allocator.free, numpy_own.free, __ATOMIC_RELEASE);
}
