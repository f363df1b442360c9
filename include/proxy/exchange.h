/* exchange: the upstream side of one admitted request. It takes an
 * upstream slot (or waits in the bounded queue), gets a pooled or new
 * upstream connection, sends the rewritten request, checks and rewrites
 * the response head, and hands the body to the relay. Its owner (the
 * connection, conn.c) embeds one exchange, hands it the request
 * (exchange_request_t) and the callbacks it answers by
 * (exchange_owner_ops_t), and calls only the functions below: the
 * exchange never names the connection.
 *
 * A coalesced request (coalesce.h) reads a shared fetch instead
 * (exchange_coalesce.c, below this file). The fetch is driven by an
 * exchange of its own, with no owner (a driver, allocated per fetch): it
 * sends the leader's request and fills the fetch's body from the
 * upstream, whoever reads it. */
#ifndef SKEWGATE_EXCHANGE_H
#define SKEWGATE_EXCHANGE_H

#include <stdbool.h>

#include "proxy/exchange_types.h"

/* n_workers shares the gate's caps out; limits (the worker's, shared with
 * its connections) must outlive the context. 0, or -1 with err set. */
int exchange_ctx_init(exchange_ctx_t *x, struct event_base *base, config_t *cfg, unsigned n_workers,
                      const http_limits_t *limits, SSL_CTX *upstream_tls, metrics_worker_t *metrics, char *err,
                      size_t errlen);
/* A generation of cfg (a reference of its own) for exchange_ctx_reconfigure;
 * NULL when out of memory. Any thread may make one: the gate makes each
 * worker's before a reload's commit, so that no worker can fail to apply
 * a reload the others took. */
exchange_gen_t *exchange_gen_new(config_t *cfg);
/* One no context took. NULL is ignored. */
void exchange_gen_free(exchange_gen_t *g);
/* A reload: exchanges from now on start under gen (the context takes it)
 * and its configuration's slots, queue and timeouts, and upstream_tls
 * (NULL: plain) for new upstream connections. upstream_epoch names the
 * peer (upstream_pool_reconfigure); a new one closes the pooled
 * connections, and fetches this worker keeps for coalesce.ttl from the
 * old peer go. The buffer sizes (limits.max_header_bytes, max_headers)
 * must not have changed. It cannot fail: the one allocation it needs is
 * gen, made beforehand. */
void exchange_ctx_reconfigure(exchange_ctx_t *x, exchange_gen_t *gen, SSL_CTX *upstream_tls, uint32_t upstream_epoch);
/* Stopping: idle upstream connections close, none is kept after use.
 * A fetch this worker drives may have readers on other workers: while
 * one is in flight (exchange_ctx_busy), the worker's loop must run on;
 * on_idle(arg) is called when the last lands. */
void exchange_ctx_stop(exchange_ctx_t *x, void (*on_idle)(void *arg), void *arg);
static inline bool exchange_ctx_busy(const exchange_ctx_t *x)
{
    return x->fetches_driven > 0;
}
void exchange_ctx_destroy(exchange_ctx_t *x);

/* Starts answering req (read during this call only) for owner, which
 * hears of it through ops: an error of the gate's own, or the relayed
 * response, then done. The owner reads nothing of the client's socket
 * until then. */
void exchange_start(exchange_t *x, exchange_ctx_t *ctx, const exchange_request_t *req, void *owner,
                    const exchange_owner_ops_t *ops, request_log_t *log);
/* The owner goes away mid-exchange: give everything back. */
void exchange_abort(exchange_t *x);
/* The client became writable while the body is relayed. */
void exchange_on_client_writable(exchange_t *x);
/* The client took nothing for limits.send_timeout: the response is cut
 * (the connection closes) and logged with ClientSendTimeout. false:
 * nothing of the response was written yet (a write armed by a TLS read,
 * say), the owner closes the connection (and aborts the exchange). */
bool exchange_client_stalled(exchange_t *x);
/* The connection's queue deadline passed while waiting for a slot. */
void exchange_queue_timeout(exchange_t *x);
/* The client did not read its response by its deadline (send_timeout +
 * the response at coalesce.min_read_rate, counted while bytes waited for
 * it): cut, logged with ClientTooSlow. */
void exchange_read_timeout(exchange_t *x);

#endif
