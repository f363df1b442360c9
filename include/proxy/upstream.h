/* upstream: connections to the MCS, per worker: a keep-alive pool of idle
 * connections, non-blocking connect, TLS with verification. */
#ifndef SKEWGATE_UPSTREAM_H
#define SKEWGATE_UPSTREAM_H

#include <stdbool.h>
#include <event2/event_struct.h>

#include "os/sockio.h"

struct worker;
struct conn;

typedef enum {
    UPSTREAM_CONNECTING,
    UPSTREAM_HANDSHAKE,
    UPSTREAM_READY,
} upstream_state_t;

typedef struct upstream_conn {
    sockio_t io;
    struct event rev, wev;
    struct worker *w;
    struct conn *client;            /* owner while in use; NULL while pooled */
    struct upstream_conn *next;     /* idle list */
    upstream_state_t state;
    bool reused;                    /* came from the pool */
    bool wev_on, rev_on;
} upstream_conn_t;

/* A pooled connection that is still open, or NULL. */
upstream_conn_t *upstream_pool_get(struct worker *w);
/* Returns a connection whose exchange ended cleanly to the pool (or closes
 * it when the pool is full or the worker is stopping). */
void upstream_pool_put(upstream_conn_t *u);
/* Starts a new connection; NULL (errno set) when the socket can't be made. */
upstream_conn_t *upstream_connect(struct worker *w);
void upstream_close(upstream_conn_t *u);
/* Read/write interest; tv is the inactivity timeout while armed. */
void upstream_arm_read(upstream_conn_t *u, bool on, const struct timeval *tv);
void upstream_arm_write(upstream_conn_t *u, bool on, const struct timeval *tv);
void upstream_pool_drain(struct worker *w);

#endif
