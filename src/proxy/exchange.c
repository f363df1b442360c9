#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "http/chunked.h"
#include "core/clock.h"
#include "core/log.h"
#include "proxy/exchange.h"
#include "tls/tls.h"
#include "proxy/upstream.h"
#include "proxy/worker.h"
#include "core/addr.h"

enum { PROXY_SEND, PROXY_HEAD, PROXY_BODY };

/* A full TLS record: smaller writes cost a record (and a syscall) each. */
#define PROXY_TLS_RECORD 16384
/* The response head is read this far into the relay buffer, so that the
 * rewritten head (at most a Connection line longer) goes in front of the
 * body bytes that came with it, instead of the body moving. */
#define PROXY_HEADROOM 256
/* Plain to plain, the head is read in steps of this much: body bytes read
 * with it go through this process; the rest can be spliced. */
#define PROXY_HEAD_STEP 4096
/* A splice relay keeps at most this much body in its pipe (the watermark a
 * slow client can hold up; its socket buffer can hold far more). Fewer,
 * larger batches: 64 KiB cost 254 us of CPU per 1 MiB response in the
 * bench (S3), 512 KiB 187 us. The capacity is set above it because spliced
 * socket data takes a pipe slot per fragment; a pipe full by slots is
 * handled where splice reports it. */
#define PROXY_PIPE_BYTES (512 * 1024)
#define PROXY_PIPE_CAPACITY (1024 * 1024)

static void proxy_begin(conn_t *c);
static void proxy_pump(conn_t *c);

/* Splice relays: an empty pipe from the worker's spares, or a new one. */
static bool proxy_pipe_get(conn_t *c)
{
    worker_t *w = c->w;
    if (w->n_pipes) {
        w->n_pipes--;
        c->pipe_r = w->pipes[w->n_pipes][0];
        c->pipe_w = w->pipes[w->n_pipes][1];
        return true;
    }
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return false;
    if (fcntl(fds[1], F_SETPIPE_SZ, PROXY_PIPE_CAPACITY) < PROXY_PIPE_CAPACITY) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    c->pipe_r = fds[0];
    c->pipe_w = fds[1];
    return true;
}

static void proxy_pipe_put(conn_t *c)
{
    worker_t *w = c->w;
    if (c->pipe_r < 0)
        return;
    /* A pipe with bytes left in it belongs to an aborted relay: drop it. */
    if (c->pipe_len == 0 && w->n_pipes < WORKER_SPARE_PIPES) {
        w->pipes[w->n_pipes][0] = c->pipe_r;
        w->pipes[w->n_pipes][1] = c->pipe_w;
        w->n_pipes++;
    } else {
        close(c->pipe_r);
        close(c->pipe_w);
    }
    c->pipe_r = c->pipe_w = -1;
    c->pipe_len = 0;
}

/* Gives the upstream slot back and lets the longest waiter have it. */
static void proxy_release(conn_t *c, bool reuse)
{
    worker_t *w = c->w;
    proxy_pipe_put(c);
    if (c->up) {
        if (reuse)
            upstream_pool_put(c->up);
        else
            upstream_close(c->up);
        c->up = NULL;
    }
    if (c->rbuf) {
        buf_pool_put(&w->relay_bufs, c->rbuf);
        c->rbuf = NULL;
        c->r_off = c->r_len = 0;
    }
    if (!c->has_slot)
        return;
    c->has_slot = false;
    w->upstream_active--;
    while (w->queue_head && w->upstream_active < w->upstream_cap) {
        conn_t *next = w->queue_head;
        w->queue_head = next->queue_next;
        if (!w->queue_head)
            w->queue_tail = NULL;
        w->queue_len--;
        next->queue_next = NULL;
        conn_deadline(next, CONN_DEADLINE_NONE, 0);
        w->upstream_active++;
        next->has_slot = true;
        proxy_begin(next);
    }
}

/* Nothing was sent to the client yet: answer with an error of our own. */
static void proxy_fail(conn_t *c, int status, const char *reason)
{
    worker_t *w = c->w;
    metrics_upstream_error(&w->metrics, metrics_upstream_kind(status, reason));
    proxy_release(c, false);
    c->state = CONN_READ_HEAD;
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "upstream_error", "%s: %d", reason, status);
    conn_send_error(c, status, reason, false);
}

/* The response was already under way: the client must not take what it
 * got as complete, so the connection is closed. */
static void proxy_truncate(conn_t *c, const char *reason)
{
    metrics_upstream_error(&c->w->metrics, METRICS_UP_CLOSED);
    c->log.reason = reason;
    proxy_release(c, false);
    c->state = CONN_READ_HEAD;
    c->keep_alive = false;
    conn_request_done(c);
}

static void proxy_unqueue(conn_t *c)
{
    worker_t *w = c->w;
    for (conn_t **p = &w->queue_head; *p; p = &(*p)->queue_next) {
        if (*p == c) {
            *p = c->queue_next;
            if (w->queue_tail == c) {
                w->queue_tail = NULL;
                for (conn_t *q = w->queue_head; q; q = q->queue_next)
                    w->queue_tail = q;
            }
            w->queue_len--;
            c->queue_next = NULL;
            return;
        }
    }
}

void proxy_abort(conn_t *c)
{
    if (c->state == CONN_QUEUED)
        proxy_unqueue(c);
    proxy_release(c, false);
    c->state = CONN_READ_HEAD;
}

void proxy_queue_timeout(conn_t *c)
{
    proxy_unqueue(c);
    c->state = CONN_READ_HEAD;
    metrics_upstream_error(&c->w->metrics, METRICS_UP_QUEUE_TIMEOUT);
    conn_send_error(c, 503, "UpstreamQueueTimeout", false);
}

void proxy_start(conn_t *c)
{
    worker_t *w = c->w;
    conn_arm_read(c, false);
    if (w->upstream_active < w->upstream_cap) {
        w->upstream_active++;
        c->has_slot = true;
        proxy_begin(c);
        return;
    }
    if (w->queue_len >= w->queue_cap) {
        metrics_upstream_error(&w->metrics, METRICS_UP_QUEUE_FULL);
        conn_send_error(c, 503, "UpstreamQueueFull", false);
        return;
    }
    c->state = CONN_QUEUED;
    c->queue_next = NULL;
    if (w->queue_tail)
        w->queue_tail->queue_next = c;
    else
        w->queue_head = c;
    w->queue_tail = c;
    w->queue_len++;
    conn_deadline(c, CONN_DEADLINE_QUEUE, w->cfg->upstream.queue_timeout_ms);
}

static size_t proxy_put(char *dst, size_t at, size_t cap, const char *src, size_t len)
{
    if (at + len > cap)
        return cap + 1;
    memcpy(dst + at, src, len);
    return at + len;
}

/* The request as the upstream gets it: same method, target and headers
 * (Accept and User-Agent untouched; the MCS picks the spec by Accept),
 * hop-by-hop headers dropped, X-Forwarded-For extended. */
static bool proxy_build_request(conn_t *c)
{
    const http_request_t *req = &c->w->req;
    const char *in = c->ibuf;
    char *out = c->rbuf;
    size_t cap = WORKER_RELAY_BUF, at = 0;
    const http_header_t *xff = http_headers_get(&req->headers, HTTP_HDR_X_FORWARDED_FOR);

    at = proxy_put(out, at, cap, in + req->method_name.off, req->method_name.len);
    at = proxy_put(out, at, cap, " ", 1);
    at = proxy_put(out, at, cap, in + req->target.off, req->target.len);
    /* An HTTP/1.0 client cannot take a chunked answer: ask as 1.0, so the
     * upstream frames the body by length or by closing. */
    at = proxy_put(out, at, cap, c->http10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n", 11);
    for (size_t i = 0; i < req->headers.count; i++) {
        const http_header_t *h = &req->headers.list[i];
        const char *name = in + h->name.off;
        if (h->id == HTTP_HDR_X_FORWARDED_FOR || h->id == HTTP_HDR_EXPECT ||
            http_header_is_hop_by_hop(h->id) || http_connection_lists(in, &req->headers, name, h->name.len))
            continue;
        at = proxy_put(out, at, cap, name, h->name.len);
        at = proxy_put(out, at, cap, ": ", 2);
        at = proxy_put(out, at, cap, in + h->value.off, h->value.len);
        at = proxy_put(out, at, cap, "\r\n", 2);
    }
    if (!http_headers_get(&req->headers, HTTP_HDR_HOST)) {
        const config_upstream_t *up = &c->w->cfg->upstream;
        const char *host = up->server_name ? up->server_name : up->addr.text;
        at = proxy_put(out, at, cap, "Host: ", 6);
        at = proxy_put(out, at, cap, host, strlen(host));
        at = proxy_put(out, at, cap, "\r\n", 2);
    }
    at = proxy_put(out, at, cap, "X-Forwarded-For: ", 17);
    if (xff) {
        at = proxy_put(out, at, cap, in + xff->value.off, xff->value.len);
        at = proxy_put(out, at, cap, ", ", 2);
    }
    char peer[INET6_ADDRSTRLEN];
    size_t plen = addr_ip_text(&c->peer, peer, sizeof peer);
    at = proxy_put(out, at, cap, peer, plen);
    at = proxy_put(out, at, cap, "\r\n\r\n", 4);
    if (at > cap)
        return false;
    c->r_off = 0;
    c->r_len = at;
    return true;
}

static void proxy_attach(conn_t *c, upstream_conn_t *u)
{
    c->up = u;
    u->client = c;
}

static void proxy_send_request(conn_t *c);

static void proxy_connect(conn_t *c)
{
    upstream_conn_t *u = upstream_connect(c->w);
    if (!u) {
        proxy_fail(c, 502, "UpstreamConnect");
        return;
    }
    proxy_attach(c, u);
}

static void proxy_begin(conn_t *c)
{
    worker_t *w = c->w;
    c->state = CONN_UPSTREAM;
    c->up_phase = PROXY_SEND;
    c->log.upstream_start_ns = clock_monotonic_ns();
    c->rbuf = buf_pool_get(&w->relay_bufs);
    if (!c->rbuf || !proxy_build_request(c)) {
        proxy_fail(c, 502, "RequestTooLarge");
        return;
    }
    upstream_conn_t *u = upstream_pool_get(w);
    if (u) {
        proxy_attach(c, u);
        proxy_send_request(c);
    } else {
        proxy_connect(c);
    }
}

/* A pooled connection can die between two uses without us seeing it yet;
 * a GET or HEAD that got no answer byte is safe to send again, once. */
static bool proxy_retry_stale(conn_t *c)
{
    if (!c->up || !c->up->reused || c->retried || c->up_phase == PROXY_BODY)
        return false;
    if (c->up_phase == PROXY_HEAD && c->r_len > c->r_off)
        return false;
    c->retried = true;
    upstream_close(c->up);
    c->up = NULL;
    if (!proxy_build_request(c)) {
        proxy_fail(c, 502, "RequestTooLarge");
        return true;
    }
    c->up_phase = PROXY_SEND;
    proxy_connect(c);
    return true;
}

static void proxy_send_request(conn_t *c)
{
    upstream_conn_t *u = c->up;
    while (c->r_off < c->r_len) {
        ssize_t n = sockio_write(&u->io, c->rbuf + c->r_off, c->r_len - c->r_off, 0);
        if (n > 0) {
            c->r_off += (size_t)n;
            continue;
        }
        if (n == SOCKIO_WANT_WRITE) {
            upstream_arm_write(u, true, c->w->tv_up_response);
            return;
        }
        if (n == SOCKIO_WANT_READ) {
            upstream_arm_read(u, true, c->w->tv_up_response);
            return;
        }
        if (!proxy_retry_stale(c))
            proxy_fail(c, 502, "UpstreamWrite");
        return;
    }
    upstream_arm_write(u, false, NULL);
    c->up_phase = PROXY_HEAD;
    c->r_off = c->r_len = PROXY_HEADROOM;
    upstream_arm_read(u, true, c->w->tv_up_response);
}

/* Counts body bytes newly in rbuf[from..from+len); returns how many of
 * them belong to this response (the rest is surplus the upstream should
 * not have sent), or -1 when the chunked framing is broken. */
static ssize_t proxy_account_body(conn_t *c, const char *from, size_t len)
{
    if (c->until_close)
        return (ssize_t)len;
    if (c->chunked) {
        ssize_t used = http_chunked_scan(&c->chunk, from, len);
        if (used < 0)
            return -1;
        if (http_chunked_done(&c->chunk))
            c->body_done = true;
        return used;
    }
    size_t take = (uint64_t)c->body_left < len ? (size_t)c->body_left : len;
    c->body_left -= (int64_t)take;
    if (c->body_left == 0)
        c->body_done = true;
    return (ssize_t)take;
}

static const char *proxy_connection_header(conn_t *c)
{
    if (!c->keep_alive)
        return "Connection: close\r\n";
    return c->http10 ? "Connection: keep-alive\r\n" : "";
}

/* rbuf[r_off..r_len) holds the upstream's head (head_len bytes) and maybe
 * body bytes: the head for the client goes right in front of the body. */
static bool proxy_rewrite_head(conn_t *c, const http_response_t *resp, size_t head_len)
{
    char head[8192];
    size_t cap = sizeof head, at = 0;
    const char *in = c->rbuf + c->r_off;
    char line[64];
    int n = snprintf(line, sizeof line, "HTTP/1.1 %03d ", resp->status);
    at = proxy_put(head, at, cap, line, (size_t)n);
    at = proxy_put(head, at, cap, in + resp->reason.off, resp->reason.len);
    at = proxy_put(head, at, cap, "\r\n", 2);
    for (size_t i = 0; i < resp->headers.count; i++) {
        const http_header_t *h = &resp->headers.list[i];
        const char *name = in + h->name.off;
        /* A chunked body is relayed as it came, so its framing header and
         * any trailer announcement stay. */
        bool framing = c->chunked && (h->id == HTTP_HDR_TRANSFER_ENCODING || h->id == HTTP_HDR_TRAILER);
        if (!framing && (http_header_is_hop_by_hop(h->id) ||
                         http_connection_lists(in, &resp->headers, name, h->name.len)))
            continue;
        at = proxy_put(head, at, cap, name, h->name.len);
        at = proxy_put(head, at, cap, ": ", 2);
        at = proxy_put(head, at, cap, in + h->value.off, h->value.len);
        at = proxy_put(head, at, cap, "\r\n", 2);
    }
    const char *conn_line = proxy_connection_header(c);
    at = proxy_put(head, at, cap, conn_line, strlen(conn_line));
    at = proxy_put(head, at, cap, "\r\n", 2);
    size_t body_start = c->r_off + head_len;
    if (at > cap || at > body_start)
        return false;
    c->r_off = body_start - at;
    memcpy(c->rbuf + c->r_off, head, at);
    return true;
}

static void proxy_on_head(conn_t *c, const http_response_t *resp, size_t head_len)
{
    c->log.status = resp->status;
    c->body_done = false;
    c->chunked = false;
    c->until_close = false;
    c->up_reusable = resp->keep_alive && !c->http10;
    if (resp->body == HTTP_BODY_NONE) {
        c->body_done = true;
    } else if (resp->body == HTTP_BODY_CHUNKED) {
        c->chunked = true;
        http_chunked_init(&c->chunk);
    } else if (resp->body == HTTP_BODY_LENGTH) {
        c->body_left = resp->content_length;
        c->body_done = c->body_left == 0;
    } else {
        c->until_close = true;
        c->up_reusable = false;
        c->keep_alive = false; /* the end of the body is the end of the connection */
    }
    size_t body_start = c->r_off + head_len;
    size_t body = c->r_len - body_start;
    if (!c->body_done && body) {
        ssize_t used = proxy_account_body(c, c->rbuf + body_start, body);
        if (used < 0) {
            proxy_fail(c, 502, "BadUpstreamChunking");
            return;
        }
        if ((size_t)used < body) {
            c->up_reusable = false;
            c->r_len = body_start + (size_t)used;
        }
    } else if (c->body_done && body) {
        c->up_reusable = false; /* bytes after a bodiless response */
        c->r_len = body_start;
    }
    if (!proxy_rewrite_head(c, resp, head_len)) {
        proxy_fail(c, 502, "UpstreamHeadTooLarge");
        return;
    }
    c->up_phase = PROXY_BODY;
    c->state = CONN_RELAY;
    proxy_pump(c);
}

static void proxy_read_head(conn_t *c)
{
    upstream_conn_t *u = c->up;
    http_response_t *resp = &c->w->resp;
    for (;;) {
        size_t room = WORKER_RELAY_BUF - c->r_len;
        if (!c->tls && !u->io.ssl && room > PROXY_HEAD_STEP)
            room = PROXY_HEAD_STEP;
        ssize_t n = sockio_read(&u->io, c->rbuf + c->r_len, room);
        if (n > 0) {
            c->r_len += (size_t)n;
            for (;;) {
                http_response_reset(resp);
                int r = http_response_parse(c->rbuf + c->r_off, c->r_len - c->r_off, &c->w->http_limits,
                                            c->is_head, resp);
                if (r < 0) {
                    proxy_fail(c, 502, "BadUpstreamResponse");
                    return;
                }
                if (r == 0) {
                    if (c->r_len == WORKER_RELAY_BUF) {
                        proxy_fail(c, 502, "UpstreamHeadTooLarge");
                        return;
                    }
                    break;
                }
                if (resp->status == 101) {
                    /* We never forward Upgrade, so a switch is a broken upstream. */
                    proxy_fail(c, 502, "UnexpectedUpgrade");
                    return;
                }
                if (resp->status >= 100 && resp->status < 200) {
                    /* Interim responses are not for the client: we never
                     * forward Expect, so drop them and read on. */
                    c->r_off += (size_t)r;
                    continue;
                }
                proxy_on_head(c, resp, (size_t)r);
                return;
            }
            continue;
        }
        if (n == SOCKIO_WANT_READ)
            return;
        if (n == SOCKIO_WANT_WRITE) {
            upstream_arm_write(u, true, c->w->tv_up_response);
            return;
        }
        if (!proxy_retry_stale(c))
            proxy_fail(c, 502, n == 0 ? "UpstreamClosed" : "UpstreamRead");
        return;
    }
}

static void proxy_finish(conn_t *c)
{
    c->log.upstream_ns = clock_monotonic_ns() - c->log.upstream_start_ns;
    proxy_release(c, c->up_reusable && c->body_done);
    c->state = CONN_READ_HEAD;
    conn_request_done(c);
}

/* The client went away mid-body: nothing more to deliver. */
static void proxy_client_gone(conn_t *c)
{
    c->log.reason = "ClientClosed";
    proxy_release(c, false);
    c->state = CONN_READ_HEAD;
    c->keep_alive = false;
    conn_request_done(c);
}

/* Plain to plain with a known length: the kernel moves the body through a
 * pipe (splice), no byte is copied into this process. The pipe holds at
 * most PROXY_PIPE_BYTES: the same watermark as the relay buffer. */
static bool proxy_splice_possible(const conn_t *c)
{
    return !c->tls && !c->up->io.ssl && !c->chunked && !c->until_close && c->body_left > 0;
}

static void proxy_splice_pump(conn_t *c)
{
    upstream_conn_t *u = c->up;
    for (;;) {
        /* Out until the pipe is empty or the client would block, whose
         * writability then brings us back: a short splice is no block. */
        while (c->pipe_len > 0) {
            ssize_t n = splice(c->pipe_r, NULL, c->io.fd, NULL, c->pipe_len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                c->pipe_len -= (size_t)n;
                c->log.bytes += (uint64_t)n;
            } else if (n < 0 && errno == EAGAIN) {
                conn_arm_write(c, true);
                break;
            } else if (!(n < 0 && errno == EINTR)) {
                proxy_client_gone(c);
                return;
            }
        }
        if (c->pipe_len == 0) {
            conn_arm_write(c, false);
            if (c->body_done) {
                proxy_finish(c);
                return;
            }
        }
        if (c->body_done || c->pipe_len >= PROXY_PIPE_BYTES) {
            upstream_arm_read(u, false, NULL);
            return;
        }
        size_t room = PROXY_PIPE_BYTES - c->pipe_len;
        if ((uint64_t)c->body_left < room)
            room = (size_t)c->body_left;
        ssize_t n = splice(u->io.fd, NULL, c->pipe_w, NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            c->pipe_len += (size_t)n;
            c->body_left -= n;
            c->body_done = c->body_left == 0;
        } else if (n < 0 && errno == EAGAIN) {
            /* Nothing to read, or a pipe full by slots (many small
             * fragments): with bytes in the pipe the client's writability
             * brings us back, and a readable socket must not spin. */
            upstream_arm_read(u, c->pipe_len == 0, c->w->tv_up_response);
            return;
        } else if (!(n < 0 && errno == EINTR)) {
            proxy_truncate(c, n == 0 ? "UpstreamClosedEarly" : "UpstreamRead");
            return;
        }
    }
}

/* Moves body bytes upstream -> rbuf -> client until one side would block.
 * The buffer is the watermark: a full buffer stops upstream reads, an
 * empty one stops client writes. */
static void proxy_pump(conn_t *c)
{
    upstream_conn_t *u = c->up;
    worker_t *w = c->w;
    for (;;) {
        bool progress = false;
        while (c->r_off < c->r_len) {
            size_t len = c->r_len - c->r_off;
            if (c->tls && len > PROXY_TLS_RECORD)
                len = PROXY_TLS_RECORD;
            /* More in the buffer, or a close_notify right behind the last
             * record: the kernel may fill segments across the records. */
            bool more = c->r_off + len < c->r_len || (c->tls && c->body_done && conn_will_close(c));
            ssize_t n = sockio_write(&c->io, c->rbuf + c->r_off, len, more ? SOCKIO_MORE : 0);
            if (n > 0) {
                c->r_off += (size_t)n;
                c->log.bytes += (uint64_t)n;
                progress = true;
                continue;
            }
            if (n == SOCKIO_WANT_WRITE || n == SOCKIO_WANT_READ) {
                conn_arm_write(c, true);
                break;
            }
            proxy_client_gone(c);
            return;
        }
        if (c->r_off == c->r_len) {
            c->r_off = c->r_len = 0;
            conn_arm_write(c, false);
            if (c->body_done) {
                proxy_finish(c);
                return;
            }
            /* What came with the head is out: the rest can skip this
             * process altogether. */
            if (proxy_splice_possible(c) && proxy_pipe_get(c)) {
                proxy_splice_pump(c);
                return;
            }
        }
        if (c->body_done) {
            upstream_arm_read(u, false, NULL);
            return;
        }
        /* Bytes are never moved: a read waits until the tail has room for
         * a full record (or for the rest of the body), else for the client
         * to drain the buffer, which then starts over at its front. */
        size_t room = WORKER_RELAY_BUF - c->r_len;
        size_t want = PROXY_TLS_RECORD;
        if (!c->chunked && !c->until_close && (uint64_t)c->body_left < want)
            want = (size_t)c->body_left;
        if (room < want) {
            upstream_arm_read(u, false, NULL);
            return;
        }
        if (!c->chunked && !c->until_close && (uint64_t)c->body_left < room)
            room = (size_t)c->body_left;
        ssize_t n = sockio_read(&u->io, c->rbuf + c->r_len, room);
        if (n > 0) {
            ssize_t used = proxy_account_body(c, c->rbuf + c->r_len, (size_t)n);
            if (used < 0) {
                proxy_truncate(c, "BadUpstreamChunking");
                return;
            }
            if (used < n)
                c->up_reusable = false;
            c->r_len += (size_t)used;
            progress = true;
        } else if (n == 0 && c->until_close) {
            c->body_done = true;
            progress = true;
        } else if (n == SOCKIO_WANT_READ) {
            upstream_arm_read(u, true, w->tv_up_response);
        } else if (n == SOCKIO_WANT_WRITE) {
            upstream_arm_write(u, true, w->tv_up_response);
        } else {
            proxy_truncate(c, n == 0 ? "UpstreamClosedEarly" : "UpstreamRead");
            return;
        }
        if (!progress)
            return;
    }
}

static void proxy_relay(conn_t *c)
{
    if (c->pipe_r >= 0)
        proxy_splice_pump(c);
    else
        proxy_pump(c);
}

void proxy_on_client_writable(conn_t *c)
{
    proxy_relay(c);
}

static void proxy_connected(conn_t *c)
{
    upstream_conn_t *u = c->up;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(u->io.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
        proxy_fail(c, 502, "UpstreamConnect");
        return;
    }
    if (!c->w->upstream_tls) {
        u->state = UPSTREAM_READY;
        proxy_send_request(c);
        return;
    }
    if (!sockio_attach_ssl(&u->io, SSL_new(c->w->upstream_tls)) ||
        tls_client_prepare(u->io.ssl, &c->w->cfg->upstream) < 0) {
        proxy_fail(c, 502, "UpstreamTLS");
        return;
    }
    SSL_set_connect_state(u->io.ssl);
    u->state = UPSTREAM_HANDSHAKE;
}

static void proxy_handshake(conn_t *c)
{
    upstream_conn_t *u = c->up;
    int r = sockio_handshake(&u->io);
    if (r == 1) {
        u->state = UPSTREAM_READY;
        upstream_arm_read(u, false, NULL);
        proxy_send_request(c);
    } else if (r == SOCKIO_WANT_READ) {
        upstream_arm_write(u, false, NULL);
        upstream_arm_read(u, true, c->w->tv_up_connect);
    } else if (r == SOCKIO_WANT_WRITE) {
        upstream_arm_write(u, true, c->w->tv_up_connect);
    } else {
        proxy_fail(c, 502, "UpstreamTLSHandshake");
    }
}

void proxy_on_upstream(upstream_conn_t *u, short what)
{
    conn_t *c = u->client;
    if (what & EV_TIMEOUT) {
        if (c->up_phase == PROXY_BODY)
            proxy_truncate(c, "UpstreamTimeout");
        else
            proxy_fail(c, 504, u->state == UPSTREAM_READY ? "UpstreamTimeout" : "UpstreamConnectTimeout");
        return;
    }
    switch (u->state) {
    case UPSTREAM_CONNECTING:
        proxy_connected(c);
        if (c->up && c->up->state == UPSTREAM_HANDSHAKE)
            proxy_handshake(c);
        return;
    case UPSTREAM_HANDSHAKE:
        proxy_handshake(c);
        return;
    case UPSTREAM_READY:
        break;
    }
    switch (c->up_phase) {
    case PROXY_SEND:
        proxy_send_request(c);
        break;
    case PROXY_HEAD:
        proxy_read_head(c);
        break;
    default:
        upstream_arm_write(u, false, NULL);
        proxy_relay(c);
        break;
    }
}
