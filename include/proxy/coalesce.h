/* coalesce: collapsed forwarding. Admitted GETs that go to the same MCS
 * with identical forwarded request line and Accept bytes get the same
 * render (the MCS reads nothing else of a request, DESIGN 1.3;
 * rewrite_share_key), so while one upstream fetch for that key is in
 * flight, the others become its readers instead of asking again. Only a
 * complete 200 is shared; on anything else its readers ask the MCS on
 * their own.
 *
 * A fetch is one response held once in memory: two pre-rendered heads (a
 * keep-alive and a close variant) and the body in one buffer of exactly
 * its Content-Length, whose readable length is published atomically as it
 * grows. Readers (the leader's own client is just the first) each keep an
 * offset and are written at their own pace, so a slow one holds up no one;
 * the upstream side (the exchange that drives the fetch) reads at upstream
 * speed whoever is reading.
 *
 * Threads: the table of fetches is shared by every worker, under a mutex
 * taken only when a reader joins or a fetch is created, ends or expires;
 * never per byte. A fetch is driven on the worker that created it; readers
 * on other workers are woken through their worker's coalesce_worker_t (an
 * eventfd on its own event_base), at most one wake-up pending at a time.
 * A fetch is refcounted: the table, the driver and each reader hold one. */
#ifndef SKEWGATE_COALESCE_H
#define SKEWGATE_COALESCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event_struct.h>

#include "conf/config.h"
#include "http/connection.h"
#include "os/sockio.h"
#include "os/wakeup.h"
#include "proxy/reason.h"

/* The longest share key kept (rewrite_share_key: the request line and
 * the Accept lines as forwarded; Ignition's is about 110 bytes): a
 * request with a longer one goes upstream on its own. */
#define COALESCE_KEY_MAX 4096

typedef struct coalesce_fetch coalesce_fetch_t;

/* What two requests must have in common to share an answer: the MCS
 * they go to, and the bytes of it that it reads. The bytes are as
 * rewrite_share_key wrote them, compared byte for byte (a new fetch keeps
 * a copy of its own). upstream names the MCS: the gate-wide epoch of the
 * upstream peer (upstream_pool_t.epoch), the same on every worker for
 * one peer and moved on by each reload that changes the peer, so the
 * table (process-wide, it outlives reloads) never answers a request with
 * the render of an MCS it no longer goes to. Comparing it costs one
 * integer per fetch in the table, and nothing is allocated for it. */
typedef struct coalesce_key {
    const char *bytes;
    size_t len;
    uint32_t upstream;
} coalesce_key_t;

typedef struct coalesce_link {
    struct coalesce_link *prev, *next;
} coalesce_link_t;

/* One worker's side: its wake-up and its readers waiting for body bytes.
 * Touched by its own thread only, but for the wake-up. */
typedef struct coalesce_worker {
    const config_coalesce_t *cfg;
    struct event_base *base;
    struct event wake_ev;
    wakeup_t wake;                  /* rung by drivers on other workers */
    unsigned index;                 /* in the table's list of workers */
    coalesce_link_t waiting;        /* readers caught up with their fetch */
} coalesce_worker_t;

struct coalesce_reader;
typedef void (*coalesce_wake_cb)(struct coalesce_reader *r);

/* A client reading a fetch; embedded in its exchange. */
typedef struct coalesce_reader {
    coalesce_link_t link;           /* in cw->waiting while r->waiting */
    coalesce_fetch_t *fetch;        /* NULL: not reading */
    coalesce_worker_t *cw;
    coalesce_wake_cb wake;          /* the fetch moved on: pump again */
    sockio_t *client;
    http_conn_variant_t variant;    /* the head it is written */
    size_t head_sent, body_sent;
    uint64_t sent;                  /* bytes written to the client */
    bool waiting;
} coalesce_reader_t;

/* 0, or -1 with err set. The worker's event_base must outlive it. */
int coalesce_worker_init(coalesce_worker_t *cw, struct event_base *base, const config_coalesce_t *cfg, char *err,
                         size_t errlen);
void coalesce_worker_destroy(coalesce_worker_t *cw);

/* What coalesce_attach did with the reader. */
typedef enum {
    COALESCE_JOINED,    /* it reads a fetch that was already there */
    COALESCE_LEADS,     /* it reads a new fetch, which the caller must drive */
    COALESCE_ABSENT,    /* no fetch with room for the key and may_lead was false */
} coalesce_attach_t;

/* Attaches r to a fetch for key (in flight, or completed within
 * coalesce.ttl) that has fewer than coalesce.max_followers readers
 * besides its leader, or, when there is none and may_lead, to a new one
 * that the caller then drives (*led): past max_followers, the next
 * request starts another shared fetch. LEADS with *led NULL is
 * impossible: out of memory, or a key over COALESCE_KEY_MAX, is ABSENT. */
coalesce_attach_t coalesce_attach(coalesce_worker_t *cw, const coalesce_key_t *key, coalesce_reader_t *r,
                                  coalesce_wake_cb wake, sockio_t *client, bool may_lead, coalesce_fetch_t **led);

/* What a reader's pump came to. */
typedef enum {
    COALESCE_DONE,          /* the whole response is out to the client */
    COALESCE_WAIT_CLIENT,   /* the client would block: pump when writable */
    COALESCE_WAIT_FETCH,    /* caught up (or no head yet): r->wake comes */
    COALESCE_CLIENT_GONE,   /* the client's socket failed */
    COALESCE_CUT,           /* the fetch broke after its head, and the reader has what
                               there was: close mid-body */
    COALESCE_FAILED,        /* the fetch failed before its head: coalesce_failure(); its
                               answer is the leader's alone, a follower asks on its own */
    COALESCE_UNSHARED,      /* the fetch is not shared: the reader asks on its own */
} coalesce_result_t;

/* variant: the Connection line this client's head gets (read when the
 * head is written first). */
coalesce_result_t coalesce_reader_pump(coalesce_reader_t *r, http_conn_variant_t variant);
/* The status and reason of a fetch that failed before its head, and of
 * one cut after it (status then is the upstream's). */
void coalesce_failure(const coalesce_reader_t *r, int *status, gate_reason_t *reason);
/* The upstream's status of a shared fetch (for the log). */
int coalesce_status(const coalesce_reader_t *r);
/* The body length of a shared fetch (once its head is out). */
size_t coalesce_body_len(const coalesce_reader_t *r);
/* The reader stops reading (done, gone, or falling back). */
void coalesce_reader_leave(coalesce_reader_t *r);

/* ---- the driver's side (the exchange that fetches) ------------------- */

/* The head is in: the response will be shared. heads[v], one for each
 * http_conn_variant_t (a 1.1 reader kept, one closed, a 1.0 reader kept),
 * are copied; the body buffer of
 * body_len bytes is returned for the driver to fill. NULL: the bodies
 * held gate-wide would exceed 4 x coalesce.max_body, or out of memory;
 * the driver then unshares the fetch. */
char *coalesce_fetch_shared(coalesce_fetch_t *f, coalesce_worker_t *self, int status,
                            const char *const heads[HTTP_CONN__COUNT], const size_t head_lens[HTTP_CONN__COUNT],
                            size_t body_len);
/* body[0..len) is complete: readers may take it. */
void coalesce_fetch_publish(coalesce_fetch_t *f, coalesce_worker_t *self, size_t len);
/* The whole body is in. Kept for coalesce.ttl when that is set and the
 * status is 200; otherwise it leaves the table now. */
void coalesce_fetch_done(coalesce_fetch_t *f, coalesce_worker_t *self);
/* Failed before the head was shared: every reader gets status. */
void coalesce_fetch_fail(coalesce_fetch_t *f, coalesce_worker_t *self, int status, gate_reason_t why);
/* Broke after the head was shared: every reader is closed mid-body. */
void coalesce_fetch_cut(coalesce_fetch_t *f, coalesce_worker_t *self, gate_reason_t why);
/* The response will not be shared (not a complete 200 that any asker
 * may have, or over coalesce.max_body): every reader asks on its own. */
void coalesce_fetch_unshare(coalesce_fetch_t *f, coalesce_worker_t *self);
/* The driver's request went again, to upstream (a stale pooled
 * connection replaced by a new one, which a reload in between may have
 * pointed at another MCS): the fetch is that upstream's answer from now
 * on, for the requests that join it. Its readers so far read it anyway:
 * they asked before the reload, and a request of theirs on its own would
 * have gone there too. The driver's thread only. */
void coalesce_fetch_sent_to(coalesce_fetch_t *f, uint32_t upstream);
/* The upstream the fetch is the answer of (its key's, or the last
 * coalesce_fetch_sent_to's). The driver's thread only. */
uint32_t coalesce_fetch_upstream(const coalesce_fetch_t *f);
/* For coalesce.ttl: ms until a completed fetch expires (0: now). */
uint64_t coalesce_fetch_ttl_left(const coalesce_fetch_t *f);
/* A reload lowered coalesce.ttl: a kept fetch expires no later than
 * ttl_ms from now (a raised ttl does not lengthen it). Returns the ms
 * left, as coalesce_fetch_ttl_left. */
uint64_t coalesce_fetch_keep_at_most(coalesce_fetch_t *f, uint64_t ttl_ms);
/* The driver's reference goes, and the fetch leaves the table (a kept
 * one when its ttl is over). */
void coalesce_fetch_release(coalesce_fetch_t *f);

#endif
