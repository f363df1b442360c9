#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "core/clock.h"
#include "os/socket.h"
#include "proxy/shared_timeout.h"
#include "proxy/upstream.h"
#include "tls/tls.h"

static void upstream_close(upstream_conn_t *u)
{
    upstream_arm_read(u, false, NULL);
    upstream_arm_write(u, false, NULL);
    sockio_close(&u->io);
    free(u);
}

static void upstream_pool_remove(upstream_pool_t *p, upstream_conn_t *u)
{
    for (upstream_conn_t **at = &p->idle; *at; at = &(*at)->next) {
        if (*at == u) {
            *at = u->next;
            u->next = NULL;
            p->n_idle--;
            return;
        }
    }
}

void upstream_arm_read(upstream_conn_t *u, bool on, const struct timeval *tv)
{
    if (on)
        event_add(&u->rev, tv);
    else if (u->rev_on)
        event_del(&u->rev);
    u->rev_on = on;
}

void upstream_arm_write(upstream_conn_t *u, bool on, const struct timeval *tv)
{
    if (on)
        event_add(&u->wev, tv);
    else if (u->wev_on)
        event_del(&u->wev);
    u->wev_on = on;
}

static void upstream_fail(upstream_conn_t *u, gate_reason_t why)
{
    upstream_arm_read(u, false, NULL);
    upstream_arm_write(u, false, NULL);
    u->failure = why;
    u->cb(u, UPSTREAM_FAILED, u->data);
}

static void upstream_open(upstream_conn_t *u)
{
    u->state = UPSTREAM_OPEN;
    upstream_arm_read(u, false, NULL);
    upstream_arm_write(u, false, NULL);
    u->cb(u, UPSTREAM_READY, u->data);
}

static void upstream_handshake(upstream_conn_t *u)
{
    int r = sockio_handshake(&u->io);
    if (r == 1) {
        upstream_open(u);
    } else if (r == SOCKIO_WANT_READ) {
        upstream_arm_write(u, false, NULL);
        upstream_arm_read(u, true, u->pool->tv_connect);
    } else if (r == SOCKIO_WANT_WRITE) {
        upstream_arm_write(u, true, u->pool->tv_connect);
    } else {
        upstream_fail(u, GATE_REASON_UPSTREAM_TLS_HANDSHAKE);
    }
}

static void upstream_connected(upstream_conn_t *u)
{
    if (socket_connect_result(u->io.fd) != 0) {
        upstream_fail(u, GATE_REASON_UPSTREAM_CONNECT);
        return;
    }
    if (u->prepare_failed) {
        upstream_fail(u, GATE_REASON_UPSTREAM_TLS);
        return;
    }
    if (!u->io.ssl) {
        upstream_open(u);
        return;
    }
    u->state = UPSTREAM_HANDSHAKE;
    upstream_handshake(u);
}

static void upstream_on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    upstream_conn_t *u = arg;
    if (!u->cb) {
        /* Pooled and idle: the MCS closed it, sent something unasked, or
         * it idled out. None of these leaves it usable. */
        upstream_pool_remove(u->pool, u);
        upstream_close(u);
        return;
    }
    switch (u->state) {
    case UPSTREAM_CONNECTING:
        if (what & EV_TIMEOUT)
            upstream_fail(u, GATE_REASON_UPSTREAM_CONNECT_TIMEOUT);
        else
            upstream_connected(u);
        return;
    case UPSTREAM_HANDSHAKE:
        if (what & EV_TIMEOUT)
            upstream_fail(u, GATE_REASON_UPSTREAM_CONNECT_TIMEOUT);
        else
            upstream_handshake(u);
        return;
    case UPSTREAM_OPEN:
        u->cb(u, what & EV_TIMEOUT ? UPSTREAM_TIMEOUT : UPSTREAM_IO, u->data);
        return;
    }
}

/* Shared by every connection of the pool. */
static void upstream_pool_timeouts(upstream_pool_t *p)
{
    p->tv_connect = shared_timeout(p->base, p->cfg->connect_timeout_ms, &p->tv_connect_own);
    p->tv_idle = shared_timeout(p->base, p->cfg->idle_timeout_ms, &p->tv_idle_own);
}

void upstream_pool_init(upstream_pool_t *p, struct event_base *base, const config_upstream_t *cfg,
                        SSL_CTX *tls)
{
    memset(p, 0, sizeof *p);
    p->base = base;
    p->cfg = cfg;
    p->tls = tls;
    if (tls)
        SSL_CTX_up_ref(tls);
    upstream_pool_timeouts(p);
}

void upstream_pool_reconfigure(upstream_pool_t *p, const config_upstream_t *cfg, SSL_CTX *tls, uint32_t epoch)
{
    if (tls)
        SSL_CTX_up_ref(tls);
    SSL_CTX_free(p->tls);
    p->tls = tls;
    p->cfg = cfg;
    upstream_pool_timeouts(p);
    if (epoch == p->epoch)
        return;
    p->epoch = epoch;
    while (p->idle) {
        upstream_conn_t *u = p->idle;
        p->idle = u->next;
        upstream_close(u);
    }
    p->n_idle = 0;
}

void upstream_pool_close(upstream_pool_t *p)
{
    p->closing = true;
    while (p->idle) {
        upstream_conn_t *u = p->idle;
        p->idle = u->next;
        upstream_close(u);
    }
    p->n_idle = 0;
}

void upstream_pool_destroy(upstream_pool_t *p)
{
    upstream_pool_close(p);
    SSL_CTX_free(p->tls);
    p->tls = NULL;
}

upstream_conn_t *upstream_pool_get(upstream_pool_t *p, upstream_cb cb, void *data)
{
    upstream_conn_t *u = p->idle;
    if (!u)
        return NULL;
    p->idle = u->next;
    u->next = NULL;
    p->n_idle--;
    /* Read interest stays on (its events now go to the owner): the
     * owner's response timeout replaces the idle one without an
     * epoll_ctl. */
    u->reused = true;
    u->cb = cb;
    u->data = data;
    return u;
}

upstream_conn_t *upstream_connect(upstream_pool_t *p, upstream_cb cb, void *data)
{
    const config_addr_t *addr = &p->cfg->addr;
    int fd = socket_connect((const struct sockaddr *)&addr->ss, addr->len);
    if (fd < 0)
        return NULL;
    upstream_conn_t *u = calloc(1, sizeof *u);
    if (!u) {
        sockio_close(&(sockio_t){.fd = fd});
        errno = ENOMEM;
        return NULL;
    }
    u->io.fd = fd;
    u->pool = p;
    u->cb = cb;
    u->data = data;
    u->failure = GATE_REASON_NONE;
    u->state = UPSTREAM_CONNECTING;
    u->epoch = p->epoch;
    /* TLS is set up now, with the settings of this moment: a reload while
     * the connect is under way changes nothing for it. */
    if (p->tls) {
        if (sockio_attach_ssl(&u->io, SSL_new(p->tls)) < 0 || tls_client_prepare(u->io.ssl, p->cfg) < 0)
            u->prepare_failed = true;
        else
            SSL_set_connect_state(u->io.ssl);
    }
    event_assign(&u->rev, p->base, fd, EV_READ | EV_PERSIST, upstream_on_event, u);
    event_assign(&u->wev, p->base, fd, EV_WRITE | EV_PERSIST, upstream_on_event, u);
    upstream_arm_write(u, true, p->tv_connect);
    return u;
}

void upstream_release(upstream_conn_t *u, bool reuse)
{
    upstream_pool_t *p = u->pool;
    u->cb = NULL;
    u->data = NULL;
    if (!reuse || u->state != UPSTREAM_OPEN || p->closing || u->epoch != p->epoch ||
        p->n_idle >= p->cfg->max_idle) {
        upstream_close(u);
        return;
    }
    upstream_arm_write(u, false, NULL);
    u->next = p->idle;
    p->idle = u;
    p->n_idle++;
    upstream_arm_read(u, true, p->tv_idle);
}
