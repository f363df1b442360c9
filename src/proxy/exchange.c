#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "proxy/exchange.h"
#include "proxy/rewrite.h"
#include "proxy/shared_timeout.h"
#include "exchange_coalesce.h"
#include "exchange_reader.h"

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
static void exchange_release(exchange_t *x, bool reuse);
static void exchange_leave_gen(exchange_t *x);
static void exchange_fail(exchange_t *x, int status, gate_reason_t why);
static void exchange_cut(exchange_t *x, gate_reason_t why, bool upstream_fault);
static void exchange_upstream_start(exchange_t *x);
static void exchange_crowded_out(slot_waiter_t *w);
static void exchange_begin(exchange_t *x);
static void exchange_on_head(exchange_t *x, const http_response_t *resp, size_t head_len);

/* What the coalescing side (exchange_coalesce.c, below this file) calls
 * back: it never names these. */
static const exchange_core_t exchange_core = {
    .release = exchange_release,
    .leave_gen = exchange_leave_gen,
    .fail = exchange_fail,
    .cut = exchange_cut,
    .upstream_start = exchange_upstream_start,
    .begin = exchange_begin,
    .on_head = exchange_on_head,
};

/* The gate's caps shared out over the workers, rounded up. */
static uint32_t exchange_share(uint32_t gate_wide, unsigned n_workers)
{
    return (gate_wide + n_workers - 1) / n_workers;
}

exchange_gen_t *exchange_gen_new(config_t *cfg)
{
    exchange_gen_t *g = calloc(1, sizeof *g);
    if (g)
        g->cfg = config_ref(cfg);
    return g;
}

/* The debug log tells when an old generation goes (t_reload_generations
 * waits on it). */
static void exchange_gen_gone(exchange_gen_t *g, const char *when)
{
    if (when && log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "config_generation_freed", "the configuration before a reload is freed %s", when);
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
    x->core = &exchange_core;
    x->metrics = metrics;
    const config_limits_t *lim = &cfg->limits;
    const config_upstream_t *up = &cfg->upstream;
    if (n_workers == 0)
        n_workers = 1;
    x->n_workers = n_workers;
    slot_queue_init(&x->slots, exchange_share(up->max_concurrent, n_workers),
                    exchange_share(up->max_queue, n_workers));
    slot_queue_per_client(&x->slots, exchange_share(up->max_per_client, n_workers));
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
    if (!x->head_out || !x->resp_fields || client_table_init(&x->clients) < 0 ||
        buf_pool_init(&x->bufs, buf, EXCHANGE_SPARE_BUFS) < 0 ||
        pipe_pool_init(&x->pipes, EXCHANGE_SPARE_PIPES) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    http_response_init(&x->resp, x->resp_fields, lim->max_headers);
    exchange_response_timeout(x, base);
    return coalesce_worker_init(&x->coalesce, base, &cfg->coalesce, err, errlen);
}

void exchange_gen_free(exchange_gen_t *g)
{
    if (g)
        exchange_gen_gone(g, NULL);
}

void exchange_ctx_reconfigure(exchange_ctx_t *x, exchange_gen_t *g, SSL_CTX *upstream_tls, uint32_t upstream_epoch)
{
    const config_t *cfg = g->cfg;
    exchange_gen_t *old = x->gen;
    if (old->exchanges == 0) {
        exchange_gen_gone(old, "at once: no exchange holds it");
    } else {
        old->next = x->retired;
        x->retired = old;
    }
    x->gen = g;
    x->cfg = cfg;
    /* Fetches under way keep their bounds; new ones take the new ones. */
    x->coalesce.cfg = &cfg->coalesce;
    const config_upstream_t *up = &cfg->upstream;
    upstream_pool_reconfigure(&x->upstream, up, upstream_tls, upstream_epoch);
    exchange_drivers_reconfigure(x);
    exchange_response_timeout(x, x->upstream.base);
    slot_queue_per_client(&x->slots, exchange_share(up->max_per_client, x->n_workers));
    slot_queue_resize(&x->slots, exchange_share(up->max_concurrent, x->n_workers),
                      exchange_share(up->max_queue, x->n_workers));
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
    exchange_gen_gone(g, "with the last exchange that held it");
}

void exchange_ctx_stop(exchange_ctx_t *x, void (*on_idle)(void *arg), void *arg)
{
    x->on_idle = on_idle;
    x->on_idle_arg = arg;
    upstream_pool_close(&x->upstream);
}

void exchange_ctx_destroy(exchange_ctx_t *x)
{
    x->on_idle = NULL;     /* the loop is over */
    exchange_drivers_destroy(x);
    coalesce_worker_destroy(&x->coalesce);
    upstream_pool_destroy(&x->upstream);
    if (x->bufs.free)
        buf_pool_destroy(&x->bufs);
    if (x->pipes.spare)
        pipe_pool_destroy(&x->pipes);
    free(x->head_out);
    free(x->resp_fields);
    client_table_destroy(&x->clients);
    while (x->retired) {
        exchange_gen_t *g = x->retired;
        x->retired = g->next;
        exchange_gen_gone(g, NULL);
    }
    if (x->gen)
        exchange_gen_gone(x->gen, NULL);
}

/* ---- the end of an exchange ------------------------------------------ */

/* The slot is held: its address counts it (queue.h's share). */
static void exchange_slot_held(exchange_t *x)
{
    x->has_slot = true;
    if (x->client)
        x->client->slots.held++;
}

/* The upstream connection (to the pool if reuse) and the slot go back:
 * the exchange is over, or the MCS has sent all of it while the client
 * still reads what was kept for it. The slot's longest waiter gets it. */
static void exchange_let_go_upstream(exchange_t *x, bool reuse)
{
    exchange_hold_end(x);
    if (x->up) {
        upstream_release(x->up, reuse);
        x->up = NULL;
    }
    x->relay.upstream = NULL;
    /* Time with the upstream, however the exchange ended: the access log
     * and the metrics tell of the same request. */
    if (x->log->upstream_start_ns && !x->log->upstream_ns)
        x->log->upstream_ns = clock_monotonic_ns() - x->log->upstream_start_ns;
    if (x->has_slot) {
        x->has_slot = false;
        if (x->client)
            x->client->slots.held--;
        slot_release(&x->ctx->slots);
    }
}

/* Everything back: the upstream (to the pool if reuse), the buffer, the
 * pipe, the store, the slot (which the longest waiter then gets). */
static void exchange_release(exchange_t *x, bool reuse)
{
    exchange_ctx_t *ctx = x->ctx;
    relay_end(&x->relay);
    if (x->buf) {
        buf_pool_put(&ctx->bufs, x->buf);
        x->buf = NULL;
    }
    x->log->bytes += x->relay.sent;
    x->relay.sent = 0;
    if (x->gen)
        exchange_leave_gen(x);
    exchange_let_go_upstream(x, reuse);
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
    x->ops->error(x->owner, status, gate_reason_name(why));
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
    x->ops->done(x->owner, unframed ? EXCHANGE_END_RESET : EXCHANGE_END_SHORT);
}

static void exchange_finish(exchange_t *x)
{
    exchange_release(x, x->up_reusable && x->relay.body_done && !x->relay.surplus);
    x->ops->done(x->owner, EXCHANGE_END_COMPLETE);
}


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
    x->ops->deadline(x->owner, EXCHANGE_WAIT_NONE, 0);
    exchange_slot_held(x);
    exchange_begin(x);
}


/* The request is rewritten now, while its parse is at hand: the parse
 * state is the worker's and belongs to the next head once the call that
 * handed the request over returns, queued or not. What the exchange
 * reads of its request from then on is what it rewrote (kept by a
 * follower that may fall back: exchange_coalesce.c). */
static bool exchange_forward(exchange_t *x, const exchange_request_t *req)
{
    exchange_ctx_t *ctx = x->ctx;
    x->buf = buf_pool_get(&ctx->bufs);
    if (!x->buf) {
        exchange_fail(x, 502, GATE_REASON_REQUEST_TOO_LARGE);
        return false;
    }
    const config_upstream_t *up = &ctx->cfg->upstream;
    x->len = rewrite_request(x->buf, ctx->bufs.size, req->head, req->parse, req->http10,
                             up->server_name ? up->server_name : up->addr.text, req->peer);
    if (x->len == 0) {
        exchange_fail(x, 502, GATE_REASON_REQUEST_TOO_LARGE);
        return false;
    }
    return true;
}

void exchange_start(exchange_t *x, exchange_ctx_t *ctx, const exchange_request_t *req, void *owner,
                    const exchange_owner_ops_t *ops, request_log_t *log)
{
    *x = (exchange_t){.owner = owner, .ops = ops, .ctx = ctx, .log = log, .gen = ctx->gen, .client = req->share,
                      .http10 = req->http10, .is_head = req->is_head, .keep_alive = req->keep_alive};
    ctx->gen->exchanges++;
    relay_init(&x->relay, req->client, NULL, NULL, 0, NULL);
    if (!exchange_forward(x, req) || exchange_join(x, req->parse->method == HTTP_METHOD_GET))
        return;
    exchange_upstream_start(x);
}

static void exchange_upstream_start(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    if (slot_take(&ctx->slots)) {
        exchange_slot_held(x);
        exchange_begin(x);
        return;
    }
    x->waiter.share = x->client ? &x->client->slots : NULL;
    x->waiter.refused = exchange_crowded_out;
    if (slot_wait(&ctx->slots, &x->waiter, exchange_granted) < 0) {
        exchange_fail(x, 503, GATE_REASON_QUEUE_FULL);
        return;
    }
    /* Tests order requests by it (t_coalesce_requeue); off the fast path. */
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "upstream_queued", "waiting for one of %u upstream slots", (unsigned)ctx->slots.cap);
    x->ops->deadline(x->owner, EXCHANGE_WAIT_QUEUE, ctx->cfg->upstream.queue_timeout_ms);
    /* Last: the slot of a holder cut here may go to x at once. */
    exchange_holders_yield(ctx);
}

/* Put out of a full queue for an address with fewer waiters: as if the
 * queue had been full when it came (Ignition retries a 503). */
static void exchange_crowded_out(slot_waiter_t *w)
{
    exchange_t *x = (exchange_t *)((char *)w - offsetof(exchange_t, waiter));
    x->ops->deadline(x->owner, EXCHANGE_WAIT_NONE, 0);
    exchange_fail(x, 503, GATE_REASON_QUEUE_FULL);
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
    /* Before the connect: a driver that fails there is freed. */
    if (x->fetch)
        exchange_driver_resent(x);
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
    http_conn_variant_t variant = http_conn_variant(x->keep_alive, x->http10);
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

static void exchange_on_head(exchange_t *x, const http_response_t *resp, size_t head_len)
{
    if (x->fetch) {
        exchange_share_head(x, resp, head_len);
        return;
    }
    relay_t *r = &x->relay;
    x->log->status = resp->status;
    x->up_reusable = resp->keep_alive && !x->http10;
    relay_init(r, r->client, &x->up->io, x->buf, x->ctx->bufs.size, &x->ctx->pipes);
    exchange_keep(x);
    relay_frame(r, resp->body, resp->content_length);
    /* The upstream was asked as HTTP/1.0 for a 1.0 client, yet a broken
     * one may answer chunked: the client gets the payload, ended by the
     * close (RFC 9112 7.1: never chunked to 1.0). */
    r->dechunk = r->chunked && x->http10;
    if (r->until_close || r->dechunk) {
        /* The end of the body is the end of the upstream connection, and
         * so of the client's. */
        x->up_reusable = false;
        x->keep_alive = false;
        x->ops->keep_alive_off(x->owner);
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
    r->close_after = x->ops->will_close(x->owner);
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
                                    x->is_head, resp);
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
        if ((x->fetch || !x->relay.client->ssl) && !u->io.ssl && room > EXCHANGE_HEAD_STEP)
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
    if (x->hold_link.on)
        exchange_hold_end(x);
    for (;;) {
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
        case RELAY_FULL:
            /* Never the MCS's fetch: the slowest reader goes; when that is
             * this one, it holds its upstream until its client reads,
             * unless requests wait for a slot. */
            switch (exchange_keep_room(x)) {
            case EXCHANGE_ROOM_MADE:
                continue;
            case EXCHANGE_ROOM_CUT_X:
                exchange_cut(x, GATE_REASON_CLIENT_OVER_BUDGET, false);
                return;
            case EXCHANGE_ROOM_WAIT:
                break;
            }
            break;
        case RELAY_WAIT:
            break;
        }
        break;
    }
    /* The MCS has sent it all: its connection and slot are not the
     * client's to hold while it reads the rest. */
    if (x->up && r->body_done)
        exchange_let_go_upstream(x, x->up_reusable && !r->surplus);
    exchange_read_clock(x, r->want & RELAY_WANT_CLIENT_WRITE, r->sent + relay_held(r));
    x->ops->arm_write(x->owner, r->want & RELAY_WANT_CLIENT_WRITE);
    if (!x->up)
        return;
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
        x->ops->arm_write(x->owner, false);
}

bool exchange_client_stalled(exchange_t *x)
{
    if (x->phase == EXCHANGE_FOLLOW && x->reader.fetch) {
        x->log->reason = gate_reason_name(GATE_REASON_CLIENT_SEND_TIMEOUT);
        exchange_leave_fetch(x, false);
        x->ops->done(x->owner, EXCHANGE_END_SHORT);
        return true;
    }
    if (x->phase == EXCHANGE_BODY) {
        exchange_cut(x, GATE_REASON_CLIENT_SEND_TIMEOUT, false);
        return true;
    }
    return false;
}

void exchange_read_timeout(exchange_t *x)
{
    if (x->phase == EXCHANGE_BODY) {
        exchange_cut(x, GATE_REASON_CLIENT_TOO_SLOW, false);
        return;
    }
    if (x->phase != EXCHANGE_FOLLOW || !x->reader.fetch)
        return;
    x->log->reason = gate_reason_name(GATE_REASON_CLIENT_TOO_SLOW);
    exchange_leave_fetch(x, false);
    x->ops->done(x->owner, EXCHANGE_END_SHORT);
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

