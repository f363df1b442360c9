#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "http/accept.h"
#include "proxy/conn.h"
#include "proxy/exchange.h"
#include "proxy/rewrite.h"
#include "proxy/shared_timeout.h"

enum { EXCHANGE_SEND, EXCHANGE_HEAD, EXCHANGE_BODY, EXCHANGE_FOLLOW };

/* The exchange that drives a shared fetch: no connection of its own, so
 * it carries the log fields the exchange writes, and the timer that keeps
 * a completed fetch for coalesce.ttl. */
typedef struct exchange_driver {
    exchange_t x;
    request_log_t log;
    struct event ttl_ev;
    struct exchange_driver *prev, *next;    /* ctx->drivers */
} exchange_driver_t;

/* Relay buffers: a request head of up to max_header_bytes with the fields
 * the gate adds, or a response head of that size read behind the
 * headroom, plus a TLS record of body. */
#define EXCHANGE_BUF_MIN (64 * 1024)
/* The response head is read this far into the buffer, so that the
 * rewritten head (a Connection line longer at most, usually) goes in
 * front of the body bytes that came with it instead of the body moving. */
#define EXCHANGE_HEADROOM 256
/* Plain to plain, the head is read in steps of this much: body bytes read
 * with it go through this process; the rest can be spliced. */
#define EXCHANGE_HEAD_STEP 4096
/* Spare buffers and pipes a worker keeps. */
#define EXCHANGE_SPARE_BUFS 64
#define EXCHANGE_SPARE_PIPES 16

static void exchange_send(exchange_t *x);
static void exchange_pump(exchange_t *x);
static void exchange_on_upstream(upstream_conn_t *u, upstream_event_t ev, void *data);
static void exchange_fill(exchange_t *d);
static void exchange_on_head(exchange_t *x, const http_response_t *resp, size_t head_len);
static void exchange_upstream_start(exchange_t *x);
static void exchange_read_fetch(exchange_t *x);
static void exchange_on_fetch(coalesce_reader_t *r);
static void exchange_driver_fail(exchange_t *d, int status, gate_reason_t why);
static void exchange_driver_cut(exchange_t *d, gate_reason_t why);
static void exchange_driver_end(exchange_t *d);
static void exchange_release(exchange_t *x, bool reuse);

/* The gate's caps shared out over the workers, rounded up. */
static uint32_t exchange_share(uint32_t gate_wide, unsigned n_workers)
{
    return (gate_wide + n_workers - 1) / n_workers;
}

static exchange_gen_t *exchange_gen_new(config_t *cfg)
{
    exchange_gen_t *g = calloc(1, sizeof *g);
    if (g)
        g->cfg = config_ref(cfg);
    return g;
}

static void exchange_gen_free(exchange_gen_t *g)
{
    config_unref(g->cfg);
    free(g);
}

static void exchange_response_timeout(exchange_ctx_t *x, struct event_base *base)
{
    x->tv_response = shared_timeout(base, x->cfg->upstream.response_timeout_ms, &x->tv_response_own);
}

int exchange_ctx_init(exchange_ctx_t *x, struct event_base *base, config_t *cfg, unsigned n_workers,
                      const http_limits_t *limits, SSL_CTX *upstream_tls, metrics_worker_t *metrics, char *err,
                      size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->cfg = cfg;
    x->metrics = metrics;
    const config_limits_t *lim = &cfg->limits;
    const config_upstream_t *up = &cfg->upstream;
    if (n_workers == 0)
        n_workers = 1;
    x->n_workers = n_workers;
    slot_queue_init(&x->slots, exchange_share(up->max_concurrent, n_workers),
                    exchange_share(up->max_queue, n_workers));
    upstream_pool_init(&x->upstream, base, up, upstream_tls);
    x->gen = exchange_gen_new(cfg);
    if (!x->gen) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    x->limits = limits;
    size_t buf = (size_t)lim->max_header_bytes + EXCHANGE_HEADROOM + REWRITE_HEAD_GROWTH(lim->max_headers) +
                 RELAY_TLS_RECORD;
    if (buf < EXCHANGE_BUF_MIN)
        buf = EXCHANGE_BUF_MIN;
    x->head_out_cap = (size_t)lim->max_header_bytes + REWRITE_HEAD_GROWTH(lim->max_headers);
    x->head_out = malloc(x->head_out_cap);
    x->resp_fields = calloc(lim->max_headers, sizeof *x->resp_fields);
    if (!x->head_out || !x->resp_fields || buf_pool_init(&x->bufs, buf, EXCHANGE_SPARE_BUFS) < 0 ||
        pipe_pool_init(&x->pipes, EXCHANGE_SPARE_PIPES) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    http_response_init(&x->resp, x->resp_fields, lim->max_headers);
    exchange_response_timeout(x, base);
    return coalesce_worker_init(&x->coalesce, base, &cfg->coalesce, err, errlen);
}

int exchange_ctx_reconfigure(exchange_ctx_t *x, config_t *cfg, SSL_CTX *upstream_tls, bool new_peer)
{
    exchange_gen_t *g = exchange_gen_new(cfg);
    if (!g)
        return -1;
    exchange_gen_t *old = x->gen;
    if (old->exchanges == 0) {
        exchange_gen_free(old);
    } else {
        old->next = x->retired;
        x->retired = old;
    }
    x->gen = g;
    x->cfg = cfg;
    /* Fetches under way keep their bounds; new ones take the new ones. */
    x->coalesce.cfg = &cfg->coalesce;
    const config_upstream_t *up = &cfg->upstream;
    upstream_pool_reconfigure(&x->upstream, up, upstream_tls, new_peer);
    exchange_response_timeout(x, x->upstream.base);
    slot_queue_resize(&x->slots, exchange_share(up->max_concurrent, x->n_workers),
                      exchange_share(up->max_queue, x->n_workers));
    return 0;
}

/* An exchange is over: its generation, if retired, goes with the last one. */
static void exchange_leave_gen(exchange_t *x)
{
    exchange_gen_t *g = x->gen;
    x->gen = NULL;
    if (--g->exchanges || g == x->ctx->gen)
        return;
    for (exchange_gen_t **at = &x->ctx->retired; *at; at = &(*at)->next)
        if (*at == g) {
            *at = g->next;
            break;
        }
    exchange_gen_free(g);
}

void exchange_ctx_stop(exchange_ctx_t *x)
{
    upstream_pool_close(&x->upstream);
}

void exchange_ctx_destroy(exchange_ctx_t *x)
{
    /* Fetches still in flight when the loop ended fail for their readers
     * on other workers; kept ones are dropped. */
    while (x->drivers) {
        exchange_t *d = &x->drivers->x;
        bool kept = d->body && d->body_got == d->body_len;
        if (!kept) {
            exchange_release(d, false);
            if (d->body)
                coalesce_fetch_cut(d->fetch, &x->coalesce, GATE_REASON_UPSTREAM_CLOSED_EARLY);
            else
                coalesce_fetch_fail(d->fetch, &x->coalesce, 502, GATE_REASON_UPSTREAM_CLOSED);
        }
        exchange_driver_end(d);
    }
    coalesce_worker_destroy(&x->coalesce);
    upstream_pool_destroy(&x->upstream);
    if (x->bufs.free)
        buf_pool_destroy(&x->bufs);
    if (x->pipes.spare)
        pipe_pool_destroy(&x->pipes);
    free(x->head_out);
    free(x->resp_fields);
    while (x->retired) {
        exchange_gen_t *g = x->retired;
        x->retired = g->next;
        exchange_gen_free(g);
    }
    if (x->gen)
        exchange_gen_free(x->gen);
}

/* ---- the end of an exchange ------------------------------------------ */

/* Everything back: the upstream (to the pool if reuse), the buffer, the
 * pipe, the slot (which the longest waiter then gets). */
static void exchange_release(exchange_t *x, bool reuse)
{
    exchange_ctx_t *ctx = x->ctx;
    relay_end(&x->relay);
    if (x->up) {
        upstream_release(x->up, reuse);
        x->up = NULL;
    }
    if (x->buf) {
        buf_pool_put(&ctx->bufs, x->buf);
        x->buf = NULL;
    }
    x->log->bytes += x->relay.sent;
    x->relay.sent = 0;
    /* Time with the upstream, however the exchange ended: the access log
     * and the metrics tell of the same request. */
    if (x->log->upstream_start_ns && !x->log->upstream_ns)
        x->log->upstream_ns = clock_monotonic_ns() - x->log->upstream_start_ns;
    if (x->gen)
        exchange_leave_gen(x);
    if (x->has_slot) {
        x->has_slot = false;
        slot_release(&ctx->slots);
    }
}

/* Nothing went to the client yet: answer with an error of our own. */
static void exchange_fail(exchange_t *x, int status, gate_reason_t why)
{
    metrics_upstream_error(x->ctx->metrics, gate_reason_upstream_kind(why));
    exchange_release(x, false);
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "upstream_error", "%s: %d", gate_reason_name(why), status);
    if (x->fetch) {
        exchange_driver_fail(x, status, why);
        return;
    }
    conn_send_error(x->conn, status, gate_reason_name(why), false);
}

/* The response was under way: the client must not take what it got as
 * complete, so the connection closes. */
static void exchange_cut(exchange_t *x, gate_reason_t why, bool upstream_fault)
{
    if (upstream_fault)
        metrics_upstream_error(x->ctx->metrics, gate_reason_upstream_kind(why));
    if (x->fetch) {
        exchange_driver_cut(x, why);
        return;
    }
    x->log->reason = gate_reason_name(why);
    bool unframed = x->relay.until_close || x->relay.dechunk;
    exchange_release(x, false);
    conn_response_done(x->conn, unframed ? CONN_END_RESET : CONN_END_SHORT);
}

static void exchange_finish(exchange_t *x)
{
    exchange_release(x, x->up_reusable && x->relay.body_done && !x->relay.surplus);
    conn_response_done(x->conn, CONN_END_COMPLETE);
}

static void exchange_leave_fetch(exchange_t *x, bool fell_back);

void exchange_abort(exchange_t *x)
{
    if (!x->ctx)
        return;
    exchange_leave_fetch(x, false);
    slot_cancel(&x->ctx->slots, &x->waiter);
    exchange_release(x, false);
}

/* ---- slot, connection, request -------------------------------------- */

static void exchange_connect(exchange_t *x)
{
    x->up = upstream_connect(&x->ctx->upstream, exchange_on_upstream, x);
    if (!x->up)
        exchange_fail(x, 502, GATE_REASON_UPSTREAM_CONNECT);
}

static bool exchange_lead(exchange_t *x);
static void exchange_on_ttl(evutil_socket_t fd, short what, void *arg);

/* Holds a slot: a pooled connection takes the request at once. A request
 * that may lead a shared fetch looks for one first: another may have
 * started while this one waited for its slot. */
static void exchange_begin(exchange_t *x)
{
    if (x->may_lead && exchange_lead(x))
        return;
    x->phase = EXCHANGE_SEND;
    x->log->upstream_start_ns = clock_monotonic_ns();
    x->up = upstream_pool_get(&x->ctx->upstream, exchange_on_upstream, x);
    if (x->up)
        exchange_send(x);
    else
        exchange_connect(x);
}

static void exchange_granted(slot_waiter_t *w)
{
    exchange_t *x = (exchange_t *)((char *)w - offsetof(exchange_t, waiter));
    conn_deadline(x->conn, CONN_DEADLINE_NONE, 0);
    x->has_slot = true;
    exchange_begin(x);
}

static bool exchange_coalescible(exchange_t *x);
static void exchange_follow(exchange_t *x);

void exchange_start(exchange_t *x, conn_t *c, exchange_ctx_t *ctx, request_log_t *log)
{
    *x = (exchange_t){.conn = c, .ctx = ctx, .log = log, .gen = ctx->gen};
    ctx->gen->exchanges++;
    relay_init(&x->relay, &c->io, NULL, NULL, 0, NULL);
    conn_arm_read(c, false);
    if (exchange_coalescible(x)) {
        coalesce_fetch_t *led;
        switch (coalesce_attach(&ctx->coalesce, &x->key, &x->reader, exchange_on_fetch, &c->io,
                                false, &led)) {
        case COALESCE_JOINED:
            exchange_follow(x);
            return;
        case COALESCE_FULL:
            x->may_lead = false;
            break;
        default:
            break;
        }
    }
    exchange_upstream_start(x);
}

/* The request goes upstream on its own (or as a fetch's leader). */
static void exchange_upstream_start(exchange_t *x)
{
    conn_t *c = x->conn;
    exchange_ctx_t *ctx = x->ctx;
    /* The request is rewritten now, while its parse is at hand: the parse
     * state is the worker's and belongs to the next head once this
     * function returns, queued or not. */
    x->buf = buf_pool_get(&ctx->bufs);
    if (!x->buf) {
        exchange_fail(x, 502, GATE_REASON_REQUEST_TOO_LARGE);
        return;
    }
    const config_upstream_t *up = &ctx->cfg->upstream;
    x->len = rewrite_request(x->buf, ctx->bufs.size, c->ibuf, conn_request(c), c->http10,
                             up->server_name ? up->server_name : up->addr.text, &c->peer);
    if (x->len == 0) {
        exchange_fail(x, 502, GATE_REASON_REQUEST_TOO_LARGE);
        return;
    }
    if (slot_take(&ctx->slots)) {
        x->has_slot = true;
        exchange_begin(x);
        return;
    }
    if (slot_wait(&ctx->slots, &x->waiter, exchange_granted) < 0) {
        exchange_fail(x, 503, GATE_REASON_QUEUE_FULL);
        return;
    }
    /* Tests order requests by it (t_coalesce_requeue); off the fast path. */
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "upstream_queued", "waiting for one of %u upstream slots", (unsigned)ctx->slots.cap);
    conn_deadline(c, CONN_DEADLINE_QUEUE, ctx->cfg->upstream.queue_timeout_ms);
}

void exchange_queue_timeout(exchange_t *x)
{
    slot_cancel(&x->ctx->slots, &x->waiter);
    exchange_fail(x, 503, GATE_REASON_QUEUE_TIMEOUT);
}

/* A pooled connection can die between two uses without us seeing it yet;
 * a GET or HEAD that got no answer byte is safe to send again, once. The
 * request is still in the buffer: the head is read over it from
 * EXCHANGE_HEADROOM on, and a retry needs that not a byte was read. */
static bool exchange_retry_stale(exchange_t *x)
{
    if (!x->up || !x->up->reused || x->retried || x->phase == EXCHANGE_BODY)
        return false;
    if (x->phase == EXCHANGE_HEAD && x->len > EXCHANGE_HEADROOM)
        return false;
    x->retried = true;
    upstream_release(x->up, false);
    x->up = NULL;
    x->phase = EXCHANGE_SEND;
    x->off = 0;
    x->len = x->req_len;
    exchange_connect(x);
    return true;
}

static void exchange_send(exchange_t *x)
{
    upstream_conn_t *u = x->up;
    if (x->off == 0)
        x->req_len = x->len;
    while (x->off < x->len) {
        ssize_t n = sockio_write(&u->io, x->buf + x->off, x->len - x->off, 0);
        if (n > 0) {
            x->off += (size_t)n;
            continue;
        }
        if (n == SOCKIO_WANT_WRITE) {
            /* A pooled connection still has its idle timer on the read
             * event: the write's response timeout is the one that counts. */
            upstream_arm_read(u, false, NULL);
            upstream_arm_write(u, true, x->ctx->tv_response);
            return;
        }
        if (n == SOCKIO_WANT_READ) {
            upstream_arm_read(u, true, x->ctx->tv_response);
            return;
        }
        if (!exchange_retry_stale(x))
            exchange_fail(x, 502, GATE_REASON_UPSTREAM_WRITE);
        return;
    }
    upstream_arm_write(u, false, NULL);
    x->phase = EXCHANGE_HEAD;
    x->off = x->len = EXCHANGE_HEADROOM;
    x->head_due_ms = clock_coarse_ms() + x->gen->cfg->upstream.response_timeout_ms;
    upstream_arm_read(u, true, x->ctx->tv_response);
}

/* upstream.response_timeout is a deadline for the whole head, not a gap
 * between bytes: libevent restarts a persistent event's timeout whenever
 * it fires, so a head trickled a byte at a time would never time out.
 * After each partial read the timeout is set to what is left. */
static void exchange_head_deadline(exchange_t *x)
{
    uint64_t now = clock_coarse_ms();
    if (now >= x->head_due_ms) {
        exchange_fail(x, 504, GATE_REASON_UPSTREAM_TIMEOUT);
        return;
    }
    struct timeval left = clock_timeval(x->head_due_ms - now);
    upstream_arm_read(x->up, true, &left);
}

/* ---- the response head ----------------------------------------------- */

/* buf[off..len) holds the upstream's head (head_len bytes) and maybe body
 * bytes: the head for the client goes right in front of the body. Any
 * head up to limits.max_header_bytes fits: it is rewritten into the
 * worker's head_out, and in the rare case that it grew past the headroom
 * the body bytes that came with it move up. */
static bool exchange_place_head(exchange_t *x, const http_response_t *resp, size_t head_len)
{
    exchange_ctx_t *ctx = x->ctx;
    conn_t *c = x->conn;
    http_conn_variant_t variant = http_conn_variant(c->keep_alive, c->http10);
    size_t n = rewrite_response_head(ctx->head_out, ctx->head_out_cap, x->buf + x->off, resp,
                                     x->relay.chunked && !x->relay.dechunk, variant);
    if (n == 0)
        return false;
    size_t body_start = x->off + head_len;
    if (n > body_start) {
        size_t shift = n - body_start;
        if (x->len + shift > ctx->bufs.size)
            return false;
        memmove(x->buf + body_start + shift, x->buf + body_start, x->len - body_start);
        body_start += shift;
        x->len += shift;
    }
    x->off = body_start - n;
    memcpy(x->buf + x->off, ctx->head_out, n);
    return true;
}

static void exchange_share_head(exchange_t *d, const http_response_t *resp, size_t head_len);

static void exchange_on_head(exchange_t *x, const http_response_t *resp, size_t head_len)
{
    if (x->fetch) {
        exchange_share_head(x, resp, head_len);
        return;
    }
    conn_t *c = x->conn;
    relay_t *r = &x->relay;
    x->log->status = resp->status;
    x->up_reusable = resp->keep_alive && !c->http10;
    relay_init(r, &c->io, &x->up->io, x->buf, x->ctx->bufs.size, &x->ctx->pipes);
    relay_frame(r, resp->body, resp->content_length);
    /* The upstream was asked as HTTP/1.0 for a 1.0 client, yet a broken
     * one may answer chunked: the client gets the payload, ended by the
     * close (RFC 9112 7.1: never chunked to 1.0). */
    r->dechunk = r->chunked && c->http10;
    if (r->until_close || r->dechunk) {
        /* The end of the body is the end of the upstream connection, and
         * so of the client's. */
        x->up_reusable = false;
        conn_keep_alive_off(c);
    }
    size_t body_start = x->off + head_len;
    ssize_t used = relay_account(r, x->buf + body_start, x->len - body_start);
    if (used < 0) {
        exchange_fail(x, 502, GATE_REASON_BAD_UPSTREAM_CHUNKING);
        return;
    }
    x->len = body_start + (size_t)used;
    if (!exchange_place_head(x, resp, head_len)) {
        exchange_fail(x, 502, GATE_REASON_UPSTREAM_HEAD_TOO_LARGE);
        return;
    }
    r->off = x->off;
    r->len = x->len;
    r->close_after = conn_will_close(c);
    x->phase = EXCHANGE_BODY;
    exchange_pump(x);
}

/* Parses what was read: 1 a final head was handed on (or the exchange
 * failed), 0 more is needed. Interim 1xx heads are dropped: the gate
 * never forwards Expect, so they are not for the client. */
static int exchange_parse_head(exchange_t *x)
{
    http_response_t *resp = &x->ctx->resp;
    for (;;) {
        http_response_reset(resp);
        int r = http_response_parse(x->buf + x->off, x->len - x->off, x->ctx->limits,
                                    x->conn && x->conn->is_head, resp);
        if (r < 0) {
            exchange_fail(x, 502, GATE_REASON_BAD_UPSTREAM_RESPONSE);
            return 1;
        }
        if (r == 0) {
            if (x->len == x->ctx->bufs.size) {
                exchange_fail(x, 502, GATE_REASON_UPSTREAM_HEAD_TOO_LARGE);
                return 1;
            }
            return 0;
        }
        if (resp->status == 101) {
            /* We never forward Upgrade, so a switch is a broken upstream. */
            exchange_fail(x, 502, GATE_REASON_UNEXPECTED_UPGRADE);
            return 1;
        }
        if (resp->status >= 200) {
            exchange_on_head(x, resp, (size_t)r);
            return 1;
        }
        x->off += (size_t)r;
    }
}

static void exchange_read_head(exchange_t *x)
{
    upstream_conn_t *u = x->up;
    for (;;) {
        size_t room = x->ctx->bufs.size - x->len;
        /* A driver's body goes straight into the fetch's buffer: what
         * comes with the head is copied there, so take little of it. */
        if ((x->fetch || !x->conn->io.ssl) && !u->io.ssl && room > EXCHANGE_HEAD_STEP)
            room = EXCHANGE_HEAD_STEP;
        ssize_t n = sockio_read(&u->io, x->buf + x->len, room);
        if (n > 0) {
            x->len += (size_t)n;
            if (exchange_parse_head(x))
                return;
            continue;
        }
        if (n == SOCKIO_WANT_READ) {
            exchange_head_deadline(x);
            return;
        }
        if (n == SOCKIO_WANT_WRITE) {
            upstream_arm_write(u, true, x->ctx->tv_response);
            return;
        }
        if (!exchange_retry_stale(x))
            exchange_fail(x, 502, n == 0 ? GATE_REASON_UPSTREAM_CLOSED : GATE_REASON_UPSTREAM_READ);
        return;
    }
}

/* ---- the body --------------------------------------------------------- */

static void exchange_pump(exchange_t *x)
{
    relay_t *r = &x->relay;
    switch (relay_pump(r)) {
    case RELAY_DONE:
        exchange_finish(x);
        return;
    case RELAY_CLIENT_GONE:
        exchange_cut(x, GATE_REASON_CLIENT_CLOSED, false);
        return;
    case RELAY_CUT:
        exchange_cut(x, r->cut, true);
        return;
    case RELAY_WAIT:
        break;
    }
    conn_arm_write(x->conn, r->want & RELAY_WANT_CLIENT_WRITE);
    if (r->want & RELAY_WANT_UPSTREAM_READ)
        upstream_arm_read(x->up, true, x->ctx->tv_response);
    else
        upstream_arm_read(x->up, false, NULL);
    if (r->want & RELAY_WANT_UPSTREAM_WRITE)
        upstream_arm_write(x->up, true, x->ctx->tv_response);
}

void exchange_on_client_writable(exchange_t *x)
{
    if (x->phase == EXCHANGE_FOLLOW)
        exchange_read_fetch(x);
    else if (x->phase == EXCHANGE_BODY)
        exchange_pump(x);
    else
        conn_arm_write(x->conn, false);
}

/* ---- what the upstream connection reports ---------------------------- */

static void exchange_on_upstream(upstream_conn_t *u, upstream_event_t ev, void *data)
{
    exchange_t *x = data;
    switch (ev) {
    case UPSTREAM_FAILED:
        exchange_fail(x, u->failure == GATE_REASON_UPSTREAM_CONNECT_TIMEOUT ? 504 : 502, u->failure);
        return;
    case UPSTREAM_TIMEOUT:
        if (x->phase == EXCHANGE_BODY)
            exchange_cut(x, GATE_REASON_UPSTREAM_TIMEOUT, true);
        else
            exchange_fail(x, 504, GATE_REASON_UPSTREAM_TIMEOUT);
        return;
    case UPSTREAM_READY:
    case UPSTREAM_IO:
        break;
    }
    switch (x->phase) {
    case EXCHANGE_SEND:
        exchange_send(x);
        break;
    case EXCHANGE_HEAD:
        exchange_read_head(x);
        break;
    default:
        upstream_arm_write(u, false, NULL);
        if (x->fetch)
            exchange_fill(x);
        else
            exchange_pump(x);
        break;
    }
}

/* ---- coalescing: readers ---------------------------------------------- */

/* Only what the MCS answers the same for every asker is shared: an
 * admitted GET (HEAD renders too but has no body to share; ungated paths
 * are not configs), HTTP/1.1 (a 1.0 request goes upstream as 1.0), no
 * query (the MCS ignores it, but a path with one is not the plain config
 * request whose answer DESIGN 1.3 vouches for), a path short enough for
 * the key. Sets the key: pool path and spec. */
static bool exchange_coalescible(exchange_t *x)
{
    const conn_t *c = x->conn;
    if (!x->ctx->cfg->coalesce.enabled || x->log->decision != REQUEST_ADMIT || c->is_head || c->http10)
        return false;
    const http_request_t *req = conn_request(c);
    if (req->method != HTTP_METHOD_GET || memchr(c->ibuf + req->target.off, '?', req->target.len))
        return false;
    size_t len;
    const char *path = conn_clean_path(c, &len);
    if (len >= sizeof x->key.path)
        return false;
    memcpy(x->key.path, path, len);
    x->key.path[len] = '\0';
    const http_header_t *accept = http_headers_get(&req->headers, HTTP_HDR_ACCEPT);
    x->key.spec = (uint8_t)(accept ? http_accept_ignition_spec(c->ibuf + accept->value.off, accept->value.len)
                                   : http_accept_ignition_spec(NULL, 0));
    x->may_lead = true;
    return true;
}

/* The debug log tells who shares which fetch (tests wait on it). */
static void exchange_log_attach(const exchange_t *x, const char *how)
{
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "coalesce", "%s %s spec %u", how, x->key.path, (unsigned)x->key.spec);
}

static void exchange_follow(exchange_t *x)
{
    exchange_log_attach(x, "joined");
    /* The log's time with the upstream is the time reading the fetch. */
    x->log->upstream_start_ns = clock_monotonic_ns();
    x->phase = EXCHANGE_FOLLOW;
    x->follower = true;
    exchange_read_fetch(x);
}

/* A follower that leaves without having asked the MCS itself saved a
 * render; one that was served a shared response is a follower served. */
static void exchange_leave_fetch(exchange_t *x, bool fell_back)
{
    if (x->peer) {
        x->peer->peer = NULL;
        x->peer = NULL;
    }
    if (!x->reader.fetch)
        return;
    if (x->follower && !fell_back) {
        metrics_add(&x->ctx->metrics->coalesce_renders_saved, 1);
        if (x->reader.head_sent)
            metrics_add(&x->ctx->metrics->coalesce_followers, 1);
    }
    x->log->bytes += x->reader.sent;
    if (x->log->upstream_start_ns && !x->log->upstream_ns && !fell_back)
        x->log->upstream_ns = clock_monotonic_ns() - x->log->upstream_start_ns;
    coalesce_reader_leave(&x->reader);
}

/* The fetch is not shared: ask the MCS as any request would. */
static void exchange_fall_back(exchange_t *x)
{
    exchange_leave_fetch(x, true);
    /* A follower that joined after taking a slot gave its generation back
     * with the slot (exchange_release): it asks under the one serving now.
     * Without this, exchange_send read a NULL generation and the gate
     * died (t_coalesce's max_body case, under ThreadSanitizer's timing). */
    if (!x->gen) {
        x->gen = x->ctx->gen;
        x->gen->exchanges++;
    }
    x->follower = false;
    x->may_lead = false;
    conn_reparse_request(x->conn);
    exchange_upstream_start(x);
}

static void exchange_read_fetch(exchange_t *x)
{
    conn_t *c = x->conn;
    int status;
    gate_reason_t why;
    switch (coalesce_reader_pump(&x->reader, http_conn_variant(!conn_will_close(c), false))) {
    case COALESCE_WAIT_CLIENT:
        x->log->status = coalesce_status(&x->reader);
        conn_arm_write(c, true);
        return;
    case COALESCE_WAIT_FETCH:
        if (x->reader.head_sent)
            x->log->status = coalesce_status(&x->reader);
        conn_arm_write(c, false);
        return;
    case COALESCE_DONE:
        x->log->status = coalesce_status(&x->reader);
        exchange_leave_fetch(x, false);
        conn_response_done(c, CONN_END_COMPLETE);
        return;
    case COALESCE_CLIENT_GONE:
        x->log->reason = gate_reason_name(GATE_REASON_CLIENT_CLOSED);
        exchange_leave_fetch(x, false);
        conn_response_done(c, CONN_END_SHORT);
        return;
    case COALESCE_CUT:
        coalesce_failure(&x->reader, &status, &why);
        x->log->status = status;
        x->log->reason = gate_reason_name(why);
        exchange_leave_fetch(x, false);
        /* Framed by Content-Length: a close leaves the client short. */
        conn_response_done(c, CONN_END_SHORT);
        return;
    case COALESCE_FAILED:
        coalesce_failure(&x->reader, &status, &why);
        exchange_leave_fetch(x, false);
        conn_send_error(c, status, gate_reason_name(why), false);
        return;
    case COALESCE_UNSHARED:
        exchange_fall_back(x);
        return;
    }
}

static void exchange_on_fetch(coalesce_reader_t *r)
{
    exchange_read_fetch((exchange_t *)((char *)r - offsetof(exchange_t, reader)));
}

/* ---- coalescing: the driver ------------------------------------------ */

/* With a slot held: joins a fetch that started meanwhile (the slot goes
 * back), or starts one, whose driver takes over the slot and the
 * rewritten request while x reads it. false: go on alone. */
static bool exchange_lead(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    x->may_lead = false;
    coalesce_fetch_t *f;
    switch (coalesce_attach(&ctx->coalesce, &x->key, &x->reader, exchange_on_fetch, &x->conn->io, true, &f)) {
    case COALESCE_JOINED:
        exchange_release(x, false);
        exchange_follow(x);
        return true;
    case COALESCE_LEADS:
        exchange_log_attach(x, "leads");
        break;
    default:
        return false;
    }
    exchange_driver_t *dr = calloc(1, sizeof *dr);
    if (!dr) {
        coalesce_fetch_unshare(f, &ctx->coalesce);
        coalesce_fetch_release(f);
        coalesce_reader_leave(&x->reader);
        return false;
    }
    exchange_t *d = &dr->x;
    /* The driver is an exchange of the generation serving now (a reload
     * changes the next fetch's timeouts, not this one's). */
    *d = (exchange_t){.ctx = ctx, .log = &dr->log, .buf = x->buf, .len = x->len, .has_slot = x->has_slot,
                      .fetch = f, .peer = x, .gen = ctx->gen};
    ctx->gen->exchanges++;
    relay_init(&d->relay, NULL, NULL, NULL, 0, NULL);
    evtimer_assign(&dr->ttl_ev, ctx->upstream.base, exchange_on_ttl, d);
    dr->next = ctx->drivers;
    if (ctx->drivers)
        ctx->drivers->prev = dr;
    ctx->drivers = dr;
    x->buf = NULL;
    x->has_slot = false;
    x->peer = d;
    x->log->upstream_start_ns = clock_monotonic_ns();
    x->phase = EXCHANGE_FOLLOW;
    /* The leader waits like any reader (so a driver that fails at once
     * reaches it through the wake-up), then the driver starts. */
    exchange_read_fetch(x);
    exchange_begin(d);
    return true;
}

static exchange_driver_t *driver_of(exchange_t *d)
{
    return (exchange_driver_t *)((char *)d - offsetof(exchange_driver_t, x));
}

/* The driver goes; its fetch lives on as long as readers hold it. */
static void exchange_driver_end(exchange_t *d)
{
    exchange_driver_t *dr = driver_of(d);
    exchange_ctx_t *ctx = d->ctx;
    if (d->peer)
        d->peer->peer = NULL;
    event_del(&dr->ttl_ev);
    if (dr->prev)
        dr->prev->next = dr->next;
    else
        ctx->drivers = dr->next;
    if (dr->next)
        dr->next->prev = dr->prev;
    coalesce_fetch_release(d->fetch);
    if (d->gen)
        exchange_leave_gen(d);
    free(dr);
}

static void exchange_driver_fail(exchange_t *d, int status, gate_reason_t why)
{
    coalesce_fetch_fail(d->fetch, &d->ctx->coalesce, status, why);
    exchange_driver_end(d);
}

static void exchange_driver_cut(exchange_t *d, gate_reason_t why)
{
    exchange_release(d, false);
    coalesce_fetch_cut(d->fetch, &d->ctx->coalesce, why);
    exchange_driver_end(d);
}

static void exchange_on_ttl(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    exchange_driver_end(arg);
}

static void exchange_driver_done(exchange_t *d)
{
    exchange_driver_t *dr = driver_of(d);
    exchange_release(d, d->up_reusable);
    coalesce_fetch_done(d->fetch, &d->ctx->coalesce);
    uint64_t keep = coalesce_fetch_ttl_left(d->fetch);
    if (keep == 0) {
        exchange_driver_end(d);
        return;
    }
    struct timeval tv = clock_timeval(keep);
    evtimer_add(&dr->ttl_ev, &tv);
}

/* Reads the body into the fetch until the upstream would block. */
static void exchange_fill(exchange_t *d)
{
    exchange_ctx_t *ctx = d->ctx;
    size_t before = d->body_got;
    for (;;) {
        if (d->body_got == d->body_len) {
            coalesce_fetch_publish(d->fetch, &ctx->coalesce, d->body_got);
            exchange_driver_done(d);
            return;
        }
        ssize_t n = sockio_read(&d->up->io, d->body + d->body_got, d->body_len - d->body_got);
        if (n > 0) {
            d->body_got += (size_t)n;
            continue;
        }
        if (d->body_got > before)
            coalesce_fetch_publish(d->fetch, &ctx->coalesce, d->body_got);
        if (n == SOCKIO_WANT_READ) {
            upstream_arm_read(d->up, true, ctx->tv_response);
        } else if (n == SOCKIO_WANT_WRITE) {
            upstream_arm_write(d->up, true, ctx->tv_response);
        } else {
            exchange_cut(d, n == 0 ? GATE_REASON_UPSTREAM_CLOSED_EARLY : GATE_REASON_UPSTREAM_READ, true);
        }
        return;
    }
}

/* The leader's request is answered on its own after all: it takes over
 * the driver's upstream connection, head and slot, as if it had never
 * led, so the render is not wasted. */
static void exchange_hand_over(exchange_t *d, exchange_t *x, const http_response_t *resp, size_t head_len)
{
    exchange_leave_fetch(x, true);
    x->up = d->up;
    x->buf = d->buf;
    x->off = d->off;
    x->len = d->len;
    x->req_len = d->req_len;
    x->has_slot = d->has_slot;
    x->retried = d->retried;
    x->log->upstream_start_ns = d->log->upstream_start_ns;
    x->up->data = x;
    d->up = NULL;
    d->buf = NULL;
    d->has_slot = false;
    x->phase = EXCHANGE_HEAD;
    exchange_on_head(x, resp, head_len);
}

/* The head is in, at d->buf + d->off. Shared when framed by a
 * Content-Length within coalesce.max_body (the MCS always sends one);
 * otherwise the readers ask on their own, the leader with this very
 * response. */
static void exchange_share_head(exchange_t *d, const http_response_t *resp, size_t head_len)
{
    exchange_ctx_t *ctx = d->ctx;
    coalesce_fetch_t *f = d->fetch;
    bool framed = resp->body == HTTP_BODY_LENGTH || resp->body == HTTP_BODY_NONE;
    size_t body_len = resp->body == HTTP_BODY_LENGTH ? (size_t)resp->content_length : 0;
    char *body = NULL;
    if (framed && body_len <= ctx->cfg->coalesce.max_body) {
        /* The keep-alive head has no Connection line; the close head is
         * the same with that line before the final CRLF (as
         * rewrite_response_head puts it): one rendering, two heads, one
         * after the other in head_out. */
        size_t close_len;
        const char *close_line = http_connection_line(HTTP_CONN_CLOSE, &close_len);
        size_t n = rewrite_response_head(ctx->head_out, ctx->head_out_cap, d->buf + d->off, resp, false,
                                         HTTP_CONN_KEEP_ALIVE);
        const char *heads[2] = {ctx->head_out, ctx->head_out + n};
        size_t lens[2] = {n, n + close_len};
        if (n && 2 * n + close_len <= ctx->head_out_cap) {
            char *close_head = ctx->head_out + n;
            memcpy(close_head, ctx->head_out, n - 2);
            memcpy(close_head + n - 2, close_line, close_len);
            memcpy(close_head + n - 2 + close_len, "\r\n", 2);
            body = coalesce_fetch_shared(f, &ctx->coalesce, resp->status, heads, lens, body_len);
        }
    }
    if (!body) {
        coalesce_fetch_unshare(f, &ctx->coalesce);
        exchange_t *leader = d->peer;
        if (leader)
            exchange_hand_over(d, leader, resp, head_len);
        else
            exchange_release(d, false);
        exchange_driver_end(d);
        return;
    }
    size_t start = d->off + head_len;
    size_t came = d->len - start;
    d->up_reusable = resp->keep_alive && came <= body_len;
    d->body = body;
    d->body_len = body_len;
    d->body_got = came < body_len ? came : body_len;
    memcpy(body, d->buf + start, d->body_got);
    buf_pool_put(&ctx->bufs, d->buf);
    d->buf = NULL;
    d->phase = EXCHANGE_BODY;
    exchange_fill(d);
}
