/* exchange_types: what an exchange is made of, apart from what it does.
 * exchange.c (one request and its upstream, the face conn.c calls) and
 * exchange_coalesce.c (reading and driving shared fetches, below it)
 * both work on these. exchange.c calls exchange_coalesce.h; the
 * coalescing side never includes exchange.h and reaches back only
 * through the hooks exchange.c puts in the context (exchange_core_t).
 * Like HAProxy's -t.h headers, this one has no .c of its own, so it is
 * no module for tools/check-layers' circle check. */
#ifndef SKEWGATE_EXCHANGE_TYPES_H
#define SKEWGATE_EXCHANGE_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "core/buf_pool.h"
#include "core/dlist.h"
#include "http/request.h"
#include "http/response.h"
#include "os/pipe.h"
#include "os/sockio.h"
#include "proxy/accesslog.h"
#include "proxy/client_table.h"
#include "proxy/coalesce.h"
#include "proxy/metrics.h"
#include "proxy/queue.h"
#include "proxy/reason.h"
#include "proxy/relay.h"
#include "proxy/upstream.h"

struct exchange;
struct exchange_driver;

enum { EXCHANGE_SEND, EXCHANGE_HEAD, EXCHANGE_BODY, EXCHANGE_FOLLOW };

/* What the exchange needs of its request, as its owner hands it over at
 * exchange_start. head and parse are read during exchange_start only: the
 * request is rewritten for the upstream there, and the exchange keeps
 * what it rewrote (the parse is the worker's, the next head's as soon as
 * exchange_start returns). */
typedef struct exchange_request {
    const char *head;                       /* the head's bytes, as parse indexes them */
    const http_request_t *parse;
    const struct sockaddr_storage *peer;    /* the client, for X-Forwarded-For */
    sockio_t *client;                       /* its socket, for as long as the exchange lasts */
    client_share_t *share;                  /* its address's (the owner's reference; may be NULL) */
    bool http10, is_head, keep_alive;
} exchange_request_t;

/* How an exchange ended for its owner: complete, the response is fully
 * written and the connection may go on with the next request; short or
 * reset, the client must not take what it got as whole, so it closes:
 * reset for a body the close itself was to delimit (a FIN, or a TLS
 * close_notify, would end it as if it were whole); a plain close for a
 * body framed by length or chunks, whose client sees it fall short. */
typedef enum { EXCHANGE_END_COMPLETE, EXCHANGE_END_SHORT, EXCHANGE_END_RESET } exchange_end_t;

/* What the owner's deadline stands for while the exchange waits. */
typedef enum {
    EXCHANGE_WAIT_NONE,         /* no deadline of the exchange's */
    EXCHANGE_WAIT_QUEUE,        /* for an upstream slot: exchange_queue_timeout when due */
    EXCHANGE_WAIT_READ,         /* the client is behind: exchange_read_timeout when due */
} exchange_wait_t;

/* How an exchange answers its owner (the connection): handed over at
 * exchange_start, as upstream_cb is handed to the upstream pool, so the
 * exchange never names the connection's functions. done and error end
 * the exchange; the owner may start the next at once. */
typedef struct exchange_owner_ops {
    void (*done)(void *owner, exchange_end_t how);
    /* An error of the gate's own, with an empty body, before a byte of
     * the response went out. */
    void (*error)(void *owner, int status, const char *reason);
    /* Sets the owner's deadline ms from now (or clears it: NONE). */
    void (*deadline)(void *owner, exchange_wait_t wait, uint64_t ms);
    /* Client writability is wanted (exchange_on_client_writable), or not. */
    void (*arm_write)(void *owner, bool on);
    /* The response can only end with the connection (a body framed by close). */
    void (*keep_alive_off)(void *owner);
    /* The connection closes once the response under way is out (it may
     * start to drain at any time). */
    bool (*will_close)(const void *owner);
} exchange_owner_ops_t;

/* A configuration generation as one worker's exchanges hold it: an
 * exchange keeps the one it started under until it ends (a plain count:
 * one thread), so a reload never changes a request half-way. */
typedef struct exchange_gen {
    config_t *cfg;                  /* a reference of its own */
    uint32_t exchanges;             /* started under it and not ended */
    struct exchange_gen *next;      /* the ctx's older generations still in use */
} exchange_gen_t;

/* What exchange_coalesce.c calls of exchange.c, put in the context by
 * exchange_ctx_init. */
typedef struct exchange_core {
    /* Everything back: the upstream (to the pool if reuse), the buffer,
     * the generation, the slot. */
    void (*release)(struct exchange *x, bool reuse);
    void (*leave_gen)(struct exchange *x);
    /* Nothing went to the client yet: an error of the gate's own. */
    void (*fail)(struct exchange *x, int status, gate_reason_t why);
    /* The response was under way: the client must not take it as complete. */
    void (*cut)(struct exchange *x, gate_reason_t why, bool upstream_fault);
    /* The forwarded request (in the buffer) goes upstream on its own, now
     * or once it holds a slot. */
    void (*upstream_start)(struct exchange *x);
    /* With a slot held: the request goes to a pooled or new connection. */
    void (*begin)(struct exchange *x);
    /* A final head was parsed: relayed to the client. */
    void (*on_head)(struct exchange *x, const http_response_t *resp, size_t head_len);
} exchange_core_t;

/* One worker's exchanges: what they share. */
typedef struct exchange_ctx {
    const config_t *cfg;            /* the current generation's (gen->cfg) */
    exchange_gen_t *gen;            /* what new exchanges start under */
    exchange_gen_t *retired;        /* older ones, freed with their last exchange */
    const exchange_core_t *core;
    unsigned n_workers;
    metrics_worker_t *metrics;
    slot_queue_t slots;             /* upstream.max_concurrent / workers, and the queue */
    upstream_pool_t upstream;
    buf_pool_t bufs;                /* relay buffers: the request, then the response */
    pipe_pool_t pipes;              /* splice relays */
    const http_limits_t *limits;
    http_response_t resp;           /* the head being parsed: one at a time per worker */
    http_header_t *resp_fields;
    char *head_out;                 /* the rewritten response head */
    size_t head_out_cap;
    const struct timeval *tv_response;
    struct timeval tv_response_own; /* shared_timeout's fallback */
    coalesce_worker_t coalesce;     /* this worker's readers of shared fetches */
    client_table_t clients;         /* what each client address holds here */
    uint64_t kept;                  /* bytes in the relays' stores (limits.max_buffered's share) */
    dlist_link_t *keepers;          /* the exchanges whose store holds bytes (keep_link) */
    /* Those that hold their slot and upstream while their store is full
     * and their client reads nothing (hold_link): a request that queues
     * for a slot has the slowest of them cut (exchange_holders_yield). */
    dlist_link_t *holders;
    struct exchange_driver *drivers;    /* the fetches this worker drives (or keeps for coalesce.ttl) */
    unsigned fetches_driven;            /* of those, the ones still filling their body */
    void (*on_idle)(void *arg);         /* exchange_ctx_stop's */
    void *on_idle_arg;
} exchange_ctx_t;

typedef struct exchange {
    void *owner;                    /* NULL: a driver (no client of its own) */
    const exchange_owner_ops_t *ops;
    exchange_ctx_t *ctx;
    request_log_t *log;
    exchange_gen_t *gen;            /* the configuration it started under; NULL once released */
    client_share_t *client;         /* its client address's share (a driver: its leader's) */
    slot_waiter_t waiter;
    upstream_conn_t *up;
    char *buf;                      /* from ctx->bufs while the exchange lasts */
    size_t off, len;                /* the request being sent, or the head being read */
    size_t req_len;                 /* the request, kept at the buffer's front for a retry */
    uint64_t head_due_ms;           /* request sent + response_timeout: the whole head by then */
    relay_t relay;                  /* relay.client: the client's socket (NULL: a driver) */
    uint8_t phase;
    bool has_slot;
    bool retried;                   /* a stale pooled connection was replaced once */
    bool up_reusable;               /* the upstream may go back to the pool */
    bool http10, is_head;           /* of the request (exchange_request_t) */
    bool keep_alive;                /* of the request, until the response is framed by the close */
    /* coalescing */
    bool may_lead;                  /* key is set: lead a fetch for it once a slot is held */
    bool follower;                  /* reads a fetch it did not lead */
    /* The reader's clock (exchange_read_clock): it runs while bytes wait
     * for the client, not while the client waits for the MCS. */
    bool read_clock_on;
    uint64_t read_used_ms, read_since_ms;
    /* In ctx->keepers while its store holds bytes, in ctx->holders while
     * it holds its slot for a full store; its body began at body_since_ms:
     * how fast it reads, to cut the slowest. */
    dlist_link_t keep_link, hold_link;
    uint64_t body_since_ms;
    uint32_t key_len;               /* the share key, at buf + len until the request is sent */
    char *forwarded;                /* a follower's forwarded request (len bytes), should it fall back */
    coalesce_reader_t reader;       /* reader.fetch: the fetch read */
    struct exchange *peer;          /* a leader's driver, a driver's leader (same worker) */
    coalesce_fetch_t *fetch;        /* a driver's fetch */
    char *body;                     /* a driver's: the fetch's body, body_got of body_len in */
    size_t body_got, body_len;
} exchange_t;

#endif
