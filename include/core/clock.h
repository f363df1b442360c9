/* clock: the one monotonic clock the data path times requests with. */
#ifndef SKEWGATE_CLOCK_H
#define SKEWGATE_CLOCK_H

#include <stdint.h>
#include <time.h>
#include <sys/time.h>

static inline uint64_t clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Milliseconds at tick resolution (a few ms), without a system call:
 * enough for deadlines counted in seconds. */
static inline uint64_t clock_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wall-clock milliseconds since the epoch at tick resolution, without a
 * system call: for times shown to people (the held-nodes table). */
static inline uint64_t clock_wall_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A duration in milliseconds as the struct timeval libevent takes. */
static inline struct timeval clock_timeval(uint64_t ms)
{
    return (struct timeval){(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
}

#endif
