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
#include "http/request.h"
#include "http/response.h"
#include "proxy/metrics.h"
#include "verdict/snapshot.h"

struct conn;
struct upstream_conn;

typedef struct worker_listener {
    int fd;
    struct event ev;
    SSL_CTX *tls;               /* NULL: plain */
    const config_listener_t *conf;
    struct worker *w;
} worker_listener_t;

/* A stack of equal-sized buffers: buffers go back here instead of to
 * malloc, and idle connections hold none. */
typedef struct buf_pool {
    void **free;
    size_t n_free, cap_free;
    size_t size;
} buf_pool_t;

enum {
    WORKER_CMD_SNAPSHOT = 1u << 0,
    WORKER_CMD_STOP = 1u << 1,
    WORKER_CMD_TLS = 1u << 2,
};

typedef struct worker {
    unsigned id;
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

    /* Per-request scratch: a request is parsed and dispatched before the
     * next one is looked at, so one parse result per worker suffices. */
    http_request_t req;
    http_response_t resp;
    http_header_t *req_headers, *resp_headers;  /* limits.max_headers each */
    struct conn *conns;             /* every connection of this worker */
    struct conn *closed;            /* closed, to be freed by reap_ev */
    struct event reap_ev;
    http_limits_t http_limits;
    char *path_scratch;             /* the decoded, cleaned path */
    size_t path_scratch_len;

    buf_pool_t head_bufs;           /* limits.max_header_bytes each */
    buf_pool_t relay_bufs;          /* WORKER_RELAY_BUF each */
    int (*pipes)[2];                /* empty pipes kept for splice relays */
    size_t n_pipes;

    /* Upstream. */
    SSL_CTX *upstream_tls;
    struct upstream_conn *idle_upstreams;   /* keep-alive pool, LIFO */
    uint32_t n_idle_upstreams;
    uint32_t upstream_active, upstream_cap;
    struct conn *queue_head, *queue_tail;   /* waiting for an upstream slot */
    uint32_t queue_len, queue_cap;

    /* Timeouts shared by many events: libevent keeps these in O(1) queues. */
    const struct timeval *tv_send;
    const struct timeval *tv_up_connect, *tv_up_response, *tv_up_idle;

    uint32_t n_conns;
    bool stopping;
    struct event drain_ev;
    metrics_worker_t metrics;      /* written by this thread only; read by the admin listener */

    /* Access log time, formatted once per second. */
    time_t log_sec;
    char log_time[32];
} worker_t;

#define WORKER_RELAY_BUF (64 * 1024)
#define WORKER_SPARE_PIPES 16

/* Shared between workers: the gate's connection cap. */
extern _Atomic uint32_t worker_total_conns;

/* listen_fds[i] and listener_tls[i] belong to cfg->listeners[i]. */
int worker_init(worker_t *w, unsigned id, const config_t *cfg, const int *listen_fds,
                SSL_CTX *const *listener_tls, SSL_CTX *upstream_tls, char *err, size_t errlen);
int worker_start(worker_t *w);
void worker_join(worker_t *w);
void worker_destroy(worker_t *w);

/* Main thread -> worker: hands over a reference. */
void worker_publish_snapshot(worker_t *w, gate_snapshot_t *snap);
void worker_publish_tls(worker_t *w, size_t listener, SSL_CTX *ctx);
void worker_stop(worker_t *w);

/* Opens one SO_REUSEPORT listening socket; a port 0 is resolved and
 * written back into ss so that the other workers bind the same port. */
int worker_listen_socket(struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen);

void *buf_pool_get(buf_pool_t *p);
void buf_pool_put(buf_pool_t *p, void *buf);

#endif
