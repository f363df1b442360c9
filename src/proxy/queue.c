#include <stddef.h>

#include "proxy/queue.h"

void slot_queue_init(slot_queue_t *q, uint32_t cap, uint32_t max_len)
{
    *q = (slot_queue_t){.cap = cap, .max_len = max_len};
}

static bool slot_over_share(const slot_queue_t *q, const uint32_t *held)
{
    return q->per_client && held && *held >= q->per_client;
}

/* The longest waiter of an address under its share, else the longest.
 * A walk of the queue only while its head's address is over its share. */
static slot_waiter_t *slot_next(const slot_queue_t *q)
{
    for (slot_waiter_t *w = q->head; w; w = w->next)
        if (!slot_over_share(q, w->held))
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

int slot_wait(slot_queue_t *q, slot_waiter_t *w, void (*granted)(slot_waiter_t *w))
{
    if (q->len >= q->max_len)
        return -1;
    w->granted = granted;
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->len++;
    w->queued = true;
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
}

void slot_release(slot_queue_t *q)
{
    q->active--;
    slot_grant(q);
}
