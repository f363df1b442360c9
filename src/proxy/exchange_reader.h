/* exchange_reader: an exchange's client as a reader of its response,
 * below exchange.c and exchange_coalesce.c, which both call it: the
 * reader's deadline, and the bytes kept for a reader slower than the MCS
 * (relay.h's store) within the worker's and its address's budgets.
 *
 * The deadline: send_timeout + the response at coalesce.min_read_rate,
 * counted only while bytes wait for the client (time waiting on a slow
 * MCS is the MCS's, not the reader's). Past it the reader is cut,
 * ClientTooSlow: a trickling client would otherwise hold what was kept
 * for it (a shared body, a store) for as long as it likes, since
 * send_timeout restarts with every byte taken. */
#ifndef SKEWGATE_EXCHANGE_READER_H
#define SKEWGATE_EXCHANGE_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/exchange_types.h"

/* behind: bytes wait for the client now (the clock runs); total: the
 * size of the response as known so far, head included. */
void exchange_read_clock(exchange_t *x, bool behind, uint64_t total);
/* The relay keeps what its client is not ready for (call after
 * relay_init, once the body begins: a reader's rate counts from then). */
void exchange_keep(exchange_t *x);
/* The relay's store gave back its last chunk, or the relay ended. */
void exchange_keep_end(exchange_t *x);
/* What exchange_keep_room did about a store that may hold no more. */
typedef enum {
    EXCHANGE_ROOM_MADE,     /* a slower reader was cut: try again */
    EXCHANGE_ROOM_WAIT,     /* x is the slowest and nobody waits for a slot: x holds
                               its upstream (back-pressure) until its client reads,
                               or until a request queues (exchange_holders_yield) */
    EXCHANGE_ROOM_CUT_X,    /* x is the slowest and requests wait for a slot: cut x */
} exchange_room_t;

/* x's store may hold no more: the slowest reader that stands in its way
 * (of x's address when that share is what is full, else of the worker,
 * x among them) is cut, unless that is x. */
exchange_room_t exchange_keep_room(exchange_t *x);
/* x no longer holds its slot for a full store: it pumps again, or it let
 * its upstream go. */
void exchange_hold_end(exchange_t *x);
/* A request queued for a slot: the slowest reader that holds one for a
 * full store (EXCHANGE_ROOM_WAIT) is cut, ClientOverBudget, and its slot
 * goes to the queue. Without this, a client that never reads would keep
 * its slot until send_timeout: it is looked at again only when it reads. */
void exchange_holders_yield(exchange_ctx_t *ctx);

#endif
