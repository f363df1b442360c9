/* upstream: the connections to the MCS of one worker, for their whole
 * life: the socket, the non-blocking connect, the TLS handshake (CA
 * verified, SNI) and the keep-alive pool of idle ones. Whoever uses a
 * connection hands it a callback, and hears of it only through that
 * callback (h2o's socket pool does the same): upstream knows nothing of
 * requests. */
#ifndef SKEWGATE_UPSTREAM_H
#define SKEWGATE_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <event2/event_struct.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "os/sockio.h"
#include "proxy/reason.h"

typedef struct upstream_conn upstream_conn_t;

typedef enum {
    UPSTREAM_READY,     /* connected, TLS done: the request can go */
    UPSTREAM_FAILED,    /* the connection could not be made: u->failure says why;
                           the owner must upstream_release() it */
    UPSTREAM_IO,        /* in use: an armed read or write fired */
    UPSTREAM_TIMEOUT,   /* in use: an armed read or write timed out */
} upstream_event_t;

/* The owner's callback; data is what it passed with the connection. */
typedef void (*upstream_cb)(upstream_conn_t *u, upstream_event_t ev, void *data);

typedef enum { UPSTREAM_CONNECTING, UPSTREAM_HANDSHAKE, UPSTREAM_OPEN } upstream_state_t;

struct upstream_conn {
    sockio_t io;                    /* read and written by the owner once READY */
    bool reused;                    /* came from the pool: it may have died unseen */
    gate_reason_t failure;          /* with UPSTREAM_FAILED */
    /* upstream's own */
    struct event rev, wev;
    struct upstream_pool *pool;
    upstream_cb cb;                 /* NULL while pooled */
    void *data;
    upstream_conn_t *next;          /* idle list */
    upstream_state_t state;
    uint32_t epoch;                 /* the pool's epoch when it was made */
    bool prepare_failed;            /* its TLS could not be set up: FAILED once connected */
    bool wev_on, rev_on;
};

/* One worker's connections to the MCS. */
typedef struct upstream_pool {
    struct event_base *base;
    const config_upstream_t *cfg;
    SSL_CTX *tls;                   /* NULL: plain */
    const struct timeval *tv_connect, *tv_idle;
    struct timeval tv_connect_own, tv_idle_own;     /* shared_timeout's fallbacks */
    upstream_conn_t *idle;          /* LIFO: the warmest first */
    uint32_t n_idle;
    /* The gate's name for the peer cfg reaches: the same on every worker
     * for one peer (0 at start; the reload that changes the peer hands
     * each worker the next one, gate_reload.c). A connection of another
     * epoch is not pooled again; coalescing keys by it (coalesce_key_t). */
    uint32_t epoch;
    bool closing;                   /* stopping: nothing goes back to the pool */
} upstream_pool_t;

/* tls (may be NULL) gets a reference of the pool's own. */
void upstream_pool_init(upstream_pool_t *p, struct event_base *base, const config_upstream_t *cfg,
                        SSL_CTX *tls);
/* A reload: new connections use cfg and tls (a reference of the pool's
 * own; NULL: plain), and the timeouts and max_idle of cfg. epoch names
 * the peer cfg reaches; another than the pool's (the MCS's address or
 * the way to reach it changed, or this worker missed a reload that did):
 * the idle connections close now, those in use close when released. cfg
 * must outlive the pool or the next call. */
void upstream_pool_reconfigure(upstream_pool_t *p, const config_upstream_t *cfg, SSL_CTX *tls, uint32_t epoch);
/* Closes the idle connections; no more go back to the pool after it. */
void upstream_pool_close(upstream_pool_t *p);
void upstream_pool_destroy(upstream_pool_t *p);

/* A pooled connection, ready at once (no callback for it), or NULL. */
upstream_conn_t *upstream_pool_get(upstream_pool_t *p, upstream_cb cb, void *data);
/* Starts a new connection: READY or FAILED comes through cb, never from
 * within this call. NULL (errno set) when no socket could be made. */
upstream_conn_t *upstream_connect(upstream_pool_t *p, upstream_cb cb, void *data);
/* The owner is done with it: back to the pool when reuse (the exchange
 * ended cleanly) and there is room, else closed. */
void upstream_release(upstream_conn_t *u, bool reuse);

/* Read/write interest while in use; tv is the inactivity timeout while
 * armed (NULL: none). */
void upstream_arm_read(upstream_conn_t *u, bool on, const struct timeval *tv);
void upstream_arm_write(upstream_conn_t *u, bool on, const struct timeval *tv);

#endif
