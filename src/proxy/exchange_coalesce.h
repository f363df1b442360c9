/* exchange_coalesce: the coalescing side of the exchange, below
 * exchange.c, which alone calls it. It works on exchange_types.h and
 * reaches exchange.c only through ctx->core (exchange_core_t), and the
 * owner only through x->ops. */
#ifndef SKEWGATE_EXCHANGE_COALESCE_H
#define SKEWGATE_EXCHANGE_COALESCE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/response.h"
#include "proxy/exchange_types.h"
#include "proxy/reason.h"

/* A new request that may share a fetch (its forwarded request in the
 * buffer; method_get: it is a GET) joins one under way: true, it reads
 * the fetch from now on. false: it asks upstream (and may lead a fetch
 * once it holds a slot: exchange_lead). */
bool exchange_join(exchange_t *x, bool method_get);
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
/* A driver's request goes again, on a new connection of the pool's
 * peer now (a retry): its fetch is that peer's answer. */
void exchange_driver_resent(exchange_t *d);
/* After a reload, the fetches kept for coalesce.ttl follow the new
 * configuration: one another peer than the pool's now rendered goes
 * (nobody on this worker may join it), and none is kept longer than the
 * new ttl from now (0, or coalescing off: it goes). */
void exchange_drivers_reconfigure(exchange_ctx_t *x);

#endif
