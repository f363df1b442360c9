/* refcount: the count of holders of an immutable object that threads
 * share (a configuration, a verdict snapshot). */
#ifndef SKEWGATE_REFCOUNT_H
#define SKEWGATE_REFCOUNT_H

#include <stdatomic.h>
#include <stdbool.h>

static inline void refcount_hold(atomic_uint *refs)
{
    atomic_fetch_add_explicit(refs, 1, memory_order_relaxed);
}

/* One holder less; true for the last, which frees the object. acq_rel:
 * the freeing thread must see every other holder's reads done. */
static inline bool refcount_drop(atomic_uint *refs)
{
    return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

#endif
