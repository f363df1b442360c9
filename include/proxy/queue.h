/* queue: the cap on concurrent upstream exchanges of one worker, and the
 * bounded queue of those waiting for a slot (DESIGN 2: overflow is a 503,
 * which Ignition retries). A waiter is embedded in its owner and told
 * through its callback when it got a slot; leaving the queue early (the
 * client went away, the wait timed out) is O(1).
 *
 * First come, first served, but for two things: a freed slot goes to the
 * longest waiter whose address holds fewer than per_client slots (a count
 * its owner keeps, client_table.h), if there is one; and a full queue
 * makes room for a waiter by putting out the newest waiter of the address
 * with the most, when that address would still have more than it. So one
 * address opening hundreds of connections cannot make another's request
 * wait behind all of its own; alone, it may still use every slot. */
#ifndef SKEWGATE_QUEUE_H
#define SKEWGATE_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

/* What one client address has of a queue: kept by the owner (the slots
 * its requests hold) and by the queue (its waiters). */
typedef struct slot_share {
    uint32_t held, waiting;
} slot_share_t;

typedef struct slot_waiter slot_waiter_t;
struct slot_waiter {
    slot_waiter_t *prev, *next;
    bool queued;
    slot_share_t *share;            /* its client address's; NULL: not counted */
    /* The waiter now holds a slot; it gives it back with slot_release. */
    void (*granted)(slot_waiter_t *w);
    /* Put out of a full queue to make room for an address with fewer
     * waiters (NULL: it is never). It holds no slot. */
    void (*refused)(slot_waiter_t *w);
};

typedef struct slot_queue {
    uint32_t active, cap;           /* slots in use, and at most */
    uint32_t len, max_len;          /* waiters, and at most */
    uint32_t per_client;            /* an address's share while others wait; 0: no share */
    slot_waiter_t *head, *tail;
} slot_queue_t;

void slot_queue_init(slot_queue_t *q, uint32_t cap, uint32_t max_len);
/* A reload: new caps. Slots in use stay held (a lower cap is reached as
 * they are given back); a higher cap grants the longest waiters at once;
 * waiters beyond a lower max_len stay until served or timed out. */
void slot_queue_resize(slot_queue_t *q, uint32_t cap, uint32_t max_len);
/* An address's share of the slots while others wait (0: none). */
void slot_queue_per_client(slot_queue_t *q, uint32_t per_client);
/* Takes a slot if one is free (then nobody waits). */
bool slot_take(slot_queue_t *q);
/* Joins the queue (w->share and w->refused set by the caller): 0, or -1
 * when the queue is full and nobody may be put out for it. */
int slot_wait(slot_queue_t *q, slot_waiter_t *w, void (*granted)(slot_waiter_t *w));
/* Leaves the queue without a slot (a no-op when not queued). */
void slot_cancel(slot_queue_t *q, slot_waiter_t *w);
/* Gives a slot back; the longest waiters (of an address under its share
 * first) get the free slots, each told through its callback before this
 * returns. */
void slot_release(slot_queue_t *q);

#endif
