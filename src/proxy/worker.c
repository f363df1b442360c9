#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/log.h"
#include "proxy/conn.h"
#include "proxy/exchange.h"
#include "proxy/held.h"
#include "proxy/metrics.h"
#include "proxy/worker.h"

/* Connections accepted per listener wake-up, so one busy listener cannot
 * starve the connections it already has. */
#define WORKER_ACCEPT_BATCH 64
/* Out of descriptors, the pending connection stays in the backlog and the
 * listener stays readable: accepting again at once spun a worker (0.65 s
 * of CPU a second) and logged 118,676 lines a second (t_fault_process).
 * The listener rests this long instead, as nginx does. */
#define WORKER_ACCEPT_PAUSE_MS 100

static void worker_on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    worker_listener_t *l = arg;
    if (!l->w->env.stopping && l->fd >= 0)
        event_add(&l->ev, NULL);
}

/* EMFILE or ENFILE: say so once per episode, and rest the listener. */
static void worker_accept_starved(worker_listener_t *l, int err)
{
    if (!l->starved)
        log_msg(LOG_WARN, "accept", "%s: pausing accepts on this listener %d ms at a time until one succeeds",
                strerror(err), WORKER_ACCEPT_PAUSE_MS);
    l->starved = true;
    event_del(&l->ev);
    struct timeval tv = clock_timeval(WORKER_ACCEPT_PAUSE_MS);
    evtimer_add(&l->resume_ev, &tv);
}

static void worker_on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    worker_listener_t *l = arg;
    worker_t *w = l->w;
    for (int i = 0; i < WORKER_ACCEPT_BATCH && !w->env.stopping; i++) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        int cfd = accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                worker_accept_starved(l, errno);
            return;
        }
        l->starved = false;
        uint32_t total = atomic_fetch_add_explicit(&conn_total_open, 1, memory_order_relaxed);
        if (total >= w->env.cfg->limits.max_connections) {
            /* Over the cap: a closed connection is a transport error,
             * which Ignition retries with backoff. */
            atomic_fetch_sub_explicit(&conn_total_open, 1, memory_order_relaxed);
            metrics_add(&w->env.metrics.refused_over_limit, 1);
            close(cfd);
            continue;
        }
        conn_accept(&w->env, cfd, (struct sockaddr *)&peer, plen, l->tls, l->id, l->cfg);
    }
}

/* A stopping worker's last fetch for other workers' readers landed. */
static void worker_on_exchange_idle(void *arg)
{
    worker_t *w = arg;
    if (w->env.conns.n_open == 0)
        event_base_loopexit(w->env.base, NULL);
}

static void worker_stop_now(worker_t *w)
{
    if (w->env.stopping)
        return;
    w->env.stopping = true;
    for (size_t i = 0; i < w->n_listeners; i++) {
        event_del(&w->listeners[i].ev);
        event_del(&w->listeners[i].resume_ev);
        close(w->listeners[i].fd);
        w->listeners[i].fd = -1;
    }
    exchange_ctx_stop(&w->env.exchange, worker_on_exchange_idle, w);
    /* Connections idle between requests close now; the others when their
     * response is written (keep-alive is off once stopping). */
    struct timeval tv = clock_timeval(w->env.cfg->limits.drain_timeout_ms);
    event_base_loopexit(w->env.base, &tv);
    conn_close_idle(&w->env.conns);
    if (w->env.conns.n_open == 0 && !exchange_ctx_busy(&w->env.exchange))
        event_base_loopexit(w->env.base, NULL);
}

static void worker_listener_add(worker_t *w, size_t i, uint32_t id, int fd, SSL_CTX *tls,
                                const config_listener_t *lc)
{
    worker_listener_t *l = &w->listeners[i];
    *l = (worker_listener_t){.fd = fd, .id = id, .tls = tls, .cfg = lc, .w = w};
    event_assign(&l->ev, w->env.base, fd, EV_READ | EV_PERSIST, worker_on_accept, l);
    evtimer_assign(&l->resume_ev, w->env.base, worker_on_accept_resume, l);
    event_add(&l->ev, NULL);
}

void worker_reload_free(worker_reload_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->cfg && i < r->cfg->n_listeners; i++) {
        if (r->listeners[i].fd >= 0)
            close(r->listeners[i].fd);
        SSL_CTX_free(r->listeners[i].tls);
    }
    SSL_CTX_free(r->upstream_tls);
    exchange_gen_free(r->gen);
    config_unref(r->cfg);
    free(r);
}

static void worker_ack(int fd)
{
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof one);
    (void)n;
}

/* The listeners of r in their order: a kept one moves its socket (its
 * event is assigned anew, the socket never closes, so no connection is
 * refused); a removed one closes and its connections drain. */
static void worker_reload_listeners(worker_t *w, worker_reload_t *r)
{
    worker_listener_t old[CONFIG_MAX_LISTENERS];
    size_t n_old = w->n_listeners, n = 0;
    for (size_t i = 0; i < n_old; i++) {
        /* A paused listener is assigned anew below, and accepts at once. */
        event_del(&w->listeners[i].ev);
        event_del(&w->listeners[i].resume_ev);
        old[i] = w->listeners[i];
    }
    for (size_t i = 0; i < r->cfg->n_listeners; i++) {
        worker_listen_t *nl = &r->listeners[i];
        int fd = nl->fd;
        for (size_t k = 0; fd < 0 && k < n_old; k++)
            if (old[k].id == nl->id && old[k].fd >= 0) {
                fd = old[k].fd;
                old[k].fd = -1;
                /* Connections made with the old context keep a reference. */
                SSL_CTX_free(old[k].tls);
                old[k].tls = NULL;
            }
        if (fd < 0) {
            log_msg(LOG_ERROR, "reload", "worker has no socket for listener %u", nl->id);
            continue;
        }
        /* Into r->cfg, which becomes w->env.cfg: a kept socket takes the new
         * PROXY protocol settings. */
        worker_listener_add(w, n++, nl->id, fd, nl->tls, &r->cfg->listeners[i]);
        nl->fd = -1;
        nl->tls = NULL;
    }
    w->n_listeners = n;
    for (size_t k = 0; k < n_old; k++) {
        if (old[k].fd < 0)
            continue;
        close(old[k].fd);
        SSL_CTX_free(old[k].tls);
        conn_drain_listener(&w->env.conns, old[k].id);
    }
}

/* Between two events: no exchange or connection callback is under way,
 * so every module sees the switch at a point where it holds nothing half
 * done. Exchanges in flight keep their generation (exchange_gen_t). No
 * step can fail: the acknowledgement says the worker serves r->cfg. */
static void worker_apply_reload(worker_t *w, worker_reload_t *r)
{
    int ack_fd = r->ack_fd;
    if (w->env.stopping) {
        worker_reload_free(r);
    } else {
        exchange_ctx_reconfigure(&w->env.exchange, r->gen, r->upstream_tls, r->upstream_epoch);
        r->gen = NULL;
        conn_set_reconfigure(&w->env.conns, w->env.base, &r->cfg->limits);
        worker_reload_listeners(w, r);
        config_unref(w->env.cfg);
        w->env.cfg = r->cfg;
        r->cfg = NULL;
        SSL_CTX_free(r->upstream_tls);
        free(r);
    }
    worker_ack(ack_fd);
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
            if (w->env.snapshot)
                gate_snapshot_unref(w->env.snapshot);
            w->env.snapshot = snap;
        }
    }
    /* After the snapshot: one published before the reload is in place
     * when the reload is acknowledged. */
    if (cmds & WORKER_CMD_RELOAD) {
        worker_reload_t *r = atomic_exchange(&w->next_reload, NULL);
        if (r)
            worker_apply_reload(w, r);
    }
    if (cmds & WORKER_CMD_TOKENS) {
        token_set_t *set = atomic_exchange(&w->next_tokens, NULL);
        if (set) {
            /* Requests judge synchronously: none holds the old set now. */
            token_set_unref(w->env.tokens);
            w->env.tokens = set;
        }
    }
    if (cmds & WORKER_CMD_ADDRSET) {
        addrset_t *set = atomic_exchange(&w->next_addrset, NULL);
        if (set) {
            /* Nothing else holds the old set: a request looks it up and
             * is done with it. */
            addrset_unref(w->env.addrset);
            w->env.addrset = set;
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

void worker_publish_addrset(worker_t *w, addrset_t *set)
{
    addrset_unref(atomic_exchange(&w->next_addrset, set));
    worker_notify(w, WORKER_CMD_ADDRSET);
}

void worker_publish_reload(worker_t *w, worker_reload_t *r)
{
    worker_reload_free(atomic_exchange(&w->next_reload, r));
    worker_notify(w, WORKER_CMD_RELOAD);
}

void worker_publish_tokens(worker_t *w, token_set_t *set)
{
    token_set_unref(atomic_exchange(&w->next_tokens, set));
    worker_notify(w, WORKER_CMD_TOKENS);
}

void worker_stop(worker_t *w)
{
    worker_notify(w, WORKER_CMD_STOP);
}

int worker_init(worker_t *w, unsigned n_workers, config_t *cfg, const worker_listen_t *listeners,
                SSL_CTX *upstream_tls, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->env.cfg = config_ref(cfg);
    w->notify_fd = -1;
    struct event_config *ec = event_config_new();
    /* Each base is touched by its own thread only. */
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    w->env.base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (!w->env.base) {
        snprintf(err, errlen, "worker: event_base_new failed");
        return -1;
    }
    w->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->notify_fd < 0) {
        snprintf(err, errlen, "worker: eventfd: %s", strerror(errno));
        return -1;
    }
    event_assign(&w->notify_ev, w->env.base, w->notify_fd, EV_READ | EV_PERSIST, worker_on_notify, w);
    event_add(&w->notify_ev, NULL);
    /* The table's bound is the gate's: each worker gets its share. */
    uint32_t held_share = (cfg->held.max_clients + n_workers - 1) / n_workers;
    if (held_table_init(&w->env.held, held_share, cfg->held.forget_after_ms) < 0) {
        snprintf(err, errlen, "worker: out of memory for %u held clients", held_share);
        return -1;
    }
    w->env.metrics.held = &w->env.held;
    if (conn_set_init(&w->env.conns, w->env.base, &cfg->limits, err, errlen) < 0 ||
        exchange_ctx_init(&w->env.exchange, w->env.base, cfg, n_workers, &w->env.conns.limits, upstream_tls,
                          &w->env.metrics, err, errlen) < 0)
        return -1;
    w->n_listeners = cfg->n_listeners;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        if (listeners[i].tls)
            SSL_CTX_up_ref(listeners[i].tls);
        worker_listener_add(w, i, listeners[i].id, listeners[i].fd, listeners[i].tls, &cfg->listeners[i]);
    }
    return 0;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    event_base_dispatch(w->env.base);
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
    conn_close_all(&w->env.conns);
    for (size_t i = 0; i < w->n_listeners; i++) {
        if (w->listeners[i].fd >= 0) {
            event_del(&w->listeners[i].ev);
            event_del(&w->listeners[i].resume_ev);
            close(w->listeners[i].fd);
        }
        SSL_CTX_free(w->listeners[i].tls);
    }
    worker_reload_free(atomic_exchange(&w->next_reload, NULL));
    exchange_ctx_destroy(&w->env.exchange);
    conn_set_destroy(&w->env.conns);
    held_table_destroy(&w->env.held);
    if (w->env.snapshot)
        gate_snapshot_unref(w->env.snapshot);
    token_set_unref(w->env.tokens);
    token_set_unref(atomic_exchange(&w->next_tokens, NULL));
    addrset_unref(w->env.addrset);
    addrset_unref(atomic_exchange(&w->next_addrset, NULL));
    gate_snapshot_t *pending = atomic_exchange(&w->next_snapshot, NULL);
    if (pending)
        gate_snapshot_unref(pending);
    if (w->notify_fd >= 0) {
        event_del(&w->notify_ev);
        close(w->notify_fd);
    }
    if (w->env.base)
        event_base_free(w->env.base);
    config_unref(w->env.cfg);
}
