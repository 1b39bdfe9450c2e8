/* fp_mem: the core's allocator, with a failure switch for tests.
 *
 * Every allocation of the core goes through here (uthash included, see
 * fp_hash.h) so that tests can make the N-th allocation fail and check that
 * the core degrades without crashing or leaking. Not thread-safe by itself:
 * the core is only entered with one thread at a time (the binding holds the
 * GIL). */
#ifndef FP_MEM_H
#define FP_MEM_H

#include <stddef.h>

/* Returns a block of `size` bytes, or NULL when out of memory or when the
 * failure switch says this allocation fails. */
void *fp_malloc(size_t size);

/* Like fp_malloc, for `n` zeroed elements of `size` bytes (overflow-safe). */
void *fp_calloc(size_t n, size_t size);

/* Resizes a block from fp_malloc; NULL on failure (the old block is kept). */
void *fp_realloc(void *ptr, size_t size);

/* Frees a block from fp_malloc/fp_calloc/fp_realloc; NULL is fine. */
void fp_free(void *ptr);

/* Test switch: the next `n` allocations succeed, every one after that fails.
 * n < 0 turns failures off (the default). */
void fp_mem_fail_after(long n);

#endif
