/* clock: the one monotonic clock the data path times requests with. */
#ifndef SKEWGATE_CLOCK_H
#define SKEWGATE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
