/* relay: a response body from the upstream socket to the client socket,
 * streamed, never buffered whole. Through one buffer, whose fill is the
 * watermark both ways (a full buffer stops upstream reads, an empty one
 * stops client writes); or, plain to plain with a known length, through a
 * pipe with splice(2), so that no byte is copied into the process.
 *
 * The relay does the reads and writes and says what it waits for; its
 * owner arms the events (relay_pump never blocks and arms nothing). It
 * knows the body's framing, so it knows when the body is complete, and it
 * never reads past it. */
#ifndef SKEWGATE_RELAY_H
#define SKEWGATE_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/chunked.h"
#include "http/response.h"
#include "os/pipe.h"
#include "os/sockio.h"
#include "proxy/reason.h"

/* A full TLS record: smaller writes cost a record (and a syscall) each. */
#define RELAY_TLS_RECORD 16384
/* A splice relay keeps at most this much body in its pipe (the watermark a
 * slow client can hold up; its socket buffer can hold far more). Fewer,
 * larger batches: 64 KiB cost 254 us of CPU per 1 MiB response in the
 * bench (S3), 512 KiB 187 us. */
#define RELAY_PIPE_BYTES (512 * 1024)

typedef enum {
    RELAY_DONE,         /* the whole body is out to the client */
    RELAY_WAIT,         /* blocked: r->want says on what */
    RELAY_CLIENT_GONE,  /* the client's socket failed: nothing more to deliver */
    RELAY_CUT,          /* the upstream ended or broke the body: r->cut says how */
    RELAY_FULL,         /* the client is behind and its store may hold no more
                           (r->want as with RELAY_WAIT, should the owner go on) */
} relay_result_t;

enum {
    RELAY_WANT_CLIENT_WRITE = 1u << 0,
    RELAY_WANT_UPSTREAM_READ = 1u << 1,
    RELAY_WANT_UPSTREAM_WRITE = 1u << 2,    /* TLS: a read needs a write first */
};

/* Where a relay keeps the body its client is not ready for, so that the
 * upstream is read at the upstream's pace and its connection (and the
 * slot it holds) come back when the MCS is done, never when the client
 * is: nginx's proxy_buffering. Chunks of chunk_size bytes come from the
 * owner, which counts them against its budgets: get gives NULL when the
 * client may be given no more. */
typedef struct relay_store_ops {
    char *(*get)(void *arg);
    void (*put)(void *arg, char *chunk);
} relay_store_ops_t;

typedef struct relay_store {
    const relay_store_ops_t *ops;   /* NULL: no store, a slow client stops upstream reads */
    void *arg;
    size_t chunk_size;
    char **chunks;                  /* oldest first */
    uint32_t n, cap;
    size_t first_off;               /* sent of chunks[0] */
    size_t last_len;                /* filled of chunks[n - 1] */
    size_t bytes;                   /* held, not yet sent */
} relay_store_t;

typedef struct relay {
    sockio_t *client, *upstream;
    char *buf;
    size_t cap, off, len;       /* bytes buf[off..len) wait for the client */
    pipe_pool_t *pipes;         /* NULL: never splice */
    int pipe[2];                /* -1 when no splice relay is under way */
    size_t pipe_len;            /* body bytes in the pipe, not yet sent */
    relay_store_t store;        /* body bytes behind the pipe and the buffer */
    /* framing */
    bool chunked, until_close;
    int64_t body_left;          /* Content-Length bytes still to come */
    http_chunked_t chunk;
    bool body_done;             /* every body byte has been read */
    bool surplus;               /* the upstream sent more than the body */
    bool close_after;           /* the client connection closes after this body */
    bool dechunk;               /* chunked from the upstream, the payload alone to the
                                   client (HTTP/1.0 knows no chunks; the close delimits it) */
    /* results */
    uint64_t sent;              /* bytes written to the client */
    unsigned want;              /* RELAY_WANT_ bits, after RELAY_WAIT */
    gate_reason_t cut;          /* after RELAY_CUT */
} relay_t;

/* buf[cap] is the owner's and must outlive the relay. */
void relay_init(relay_t *r, sockio_t *client, sockio_t *upstream, char *buf, size_t cap, pipe_pool_t *pipes);
/* From now on the body the client is not ready for is kept in chunks
 * from ops (relay_store_t) instead of stopping upstream reads. */
void relay_keep(relay_t *r, const relay_store_ops_t *ops, void *arg, size_t chunk_size);
/* Bytes read for the client and not yet written to it: the buffer, the
 * pipe and the store. */
static inline uint64_t relay_held(const relay_t *r)
{
    return (uint64_t)(r->len - r->off) + r->pipe_len + r->store.bytes;
}
/* The body as the response head announced it. */
void relay_frame(relay_t *r, http_body_t body, int64_t content_length);
/* Body bytes that arrived with the head, now in the buffer at from: how
 * many belong to this response (the rest is surplus and must not be
 * relayed), or -1 when the chunked framing is broken. With dechunk, the
 * payload is moved to the front of from[0..len) and its length returned. */
ssize_t relay_account(relay_t *r, char *from, size_t len);
/* Moves bytes until one side would block or the body is out. */
relay_result_t relay_pump(relay_t *r);
/* Ends the relay: an empty pipe goes back to the pool, one with bytes
 * left in it is closed; the store's chunks go back to its owner. */
void relay_end(relay_t *r);

#endif
