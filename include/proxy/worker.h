/* worker: one thread, one event_base, its own SO_REUSEPORT listeners, its
 * own upstream pool and buffers. Connections never move between workers,
 * so nothing on the data path is shared but the verdict snapshot, which
 * arrives through an eventfd and an atomic slot. */
#ifndef SKEWGATE_WORKER_H
#define SKEWGATE_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "proxy/accesslog.h"
#include "proxy/conn.h"
#include "proxy/exchange.h"
#include "proxy/metrics.h"
#include "verdict/snapshot.h"

typedef struct worker_listener {
    int fd;
    struct event ev;
    struct event resume_ev;     /* accepts paused while descriptors run out */
    bool starved;               /* out of descriptors since the last accept */
    SSL_CTX *tls;               /* NULL: plain */
    struct worker *w;
} worker_listener_t;

enum {
    WORKER_CMD_SNAPSHOT = 1u << 0,
    WORKER_CMD_STOP = 1u << 1,
    WORKER_CMD_TLS = 1u << 2,
};

typedef struct worker {
    pthread_t thread;
    struct event_base *base;
    const config_t *cfg;
    worker_listener_t listeners[CONFIG_MAX_LISTENERS];
    size_t n_listeners;

    /* Control from the main thread. */
    int notify_fd;
    struct event notify_ev;
    _Atomic unsigned commands;
    _Atomic(gate_snapshot_t *) next_snapshot;
    SSL_CTX *_Atomic next_tls[CONFIG_MAX_LISTENERS];
    gate_snapshot_t *snapshot;      /* read on every request; this thread only */

    /* Each module's own per-thread state. */
    conn_set_t conns;               /* conn.c */
    exchange_ctx_t exchange;        /* exchange.c: slots, upstream pool, relay buffers */
    accesslog_clock_t log_clock;    /* accesslog.c */
    metrics_worker_t metrics;       /* written by this thread only; read by the admin listener */

    bool stopping;
} worker_t;

/* Shared between workers: the gate's connection cap. */
extern _Atomic uint32_t worker_total_conns;

/* listen_fds[i] and listener_tls[i] belong to cfg->listeners[i]. */
int worker_init(worker_t *w, unsigned n_workers, const config_t *cfg, const int *listen_fds,
                SSL_CTX *const *listener_tls, SSL_CTX *upstream_tls, char *err, size_t errlen);
int worker_start(worker_t *w);
void worker_join(worker_t *w);
void worker_destroy(worker_t *w);

/* Main thread -> worker: hands over a reference. */
void worker_publish_snapshot(worker_t *w, gate_snapshot_t *snap);
void worker_publish_tls(worker_t *w, size_t listener, SSL_CTX *ctx);
void worker_stop(worker_t *w);

#endif
