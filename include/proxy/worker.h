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
#include "core/addrset.h"
#include "policy/token_set.h"
#include "proxy/conn.h"
#include "proxy/exchange_types.h"
#include "verdict/snapshot.h"

typedef struct worker_listener {
    int fd;
    uint32_t id;                /* the gate's name for the listener, stable across reloads */
    struct event ev;
    struct event resume_ev;     /* accepts paused while descriptors run out */
    bool starved;               /* out of descriptors since the last accept */
    SSL_CTX *tls;               /* NULL: plain */
    const config_listener_t *cfg;   /* proxy_protocol, trusted_proxies */
    struct worker *w;
} worker_listener_t;

/* A listener as the main thread hands it over: one socket of its own for
 * this worker, and its TLS context (a reference; NULL: plain). */
typedef struct worker_listen {
    uint32_t id;
    int fd;                     /* -1 in a reload: the worker keeps its socket of this id */
    SSL_CTX *tls;
} worker_listen_t;

/* One worker's part of a reload (SIGHUP): the worker takes everything in
 * it, applies it between two events of its loop (no callback of its is
 * under way) and writes 1 to ack_fd. Listeners of the worker's that are
 * not in listeners[] close, and their connections drain. Whatever the
 * switch needs to allocate comes made in it, so a worker never
 * acknowledges a reload it could not apply. */
typedef struct worker_reload {
    config_t *cfg;              /* a reference */
    exchange_gen_t *gen;        /* the exchanges' generation of cfg (exchange_gen_new) */
    SSL_CTX *upstream_tls;      /* a reference; NULL: plain */
    uint32_t upstream_epoch;    /* the gate's name for cfg's upstream peer (upstream_pool_t.epoch) */
    worker_listen_t listeners[CONFIG_MAX_LISTENERS];    /* cfg->n_listeners of them */
    int ack_fd;                 /* an eventfd of the main thread's */
} worker_reload_t;

enum {
    WORKER_CMD_SNAPSHOT = 1u << 0,
    WORKER_CMD_STOP = 1u << 1,
    WORKER_CMD_RELOAD = 1u << 2,
    WORKER_CMD_TOKENS = 1u << 3,
    WORKER_CMD_ADDRSET = 1u << 4,
};

typedef struct worker {
    pthread_t thread;
    /* What its connections read: the event base, the configuration, the
     * published sets and each module's per-thread state. */
    conn_env_t env;
    worker_listener_t listeners[CONFIG_MAX_LISTENERS];
    size_t n_listeners;

    /* Control from the main thread. */
    int notify_fd;
    struct event notify_ev;
    _Atomic unsigned commands;
    _Atomic(gate_snapshot_t *) next_snapshot;   /* becomes env.snapshot */
    _Atomic(worker_reload_t *) next_reload;
    _Atomic(token_set_t *) next_tokens;         /* becomes env.tokens */
    _Atomic(addrset_t *) next_addrset;          /* becomes env.addrset */
} worker_t;

/* listeners[i] belongs to cfg->listeners[i]; the worker takes its socket
 * and a reference of its TLS context, and one of cfg. */
int worker_init(worker_t *w, unsigned n_workers, config_t *cfg, const worker_listen_t *listeners,
                SSL_CTX *upstream_tls, char *err, size_t errlen);
int worker_start(worker_t *w);
void worker_join(worker_t *w);
void worker_destroy(worker_t *w);

/* Main thread -> worker: hands over a reference. */
void worker_publish_snapshot(worker_t *w, gate_snapshot_t *snap);
/* Main thread -> worker: hands the reload over (the worker frees it).
 * The caller sends the next one only once this one is acknowledged. */
void worker_publish_reload(worker_t *w, worker_reload_t *r);
/* Frees a reload no worker took, closing its new sockets. */
void worker_reload_free(worker_reload_t *r);
void worker_publish_tokens(worker_t *w, token_set_t *set);
void worker_publish_addrset(worker_t *w, addrset_t *set);
void worker_stop(worker_t *w);

#endif
