/* shared_timeout: a timeout many events of one worker share, as a
 * libevent common timeout (O(1) queues instead of its heap). libevent
 * keeps at most 256 distinct ones per base (MAX_COMMON_TIMEOUTS) and
 * answers NULL past that, which event_add would read as "no timeout":
 * reloads that keep choosing new durations could get there, so then the
 * plain timeval in *own serves instead. */
#ifndef SKEWGATE_SHARED_TIMEOUT_H
#define SKEWGATE_SHARED_TIMEOUT_H

#include <stdint.h>
#include <event2/event.h>

#include "core/clock.h"

static inline const struct timeval *shared_timeout(struct event_base *base, uint64_t ms, struct timeval *own)
{
    *own = clock_timeval(ms);
    const struct timeval *tv = event_base_init_common_timeout(base, own);
    return tv ? tv : own;
}

#endif
