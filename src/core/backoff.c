#include "core/backoff.h"

void backoff_init(backoff_t *b, uint64_t initial_ms, uint64_t max_ms)
{
    b->initial_ms = initial_ms;
    b->max_ms = max_ms < initial_ms ? initial_ms : max_ms;
    b->ceiling_ms = initial_ms;
}

uint64_t backoff_next(backoff_t *b, uint32_t random)
{
    uint64_t ceiling = b->ceiling_ms;
    uint64_t half = ceiling / 2;
    uint64_t delay = half + (ceiling - half) * random / UINT32_MAX;
    b->ceiling_ms = ceiling > b->max_ms / 2 ? b->max_ms : ceiling * 2;
    return delay;
}

void backoff_reset(backoff_t *b) { b->ceiling_ms = b->initial_ms; }
