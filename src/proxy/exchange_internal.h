/* Between exchange.c (one request and its upstream) and
 * exchange_coalesce.c (reading and driving shared fetches): what each
 * calls of the other. Nothing outside the two includes this. */
#ifndef SKEWGATE_EXCHANGE_INTERNAL_H
#define SKEWGATE_EXCHANGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "http/response.h"
#include "proxy/exchange.h"
#include "proxy/reason.h"

enum { EXCHANGE_SEND, EXCHANGE_HEAD, EXCHANGE_BODY, EXCHANGE_FOLLOW };

/* exchange.c */

/* Everything back: the upstream (to the pool if reuse), the buffer, the
 * generation, the slot. */
void exchange_release(exchange_t *x, bool reuse);
/* The request is rewritten into the exchange's buffer, while its parse is
 * at hand. false: it could not be, and the client was answered. */
bool exchange_forward(exchange_t *x);
/* The forwarded request goes upstream on its own (or as a fetch's
 * leader), now or once it holds a slot. */
void exchange_upstream_start(exchange_t *x);
/* With a slot held: the request goes to a pooled or new connection. */
void exchange_begin(exchange_t *x);
/* A final head was parsed: relayed, or (a driver) shared. */
void exchange_on_head(exchange_t *x, const http_response_t *resp, size_t head_len);
/* The response was under way: the client must not take it as complete. */
void exchange_cut(exchange_t *x, gate_reason_t why, bool upstream_fault);
void exchange_leave_gen(exchange_t *x);

/* exchange_coalesce.c */

/* A new request that may share a fetch (its forwarded request in the
 * buffer) joins one under way: true, it reads the fetch from now on.
 * false: it asks upstream (and may lead a fetch once it holds a slot:
 * exchange_lead). */
bool exchange_join(exchange_t *x);
/* With a slot held: joins a fetch that started meanwhile, or starts one.
 * false: go on alone. */
bool exchange_lead(exchange_t *x);
void exchange_leave_fetch(exchange_t *x, bool fell_back);
void exchange_read_fetch(exchange_t *x);
/* A driver: the head is in (shared or not), the body comes. */
void exchange_share_head(exchange_t *d, const http_response_t *resp, size_t head_len);
void exchange_fill(exchange_t *d);
void exchange_driver_fail(exchange_t *d, int status, gate_reason_t why);
void exchange_driver_cut(exchange_t *d, gate_reason_t why);
void exchange_drivers_destroy(exchange_ctx_t *x);

#endif
