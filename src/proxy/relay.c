#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/relay.h"

void relay_init(relay_t *r, sockio_t *client, sockio_t *upstream, char *buf, size_t cap, pipe_pool_t *pipes)
{
    *r = (relay_t){.client = client, .upstream = upstream, .buf = buf, .cap = cap, .pipes = pipes,
                   .pipe = {-1, -1}};
}

void relay_keep(relay_t *r, const relay_store_ops_t *ops, void *arg, size_t chunk_size)
{
    r->store.ops = ops;
    r->store.arg = arg;
    r->store.chunk_size = chunk_size;
}

void relay_frame(relay_t *r, http_body_t body, int64_t content_length)
{
    r->body_done = false;
    r->chunked = body == HTTP_BODY_CHUNKED;
    r->until_close = body == HTTP_BODY_UNTIL_CLOSE;
    r->body_left = 0;
    if (body == HTTP_BODY_NONE) {
        r->body_done = true;
    } else if (r->chunked) {
        http_chunked_init(&r->chunk);
    } else if (body == HTTP_BODY_LENGTH) {
        r->body_left = content_length;
        r->body_done = content_length == 0;
    }
}

/* The payload runs of from[0..len) moved to its front, in place: a run
 * never moves forward past bytes not yet read. */
static ssize_t relay_dechunk(relay_t *r, char *from, size_t len)
{
    size_t in = 0, out = 0;
    while (in < len && !http_chunked_done(&r->chunk)) {
        http_slice_t data;
        ssize_t used = http_chunked_step(&r->chunk, from + in, len - in, &data);
        if (used < 0)
            return -1;
        if (used == 0)
            break;
        memmove(from + out, from + in + data.off, data.len);
        out += data.len;
        in += (size_t)used;
    }
    if (http_chunked_done(&r->chunk)) {
        r->body_done = true;
        r->surplus |= in < len;
    }
    return (ssize_t)out;
}

ssize_t relay_account(relay_t *r, char *from, size_t len)
{
    if (r->body_done) {
        r->surplus |= len > 0;
        return 0;
    }
    if (r->until_close)
        return (ssize_t)len;
    if (r->chunked && r->dechunk)
        return relay_dechunk(r, from, len);
    if (r->chunked) {
        ssize_t used = http_chunked_scan(&r->chunk, from, len);
        if (used < 0)
            return -1;
        if (http_chunked_done(&r->chunk))
            r->body_done = true;
        r->surplus |= (size_t)used < len;
        return used;
    }
    size_t take = (uint64_t)r->body_left < len ? (size_t)r->body_left : len;
    r->body_left -= (int64_t)take;
    r->body_done = r->body_left == 0;
    r->surplus |= take < len;
    return (ssize_t)take;
}

static bool relay_known_length(const relay_t *r)
{
    return !r->chunked && !r->until_close;
}

/* Plain to plain with a known length: the kernel moves the body. */
static bool relay_can_splice(const relay_t *r)
{
    return r->pipes && !r->client->ssl && !r->upstream->ssl && relay_known_length(r) && r->body_left > 0;
}

static relay_result_t relay_wait(relay_t *r, unsigned want)
{
    r->want = want;
    return RELAY_WAIT;
}

static relay_result_t relay_cut(relay_t *r, gate_reason_t why)
{
    r->cut = why;
    return RELAY_CUT;
}

/* ---- the store: what the client is not ready for --------------------- */

/* Every chunk back to the owner, each after it left the list (the owner
 * may look at how many are left): the store is empty, or the relay ends. */
static void relay_store_clear(relay_store_t *s)
{
    while (s->n)
        s->ops->put(s->arg, s->chunks[--s->n]);
    s->first_off = s->last_len = s->bytes = 0;
}

/* Room at the store's tail: a chunk of the owner's when the last is full.
 * NULL: the owner gives no more (or no memory for the list). */
static char *relay_store_room(relay_store_t *s, size_t *room)
{
    if (s->n == 0 || s->last_len == s->chunk_size) {
        if (s->n == s->cap) {
            uint32_t cap = s->cap ? s->cap * 2 : 8;
            char **chunks = realloc(s->chunks, cap * sizeof *chunks);
            if (!chunks)
                return NULL;
            s->chunks = chunks;
            s->cap = cap;
        }
        char *c = s->ops->get(s->arg);
        if (!c)
            return NULL;
        s->chunks[s->n++] = c;
        s->last_len = 0;
    }
    *room = s->chunk_size - s->last_len;
    return s->chunks[s->n - 1] + s->last_len;
}

/* Writes the store to the client, oldest first: false when the client
 * would block (*gone when it failed). A chunk goes back as soon as it is
 * out. */
static bool relay_store_out(relay_t *r, bool *gone)
{
    relay_store_t *s = &r->store;
    *gone = false;
    while (s->bytes > 0) {
        size_t end = s->n == 1 ? s->last_len : s->chunk_size;
        size_t len = end - s->first_off;
        if (r->client->ssl && len > RELAY_TLS_RECORD)
            len = RELAY_TLS_RECORD;
        bool more = len < s->bytes;
        ssize_t n = sockio_write(r->client, s->chunks[0] + s->first_off, len, more ? SOCKIO_MORE : 0);
        if (n <= 0) {
            *gone = n != SOCKIO_WANT_WRITE && n != SOCKIO_WANT_READ;
            return false;
        }
        s->first_off += (size_t)n;
        s->bytes -= (size_t)n;
        r->sent += (uint64_t)n;
        if (s->first_off == end && s->n > 1) {
            char *out = s->chunks[0];
            memmove(s->chunks, s->chunks + 1, (s->n - 1) * sizeof *s->chunks);
            s->n--;
            s->first_off = 0;
            s->ops->put(s->arg, out);
        }
    }
    if (s->n)
        relay_store_clear(s);
    return true;
}

/* Reads the upstream into the store's tail: how relay_pump goes on while
 * the client is behind. > 0 bytes kept (or the body ended by a close),
 * else a sockio_read result, RELAY_STORE_FULL or RELAY_STORE_BAD_FRAMING. */
#define RELAY_STORE_FULL (-100)
#define RELAY_STORE_BAD_FRAMING (-101)
static ssize_t relay_store_in(relay_t *r)
{
    relay_store_t *s = &r->store;
    size_t room;
    char *at = relay_store_room(s, &room);
    if (!at)
        return RELAY_STORE_FULL;
    if (relay_known_length(r) && (uint64_t)r->body_left < room)
        room = (size_t)r->body_left;
    ssize_t n = sockio_read(r->upstream, at, room);
    if (n == 0 && r->until_close) {
        r->body_done = true;
        return 1;
    }
    if (n <= 0)
        return n;
    ssize_t used = relay_account(r, at, (size_t)n);
    if (used < 0)
        return RELAY_STORE_BAD_FRAMING;
    s->last_len += (size_t)used;
    s->bytes += (size_t)used;
    return n;
}

/* What relay_store_in came to, for relay_pump: -1 go on reading, or
 * the result to return. */
static int relay_store_step(relay_t *r, unsigned want)
{
    ssize_t n = relay_store_in(r);
    if (n > 0)
        return -1;
    if (n == RELAY_STORE_FULL) {
        r->want = want;
        return RELAY_FULL;
    }
    if (n == SOCKIO_WANT_READ)
        return relay_wait(r, want | RELAY_WANT_UPSTREAM_READ);
    if (n == SOCKIO_WANT_WRITE)
        return relay_wait(r, want | RELAY_WANT_UPSTREAM_WRITE);
    if (n == RELAY_STORE_BAD_FRAMING)
        return relay_cut(r, GATE_REASON_BAD_UPSTREAM_CHUNKING);
    return relay_cut(r, n == 0 ? GATE_REASON_UPSTREAM_CLOSED_EARLY : GATE_REASON_UPSTREAM_READ);
}

/* Out until the pipe is empty or the client would block, whose
 * writability then brings us back: a short splice is no block. */
static relay_result_t relay_splice_out(relay_t *r, bool *blocked)
{
    *blocked = false;
    while (r->pipe_len > 0) {
        ssize_t n = pipe_splice(r->pipe[0], r->client->fd, r->pipe_len);
        if (n > 0) {
            r->pipe_len -= (size_t)n;
            r->sent += (uint64_t)n;
        } else if (n == PIPE_AGAIN) {
            *blocked = true;
            break;
        } else {
            return RELAY_CLIENT_GONE;
        }
    }
    return RELAY_WAIT;
}

/* With a store, a client that is behind does not stop the upstream: the
 * store takes what the pipe has no room for (and, once it holds bytes,
 * everything after them, which goes out in order behind the pipe). */
static relay_result_t relay_splice(relay_t *r)
{
    for (;;) {
        bool client_blocked, gone = false;
        if (relay_splice_out(r, &client_blocked) == RELAY_CLIENT_GONE)
            return RELAY_CLIENT_GONE;
        if (!client_blocked && r->pipe_len == 0 && r->store.bytes)
            client_blocked = !relay_store_out(r, &gone);
        if (gone)
            return RELAY_CLIENT_GONE;
        if (r->pipe_len == 0 && r->store.bytes == 0 && r->body_done)
            return RELAY_DONE;
        unsigned want = client_blocked ? RELAY_WANT_CLIENT_WRITE : 0;
        if (r->body_done)
            return relay_wait(r, want);
        if (r->store.bytes || r->pipe_len >= RELAY_PIPE_BYTES) {
            int res = r->store.ops ? relay_store_step(r, want) : (int)relay_wait(r, want);
            if (res >= 0)
                return (relay_result_t)res;
            continue;
        }
        size_t room = RELAY_PIPE_BYTES - r->pipe_len;
        if ((uint64_t)r->body_left < room)
            room = (size_t)r->body_left;
        ssize_t n = pipe_splice(r->upstream->fd, r->pipe[1], room);
        if (n > 0) {
            r->pipe_len += (size_t)n;
            r->body_left -= n;
            r->body_done = r->body_left == 0;
        } else if (n == PIPE_AGAIN) {
            /* Nothing to read, or a pipe full by slots (many small
             * fragments): with bytes in the pipe the client's writability
             * brings us back (or the store takes what comes), and a
             * readable socket must not spin. */
            if (r->store.ops && client_blocked) {
                int res = relay_store_step(r, want);
                if (res >= 0)
                    return (relay_result_t)res;
                continue;
            }
            return relay_wait(r, want | (r->pipe_len == 0 ? RELAY_WANT_UPSTREAM_READ : 0));
        } else {
            return relay_cut(r, n == 0 ? GATE_REASON_UPSTREAM_CLOSED_EARLY : GATE_REASON_UPSTREAM_READ);
        }
    }
}

/* Writes buf[off..len) to the client: false when the client would block
 * (*gone when it failed). */
static bool relay_write_out(relay_t *r, bool *gone)
{
    *gone = false;
    while (r->off < r->len) {
        size_t len = r->len - r->off;
        if (r->client->ssl && len > RELAY_TLS_RECORD)
            len = RELAY_TLS_RECORD;
        /* More in the buffer, or a close_notify right behind the last
         * record: the kernel may fill segments across the records. */
        bool more = r->off + len < r->len || (r->client->ssl && r->body_done && r->close_after);
        ssize_t n = sockio_write(r->client, r->buf + r->off, len, more ? SOCKIO_MORE : 0);
        if (n > 0) {
            r->off += (size_t)n;
            r->sent += (uint64_t)n;
            continue;
        }
        *gone = n != SOCKIO_WANT_WRITE && n != SOCKIO_WANT_READ;
        return false;
    }
    return true;
}

/* How much the next upstream read may take; 0: wait for the client.
 * Bytes are never moved: while bytes wait for the client, a read waits
 * until the tail has room for a full record (or for the rest of the body),
 * else for the client to drain the buffer, which then starts over at its
 * front. An empty buffer takes what it has room for, however small. */
static size_t relay_read_room(const relay_t *r)
{
    size_t room = r->cap - r->len;
    size_t want = RELAY_TLS_RECORD;
    if (relay_known_length(r) && (uint64_t)r->body_left < want)
        want = (size_t)r->body_left;
    if (room < want && r->len > r->off)
        return 0;
    if (relay_known_length(r) && (uint64_t)r->body_left < room)
        room = (size_t)r->body_left;
    return room;
}

relay_result_t relay_pump(relay_t *r)
{
    if (r->pipe[0] >= 0)
        return relay_splice(r);
    for (;;) {
        bool gone;
        bool drained = relay_write_out(r, &gone);
        if (drained) {
            r->off = r->len = 0;
            drained = relay_store_out(r, &gone);
        }
        if (gone)
            return RELAY_CLIENT_GONE;
        unsigned want = drained ? 0 : RELAY_WANT_CLIENT_WRITE;
        if (drained) {
            if (r->body_done)
                return RELAY_DONE;
            /* What came with the head is out: the rest can skip this
             * process altogether. */
            if (relay_can_splice(r) && pipe_pool_get(r->pipes, r->pipe) == 0)
                return relay_splice(r);
        }
        if (r->body_done)
            return relay_wait(r, want);
        size_t room = relay_read_room(r);
        if (room == 0 || r->store.bytes) {
            /* The client is behind: the store takes what comes, after
             * whatever it holds already. */
            int res = r->store.ops ? relay_store_step(r, want) : (int)relay_wait(r, want);
            if (res >= 0)
                return (relay_result_t)res;
            continue;
        }
        ssize_t n = sockio_read(r->upstream, r->buf + r->len, room);
        if (n > 0) {
            ssize_t used = relay_account(r, r->buf + r->len, (size_t)n);
            if (used < 0)
                return relay_cut(r, GATE_REASON_BAD_UPSTREAM_CHUNKING);
            r->len += (size_t)used;
        } else if (n == 0 && r->until_close) {
            r->body_done = true;
        } else if (n == SOCKIO_WANT_READ) {
            if (!drained)
                return relay_wait(r, want | RELAY_WANT_UPSTREAM_READ);
            return relay_wait(r, RELAY_WANT_UPSTREAM_READ);
        } else if (n == SOCKIO_WANT_WRITE) {
            return relay_wait(r, want | RELAY_WANT_UPSTREAM_WRITE);
        } else {
            return relay_cut(r, n == 0 ? GATE_REASON_UPSTREAM_CLOSED_EARLY : GATE_REASON_UPSTREAM_READ);
        }
    }
}

void relay_end(relay_t *r)
{
    if (r->pipe[0] >= 0)
        pipe_pool_put(r->pipes, r->pipe, r->pipe_len == 0);
    r->pipe[0] = r->pipe[1] = -1;
    r->pipe_len = 0;
    if (r->store.ops)
        relay_store_clear(&r->store);
    free(r->store.chunks);
    r->store.chunks = NULL;
    r->store.cap = 0;
}
