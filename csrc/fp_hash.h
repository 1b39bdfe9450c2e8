/* fp_hash: the one place that includes uthash, configured for the core.
 *
 * - allocations go through fp_mem (so tests can make them fail);
 * - out of memory is never fatal (uthash's default is exit()): a failed add
 *   leaves the element out and sets the `nomem` flag of the table's owner;
 * - keys are pointers or pairs of pointers, so a multiplicative hash beats
 *   uthash's byte-wise default on the hot path. */
#ifndef FP_HASH_H
#define FP_HASH_H

#include <stdint.h>
#include <string.h>

#include "fp_mem.h"

#define uthash_malloc(sz) fp_malloc(sz)
#define uthash_free(ptr, sz) fp_free(ptr)
#define HASH_NONFATAL_OOM 1
/* Set by the macros when an add failed; read through FP_HASH_ADD. */
extern int fp_hash_oom;
#define uthash_nonfatal_oom(elt) (fp_hash_oom = 1)

static inline unsigned fp_hash_words(const void *key, unsigned keylen)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    const unsigned char *p = (const unsigned char *)key;
    for (unsigned i = 0; i + 8 <= keylen; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return (unsigned)(h >> 32);
}

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = fp_hash_words((keyptr), (unsigned)(keylen)))

#include <uthash.h>

/* HASH_ADD(hh, head, keyfield, keylen, elt) that says whether it worked:
 * 1, or 0 when out of memory (`elt` is then not in the table and still the
 * caller's to free). */
#define FP_HASH_ADD(head, keyfield, keylen, elt)                                                        \
    __extension__({                                                                                     \
        fp_hash_oom = 0;                                                                                \
        HASH_ADD(hh, head, keyfield, keylen, elt);                                                      \
        !fp_hash_oom;                                                                                   \
    })

#endif
