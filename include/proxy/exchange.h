/* exchange: the upstream side of one admitted request. It takes an
 * upstream slot (or waits in the bounded queue), gets a pooled or new
 * upstream connection, sends the rewritten request, checks and rewrites
 * the response head, and hands the body to the relay. The connection
 * (conn.c) embeds one exchange and only calls the functions below; the
 * exchange changes the connection only through conn.h's functions.
 *
 * A coalesced request (coalesce.h) reads a shared fetch instead. The
 * fetch is driven by an exchange of its own, with no connection (a
 * driver, allocated per fetch): it sends the leader's request and fills
 * the fetch's body from the upstream, whoever reads it. */
#ifndef SKEWGATE_EXCHANGE_H
#define SKEWGATE_EXCHANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "core/buf_pool.h"
#include "http/request.h"
#include "http/response.h"
#include "os/pipe.h"
#include "proxy/accesslog.h"
#include "proxy/coalesce.h"
#include "proxy/metrics.h"
#include "proxy/queue.h"
#include "proxy/relay.h"
#include "proxy/upstream.h"

struct conn;
struct exchange_driver;

/* A configuration generation as one worker's exchanges hold it: an
 * exchange keeps the one it started under until it ends (a plain count:
 * one thread), so a reload never changes a request half-way. */
typedef struct exchange_gen {
    config_t *cfg;                  /* a reference of its own */
    uint32_t exchanges;             /* started under it and not ended */
    struct exchange_gen *next;      /* the ctx's older generations still in use */
} exchange_gen_t;

/* One worker's exchanges: what they share. */
typedef struct exchange_ctx {
    const config_t *cfg;            /* the current generation's (gen->cfg) */
    exchange_gen_t *gen;            /* what new exchanges start under */
    exchange_gen_t *retired;        /* older ones, freed with their last exchange */
    unsigned n_workers;
    metrics_worker_t *metrics;
    slot_queue_t slots;             /* upstream.max_concurrent / workers, and the queue */
    upstream_pool_t upstream;
    buf_pool_t bufs;                /* relay buffers: the request, then the response */
    pipe_pool_t pipes;              /* splice relays */
    const http_limits_t *limits;
    http_response_t resp;           /* the head being parsed: one at a time per worker */
    http_header_t *resp_fields;
    char *head_out;                 /* the rewritten response head */
    size_t head_out_cap;
    const struct timeval *tv_response;
    struct timeval tv_response_own; /* shared_timeout's fallback */
    coalesce_worker_t coalesce;     /* this worker's readers of shared fetches */
    struct exchange_driver *drivers;    /* the fetches this worker drives (or keeps for coalesce.ttl) */
    unsigned fetches_driven;            /* of those, the ones still filling their body */
    void (*on_idle)(void *arg);         /* exchange_ctx_stop's */
    void *on_idle_arg;
} exchange_ctx_t;

/* n_workers shares the gate's caps out; limits (the worker's, shared with
 * its connections) must outlive the context. 0, or -1 with err set. */
int exchange_ctx_init(exchange_ctx_t *x, struct event_base *base, config_t *cfg, unsigned n_workers,
                      const http_limits_t *limits, SSL_CTX *upstream_tls, metrics_worker_t *metrics, char *err,
                      size_t errlen);
/* A reload: exchanges from now on start under cfg (the context takes a
 * reference), with its slots, queue and timeouts, and upstream_tls (NULL:
 * plain) for new upstream connections; new_peer closes the pooled ones.
 * The buffer sizes (limits.max_header_bytes, max_headers) must not have
 * changed. 0, or -1 (out of memory) with nothing changed. */
int exchange_ctx_reconfigure(exchange_ctx_t *x, config_t *cfg, SSL_CTX *upstream_tls, bool new_peer);
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

typedef struct exchange {
    struct conn *conn;
    exchange_ctx_t *ctx;
    request_log_t *log;
    exchange_gen_t *gen;            /* the configuration it started under; NULL once released */
    slot_waiter_t waiter;
    upstream_conn_t *up;
    char *buf;                      /* from ctx->bufs while the exchange lasts */
    size_t off, len;                /* the request being sent, or the head being read */
    size_t req_len;                 /* the request, kept at the buffer's front for a retry */
    uint64_t head_due_ms;           /* request sent + response_timeout: the whole head by then */
    relay_t relay;
    uint8_t phase;
    bool has_slot;
    bool retried;                   /* a stale pooled connection was replaced once */
    bool up_reusable;               /* the upstream may go back to the pool */
    /* coalescing */
    bool may_lead;                  /* key is set: lead a fetch for it once a slot is held */
    bool follower;                  /* reads a fetch it did not lead */
    bool read_deadline;             /* its client's shared-read deadline is set */
    uint32_t key_len;               /* the share key, at buf + len until the request is sent */
    coalesce_reader_t reader;       /* reader.fetch: the fetch read */
    struct exchange *peer;          /* a leader's driver, a driver's leader (same worker) */
    coalesce_fetch_t *fetch;        /* a driver's fetch */
    char *body;                     /* a driver's: the fetch's body, body_got of body_len in */
    size_t body_got, body_len;
} exchange_t;

/* The request head is the connection's, parsed in req. Answers through
 * the connection: an error of the gate's own, or the relayed response. */
void exchange_start(exchange_t *x, struct conn *c, exchange_ctx_t *ctx, request_log_t *log);
/* The connection goes away mid-exchange: give everything back. */
void exchange_abort(exchange_t *x);
/* The client became writable while the body is relayed. */
void exchange_on_client_writable(exchange_t *x);
/* The client took nothing for limits.send_timeout: the response is cut
 * (the connection closes) and logged with ClientSendTimeout. */
void exchange_client_stalled(exchange_t *x);
/* The connection's queue deadline passed while waiting for a slot. */
void exchange_queue_timeout(exchange_t *x);
/* A reader of a shared fetch did not read it all by its deadline
 * (coalesce.min_read_rate): cut, logged with ClientTooSlow. */
void exchange_shared_read_timeout(exchange_t *x);

#endif
