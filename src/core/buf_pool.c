#include <stdlib.h>

#include "core/buf_pool.h"

int buf_pool_init(buf_pool_t *p, size_t size, size_t keep)
{
    p->size = size;
    p->cap_free = keep;
    p->n_free = 0;
    p->free = calloc(keep, sizeof *p->free);
    return p->free ? 0 : -1;
}

void buf_pool_destroy(buf_pool_t *p)
{
    while (p->n_free)
        free(p->free[--p->n_free]);
    free(p->free);
    p->free = NULL;
}

void *buf_pool_get(buf_pool_t *p)
{
    if (p->n_free)
        return p->free[--p->n_free];
    return malloc(p->size);
}

void buf_pool_put(buf_pool_t *p, void *buf)
{
    if (p->n_free < p->cap_free) {
        p->free[p->n_free++] = buf;
        return;
    }
    free(buf);
}
