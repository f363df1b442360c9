#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <openssl/err.h>

#include "core/clock.h"
#include "http/response.h"
#include "http/chunked.h"
#include "source/kube/client.h"
#include "os/socket.h"
#include "os/sockio.h"
#include "tls/tls.h"

#define HEAD_MAX (64u << 10)
#define HEAD_FIELDS 64
/* Reads per wake-up: a fast stream must not starve the rest of the loop. */
#define READS_PER_WAKE 16
/* A body buffer larger than this is given back when the next request
 * starts: a list page may have grown it to KUBE_BODY_MAX, the watch that
 * follows needs a line at a time. Back to the system, not just to malloc:
 * glibc, once it has unmapped one such buffer, raises its mmap threshold
 * past it and serves the next from the heap, which it does not trim; so
 * the free is followed by malloc_trim (1,000 Nodes of ~20 KiB listed: RSS
 * 27.7 MB after the free alone, 24.6 MB keeping the buffer, 10.3 MB with
 * the trim, from a 24.4 MB peak). Once per list page at most. */
#define BODY_KEEP (256u << 10)

typedef enum {
    KC_IDLE,
    KC_CONNECTING,
    KC_HANDSHAKE,
    KC_SENDING,
    KC_HEAD,
    KC_BODY,
} kc_state_t;

struct kube_client {
    struct event_base *base;
    kube_endpoint_t ep;
    SSL_CTX *const *tls_ctx;    /* the owner's slot (kube_client_new) */
    bool insecure;
    kube_client_cbs_t cbs;
    void *arg;

    kc_state_t state;
    uint64_t generation;        /* bumped by every request and cancel */
    sockio_t io;
    struct event *io_ev;
    struct event *timer;
    struct evdns_base *dns;     /* the API server's name, off the loop's back */
    struct evdns_getaddrinfo_request *resolving;
    bool in_send;               /* kube_client_send is on the stack */
    int resolved_rc;            /* what a resolution during in_send said */
    struct evutil_addrinfo *addrs, *addr;   /* addr: the one being tried */

    char *req;                  /* holds the token: wiped when done */
    size_t req_len, req_sent;
    kube_body_mode_t mode;
    uint64_t idle_timeout_ms;

    char head[HEAD_MAX];        /* the head, then raw body bytes */
    size_t head_len;
    http_header_t fields[HEAD_FIELDS];
    http_response_t resp;
    http_chunked_t chunked;
    uint64_t length_left;       /* HTTP_BODY_LENGTH */
    bool lines;                 /* this body goes to on_line */

    char *body;                 /* decoded body (or the line being built) */
    size_t body_len, body_cap, scanned;
    uint64_t arrived_ns;
};

static void arm_timer(kube_client_t *c, uint64_t ms)
{
    struct timeval tv = clock_timeval(ms);
    evtimer_add(c->timer, &tv);
}

static void close_connection(kube_client_t *c)
{
    if (c->io_ev) {
        event_free(c->io_ev);
        c->io_ev = NULL;
    }
    evtimer_del(c->timer);
    sockio_close(&c->io);
    if (c->resolving) {
        /* libevent owns the lookup; its callback still comes, once, from
         * the loop and never from here, with EVUTIL_EAI_CANCEL. */
        struct evdns_getaddrinfo_request *q = c->resolving;
        c->resolving = NULL;
        evdns_getaddrinfo_cancel(q);
    }
    if (c->addrs) {
        evutil_freeaddrinfo(c->addrs);
        c->addrs = c->addr = NULL;
    }
    if (c->req) {
        explicit_bzero(c->req, c->req_len);
        free(c->req);
        c->req = NULL;
    }
    c->state = KC_IDLE;
}

void kube_client_cancel(kube_client_t *c)
{
    c->generation++;
    close_connection(c);
}

/* Ends the request and tells the caller, last: it may start another. */
static void finish(kube_client_t *c, bool complete, const char *error, const char *detail)
{
    kube_response_t r = {
        .status = c->state >= KC_BODY ? c->resp.status : 0,
        .complete = complete,
        .error = error,
        .body = c->body,
        .body_len = c->lines ? 0 : c->body_len,
        .too_large = error && !strcmp(error, "response body too large"),
    };
    snprintf(r.detail, sizeof r.detail, "%s", detail ? detail : "");
    close_connection(c);
    c->generation++;
    c->cbs.on_done(c->arg, &r);
}

static void fail(kube_client_t *c, const char *error) { finish(c, false, error, NULL); }

static void on_io(evutil_socket_t fd, short what, void *arg);

/* The event is not pending here (one-shot, or deleted first), so it may be
 * re-assigned for the other direction. */
static void wait_io(kube_client_t *c, short what)
{
    event_del(c->io_ev);
    event_assign(c->io_ev, c->base, c->io.fd, what, on_io, c);
    event_add(c->io_ev, NULL);
}

static int body_append(kube_client_t *c, const char *p, size_t n)
{
    if (n > KUBE_BODY_MAX - c->body_len)
        return -1;
    if (c->body_len + n > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 16384;
        while (cap < c->body_len + n)
            cap *= 2;
        if (cap > KUBE_BODY_MAX)
            cap = KUBE_BODY_MAX;
        char *grown = realloc(c->body, cap);
        if (!grown)
            return -1;
        c->body = grown;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, p, n);
    c->body_len += n;
    return 0;
}

/* Hands over every complete line. false when a callback took the client
 * over (a new request or a cancel): stop touching it. */
static bool deliver_lines(kube_client_t *c, bool at_end)
{
    uint64_t gen = c->generation;
    size_t start = 0;
    for (;;) {
        char *nl = memchr(c->body + c->scanned, '\n', c->body_len - c->scanned);
        size_t end = nl ? (size_t)(nl - c->body) : c->body_len;
        if (!nl && !(at_end && end > start))
            break;
        c->scanned = nl ? end + 1 : end;
        size_t len = end - start;
        if (len > 0 && c->body[start + len - 1] == '\r')
            len--;
        if (len > 0) {
            c->cbs.on_line(c->arg, c->body + start, len, c->arrived_ns);
            if (c->generation != gen)
                return false;
        }
        start = c->scanned;
        if (!nl)
            break;
    }
    memmove(c->body, c->body + start, c->body_len - start);
    c->body_len -= start;
    c->scanned = c->body_len;
    return true;
}

/* Decoded body bytes. false when the request is over (failed, or taken
 * over by a callback). */
static bool take_data(kube_client_t *c, const char *p, size_t n)
{
    if (n == 0)
        return true;
    if (body_append(c, p, n) < 0) {
        fail(c, c->lines ? "watch event line too long" : "response body too large");
        return false;
    }
    return !c->lines || deliver_lines(c, false);
}

/* The message is complete. */
static void body_done(kube_client_t *c)
{
    if (c->lines && !deliver_lines(c, true))
        return;
    finish(c, true, NULL, NULL);
}

/* Raw body bytes as read. false when the request is over. */
static bool feed_body(kube_client_t *c, const char *p, size_t n)
{
    switch (c->resp.body) {
    case HTTP_BODY_NONE:
        body_done(c);
        return false;
    case HTTP_BODY_LENGTH: {
        size_t take = n < c->length_left ? n : (size_t)c->length_left;
        if (!take_data(c, p, take))
            return false;
        c->length_left -= take;
        if (c->length_left == 0) {
            body_done(c);
            return false;
        }
        return true;
    }
    case HTTP_BODY_UNTIL_CLOSE:
        return take_data(c, p, n);
    case HTTP_BODY_CHUNKED:
        /* Every step consumes at least one byte until the message ends. */
        while (n > 0 && !http_chunked_done(&c->chunked)) {
            http_slice_t data;
            ssize_t used = http_chunked_step(&c->chunked, p, n, &data);
            if (used < 0) {
                fail(c, "invalid chunked body");
                return false;
            }
            if (!take_data(c, HTTP_SLICE_PTR(p, data), data.len))
                return false;
            if (used == 0)
                break;
            p += used;
            n -= (size_t)used;
        }
        if (http_chunked_done(&c->chunked)) {
            body_done(c);
            return false;
        }
        return true;
    }
    return true;
}

static bool on_head(kube_client_t *c, size_t head_len)
{
    c->state = KC_BODY;
    c->lines = c->mode == KUBE_BODY_LINES && c->resp.status >= 200 && c->resp.status < 300;
    c->length_left = c->resp.content_length > 0 ? (uint64_t)c->resp.content_length : 0;
    if (c->resp.body == HTTP_BODY_LENGTH && c->length_left > KUBE_BODY_MAX) {
        fail(c, "response body too large");
        return false;
    }
    http_chunked_init(&c->chunked);
    arm_timer(c, c->idle_timeout_ms);
    if (c->resp.body == HTTP_BODY_LENGTH && c->length_left == 0) {
        body_done(c);
        return false;
    }
    return feed_body(c, c->head + head_len, c->head_len - head_len);
}

/* Bytes from the socket. false when the request is over. */
static bool got_bytes(kube_client_t *c, size_t n)
{
    c->arrived_ns = clock_monotonic_ns();
    if (c->state == KC_BODY) {
        arm_timer(c, c->idle_timeout_ms);
        return feed_body(c, c->head, n);
    }
    c->head_len += n;
    static const http_limits_t limits = {HEAD_MAX, HEAD_FIELDS, 0};
    int rc = http_response_parse(c->head, c->head_len, &limits, false, &c->resp);
    if (rc < 0) {
        finish(c, false, "invalid response head", c->resp.error);
        return false;
    }
    if (rc == 0)
        return true;
    if (c->resp.status < 200) {
        /* An interim answer; the real one follows it. */
        memmove(c->head, c->head + rc, c->head_len - (size_t)rc);
        c->head_len -= (size_t)rc;
        http_response_reset(&c->resp);
        return c->head_len == 0 || got_bytes(c, 0);
    }
    return on_head(c, (size_t)rc);
}

static void do_read(kube_client_t *c)
{
    for (int i = 0; i < READS_PER_WAKE; i++) {
        char *at = c->state == KC_BODY ? c->head : c->head + c->head_len;
        size_t room = c->state == KC_BODY ? sizeof c->head : sizeof c->head - c->head_len;
        if (room == 0) {
            fail(c, "response head too large");
            return;
        }
        ssize_t n = sockio_read(&c->io, at, room);
        if (n == SOCKIO_WANT_READ || n == SOCKIO_WANT_WRITE) {
            wait_io(c, n == SOCKIO_WANT_READ ? EV_READ : EV_WRITE);
            return;
        }
        if (n < 0) {
            fail(c, c->state == KC_BODY ? "connection lost during the body" : "connection lost");
            return;
        }
        if (n == 0) {
            if (c->state == KC_BODY && c->resp.body == HTTP_BODY_UNTIL_CLOSE)
                body_done(c);
            else
                fail(c, c->state == KC_BODY ? "connection closed before the body ended"
                                            : "connection closed before the response head");
            return;
        }
        if (!got_bytes(c, (size_t)n))
            return;
    }
    /* More may be waiting, in the socket or inside OpenSSL: come back soon. */
    event_active(c->io_ev, EV_READ, 0);
}

static void do_send(kube_client_t *c)
{
    while (c->req_sent < c->req_len) {
        ssize_t n = sockio_write(&c->io, c->req + c->req_sent, c->req_len - c->req_sent, 0);
        if (n == SOCKIO_WANT_READ || n == SOCKIO_WANT_WRITE) {
            wait_io(c, n == SOCKIO_WANT_READ ? EV_READ : EV_WRITE);
            return;
        }
        if (n < 0) {
            fail(c, "connection lost while sending the request");
            return;
        }
        c->req_sent += (size_t)n;
    }
    explicit_bzero(c->req, c->req_len);
    c->state = KC_HEAD;
    http_response_init(&c->resp, c->fields, HEAD_FIELDS);
    c->head_len = 0;
    do_read(c);
}

static void tls_failure(kube_client_t *c)
{
    char detail[256];
    long verify = SSL_get_verify_result(c->io.ssl);
    unsigned long e = ERR_peek_error();
    if (verify != X509_V_OK)
        snprintf(detail, sizeof detail, "certificate verify failed: %s",
                 X509_verify_cert_error_string(verify));
    else if (e)
        ERR_error_string_n(e, detail, sizeof detail);
    else
        snprintf(detail, sizeof detail, "connection closed");
    ERR_clear_error();
    finish(c, false, "TLS handshake failed", detail);
}

static void do_handshake(kube_client_t *c)
{
    /* sockio clears the error queue first: look before it is lost. */
    int rc = sockio_handshake(&c->io);
    if (rc == 1) {
        c->state = KC_SENDING;
        do_send(c);
    } else if (rc == SOCKIO_WANT_READ || rc == SOCKIO_WANT_WRITE) {
        wait_io(c, rc == SOCKIO_WANT_READ ? EV_READ : EV_WRITE);
    } else {
        tls_failure(c);
    }
}

/* The owner's context as it is now (kube_client_new); NULL when it has none. */
static SSL_CTX *tls_ctx_now(const kube_client_t *c)
{
    return c->tls_ctx ? *c->tls_ctx : NULL;
}

static int start_tls(kube_client_t *c, char *detail, size_t len)
{
    SSL_CTX *ctx = tls_ctx_now(c);
    bool attached = ctx && sockio_attach_ssl(&c->io, SSL_new(ctx)) == 0;
    if (!attached || tls_api_prepare(c->io.ssl, c->ep.host, c->insecure, detail, len) < 0) {
        if (!attached)
            snprintf(detail, len, ctx ? "out of memory" : "no TLS context");
        ERR_clear_error();
        return -1;
    }
    SSL_set_connect_state(c->io.ssl);
    c->state = KC_HANDSHAKE;
    return 0;
}

static void on_connected(kube_client_t *c)
{
    if (!c->ep.tls) {
        c->state = KC_SENDING;
        do_send(c);
        return;
    }
    char detail[256];
    if (start_tls(c, detail, sizeof detail) < 0) {
        finish(c, false, "TLS setup failed", detail);
        return;
    }
    do_handshake(c);
}

/* Tries c->addr and the ones after it. 0 once a connect is under way. */
static int connect_next(kube_client_t *c, char *err, size_t errlen)
{
    int last_errno = 0;
    for (; c->addr; c->addr = c->addr->ai_next) {
        int fd = socket_connect(c->addr->ai_addr, c->addr->ai_addrlen);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        c->io = (sockio_t){.fd = fd, .ssl = NULL};
        c->io_ev = event_new(c->base, fd, EV_WRITE, on_io, c);
        if (!c->io_ev) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        c->state = KC_CONNECTING;
        event_add(c->io_ev, NULL);
        return 0;
    }
    snprintf(err, errlen, "connect to %s: %s", c->ep.authority,
             last_errno ? strerror(last_errno) : "no address");
    return -1;
}

static void connect_done(kube_client_t *c)
{
    int so_error = socket_connect_result(c->io.fd) == 0 ? 0 : errno;
    if (so_error == 0) {
        on_connected(c);
        return;
    }
    /* Refused on this address: the next one, if any. */
    event_free(c->io_ev);
    c->io_ev = NULL;
    sockio_close(&c->io);
    c->addr = c->addr->ai_next;
    char err[512];
    if (connect_next(c, err, sizeof err) < 0) {
        snprintf(err, sizeof err, "connect to %s: %s", c->ep.authority, strerror(so_error));
        finish(c, false, "cannot connect", err);
    }
}

static void on_io(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kube_client_t *c = arg;
    switch (c->state) {
    case KC_CONNECTING:
        connect_done(c);
        break;
    case KC_HANDSHAKE:
        do_handshake(c);
        break;
    case KC_SENDING:
        do_send(c);
        break;
    case KC_HEAD:
    case KC_BODY:
        do_read(c);
        break;
    case KC_IDLE:
        break;
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kube_client_t *c = arg;
    fail(c, c->state == KC_BODY ? "no data from the API server within the idle timeout"
            : c->resolving      ? "the API server's name did not resolve within the request timeout"
                                : "no response head within the request timeout");
}

static int build_request(kube_client_t *c, const kube_request_t *r)
{
    static const char fmt[] = "%s %s HTTP/1.1\r\n"
                              "Host: %s\r\n"
                              "User-Agent: skewgate\r\n"
                              "Accept: application/json\r\n"
                              "%s%s%s"
                              "%s"
                              "Connection: close\r\n"
                              "\r\n";
    const char *auth = r->token ? "Authorization: Bearer " : "";
    const char *token = r->token ? r->token : "", *eol = r->token ? "\r\n" : "";
    char body_fields[256] = "";
    if (r->content_type &&
        snprintf(body_fields, sizeof body_fields, "Content-Type: %s\r\nContent-Length: %zu\r\n", r->content_type,
                 r->body_len) >= (int)sizeof body_fields)
        return -1;
    int n = snprintf(NULL, 0, fmt, r->method, r->target, c->ep.authority, auth, token, eol, body_fields);
    if (n < 0 || !(c->req = malloc((size_t)n + r->body_len + 1)))
        return -1;
    snprintf(c->req, (size_t)n + 1, fmt, r->method, r->target, c->ep.authority, auth, token, eol, body_fields);
    if (r->body_len)
        memcpy(c->req + n, r->body, r->body_len);
    c->req_len = (size_t)n + r->body_len;
    c->req_sent = 0;
    return 0;
}

/* The API server's addresses (evdns: a name is resolved without blocking
 * the main loop, which also serves the admin API and publishes verdicts). */
static void on_resolved(int rc, struct evutil_addrinfo *res, void *arg)
{
    /* A cancelled lookup (never given addresses then): its request was
     * dropped, or its client freed, which is still in memory (reap). */
    if (rc == EVUTIL_EAI_CANCEL)
        return;
    kube_client_t *c = arg;
    c->resolving = NULL;
    c->addrs = c->addr = rc == 0 ? res : NULL;
    if (c->in_send) {
        c->resolved_rc = rc;
        return;
    }
    char err[512];
    if (rc != 0) {
        snprintf(err, sizeof err, "resolve %s: %s", c->ep.host, evutil_gai_strerror(rc));
        finish(c, false, "cannot resolve", err);
    } else if (connect_next(c, err, sizeof err) < 0) {
        finish(c, false, "cannot connect", err);
    }
}

int kube_client_request(kube_client_t *c, const char *target, const char *token,
                        kube_body_mode_t mode, uint64_t idle_timeout_ms, char *err,
                        size_t errlen)
{
    const kube_request_t r = {.method = "GET", .target = target, .token = token};
    return kube_client_send(c, &r, mode, idle_timeout_ms, err, errlen);
}

int kube_client_send(kube_client_t *c, const kube_request_t *r, kube_body_mode_t mode,
                     uint64_t idle_timeout_ms, char *err, size_t errlen)
{
    kube_client_cancel(c);
    /* The scheme says TLS: without a context the request (its token
     * first) would go out in clear, so it does not go out at all. */
    if (c->ep.tls && !tls_ctx_now(c)) {
        snprintf(err, errlen, "https://%s: no TLS context to connect with; refusing to send the request in clear",
                 c->ep.authority);
        return -1;
    }
    c->mode = mode;
    c->idle_timeout_ms = idle_timeout_ms;
    c->body_len = c->scanned = 0;
    c->lines = false;
    if (c->body_cap > BODY_KEEP) {
        free(c->body);
        c->body = NULL;
        c->body_cap = 0;
        malloc_trim(0);
    }
    if (build_request(c, r) < 0) {
        snprintf(err, errlen, "out of memory");
        close_connection(c);
        return -1;
    }
    arm_timer(c, KUBE_REQUEST_TIMEOUT_MS);
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                    .ai_flags = EVUTIL_AI_NUMERICSERV | EVUTIL_AI_ADDRCONFIG};
    /* A numeric host or one of /etc/hosts is answered at once, inside
     * this call: then the connect starts here, and a failure is ours to
     * return. */
    c->in_send = true;
    c->resolved_rc = 1;
    struct evdns_getaddrinfo_request *q = evdns_getaddrinfo(c->dns, c->ep.host, c->ep.port, &hints, on_resolved, c);
    c->in_send = false;
    if (c->resolved_rc == 1) {
        c->resolving = q;
        return 0;
    }
    if (c->resolved_rc != 0) {
        snprintf(err, errlen, "resolve %s: %s", c->ep.host, evutil_gai_strerror(c->resolved_rc));
        close_connection(c);
        return -1;
    }
    if (connect_next(c, err, errlen) < 0) {
        close_connection(c);
        return -1;
    }
    return 0;
}

kube_client_t *kube_client_new(struct event_base *base, const kube_endpoint_t *ep,
                               SSL_CTX *const *tls_ctx, bool insecure, const kube_client_cbs_t *cbs,
                               void *arg)
{
    kube_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base = base;
    c->ep = *ep;
    c->tls_ctx = tls_ctx;
    c->insecure = insecure;
    c->cbs = *cbs;
    c->arg = arg;
    c->io.fd = -1;
    c->timer = evtimer_new(base, on_timeout, c);
    /* resolv.conf and /etc/hosts as the C library reads them. */
    c->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (!c->timer || !c->dns) {
        if (c->timer)
            event_free(c->timer);
        if (c->dns)
            evdns_base_free(c->dns, 0);
        free(c);
        return NULL;
    }
    return c;
}

/* The end of kube_client_free, a loop turn later. The evdns_base holds
 * nothing of ours by now (the one lookup was cancelled), so fail_requests
 * is 0: libevent 2.1.12 would fail a nameserver probe still in flight by
 * calling it back on the nameserver it has just freed. */
static void reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kube_client_t *c = arg;
    evdns_base_free(c->dns, 0);
    event_free(c->timer);
    free(c->body);
    free(c);
}

/* No callback of the caller's comes after this, but the memory goes a
 * loop turn later. libevent 2.1.12 runs evdns callbacks from the loop as
 * deferred callbacks, after the call that caused them: a cancelled
 * lookup's comes with EVUTIL_EAI_CANCEL and c, and reads the evdns_base
 * (evdns_getaddrinfo_gotresolve locks it and arms the A/AAAA skew timer
 * from it), as does the AAAA query it cancels itself once the A answer
 * waited long enough. Freeing the base here (a reload frees a source
 * while its lookup hangs) let those read it freed. A timer due now runs
 * after them: it turns active in the next turn's timeout pass, queued
 * behind what this turn made active and what libevent put off to the
 * next (its later queue). At exit the loop's owner turns the loop once
 * more so that this runs (cmd_run.c, override_cluster.c). */
void kube_client_free(kube_client_t *c)
{
    if (!c)
        return;
    close_connection(c);
    static const struct timeval now = {0, 0};
    event_assign(c->timer, c->base, -1, 0, reap, c);
    if (evtimer_add(c->timer, &now) < 0)
        event_active(c->timer, EV_TIMEOUT, 1);  /* no memory for the timer heap: at the end of this turn */
}
