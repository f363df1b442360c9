#include <stddef.h>

#include "proxy/queue.h"

void slot_queue_init(slot_queue_t *q, uint32_t cap, uint32_t max_len)
{
    *q = (slot_queue_t){.cap = cap, .max_len = max_len};
}

static bool slot_over_share(const slot_queue_t *q, const slot_share_t *share)
{
    return q->per_client && share && share->held >= q->per_client;
}

/* The longest waiter of an address under its share, else the longest.
 * A walk of the queue only while its head's address is over its share. */
static slot_waiter_t *slot_next(const slot_queue_t *q)
{
    for (slot_waiter_t *w = q->head; w; w = w->next)
        if (!slot_over_share(q, w->share))
            return w;
    return q->head;
}

static void slot_grant(slot_queue_t *q)
{
    /* A granted waiter may fail at once and release its slot again, which
     * re-enters here: the loop then finds the slot already taken. */
    while (q->head && q->active < q->cap) {
        slot_waiter_t *w = slot_next(q);
        slot_cancel(q, w);
        q->active++;
        w->granted(w);
    }
}

void slot_queue_resize(slot_queue_t *q, uint32_t cap, uint32_t max_len)
{
    q->cap = cap;
    q->max_len = max_len;
    slot_grant(q);
}

void slot_queue_per_client(slot_queue_t *q, uint32_t per_client)
{
    q->per_client = per_client;
}

bool slot_take(slot_queue_t *q)
{
    if (q->active >= q->cap)
        return false;
    q->active++;
    return true;
}

/* The newest waiter of the address with the most waiters, if it would
 * still have more than the newcomer's once put out; NULL otherwise. A
 * walk of the queue, only when it is full. */
static slot_waiter_t *slot_crowding(const slot_queue_t *q, const slot_share_t *newcomer)
{
    if (!q->per_client || !newcomer)
        return NULL;
    slot_waiter_t *most = NULL;
    for (slot_waiter_t *w = q->tail; w; w = w->prev)
        if (w->refused && w->share && (!most || w->share->waiting > most->share->waiting))
            most = w;
    return most && most->share->waiting > newcomer->waiting + 1 ? most : NULL;
}

static void slot_enqueue(slot_queue_t *q, slot_waiter_t *w)
{
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->len++;
    w->queued = true;
    if (w->share)
        w->share->waiting++;
}

int slot_wait(slot_queue_t *q, slot_waiter_t *w, void (*granted)(slot_waiter_t *w))
{
    w->granted = granted;
    if (q->len < q->max_len) {
        slot_enqueue(q, w);
        return 0;
    }
    slot_waiter_t *out = slot_crowding(q, w->share);
    if (!out)
        return -1;
    /* The newcomer takes the place before the one put out is told: its
     * answer may start its connection's next pipelined request at once,
     * which would otherwise take the place back (found in review). */
    slot_cancel(q, out);
    slot_enqueue(q, w);
    out->refused(out);
    return 0;
}

void slot_cancel(slot_queue_t *q, slot_waiter_t *w)
{
    if (!w->queued)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->prev = w->next = NULL;
    w->queued = false;
    q->len--;
    if (w->share)
        w->share->waiting--;
}

void slot_release(slot_queue_t *q)
{
    q->active--;
    slot_grant(q);
}
