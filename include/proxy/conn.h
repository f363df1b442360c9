/* conn: one client connection: TLS handshake, request heads, admission,
 * locally answered responses, keep-alive and pipelining. The upstream
 * exchange of an admitted request lives in proxy.c. */
#ifndef SKEWGATE_CONN_H
#define SKEWGATE_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <event2/event_struct.h>

#include "http/message.h"
#include "http/chunked.h"
#include "os/sockio.h"
#include "verdict/verdict.h"

struct worker;
struct upstream_conn;
struct gate_snapshot;

/* What the connection's single deadline stands for. */
typedef enum {
    CONN_DEADLINE_NONE,
    CONN_DEADLINE_HEADER,   /* handshake and request head: header_timeout -> 408 */
    CONN_DEADLINE_IDLE,     /* keep-alive between requests: idle_timeout -> close */
    CONN_DEADLINE_QUEUE,    /* waiting for an upstream slot: queue_timeout -> 503 */
} conn_deadline_t;

typedef enum {
    CONN_HANDSHAKE,
    CONN_READ_HEAD,
    CONN_WRITE_LOCAL,   /* a response of our own is being written */
    CONN_QUEUED,        /* waiting for an upstream slot */
    CONN_UPSTREAM,      /* request with the upstream; nothing sent to the client yet */
    CONN_RELAY,         /* response head sent; streaming the body */
    CONN_CLOSED,        /* resources released; freed once the callback unwinds */
} conn_state_t;

/* What the access log says of a request. */
typedef struct conn_request_log {
    uint32_t method_off, method_len;
    uint32_t path_off, path_len;
    uint32_t ua_off, ua_len;
    char pool[64];
    const char *decision;   /* "admit", "reject", "pass" (not gated), "error" */
    const char *reason;     /* verdict reason or local error cause; NULL if none */
    int status;
    uint64_t bytes;         /* body and head bytes sent to the client */
    uint64_t start_ns;
    uint64_t upstream_start_ns, upstream_ns;  /* upstream_ns: time with the upstream */
} conn_request_log_t;

typedef struct conn {
    struct worker *w;
    struct conn *prev, *next;   /* the worker's list */
    sockio_t io;
    struct event rev, wev, timer;
    conn_state_t state;
    bool tls;
    bool keep_alive;        /* of the current request */
    bool http10;
    bool is_head;
    bool timer_on;
    uint8_t deadline_kind;  /* conn_deadline_t */
    uint64_t deadline_ms;   /* when it is due (coarse monotonic ms) */
    uint64_t timer_ms;      /* when the armed timer fires; may be earlier */
    bool write_waiting;     /* wev added */
    bool read_on;           /* rev added */
    bool processing;        /* inside conn_process_input */
    struct sockaddr_storage peer;
    socklen_t peer_len;

    /* Request head(s) as read; requests are consumed from the front. */
    char *ibuf;
    uint32_t ilen, head_len;

    /* Locally answered response being written. */
    const char *out;
    size_t out_len, out_off;
    struct gate_snapshot *out_ref;  /* keeps `out` alive while it is written */
    bool close_after;

    /* Admitted request: relay buffer and upstream. */
    char *rbuf;
    size_t r_off, r_len;
    struct upstream_conn *up;
    struct conn *queue_next;
    bool has_slot;          /* counts against the worker's upstream cap */
    bool retried;           /* a stale pooled connection was replaced once */
    uint8_t up_phase;       /* PROXY_SEND, PROXY_HEAD, PROXY_BODY */
    bool body_done;
    bool up_reusable;       /* the upstream may go back to the pool */
    bool until_close;       /* response body ends when the upstream closes */
    bool chunked;
    int64_t body_left;      /* Content-Length bytes still to come */
    http_chunked_t chunk;
    int pipe_r, pipe_w;     /* splice relay (plain to plain), -1 when none */
    size_t pipe_len;        /* body bytes in the pipe, not yet sent */

    conn_request_log_t log;
} conn_t;

void conn_accept(struct worker *w, int fd, const struct sockaddr *peer, socklen_t peer_len, void *tls_ctx);
void conn_close(conn_t *c);
/* Stopping: closes the connections that sit between requests. */
void conn_close_idle(struct worker *w);
/* Tear-down: closes every connection. */
void conn_close_all(struct worker *w);
/* Frees the connections closed so far (their callbacks have returned). */
void conn_reap(struct worker *w);
/* Called by proxy.c once the exchange ended and the response is fully
 * written: logs, then goes on with the next request or closes. */
void conn_request_done(conn_t *c);
/* The connection closes once the response under way is out. */
bool conn_will_close(const conn_t *c);
/* An error answered with an empty body: status, reason, whether to close. */
void conn_send_error(conn_t *c, int status, const char *reason, bool close_after);
/* Sets the connection's deadline (header, idle or queue) ms from now, or
 * clears it (CONN_DEADLINE_NONE). Moving it later costs a store: the timer
 * re-arms itself when it fires early, so requests do not touch the timer. */
void conn_deadline(conn_t *c, conn_deadline_t kind, uint64_t ms);
/* Resumes writing after the socket became writable (EV_WRITE callback helper). */
void conn_arm_write(conn_t *c, bool on);
void conn_arm_read(conn_t *c, bool on);

#endif
