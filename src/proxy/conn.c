#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#include "core/cidr.h"
#include "core/clock.h"
#include "core/log.h"
#include "http/accept.h"
#include "http/path.h"
#include "http/proxy_proto.h"
#include "policy/decide.h"
#include "proxy/accesslog.h"
#include "proxy/conn.h"
#include "conn_held.h"
#include "proxy/exchange.h"
#include "proxy/local_response.h"
#include "proxy/shared_timeout.h"
#include "verdict/snapshot.h"

static void conn_on_read(evutil_socket_t fd, short what, void *arg);
static void conn_on_write(evutil_socket_t fd, short what, void *arg);
static void conn_on_timer(evutil_socket_t fd, short what, void *arg);
static void conn_read_head(conn_t *c);
static void conn_process_input(conn_t *c);
static void conn_process_heads(conn_t *c, conn_env_t *env);
static void conn_handshake(conn_t *c);

_Atomic uint32_t conn_total_open;

static void conn_on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_set_t *s = arg;
    while (s->closed) {
        conn_t *c = s->closed;
        s->closed = c->next;
        free(c);
    }
}

static void conn_quiet_arm(conn_set_t *s)
{
    struct timeval tv = clock_timeval(CONN_QUIET_MS);
    evtimer_add(&s->quiet_ev, &tv);
    s->quiet_on = true;
}

/* Gives the record buffers of the TLS connections that have been quiet
 * for CONN_QUIET_MS back to the allocator (tls.c keeps them while a
 * client asks again at once); comes back while any still holds them. */
static void conn_on_quiet(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_set_t *s = arg;
    uint32_t now = (uint32_t)clock_coarse_ms();
    bool more = false;
    for (conn_t *c = s->open; c; c = c->next) {
        if (!c->tls_bufs)
            continue;
        if (c->state == CONN_READ_HEAD && c->ilen == 0 && (uint32_t)(now - c->quiet_since_ms) >= CONN_QUIET_MS &&
            sockio_release_buffers(&c->io))
            c->tls_bufs = false;
        else
            more = true;
    }
    s->quiet_on = false;
    if (more)
        conn_quiet_arm(s);
}

/* A TLS connection is between requests (or just past its handshake) and
 * may hold OpenSSL's record buffers until the quiet sweep. */
static void conn_note_quiet(conn_t *c)
{
    if (!c->tls)
        return;
    c->tls_bufs = true;
    c->quiet_since_ms = (uint32_t)clock_coarse_ms();
    if (!c->env->conns.quiet_on)
        conn_quiet_arm(&c->env->conns);
}

int conn_set_init(conn_set_t *s, struct event_base *base, const config_limits_t *lim, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    evtimer_assign(&s->reap_ev, base, conn_on_reap, s);
    evtimer_assign(&s->quiet_ev, base, conn_on_quiet, s);
    s->limits = (http_limits_t){lim->max_header_bytes, lim->max_headers, lim->max_uri_bytes};
    s->req_fields = calloc(lim->max_headers, sizeof *s->req_fields);
    s->path_cap = lim->max_uri_bytes + 1;
    s->path = malloc(s->path_cap);
    if (!s->req_fields || !s->path || buf_pool_init(&s->head_bufs, lim->max_header_bytes, 256) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    http_request_init(&s->req, s->req_fields, lim->max_headers);
    conn_set_reconfigure(s, base, lim);
    return 0;
}

void conn_set_reconfigure(conn_set_t *s, struct event_base *base, const config_limits_t *lim)
{
    s->tv_send = shared_timeout(base, lim->send_timeout_ms, &s->tv_send_own);
}

void conn_set_destroy(conn_set_t *s)
{
    if (s->quiet_on)
        event_del(&s->quiet_ev);
    s->quiet_on = false;
    conn_on_reap(-1, 0, s);
    if (s->head_bufs.free)
        buf_pool_destroy(&s->head_bufs);
    free(s->req_fields);
    free(s->path);
}

static void conn_arm_read(conn_t *c, bool on)
{
    if (on == c->read_on)
        return;
    c->read_on = on;
    if (on)
        event_add(&c->rev, NULL);
    else
        event_del(&c->rev);
}

static void conn_arm_write(conn_t *c, bool on)
{
    if (on == c->write_waiting)
        return;
    c->write_waiting = on;
    if (on)
        event_add(&c->wev, c->env->conns.tv_send);
    else
        event_del(&c->wev);
}

static void conn_arm_timer(conn_t *c, uint64_t now, uint64_t at)
{
    uint64_t ms = at > now ? at - now : 0;
    struct timeval tv = clock_timeval(ms);
    event_add(&c->timer, &tv);
    c->timer_on = true;
    c->timer_ms = at;
}

/* Sets the connection's deadline (header, idle, queue or shared read) ms
 * from now, or clears it (CONN_DEADLINE_NONE). Moving it later costs a
 * store: the timer re-arms itself when it fires early, so requests do not
 * touch the timer. */
static void conn_deadline(conn_t *c, conn_deadline_t kind, uint64_t ms)
{
    c->deadline_kind = (uint8_t)kind;
    if (kind == CONN_DEADLINE_NONE)
        return;
    uint64_t now = clock_coarse_ms();
    c->deadline_ms = now + ms;
    if (!c->timer_on || c->deadline_ms < c->timer_ms)
        conn_arm_timer(c, now, c->deadline_ms);
}

void conn_accept(conn_env_t *env, int fd, const struct sockaddr *peer, socklen_t peer_len, void *tls_ctx,
                 uint32_t listener, const config_listener_t *lc)
{
    conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        atomic_fetch_sub_explicit(&conn_total_open, 1, memory_order_relaxed);
        return;
    }
    c->env = env;
    c->listener = listener;
    c->io.fd = fd;
    memcpy(&c->peer, peer, peer_len);
    c->peer_len = peer_len;
    event_assign(&c->rev, env->base, fd, EV_READ | EV_PERSIST, conn_on_read, c);
    event_assign(&c->wev, env->base, fd, EV_WRITE | EV_PERSIST, conn_on_write, c);
    evtimer_assign(&c->timer, env->base, conn_on_timer, c);
    conn_set_t *s = &env->conns;
    s->n_open++;
    metrics_conn_opened(&env->metrics, tls_ctx != NULL);
    c->next = s->open;
    if (s->open)
        s->open->prev = c;
    s->open = c;
    c->tls = tls_ctx != NULL;
    if (tls_ctx) {
        if (sockio_attach_ssl(&c->io, SSL_new(tls_ctx)) < 0) {
            conn_close(c);
            return;
        }
        SSL_set_accept_state(c->io.ssl);
        c->state = CONN_HANDSHAKE;
    } else {
        c->state = CONN_READ_HEAD;
    }
    if (lc && lc->proxy_protocol) {
        c->state = CONN_PROXY_HEADER;
        c->proxy_untrusted = !cidr_list_match(lc->trusted_proxies, lc->n_trusted_proxies, &c->peer);
    }
    /* The PROXY header, the handshake and the first head share the header deadline. */
    conn_deadline(c, CONN_DEADLINE_HEADER, env->cfg->limits.header_timeout_ms);
    conn_arm_read(c, true);
    /* Listeners use TCP_DEFER_ACCEPT: data is usually waiting already. */
    conn_on_read(fd, EV_READ, c);
}

/* A connection can be closed deep inside its own callback chain, so the
 * memory outlives it until the set's reap event frees it: callers only
 * need to look at c->state after a call that may have closed it. */
void conn_close(conn_t *c)
{
    conn_env_t *env = c->env;
    conn_set_t *s = &env->conns;
    if (c->state == CONN_CLOSED)
        return;
    if (c->state == CONN_EXCHANGE)
        exchange_abort(&c->exchange);
    if (c->share) {
        client_table_put(&env->exchange.clients, c->share);
        c->share = NULL;
    }
    event_del(&c->rev);
    event_del(&c->wev);
    event_del(&c->timer);
    if (c->broken)
        sockio_abort(&c->io);
    else
        sockio_close(&c->io);
    if (c->ibuf)
        buf_pool_put(&s->head_bufs, c->ibuf);
    if (c->out_ref)
        gate_snapshot_unref(c->out_ref);
    c->ibuf = NULL;
    c->out_ref = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->open = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->state = CONN_CLOSED;
    c->prev = NULL;
    c->next = s->closed;
    s->closed = c;
    event_active(&s->reap_ev, EV_TIMEOUT, 0);
    s->n_open--;
    metrics_conn_closed(&env->metrics, c->tls);
    atomic_fetch_sub_explicit(&conn_total_open, 1, memory_order_relaxed);
    /* A fetch driven here for readers elsewhere keeps the loop too. */
    if (env->stopping && s->n_open == 0 && !exchange_ctx_busy(&env->exchange))
        event_base_loopexit(env->base, NULL);
}

void conn_close_idle(conn_set_t *s)
{
    conn_t *next;
    for (conn_t *c = s->open; c; c = next) {
        next = c->next;
        c->draining = true;
        if ((c->state == CONN_READ_HEAD && c->ilen == 0) || c->state == CONN_HANDSHAKE ||
            c->state == CONN_PROXY_HEADER)
            conn_close(c);
    }
}

void conn_drain_listener(conn_set_t *s, uint32_t listener)
{
    conn_t *next;
    for (conn_t *c = s->open; c; c = next) {
        next = c->next;
        if (c->listener != listener)
            continue;
        c->draining = true;
        /* A handshake under way still gets its one request answered. */
        if (c->state == CONN_READ_HEAD && c->ilen == 0)
            conn_close(c);
    }
}

void conn_close_all(conn_set_t *s)
{
    while (s->open)
        conn_close(s->open);
    conn_on_reap(-1, 0, s);
}

/* Drops the finished request's head; pipelined bytes move to the front. */
static void conn_consume_head(conn_t *c)
{
    uint32_t rest = c->ilen - c->head_len;
    if (rest)
        memmove(c->ibuf, c->ibuf + c->head_len, rest);
    c->ilen = rest;
    c->head_len = 0;
    if (rest == 0 && c->ibuf) {
        /* Idle keep-alive connections hold no buffer. */
        buf_pool_put(&c->env->conns.head_bufs, c->ibuf);
        c->ibuf = NULL;
    }
}

static void conn_log_request(conn_t *c)
{
    conn_env_t *env = c->env;
    if (env->cfg->log.access)
        accesslog_write(&env->log_clock, &c->log, c->ibuf, &c->peer, c->tls);
    uint64_t duration_ns = c->log.start_ns ? clock_monotonic_ns() - c->log.start_ns : 0;
    metrics_request(&c->env->metrics, c->log.pool, c->log.decision, c->log.status, duration_ns);
}

/* The connection closes once the response under way is out. */
static bool conn_will_close(const conn_t *c)
{
    return c->close_after || !c->keep_alive || c->draining;
}

static void conn_next_request(conn_t *c)
{
    bool close_now = conn_will_close(c);
    conn_log_request(c);
    conn_consume_head(c);
    if (close_now) {
        conn_close(c);
        return;
    }
    c->state = CONN_READ_HEAD;
    c->out = NULL;
    c->out_len = c->out_off = 0;
    if (c->out_ref) {
        gate_snapshot_unref(c->out_ref);
        c->out_ref = NULL;
    }
    memset(&c->log, 0, sizeof c->log);
    conn_deadline(c, CONN_DEADLINE_IDLE, c->env->cfg->limits.idle_timeout_ms);
    conn_note_quiet(c);
    conn_arm_write(c, false);
    conn_arm_read(c, true);
    /* Answered from within conn_process_input: its loop goes on with the
     * next pipelined head, without a stack frame per request. */
    if (c->processing)
        return;
    if (c->ilen) {
        conn_process_input(c);
    } else if (sockio_pending(&c->io)) {
        conn_read_head(c);
    }
}


/* Writes what is left of a local response; true when all is written. */
static bool conn_flush_local(conn_t *c)
{
    while (c->out_off < c->out_len) {
        /* A TLS answer that ends the connection shares its segment with
         * the close_notify that follows at once. */
        unsigned more = c->tls && conn_will_close(c) ? SOCKIO_MORE : 0;
        ssize_t n = sockio_write(&c->io, c->out + c->out_off, c->out_len - c->out_off, more);
        if (n > 0) {
            c->out_off += (size_t)n;
            c->log.bytes += (uint64_t)n;
            continue;
        }
        if (n == SOCKIO_WANT_WRITE || n == SOCKIO_WANT_READ) {
            conn_arm_write(c, true);
            return false;
        }
        conn_log_request(c);
        conn_close(c);
        return false;
    }
    return true;
}

static void conn_send_local(conn_t *c, const char *data, size_t len, gate_snapshot_t *ref, bool close_after)
{
    c->state = CONN_WRITE_LOCAL;
    c->out = data;
    c->out_len = len;
    c->out_off = 0;
    if (ref)
        gate_snapshot_ref(ref);
    if (c->out_ref)
        gate_snapshot_unref(c->out_ref);
    c->out_ref = ref;
    c->close_after = close_after;
    /* Read interest stays on when the answer goes out at once, as it
     * nearly always does: no epoll_ctl per request. */
    if (conn_flush_local(c))
        conn_next_request(c);
    else if (c->state == CONN_WRITE_LOCAL)
        conn_arm_read(c, false);
}

/* An error answered with an empty body: status, reason, whether to close. */
static void conn_send_error(conn_t *c, int status, const char *reason, bool close_after)
{
    size_t len;
    const char *text = local_response(&status, http_conn_variant(!close_after, c->http10), &len);
    c->log.status = status;
    c->log.reason = reason;
    conn_send_local(c, text, len, NULL, close_after);
}

/* ---- what the exchange answers by (exchange_owner_ops_t) --------------- */

/* Ended (exchange_end_t): the connection goes on with the next request,
 * or closes (reset, for a body the close was to delimit). */
static void conn_exchange_done(void *owner, exchange_end_t how)
{
    conn_t *c = owner;
    c->state = CONN_READ_HEAD;
    if (how != EXCHANGE_END_COMPLETE)
        c->keep_alive = false;
    c->broken = how == EXCHANGE_END_RESET;
    conn_end_hold(c, how);
    conn_next_request(c);
}

static void conn_exchange_error(void *owner, int status, const char *reason)
{
    conn_send_error(owner, status, reason, false);
}

static void conn_exchange_deadline(void *owner, exchange_wait_t wait, uint64_t ms)
{
    static const uint8_t kind[] = {
        [EXCHANGE_WAIT_NONE] = CONN_DEADLINE_NONE,
        [EXCHANGE_WAIT_QUEUE] = CONN_DEADLINE_QUEUE,
        [EXCHANGE_WAIT_READ] = CONN_DEADLINE_READ,
    };
    conn_deadline(owner, (conn_deadline_t)kind[wait], ms);
}

static void conn_exchange_arm_write(void *owner, bool on)
{
    conn_arm_write(owner, on);
}

static void conn_exchange_keep_alive_off(void *owner)
{
    ((conn_t *)owner)->keep_alive = false;
}

static bool conn_exchange_will_close(const void *owner)
{
    return conn_will_close(owner);
}

static const exchange_owner_ops_t conn_exchange_ops = {
    .done = conn_exchange_done,
    .error = conn_exchange_error,
    .deadline = conn_exchange_deadline,
    .arm_write = conn_exchange_arm_write,
    .keep_alive_off = conn_exchange_keep_alive_off,
    .will_close = conn_exchange_will_close,
};

/* An admission policy refused the request or the connection: its status
 * with a Skewgate-Reason field, counted by reason. */
static void conn_refuse(conn_t *c, admission_result_t why, bool close_after)
{
    int status;
    size_t len;
    const char *text = local_response_admission(why, http_conn_variant(!close_after, c->http10), &status, &len);
    c->log.status = status;
    c->log.reason = admission_reason_name(why);
    metrics_admission_reject(&c->env->metrics, why);
    conn_send_local(c, text, len, NULL, close_after);
}

static void conn_copy_pool(conn_t *c, const char *clean, size_t len)
{
    /* The MCS takes the last path segment as the pool name. */
    http_slice_t seg = http_path_last_segment(clean, len);
    size_t n = seg.len < sizeof c->log.pool ? seg.len : sizeof c->log.pool - 1;
    memcpy(c->log.pool, clean + seg.off, n);
    c->log.pool[n] = '\0';
}

/* A rejected request's answer: the verdict's, or the evidence one when
 * evidence holds the node (its own reason, the same reject mode). */
static void conn_reject(conn_t *c, const gate_snapshot_t *snap, bool evidence)
{
    const http_request_t *req = &c->env->conns.req;
    int spec = 0;
    if (snap->mode == REJECT_EXPLAIN) {
        const http_header_t *accept = http_headers_get(&req->headers, HTTP_HDR_ACCEPT);
        spec = accept ? http_accept_ignition_spec(snap->mcs_family, c->ibuf + accept->value.off, accept->value.len)
                      : http_accept_ignition_spec(snap->mcs_family, NULL, 0);
    }
    http_conn_variant_t variant = http_conn_variant(c->keep_alive, c->http10);
    const gate_response_t *r = evidence ? gate_snapshot_evidence(snap, spec, variant)
                                        : gate_snapshot_reject(snap, spec, variant);
    c->log.decision = REQUEST_REJECT;
    c->log.reason = evidence ? GATE_EVIDENCE_REASON : verdict_reason_name(snap->verdict.reason);
    if (evidence)
        metrics_add(&c->env->metrics.evidence_held, 1);
    c->log.status = snap->mode == REJECT_HOLD ? HELD_STATUS
                    : snap->mode == REJECT_DENY ? 403
                    : spec == IGNITION_SPEC_UNSUPPORTED ? 400
                    : spec == IGNITION_SPEC_UNCONVERTIBLE ? 500 : 200;
    conn_record_held(c, c->log.reason, c->log.status);
    conn_send_local(c, r->data, c->is_head ? r->head_len : r->len, (gate_snapshot_t *)snap, !c->keep_alive);
}

/* One complete request head is in ibuf[0..head_len): judge and answer it. */
static void conn_dispatch(conn_t *c)
{
    conn_env_t *env = c->env;
    const http_request_t *req = &env->conns.req;
    c->log.start_ns = clock_monotonic_ns();
    c->log.method_off = req->method_name.off;
    c->log.method_len = req->method_name.len;
    c->log.path_off = req->target.off;
    c->log.path_len = req->target.len;
    const http_header_t *ua = http_headers_get(&req->headers, HTTP_HDR_USER_AGENT);
    if (ua) {
        c->log.ua_off = ua->value.off;
        c->log.ua_len = ua->value.len;
    }
    c->http10 = req->version_minor == 0;
    c->keep_alive = req->keep_alive && !c->draining;
    c->is_head = req->method == HTTP_METHOD_HEAD;

    if (req->method != HTTP_METHOD_GET && req->method != HTTP_METHOD_HEAD) {
        /* The MCS answers 405 to every other method on every path; answering
         * it here means a request body is never forwarded. The body may
         * follow on the connection, so close it. */
        conn_send_error(c, 405, "MethodNotAllowed", true);
        return;
    }
    if (req->has_body) {
        conn_send_error(c, 400, "BodyOnGet", true);
        return;
    }
    char *clean = env->conns.path;
    size_t clean_len;
    if (http_path_normalize(c->ibuf + req->path.off, req->path.len, clean, env->conns.path_cap, &clean_len) < 0) {
        conn_send_error(c, 400, "BadPath", true);
        return;
    }
    policy_request_t rq = {.head = c->ibuf, .req = req, .clean = clean, .clean_len = clean_len, .peer = &c->peer};
    policy_view_t view = {.cfg = env->cfg, .tokens = env->tokens, .addresses = env->addrset, .snapshot = env->snapshot};
    policy_decision_t d = policy_decide(&rq, &view);
    if (d.action != POLICY_PASS)
        conn_copy_pool(c, clean, clean_len);
    if (d.action == POLICY_PACE) {
        pace_decision_t p = pace_decide(env->pace, &env->cfg->pace, &c->peer, c->log.pool, clock_coarse_ms());
        c->log.pace_cause = p.cause == PACE_ADMITTED ? NULL : pace_cause_name(p.cause);
        c->log.pace_place = p.place;
        d = p.cause == PACE_ADMITTED ? (policy_decision_t){.action = POLICY_ADMIT}
                                     : (policy_decision_t){.action = POLICY_REFUSE, .refusal = ADMISSION_PACED};
    }
    switch (d.action) {
    case POLICY_PASS:
        c->log.decision = REQUEST_PASS;
        break;
    case POLICY_REFUSE:
        c->log.decision = REQUEST_REJECT;
        /* The pace room keeps the paced ones, each with its pool and
         * place: the held table would keep them twice. */
        if (d.refusal != ADMISSION_PACED)
            conn_record_refused(c, d.refusal);
        conn_refuse(c, d.refusal, !c->keep_alive);
        return;
    case POLICY_REJECT:
    case POLICY_EVIDENCE:
        conn_reject(c, view.snapshot, d.action == POLICY_EVIDENCE);
        return;
    case POLICY_PACE:       /* the room answered above: admit or refuse */
    case POLICY_ADMIT:
        c->log.decision = REQUEST_ADMIT;
        c->log.reason = verdict_reason_name(view.snapshot->verdict.reason);
        break;
    }
    /* The exchange rewrites the request from its parse before this call
     * returns: what it reads of it later is its own (exchange_request_t). */
    c->state = CONN_EXCHANGE;
    conn_arm_read(c, false);
    /* Looked up once a connection (the PROXY header has told its address
     * by now), and only for one that goes upstream. */
    if (!c->share)
        c->share = client_table_get(&env->exchange.clients, &c->peer);
    exchange_request_t xr = {.head = c->ibuf, .parse = req, .peer = &c->peer, .client = &c->io,
                             .share = c->share, .http10 = c->http10, .is_head = c->is_head,
                             .keep_alive = c->keep_alive};
    exchange_start(&c->exchange, &env->exchange, &xr, c, &conn_exchange_ops, &c->log);
}

/* Parses and answers the requests buffered in ibuf, until one goes to the
 * upstream, a write blocks, or the buffer holds no complete head. */
static void conn_process_input(conn_t *c)
{
    conn_env_t *env = c->env;
    c->processing = true;
    conn_process_heads(c, env);
    c->processing = false;
}

static void conn_process_heads(conn_t *c, conn_env_t *env)
{
    while (c->state == CONN_READ_HEAD && c->ilen > 0) {
        /* The parse state is the worker's, shared by its connections, so
         * each call starts afresh; a head is at most max_header_bytes. */
        http_request_reset(&env->conns.req);
        int r = http_request_parse(c->ibuf, c->ilen, &env->conns.limits, &env->conns.req);
        if (r == 0) {
            if (c->deadline_kind != CONN_DEADLINE_HEADER)
                conn_deadline(c, CONN_DEADLINE_HEADER, env->cfg->limits.header_timeout_ms);
            return;
        }
        conn_deadline(c, CONN_DEADLINE_NONE, 0);
        if (r < 0) {
            c->head_len = c->ilen;
            c->log.start_ns = clock_monotonic_ns();
            conn_send_error(c, -r, "MalformedRequest", true);
            return;
        }
        c->head_len = (uint32_t)r;
        conn_dispatch(c);
    }
}

static void conn_read_head(conn_t *c)
{
    conn_env_t *env = c->env;
    for (;;) {
        if (!c->ibuf) {
            c->ibuf = buf_pool_get(&env->conns.head_bufs);
            if (!c->ibuf) {
                conn_close(c);
                return;
            }
        }
        size_t room = env->conns.head_bufs.size - c->ilen;
        if (room == 0) {
            /* The parser answers 431 before the buffer fills; belt and braces. */
            c->head_len = c->ilen;
            conn_send_error(c, 431, "HeaderTooLarge", true);
            return;
        }
        ssize_t n = sockio_read(&c->io, c->ibuf + c->ilen, room);
        if (n > 0) {
            c->ilen += (uint32_t)n;
            conn_process_input(c);
            if (c->state != CONN_READ_HEAD)
                return;
            /* Plain: a short read drained the socket; level-triggered
             * polling tells us of more. TLS: decrypted bytes may wait
             * inside OpenSSL where poll cannot see them. */
            if ((size_t)n < room && !sockio_pending(&c->io))
                return;
            continue;
        }
        if (n == SOCKIO_WANT_READ) {
            if (c->ilen == 0 && c->ibuf) {
                buf_pool_put(&env->conns.head_bufs, c->ibuf);
                c->ibuf = NULL;
            }
            return;
        }
        if (n == SOCKIO_WANT_WRITE) {
            conn_arm_write(c, true);
            return;
        }
        conn_close(c); /* end of stream or error, between or inside heads */
        return;
    }
}

/* A PROXY header that is missing, invalid, late or from a peer outside
 * trusted_proxies: 400 and close, in the clear, as nothing else was read
 * (on a TLS listener the client sees a failed handshake, its proxy logs
 * the answer). */
static void conn_proxy_refuse(conn_t *c, admission_result_t why)
{
    sockio_drop_ssl(&c->io);
    c->ilen = c->head_len = 0;
    c->log.start_ns = clock_monotonic_ns();
    c->log.decision = REQUEST_ERROR;
    conn_deadline(c, CONN_DEADLINE_NONE, 0);
    conn_refuse(c, why, true);
}

/* Reads the PROXY header and not a byte more: the bytes are peeked, and
 * only those the header spans are taken from the socket, so that TLS
 * records or the request head that follow stay for their readers. */
static void conn_read_proxy_header(conn_t *c)
{
    conn_env_t *env = c->env;
    if (!c->ibuf && !(c->ibuf = buf_pool_get(&env->conns.head_bufs))) {
        conn_close(c);
        return;
    }
    ssize_t n = sockio_recv_plain(&c->io, c->ibuf + c->ilen, PROXY_HDR_MAX - c->ilen, true);
    if (n == SOCKIO_WANT_READ)
        return;
    if (n <= 0) {
        conn_close(c);
        return;
    }
    proxy_hdr_t hdr;
    int r = proxy_hdr_parse((const unsigned char *)c->ibuf, c->ilen + (size_t)n, &hdr);
    if (r < 0) {
        conn_proxy_refuse(c, ADMISSION_BAD_PROXY_HEADER);
        return;
    }
    size_t take = r > 0 ? (size_t)r - c->ilen : (size_t)n;
    if (sockio_recv_plain(&c->io, c->ibuf + c->ilen, take, false) != (ssize_t)take) {
        conn_close(c);
        return;
    }
    c->ilen += (uint32_t)take;
    if (r == 0)
        return;
    c->ilen = 0;
    if (c->proxy_untrusted) {
        conn_proxy_refuse(c, ADMISSION_UNTRUSTED_PROXY);
        return;
    }
    if (hdr.has_addr) {
        memcpy(&c->peer, &hdr.src, hdr.addr_len);
        c->peer_len = hdr.addr_len;
    }
    if (c->io.ssl) {
        c->state = CONN_HANDSHAKE;
        conn_handshake(c);
    } else {
        c->state = CONN_READ_HEAD;
        conn_read_head(c);
    }
}

static void conn_handshake(conn_t *c)
{
    int r = sockio_handshake(&c->io);
    if (r == 1) {
        c->state = CONN_READ_HEAD;
        conn_arm_write(c, false);
        conn_note_quiet(c);
        conn_read_head(c);
    } else if (r == SOCKIO_WANT_WRITE) {
        conn_arm_write(c, true);
    } else if (r == SOCKIO_WANT_READ) {
        conn_arm_write(c, false);
    } else {
        conn_close(c);
    }
}

static void conn_on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    conn_t *c = arg;
    (void)what;
    switch (c->state) {
    case CONN_PROXY_HEADER:
        conn_read_proxy_header(c);
        break;
    case CONN_HANDSHAKE:
        conn_handshake(c);
        break;
    case CONN_READ_HEAD:
        conn_read_head(c);
        break;
    default:
        break;
    }
}

static void conn_on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    conn_t *c = arg;
    if (what & EV_TIMEOUT) {
        /* The client stopped reading for send_timeout: the request is
         * logged (it was not, and a cut client vanished from the access
         * log and the request metrics), then the connection closes. */
        if (c->state == CONN_EXCHANGE) {
            if (!exchange_client_stalled(&c->exchange))
                conn_close(c); /* nothing of the response out yet: the exchange goes with it */
            return;
        }
        if (c->state == CONN_WRITE_LOCAL) {
            c->log.reason = gate_reason_name(GATE_REASON_CLIENT_SEND_TIMEOUT);
            conn_log_request(c);
        }
        conn_close(c);
        return;
    }
    switch (c->state) {
    case CONN_HANDSHAKE:
        conn_handshake(c);
        break;
    case CONN_READ_HEAD:
        conn_arm_write(c, false);
        conn_read_head(c);
        break;
    case CONN_WRITE_LOCAL:
        if (conn_flush_local(c))
            conn_next_request(c);
        break;
    case CONN_EXCHANGE:
        exchange_on_client_writable(&c->exchange);
        break;
    default:
        conn_arm_write(c, false);
        break;
    }
}

static void conn_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_t *c = arg;
    c->timer_on = false;
    if (c->deadline_kind == CONN_DEADLINE_NONE)
        return;
    uint64_t now = clock_coarse_ms();
    if (now < c->deadline_ms) {
        conn_arm_timer(c, now, c->deadline_ms); /* moved later since armed */
        return;
    }
    conn_deadline_t kind = (conn_deadline_t)c->deadline_kind;
    c->deadline_kind = CONN_DEADLINE_NONE;
    switch (kind) {
    case CONN_DEADLINE_HEADER:
        if (c->state == CONN_PROXY_HEADER) {
            conn_proxy_refuse(c, ADMISSION_BAD_PROXY_HEADER);
        } else if (c->state == CONN_READ_HEAD && c->ilen > 0) {
            /* The head did not complete within header_timeout. */
            c->head_len = c->ilen;
            c->log.start_ns = clock_monotonic_ns();
            conn_send_error(c, 408, "HeaderTimeout", true);
        } else if (c->state == CONN_HANDSHAKE || c->state == CONN_READ_HEAD) {
            conn_close(c);
        }
        break;
    case CONN_DEADLINE_IDLE:
        if (c->state == CONN_READ_HEAD)
            conn_close(c);
        break;
    case CONN_DEADLINE_QUEUE:
        if (c->state == CONN_EXCHANGE)
            exchange_queue_timeout(&c->exchange);
        break;
    case CONN_DEADLINE_READ:
        if (c->state == CONN_EXCHANGE)
            exchange_read_timeout(&c->exchange);
        break;
    default:
        break;
    }
}
