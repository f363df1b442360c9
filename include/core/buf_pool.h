/* buf_pool: a stack of equal-sized buffers, one per thread that uses it.
 * Buffers go back here instead of to malloc, so a busy worker allocates
 * nothing per request, and idle connections hold none. Not thread-safe:
 * each pool has one owner thread. */
#ifndef SKEWGATE_BUF_POOL_H
#define SKEWGATE_BUF_POOL_H

#include <stddef.h>

typedef struct buf_pool {
    void **free;
    size_t n_free, cap_free;
    size_t size;
} buf_pool_t;

/* Buffers of size bytes; at most keep of them are held while unused.
 * 0, or -1 when out of memory. */
int buf_pool_init(buf_pool_t *p, size_t size, size_t keep);
void buf_pool_destroy(buf_pool_t *p);
/* A buffer of p->size bytes, or NULL when out of memory. */
void *buf_pool_get(buf_pool_t *p);
void buf_pool_put(buf_pool_t *p, void *buf);

#endif
