#include "fp_mem.h"

#include <stdint.h>
#include <stdlib.h>

static long allocations_left = -1; /* < 0: never fail */

static int should_fail(void)
{
    if (allocations_left < 0)
        return 0;
    if (allocations_left == 0)
        return 1;
    allocations_left--;
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
    allocations_left = n;
}
