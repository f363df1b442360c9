/* conn: one client connection: TLS handshake, request heads, admission,
 * locally answered responses, keep-alive and pipelining. An admitted
 * request goes to the exchange the connection embeds (exchange.h), which
 * answers through the callbacks the connection hands it
 * (exchange_owner_ops_t): the exchange knows nothing of this header. */
#ifndef SKEWGATE_CONN_H
#define SKEWGATE_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <event2/event_struct.h>

#include "conf/config.h"
#include "core/addrset.h"
#include "core/buf_pool.h"
#include "http/request.h"
#include "os/sockio.h"
#include "policy/token_set.h"
#include "proxy/accesslog.h"
#include "proxy/exchange.h"
#include "proxy/pace.h"
#include "proxy/held.h"
#include "proxy/metrics.h"
#include "verdict/snapshot.h"

struct event_base;

/* What the connection's single deadline stands for. */
typedef enum {
    CONN_DEADLINE_NONE,
    CONN_DEADLINE_HEADER,   /* handshake and request head: header_timeout -> 408 */
    CONN_DEADLINE_IDLE,     /* keep-alive between requests: idle_timeout -> close */
    CONN_DEADLINE_QUEUE,    /* waiting for an upstream slot: queue_timeout -> 503 */
    CONN_DEADLINE_READ,         /* a client behind its response: send_timeout + size / coalesce.min_read_rate -> cut */
} conn_deadline_t;

typedef enum {
    CONN_PROXY_HEADER,  /* a PROXY protocol listener: its header comes first, before TLS */
    CONN_HANDSHAKE,
    CONN_READ_HEAD,
    CONN_WRITE_LOCAL,   /* a response of our own is being written */
    CONN_EXCHANGE,      /* the request is the exchange's until it answers */
    CONN_CLOSED,        /* resources released; freed once the callback unwinds */
} conn_state_t;

/* One worker's connections and what their heads are read with. */
typedef struct conn_set {
    struct conn *open;              /* every open connection */
    struct conn *closed;            /* closed, to be freed by reap_ev */
    struct event reap_ev;
    uint32_t n_open;
    buf_pool_t head_bufs;           /* limits.max_header_bytes each */
    /* A request is parsed and dispatched before the next one is looked
     * at, so one parse result per worker suffices. */
    http_request_t req;
    http_header_t *req_fields;
    http_limits_t limits;
    char *path;                     /* the decoded, cleaned path */
    size_t path_cap;
    const struct timeval *tv_send;
    struct timeval tv_send_own;     /* shared_timeout's fallback */
    /* TLS connections keep OpenSSL's record buffers while busy; this
     * timer gives them back once a connection has been quiet for
     * CONN_QUIET_MS, armed only while one holds them. */
    struct event quiet_ev;
    bool quiet_on;
} conn_set_t;

/* How long a TLS connection waits between requests before its record
 * buffers (about 34 KiB) go back to the allocator. */
#define CONN_QUIET_MS 250

int conn_set_init(conn_set_t *s, struct event_base *base, const config_limits_t *lim, char *err, size_t errlen);
/* A reload: the timeouts of lim from now on (the sizes must not change). */
void conn_set_reconfigure(conn_set_t *s, struct event_base *base, const config_limits_t *lim);
/* Frees what is left; the connections must be closed and reaped. */
void conn_set_destroy(conn_set_t *s);

/* What a connection reads of the worker it lives on: the worker owns it
 * (worker_t embeds one) and keeps it current, swapping cfg, snapshot,
 * tokens and addrset between two events. It is handed at conn_accept, so
 * conn knows nothing of worker_t, and held by value so that c->env->cfg
 * costs what c->w->cfg did. */
typedef struct conn_env {
    struct event_base *base;
    /* The configuration requests are served by: a plain pointer the
     * worker swaps between two events on a reload, so a request reads it
     * with no atomic and code reading it at request time follows reloads. */
    config_t *cfg;
    gate_snapshot_t *snapshot;      /* read on every request; this thread only */
    token_set_t *tokens;            /* admission.token's accepted tokens; NULL: the policy is off */
    addrset_t *addrset;             /* admission.machines; NULL until the first full list */
    bool stopping;                  /* the worker drains: the last connection to close ends its loop */

    /* Each module's own per-thread state. */
    conn_set_t conns;               /* conn.c */
    exchange_ctx_t exchange;        /* exchange.c: slots, upstream pool, relay buffers */
    accesslog_clock_t log_clock;    /* accesslog.c */
    metrics_worker_t metrics;       /* written by this thread only; read by the admin listener */
    held_table_t held;              /* held.c: the clients this worker rejected; same rule */
    /* Every worker's held table (this one's included), read to mark a
     * node admitted that another worker held; set once before start. */
    const held_table_t *const *held_peers;
    size_t n_held_peers;
    pace_room_t *pace;              /* the gate's line (pace.h), shared; set once before start */
} conn_env_t;

/* Shared between workers: the open connections of the gate, against its
 * connection cap. The worker counts one up at accept (and checks the
 * cap); conn counts it down when it closes one or fails to take it. */
extern _Atomic uint32_t conn_total_open;

typedef struct conn {
    conn_env_t *env;            /* the worker's, handed at accept */
    struct conn *prev, *next;   /* the set's list */
    sockio_t io;
    struct event rev, wev, timer;
    conn_state_t state;
    bool tls;
    bool keep_alive;        /* of the current request */
    bool http10;
    bool is_head;
    bool timer_on;
    uint8_t deadline_kind;  /* conn_deadline_t */
    uint32_t quiet_since_ms;    /* coarse ms, low 32 bits: the last response out (or the handshake
                                   done); in padding, so the struct keeps its size and layout */
    uint64_t deadline_ms;   /* when it is due (coarse monotonic ms) */
    uint64_t timer_ms;      /* when the armed timer fires; may be earlier */
    bool write_waiting;     /* wev added */
    bool read_on;           /* rev added */
    bool processing;        /* inside conn_process_input */
    bool draining;          /* the worker is stopping or its listener was removed: it closes after
                               the response under way (one flag, so a request reads one byte) */
    bool proxy_untrusted;   /* PROXY listener, peer outside trusted_proxies: refused once its header is read */
    bool tls_bufs;          /* OpenSSL may hold record buffers: the quiet sweep looks at it */
    uint32_t listener;      /* the id of the listener that accepted it */
    struct sockaddr_storage peer;   /* the client: the PROXY header's source, else the socket's peer */
    socklen_t peer_len;

    /* Request head(s) as read; requests are consumed from the front. */
    char *ibuf;
    uint32_t ilen, head_len;

    /* Locally answered response being written. */
    const char *out;
    size_t out_len, out_off;
    struct gate_snapshot *out_ref;  /* keeps `out` alive while it is written */
    bool close_after;
    bool broken;            /* an unframed response was cut: the close is a reset (sockio_abort) */

    exchange_t exchange;    /* an admitted request's upstream side */
    client_share_t *share;  /* its address's entry in the worker's client table, from its
                               first admitted request on (NULL before, or out of memory) */
    request_log_t log;
} conn_t;

/* env: the worker's (it outlives the connection); the caller has counted
 * the connection in conn_total_open. listener: its id (stable across
 * reloads); lc: its configuration (its PROXY protocol settings). */
void conn_accept(conn_env_t *env, int fd, const struct sockaddr *peer, socklen_t peer_len, void *tls_ctx,
                 uint32_t listener, const config_listener_t *lc);
void conn_close(conn_t *c);
/* Stopping: closes the connections that sit between requests; the others
 * close after their response. */
void conn_close_idle(conn_set_t *s);
/* The listener went away in a reload: its connections that sit between
 * requests close now, the others once their response is out. */
void conn_drain_listener(conn_set_t *s, uint32_t listener);
/* Tear-down: closes and frees every connection. */
void conn_close_all(conn_set_t *s);

#endif
