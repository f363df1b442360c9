#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "proxy/conn.h"
#include "core/log.h"
#include "proxy/upstream.h"
#include "proxy/worker.h"
#include "core/clock.h"

_Atomic uint32_t worker_total_conns;

/* Connections accepted per listener wake-up, so one busy listener cannot
 * starve the connections it already has. */
#define WORKER_ACCEPT_BATCH 64
#define WORKER_LISTEN_BACKLOG 1024

void *buf_pool_get(buf_pool_t *p)
{
    if (p->n_free)
        return p->free[--p->n_free];
    return malloc(p->size);
}

void buf_pool_put(buf_pool_t *p, void *buf)
{
    if (p->n_free < p->cap_free) {
        p->free[p->n_free++] = buf;
        return;
    }
    free(buf);
}

static int buf_pool_init(buf_pool_t *p, size_t size, size_t keep)
{
    p->size = size;
    p->cap_free = keep;
    p->n_free = 0;
    p->free = calloc(keep, sizeof *p->free);
    return p->free ? 0 : -1;
}

static void buf_pool_destroy(buf_pool_t *p)
{
    while (p->n_free)
        free(p->free[--p->n_free]);
    free(p->free);
    p->free = NULL;
}

int worker_listen_socket(struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    /* Wake us only once the client has sent something: one poll round
     * less per connection (the first read follows accept at once). */
    int defer = 5;
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
    /* Accepted sockets inherit TCP_NODELAY from the listener on Linux: no
     * setsockopt per connection. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)ss, len) < 0 || listen(fd, WORKER_LISTEN_BACKLOG) < 0) {
        snprintf(err, errlen, "bind/listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t got = len;
    getsockname(fd, (struct sockaddr *)ss, &got);
    return fd;
}

static void worker_on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    worker_listener_t *l = arg;
    worker_t *w = l->w;
    for (int i = 0; i < WORKER_ACCEPT_BATCH && !w->stopping; i++) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        int cfd = accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                log_msg(LOG_WARN, "accept", "%s", strerror(errno));
            return;
        }
        uint32_t total = atomic_fetch_add_explicit(&worker_total_conns, 1, memory_order_relaxed);
        if (total >= w->cfg->limits.max_connections) {
            /* Over the cap: a closed connection is a transport error,
             * which Ignition retries with backoff. */
            atomic_fetch_sub_explicit(&worker_total_conns, 1, memory_order_relaxed);
            metrics_add(&w->metrics.refused_over_limit, 1);
            close(cfd);
            continue;
        }
        conn_accept(w, cfd, (struct sockaddr *)&peer, plen, l->tls);
    }
}

static void worker_stop_now(worker_t *w)
{
    if (w->stopping)
        return;
    w->stopping = true;
    for (size_t i = 0; i < w->n_listeners; i++) {
        event_del(&w->listeners[i].ev);
        close(w->listeners[i].fd);
        w->listeners[i].fd = -1;
    }
    upstream_pool_drain(w);
    /* Connections idle between requests close now; the others when their
     * response is written (keep-alive is off once stopping). */
    struct timeval tv = clock_timeval(w->cfg->limits.drain_timeout_ms);
    event_base_loopexit(w->base, &tv);
    conn_close_idle(w);
    if (w->n_conns == 0)
        event_base_loopexit(w->base, NULL);
}

static void worker_on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_reap(arg);
}

static void worker_on_notify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    worker_t *w = arg;
    uint64_t count;
    ssize_t n = read(fd, &count, sizeof count);
    (void)n;
    unsigned cmds = atomic_exchange(&w->commands, 0);
    if (cmds & WORKER_CMD_SNAPSHOT) {
        gate_snapshot_t *snap = atomic_exchange(&w->next_snapshot, NULL);
        if (snap) {
            if (w->snapshot)
                gate_snapshot_unref(w->snapshot);
            w->snapshot = snap;
        }
    }
    if (cmds & WORKER_CMD_TLS) {
        for (size_t i = 0; i < w->n_listeners; i++) {
            SSL_CTX *ctx = atomic_exchange(&w->next_tls[i], NULL);
            if (ctx) {
                /* Connections made with the old context keep a reference. */
                SSL_CTX_free(w->listeners[i].tls);
                w->listeners[i].tls = ctx;
            }
        }
    }
    if (cmds & WORKER_CMD_STOP)
        worker_stop_now(w);
}

static void worker_notify(worker_t *w, unsigned cmd)
{
    atomic_fetch_or(&w->commands, cmd);
    uint64_t one = 1;
    ssize_t n = write(w->notify_fd, &one, sizeof one);
    (void)n;
}

void worker_publish_snapshot(worker_t *w, gate_snapshot_t *snap)
{
    gate_snapshot_t *old = atomic_exchange(&w->next_snapshot, snap);
    if (old)
        gate_snapshot_unref(old);
    worker_notify(w, WORKER_CMD_SNAPSHOT);
}

void worker_publish_tls(worker_t *w, size_t listener, SSL_CTX *ctx)
{
    SSL_CTX *old = atomic_exchange(&w->next_tls[listener], ctx);
    if (old)
        SSL_CTX_free(old);
    worker_notify(w, WORKER_CMD_TLS);
}

void worker_stop(worker_t *w)
{
    worker_notify(w, WORKER_CMD_STOP);
}

static const struct timeval *worker_timeout(worker_t *w, uint64_t ms)
{
    struct timeval tv = clock_timeval(ms);
    return event_base_init_common_timeout(w->base, &tv);
}

int worker_init(worker_t *w, unsigned id, const config_t *cfg, const int *listen_fds,
                SSL_CTX *const *listener_tls, SSL_CTX *upstream_tls, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    w->cfg = cfg;
    w->notify_fd = -1;
    struct event_config *ec = event_config_new();
    /* Each base is touched by its own thread only. */
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    w->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (!w->base) {
        snprintf(err, errlen, "worker %u: event_base_new failed", id);
        return -1;
    }
    w->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->notify_fd < 0) {
        snprintf(err, errlen, "worker %u: eventfd: %s", id, strerror(errno));
        return -1;
    }
    event_assign(&w->notify_ev, w->base, w->notify_fd, EV_READ | EV_PERSIST, worker_on_notify, w);
    event_add(&w->notify_ev, NULL);
    evtimer_assign(&w->reap_ev, w->base, worker_on_reap, w);

    const config_limits_t *lim = &cfg->limits;
    w->http_limits.max_header_bytes = lim->max_header_bytes;
    w->http_limits.max_headers = lim->max_headers;
    w->http_limits.max_uri_bytes = lim->max_uri_bytes;
    w->req_headers = calloc(lim->max_headers, sizeof *w->req_headers);
    w->resp_headers = calloc(lim->max_headers, sizeof *w->resp_headers);
    w->path_scratch_len = lim->max_uri_bytes + 1;
    w->path_scratch = malloc(w->path_scratch_len);
    w->pipes = calloc(WORKER_SPARE_PIPES, sizeof *w->pipes);
    if (!w->req_headers || !w->resp_headers || !w->path_scratch || !w->pipes ||
        buf_pool_init(&w->head_bufs, lim->max_header_bytes, 256) < 0 ||
        buf_pool_init(&w->relay_bufs, WORKER_RELAY_BUF, 64) < 0) {
        snprintf(err, errlen, "worker %u: out of memory", id);
        return -1;
    }
    http_request_init(&w->req, w->req_headers, lim->max_headers);
    http_response_init(&w->resp, w->resp_headers, lim->max_headers);

    unsigned n_workers = cfg->workers ? cfg->workers : 1;
    const config_upstream_t *up = &cfg->upstream;
    w->upstream_cap = (up->max_concurrent + n_workers - 1) / n_workers;
    w->queue_cap = (up->max_queue + n_workers - 1) / n_workers;
    w->upstream_tls = upstream_tls;
    if (upstream_tls)
        SSL_CTX_up_ref(upstream_tls);

    w->tv_send = worker_timeout(w, lim->send_timeout_ms);
    w->tv_up_connect = worker_timeout(w, up->connect_timeout_ms);
    w->tv_up_response = worker_timeout(w, up->response_timeout_ms);
    w->tv_up_idle = worker_timeout(w, up->idle_timeout_ms);

    w->n_listeners = cfg->n_listeners;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        worker_listener_t *l = &w->listeners[i];
        l->fd = listen_fds[i];
        l->w = w;
        l->conf = &cfg->listeners[i];
        l->tls = listener_tls[i];
        if (l->tls)
            SSL_CTX_up_ref(l->tls);
        event_assign(&l->ev, w->base, l->fd, EV_READ | EV_PERSIST, worker_on_accept, l);
        event_add(&l->ev, NULL);
    }
    return 0;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

int worker_start(worker_t *w)
{
    return pthread_create(&w->thread, NULL, worker_main, w) == 0 ? 0 : -1;
}

void worker_join(worker_t *w)
{
    pthread_join(w->thread, NULL);
}

void worker_destroy(worker_t *w)
{
    conn_close_all(w);
    upstream_pool_drain(w);
    for (size_t i = 0; i < w->n_listeners; i++) {
        if (w->listeners[i].fd >= 0) {
            event_del(&w->listeners[i].ev);
            close(w->listeners[i].fd);
        }
        SSL_CTX_free(w->listeners[i].tls);
        SSL_CTX_free(atomic_exchange(&w->next_tls[i], NULL));
    }
    SSL_CTX_free(w->upstream_tls);
    if (w->snapshot)
        gate_snapshot_unref(w->snapshot);
    gate_snapshot_t *pending = atomic_exchange(&w->next_snapshot, NULL);
    if (pending)
        gate_snapshot_unref(pending);
    if (w->notify_fd >= 0) {
        event_del(&w->notify_ev);
        close(w->notify_fd);
    }
    buf_pool_destroy(&w->head_bufs);
    buf_pool_destroy(&w->relay_bufs);
    free(w->req_headers);
    free(w->resp_headers);
    free(w->path_scratch);
    while (w->n_pipes) {
        w->n_pipes--;
        close(w->pipes[w->n_pipes][0]);
        close(w->pipes[w->n_pipes][1]);
    }
    free(w->pipes);
    if (w->base)
        event_base_free(w->base);
}
