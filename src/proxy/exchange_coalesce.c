/* exchange_coalesce: the exchange's side of coalescing (coalesce.h).
 * A request that may share a fetch joins one, leads one (its driver, an
 * exchange with no connection, asks the MCS and fills the fetch's body
 * for every reader), or falls back to asking on its own. */
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "proxy/rewrite.h"
#include "exchange_coalesce.h"
#include "exchange_reader.h"

/* The exchange that drives a shared fetch: no connection of its own, so
 * it carries the log fields the exchange writes, and the timer that keeps
 * a completed fetch for coalesce.ttl. */
typedef struct exchange_driver {
    exchange_t x;
    request_log_t log;
    struct event ttl_ev;
    struct exchange_driver *prev, *next;    /* ctx->drivers */
    bool in_flight;                         /* counted in ctx->fetches_driven */
} exchange_driver_t;

static void exchange_on_fetch(coalesce_reader_t *r);
static void exchange_driver_end(exchange_t *d);
static void exchange_on_ttl(evutil_socket_t fd, short what, void *arg);

/* ---- coalescing: readers ---------------------------------------------- */

/* What may share a fetch at all: an admitted GET (HEAD renders too but
 * has no body to share; ungated paths are not configs). Which fetch it
 * shares is the key's business alone: an HTTP/1.0 request goes upstream
 * as 1.0, so its key (the forwarded request line) is another than a 1.1
 * request's, and 1.0 requests share with each other only. */
static bool exchange_coalescible(const exchange_t *x, bool method_get)
{
    return x->ctx->cfg->coalesce.enabled && x->log->decision == REQUEST_ADMIT && !x->is_head && method_get;
}

/* The share key lives in the exchange's buffer, right after the
 * forwarded request it was taken from, until the request is sent. Its
 * upstream is the peer the pool reaches now: where this request would go
 * on its own, and where a fetch it leads goes (exchange_begin connects
 * within the same call). Read at each attach, so a request that came
 * before a reload and looks again once it has a slot looks for the new
 * peer's fetches. */
static coalesce_key_t exchange_key(const exchange_t *x)
{
    return (coalesce_key_t){.bytes = x->buf + x->len, .len = x->key_len, .upstream = x->ctx->upstream.epoch};
}

/* The debug log tells who shares which fetch (tests wait on it): the
 * request line of the key, without its method and version. */
static void exchange_log_attach(const exchange_t *x, const char *how)
{
    if (!log_enabled(LOG_DEBUG))
        return;
    const char *line = x->buf + x->len, *sp = memchr(line, ' ', x->key_len);
    const char *target = sp ? sp + 1 : line;
    const char *end = memchr(target, ' ', x->key_len - (size_t)(target - line));
    log_msg(LOG_DEBUG, "coalesce", "%s %.*s on worker %u", how, end ? (int)(end - target) : 0, target,
            x->ctx->coalesce.index);
}

static void exchange_follow(exchange_t *x)
{
    /* The log's time with the upstream is the time reading the fetch. */
    x->log->upstream_start_ns = clock_monotonic_ns();
    x->phase = EXCHANGE_FOLLOW;
    x->follower = true;
    exchange_read_fetch(x);
}

/* A follower reads the fetch, not an answer of its own, yet it may have
 * to ask on its own after all (exchange_fall_back): it keeps what it
 * forwarded, at its length (a few hundred bytes, not a relay buffer of
 * 64 KiB), as its own, never to be rewritten from a parse that is the
 * worker's and some later head's by then. false, out of memory: it leaves
 * the fetch and goes on alone. */
static bool exchange_keep_forwarded(exchange_t *x)
{
    char *copy = malloc(x->len);
    if (!copy) {
        coalesce_reader_leave(&x->reader);
        return false;
    }
    memcpy(copy, x->buf, x->len);
    x->forwarded = copy;
    return true;
}

bool exchange_join(exchange_t *x, bool method_get)
{
    if (!exchange_coalescible(x, method_get))
        return false;
    size_t room = x->ctx->bufs.size - x->len;
    size_t n = rewrite_share_key(x->buf, x->len, x->buf + x->len, room < COALESCE_KEY_MAX ? room : COALESCE_KEY_MAX);
    if (n == 0)
        return false;
    x->key_len = (uint32_t)n;
    coalesce_key_t key = exchange_key(x);
    coalesce_fetch_t *led;
    if (coalesce_attach(&x->ctx->coalesce, &key, &x->reader, exchange_on_fetch, x->relay.client, false, &led) !=
        COALESCE_JOINED) {
        x->may_lead = true;
        return false;
    }
    exchange_log_attach(x, "joined");
    if (!exchange_keep_forwarded(x))
        return false;
    /* A follower needs no buffer: its own request goes nowhere unless the
     * fetch is not shared. */
    buf_pool_put(&x->ctx->bufs, x->buf);
    x->buf = NULL;
    exchange_follow(x);
    return true;
}

/* A follower that leaves without having asked the MCS itself saved a
 * render; one that was served a shared response is a follower served. */
void exchange_leave_fetch(exchange_t *x, bool fell_back)
{
    if (x->peer) {
        x->peer->peer = NULL;
        x->peer = NULL;
    }
    if (!x->reader.fetch)
        return;
    if (x->forwarded && !fell_back) {
        free(x->forwarded);
        x->forwarded = NULL;
    }
    if (x->follower && !fell_back) {
        metrics_add(&x->ctx->metrics->coalesce_renders_saved, 1);
        if (x->reader.head_sent)
            metrics_add(&x->ctx->metrics->coalesce_followers, 1);
    }
    x->log->bytes += x->reader.sent;
    if (x->log->upstream_start_ns && !x->log->upstream_ns && !fell_back)
        x->log->upstream_ns = clock_monotonic_ns() - x->log->upstream_start_ns;
    coalesce_reader_leave(&x->reader);
    /* A reader that is done gives its generation back here: it never
     * reaches exchange_release, and the next request on its connection
     * starts a new exchange over this one. Without this every coalesced
     * request kept its generation alive, and each reload left the old
     * configuration in memory for good. One that goes on asking the
     * upstream (falling back, handed over) keeps it. */
    if (!fell_back && x->gen)
        x->ctx->core->leave_gen(x);
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
    /* Its own request goes upstream: the bytes it forwarded when it came
     * (only a follower falls back: a leader's driver hands it the
     * response instead). */
    char *forwarded = x->forwarded;
    x->forwarded = NULL;
    x->buf = forwarded ? buf_pool_get(&x->ctx->bufs) : NULL;
    if (!x->buf) {
        free(forwarded);
        x->ctx->core->fail(x, 502, GATE_REASON_REQUEST_TOO_LARGE);
        return;
    }
    memcpy(x->buf, forwarded, x->len);
    free(forwarded);
    x->ctx->core->upstream_start(x);
}

void exchange_read_fetch(exchange_t *x)
{
    int status;
    gate_reason_t why;
    coalesce_result_t got =
        coalesce_reader_pump(&x->reader, http_conn_variant(!x->ops->will_close(x->owner), x->http10));
    /* A shared body lives until its slowest reader is done, and the bodies
     * held at once are bounded gate-wide: the reader's clock runs while
     * the fetch has bytes it has not taken (exchange_reader.h). */
    if (x->reader.head_sent && (got == COALESCE_WAIT_CLIENT || got == COALESCE_WAIT_FETCH))
        exchange_read_clock(x, got == COALESCE_WAIT_CLIENT, coalesce_body_len(&x->reader));
    switch (got) {
    case COALESCE_WAIT_CLIENT:
        x->log->status = coalesce_status(&x->reader);
        x->ops->arm_write(x->owner, true);
        return;
    case COALESCE_WAIT_FETCH:
        if (x->reader.head_sent)
            x->log->status = coalesce_status(&x->reader);
        x->ops->arm_write(x->owner, false);
        return;
    case COALESCE_DONE:
        x->log->status = coalesce_status(&x->reader);
        exchange_leave_fetch(x, false);
        x->ops->done(x->owner, EXCHANGE_END_COMPLETE);
        return;
    case COALESCE_CLIENT_GONE:
        x->log->reason = gate_reason_name(GATE_REASON_CLIENT_CLOSED);
        exchange_leave_fetch(x, false);
        x->ops->done(x->owner, EXCHANGE_END_SHORT);
        return;
    case COALESCE_CUT:
        coalesce_failure(&x->reader, &status, &why);
        x->log->status = status;
        x->log->reason = gate_reason_name(why);
        exchange_leave_fetch(x, false);
        /* Framed by Content-Length: a close leaves the client short. */
        x->ops->done(x->owner, EXCHANGE_END_SHORT);
        return;
    case COALESCE_FAILED:
        /* A failure is the leader's request's: a follower asks on its own
         * (a render more, never an answer made for another request). */
        if (x->follower) {
            exchange_fall_back(x);
            return;
        }
        coalesce_failure(&x->reader, &status, &why);
        exchange_leave_fetch(x, false);
        x->ops->error(x->owner, status, gate_reason_name(why));
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
bool exchange_lead(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    x->may_lead = false;
    coalesce_fetch_t *f;
    coalesce_key_t key = exchange_key(x);
    switch (coalesce_attach(&ctx->coalesce, &key, &x->reader, exchange_on_fetch, x->relay.client, true, &f)) {
    case COALESCE_JOINED:
        exchange_log_attach(x, "joined");
        if (!exchange_keep_forwarded(x))
            return false;
        ctx->core->release(x, false);
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
                      .fetch = f, .peer = x, .gen = ctx->gen, .client = x->client};
    /* The slot it takes over is counted to the leader's address, for as
     * long as the driver holds it (it may outlive the leader's connection). */
    if (d->client)
        client_table_hold(d->client);
    ctx->gen->exchanges++;
    relay_init(&d->relay, NULL, NULL, NULL, 0, NULL);
    evtimer_assign(&dr->ttl_ev, ctx->upstream.base, exchange_on_ttl, d);
    dr->next = ctx->drivers;
    if (ctx->drivers)
        ctx->drivers->prev = dr;
    ctx->drivers = dr;
    dr->in_flight = true;
    ctx->fetches_driven++;
    x->buf = NULL;
    x->has_slot = false;
    x->peer = d;
    x->log->upstream_start_ns = clock_monotonic_ns();
    x->phase = EXCHANGE_FOLLOW;
    /* The leader waits like any reader (so a driver that fails at once
     * reaches it through the wake-up), then the driver starts. */
    exchange_read_fetch(x);
    ctx->core->begin(d);
    return true;
}

static exchange_driver_t *driver_of(exchange_t *d)
{
    return (exchange_driver_t *)((char *)d - offsetof(exchange_driver_t, x));
}

/* The fetch has its whole body, or failed: readers on other workers no
 * longer need this worker's loop. The last one lets a stopping worker go
 * (exchange_ctx_stop). */
static void exchange_driver_landed(exchange_driver_t *dr)
{
    exchange_ctx_t *ctx = dr->x.ctx;
    if (!dr->in_flight)
        return;
    dr->in_flight = false;
    if (--ctx->fetches_driven == 0 && ctx->on_idle)
        ctx->on_idle(ctx->on_idle_arg);
}

/* The driver goes; its fetch lives on as long as readers hold it. */
static void exchange_driver_end(exchange_t *d)
{
    exchange_driver_t *dr = driver_of(d);
    exchange_ctx_t *ctx = d->ctx;
    exchange_driver_landed(dr);
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
        ctx->core->leave_gen(d);
    if (d->client)
        client_table_put(&ctx->clients, d->client);
    free(dr);
}

void exchange_driver_fail(exchange_t *d, int status, gate_reason_t why)
{
    coalesce_fetch_fail(d->fetch, &d->ctx->coalesce, status, why);
    exchange_driver_end(d);
}

void exchange_driver_cut(exchange_t *d, gate_reason_t why)
{
    d->ctx->core->release(d, false);
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
    d->ctx->core->release(d, d->up_reusable);
    coalesce_fetch_done(d->fetch, &d->ctx->coalesce);
    exchange_driver_landed(dr);
    uint64_t keep = coalesce_fetch_ttl_left(d->fetch);
    if (keep && coalesce_fetch_upstream(d->fetch) != d->ctx->upstream.epoch) {
        /* A reload moved the upstream while it was in flight: its readers
         * have it, and no request of this worker's will join it again. */
        keep = 0;
        if (log_enabled(LOG_DEBUG))
            log_msg(LOG_DEBUG, "coalesce_dropped", "a fetch of the upstream before a reload is not kept");
    }
    if (keep == 0) {
        exchange_driver_end(d);
        return;
    }
    struct timeval tv = clock_timeval(keep);
    evtimer_add(&dr->ttl_ev, &tv);
}

/* Reads the body into the fetch until the upstream would block. */
void exchange_fill(exchange_t *d)
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
            ctx->core->cut(d, n == 0 ? GATE_REASON_UPSTREAM_CLOSED_EARLY : GATE_REASON_UPSTREAM_READ, true);
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
    x->ctx->core->on_head(x, resp, head_len);
}

/* The head is in, at d->buf + d->off. Shared when it is a complete 200
 * that any asker may have (http_response_is_shareable) within
 * coalesce.max_body; otherwise the readers ask on their own, the leader
 * with this very response. */
void exchange_share_head(exchange_t *d, const http_response_t *resp, size_t head_len)
{
    exchange_ctx_t *ctx = d->ctx;
    coalesce_fetch_t *f = d->fetch;
    bool shareable = http_response_is_shareable(d->buf + d->off, resp);
    size_t body_len = shareable ? (size_t)resp->content_length : 0;
    char *body = NULL;
    if (shareable && body_len <= ctx->cfg->coalesce.max_body) {
        /* The keep-alive head has no Connection line; the others are the
         * same with their line before the final CRLF (as
         * rewrite_response_head puts it): one rendering, three heads, one
         * after the other in head_out. */
        size_t n = rewrite_response_head(ctx->head_out, ctx->head_out_cap, d->buf + d->off, resp, false,
                                         HTTP_CONN_KEEP_ALIVE);
        const char *heads[HTTP_CONN__COUNT];
        size_t lens[HTTP_CONN__COUNT], at = n;
        bool fits = n > 0;
        for (int v = 0; v < HTTP_CONN__COUNT && fits; v++) {
            size_t line_len;
            const char *line = http_connection_line((http_conn_variant_t)v, &line_len);
            if (v == HTTP_CONN_KEEP_ALIVE) {
                heads[v] = ctx->head_out;
                lens[v] = n;
                continue;
            }
            fits = at + n + line_len <= ctx->head_out_cap;
            if (!fits)
                break;
            char *h = ctx->head_out + at;
            memcpy(h, ctx->head_out, n - 2);
            memcpy(h + n - 2, line, line_len);
            memcpy(h + n - 2 + line_len, "\r\n", 2);
            heads[v] = h;
            lens[v] = n + line_len;
            at += lens[v];
        }
        if (fits)
            body = coalesce_fetch_shared(f, &ctx->coalesce, resp->status, heads, lens, body_len);
    }
    if (!body) {
        coalesce_fetch_unshare(f, &ctx->coalesce);
        exchange_t *leader = d->peer;
        if (leader)
            exchange_hand_over(d, leader, resp, head_len);
        else
            ctx->core->release(d, false);
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

/* Fetches still in flight when the worker's loop ended fail for their
 * readers on other workers; kept ones are dropped. */
void exchange_drivers_destroy(exchange_ctx_t *x)
{
    while (x->drivers) {
        exchange_t *d = &x->drivers->x;
        bool kept = d->body && d->body_got == d->body_len;
        if (!kept) {
            x->core->release(d, false);
            if (d->body)
                coalesce_fetch_cut(d->fetch, &x->coalesce, GATE_REASON_UPSTREAM_CLOSED_EARLY);
            else
                coalesce_fetch_fail(d->fetch, &x->coalesce, 502, GATE_REASON_UPSTREAM_CLOSED);
        }
        exchange_driver_end(d);
    }
}

void exchange_driver_resent(exchange_t *d)
{
    coalesce_fetch_sent_to(d->fetch, d->ctx->upstream.epoch);
}

/* A kept fetch of an upstream the reload moved away from would only be
 * joined by requests of workers that have not switched yet, and it holds
 * its body against the gate-wide budget until its ttl is over: it goes.
 * A lowered ttl (or coalescing turned off) applies to what is kept, so an
 * operator who cuts it to stop serving answers of a moment ago gets that
 * at the reload, not up to 60 s later. In flight ones go on for the
 * readers they have (exchange_driver_done keeps them by the new ttl and
 * not at all for a moved upstream). The debug log says which went
 * (t_coalesce_reload waits on it). */
void exchange_drivers_reconfigure(exchange_ctx_t *x)
{
    const config_coalesce_t *cc = &x->cfg->coalesce;
    uint64_t ttl = cc->enabled ? cc->ttl_ms : 0;
    exchange_driver_t *dr = x->drivers;
    while (dr) {
        exchange_driver_t *next = dr->next;
        if (dr->in_flight) {
            dr = next;
            continue;
        }
        const char *why = NULL;
        uint64_t left = 0;
        if (coalesce_fetch_upstream(dr->x.fetch) != x->upstream.epoch)
            why = "a fetch kept for coalesce.ttl goes: the upstream moved";
        else if ((left = coalesce_fetch_keep_at_most(dr->x.fetch, ttl)) == 0 && ttl == 0)
            why = "a fetch kept for coalesce.ttl goes: the reload lowered the ttl to 0 or turned coalescing off";
        /* left 0 with a ttl: its time was over anyway (another worker's
         * lookup may have let it go first), its timer is due; no line. */
        if (why || left == 0) {
            exchange_driver_end(&dr->x);
            if (why && log_enabled(LOG_DEBUG))
                log_msg(LOG_DEBUG, "coalesce_dropped", "%s", why);
        } else {
            struct timeval tv = clock_timeval(left);
            evtimer_add(&dr->ttl_ev, &tv);   /* re-armed: at most the new ttl */
        }
        dr = next;
    }
}
