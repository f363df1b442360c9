#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "proxy/exchange.h"
#include "proxy/upstream.h"
#include "proxy/worker.h"

static void upstream_pool_remove(worker_t *w, upstream_conn_t *u)
{
    for (upstream_conn_t **p = &w->idle_upstreams; *p; p = &(*p)->next) {
        if (*p == u) {
            *p = u->next;
            u->next = NULL;
            w->n_idle_upstreams--;
            return;
        }
    }
}

static void upstream_on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    upstream_conn_t *u = arg;
    if (u->client) {
        proxy_on_upstream(u, what);
        return;
    }
    /* Pooled and idle: the MCS closed it, sent something unasked, or it
     * idled out. None of these leaves it usable. */
    upstream_pool_remove(u->w, u);
    upstream_close(u);
}

void upstream_arm_read(upstream_conn_t *u, bool on, const struct timeval *tv)
{
    if (on) {
        event_add(&u->rev, tv);
    } else if (u->rev_on) {
        event_del(&u->rev);
    }
    u->rev_on = on;
}

void upstream_arm_write(upstream_conn_t *u, bool on, const struct timeval *tv)
{
    if (on) {
        event_add(&u->wev, tv);
    } else if (u->wev_on) {
        event_del(&u->wev);
    }
    u->wev_on = on;
}

upstream_conn_t *upstream_pool_get(worker_t *w)
{
    upstream_conn_t *u = w->idle_upstreams;
    if (!u)
        return NULL;
    w->idle_upstreams = u->next;
    u->next = NULL;
    w->n_idle_upstreams--;
    /* Read interest stays on (its callback now goes to the proxy): the
     * response timeout replaces the idle one without an epoll_ctl. */
    u->reused = true;
    return u;
}

void upstream_pool_put(upstream_conn_t *u)
{
    worker_t *w = u->w;
    u->client = NULL;
    upstream_arm_write(u, false, NULL);
    if (w->stopping || w->n_idle_upstreams >= w->cfg->upstream.max_idle) {
        upstream_close(u);
        return;
    }
    u->next = w->idle_upstreams;
    w->idle_upstreams = u;
    w->n_idle_upstreams++;
    upstream_arm_read(u, true, w->tv_up_idle);
}

upstream_conn_t *upstream_connect(worker_t *w)
{
    const config_addr_t *addr = &w->cfg->upstream.addr;
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 && errno != EINPROGRESS) {
        int saved = errno;
        close(fd);
        errno = saved;
        return NULL;
    }
    upstream_conn_t *u = calloc(1, sizeof *u);
    if (!u) {
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    u->io.fd = fd;
    u->w = w;
    u->state = UPSTREAM_CONNECTING;
    event_assign(&u->rev, w->base, fd, EV_READ | EV_PERSIST, upstream_on_event, u);
    event_assign(&u->wev, w->base, fd, EV_WRITE | EV_PERSIST, upstream_on_event, u);
    upstream_arm_write(u, true, w->tv_up_connect);
    return u;
}

void upstream_close(upstream_conn_t *u)
{
    upstream_arm_read(u, false, NULL);
    upstream_arm_write(u, false, NULL);
    sockio_close(&u->io);
    free(u);
}

void upstream_pool_drain(worker_t *w)
{
    while (w->idle_upstreams) {
        upstream_conn_t *u = w->idle_upstreams;
        w->idle_upstreams = u->next;
        upstream_close(u);
    }
    w->n_idle_upstreams = 0;
}
