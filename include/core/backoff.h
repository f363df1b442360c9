/* backoff: jittered exponential retry delays. Each failure doubles the
 * ceiling, from initial to max; the delay drawn is uniform in
 * [ceiling/2, ceiling], so that gate replicas that lost the API server
 * together do not come back in step. */
#ifndef SKEWGATE_BACKOFF_H
#define SKEWGATE_BACKOFF_H

#include <stdint.h>

typedef struct backoff {
    uint64_t initial_ms;
    uint64_t max_ms;
    uint64_t ceiling_ms;        /* of the next delay */
} backoff_t;

void backoff_init(backoff_t *b, uint64_t initial_ms, uint64_t max_ms);
/* The delay before the next attempt; random is any 32-bit random value. */
uint64_t backoff_next(backoff_t *b, uint32_t random);
/* After a success: the next failure waits about initial_ms again. */
void backoff_reset(backoff_t *b);

#endif
