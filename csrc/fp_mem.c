#include "fp_mem.h"

#include <stdint.h>
#include <stdlib.h>

/* < 0: never fail. Testing only, and process-wide (the core has no other
 * context to keep it in); atomic, so interpreters with their own GIL
 * allocating at once do not race on it. */
static long allocations_left = -1;

static int should_fail(void)
{
    long left = __atomic_load_n(&allocations_left, __ATOMIC_RELAXED);
    if (left < 0)
        return 0;
    if (left == 0)
        return 1;
    __atomic_fetch_sub(&allocations_left, 1, __ATOMIC_RELAXED);
    return 0;
}

void *fp_malloc(size_t size)
{
    return should_fail() ? NULL : malloc(size ? size : 1);
}

void *fp_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *fp_realloc(void *ptr, size_t size)
{
    return should_fail() ? NULL : realloc(ptr, size ? size : 1);
}

void fp_free(void *ptr)
{
    free(ptr);
}

void fp_mem_fail_after(long n)
{
    __atomic_store_n(&allocations_left, n, __ATOMIC_RELAXED);
}
