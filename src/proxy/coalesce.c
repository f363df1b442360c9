#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "core/clock.h"
#include "proxy/coalesce.h"
#include "proxy/relay.h"

typedef enum {
    FETCH_WAITING,      /* no head yet */
    FETCH_SHARED,       /* head and a growing body */
    FETCH_DONE,         /* the whole body */
    FETCH_CUT,          /* broke after the head */
    FETCH_FAILED,       /* failed before the head */
    FETCH_UNSHARED,     /* not to be shared */
} fetch_state_t;

#define WORKER_WORDS ((CONFIG_MAX_WORKERS + 63) / 64)

struct coalesce_fetch {
    /* under table_lock */
    coalesce_fetch_t *next;
    size_t key_len;
    uint32_t upstream;              /* key->upstream; written by the driver's thread alone */
    bool in_table;
    uint32_t n_readers;             /* ever attached, for coalesce.max_followers */
    uint64_t expires_ms;            /* 0 while in flight */

    _Atomic uint32_t refs;
    _Atomic int state;              /* fetch_state_t; release after what it covers */
    _Atomic size_t published;       /* body[0..published) is readable */
    _Atomic uint64_t workers[WORKER_WORDS];     /* whose readers to wake */

    /* written once, before state leaves FETCH_WAITING */
    int status;
    gate_reason_t reason;
    char *heads[HTTP_CONN__COUNT];  /* by http_conn_variant_t */
    size_t head_lens[HTTP_CONN__COUNT];
    char *body;
    size_t body_len;
    char key[];                     /* rewrite_share_key's bytes, a copy: one allocation with the fetch */
};

/* The bodies held at once, gate-wide, are bounded by this many times
 * coalesce.max_body (64 MiB by default): a storm has a fetch per pool and
 * spec in flight, a handful; a body lives until its slowest reader is
 * done, so slow clients that each start a fetch of their own could
 * otherwise hold one body each. A fetch over the bound goes unshared and
 * is streamed, within the relay's watermarks. */
#define COALESCE_HELD_BODIES 4

/* The table: a handful of fetches at a time (pools x specs in flight). */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static coalesce_fetch_t *table;
static uint64_t held_bytes;         /* bodies allocated, under table_lock */
/* Registered at start-up, cleared at tear-down, read by any driver. */
static coalesce_worker_t *_Atomic workers[CONFIG_MAX_WORKERS];

/* ---- wake-ups -------------------------------------------------------- */

static void link_init(coalesce_link_t *l)
{
    l->prev = l->next = l;
}

static void link_remove(coalesce_link_t *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    link_init(l);
}

static void link_append(coalesce_link_t *head, coalesce_link_t *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

static coalesce_reader_t *reader_of(coalesce_link_t *l)
{
    return (coalesce_reader_t *)((char *)l - offsetof(coalesce_reader_t, link));
}

/* Every reader that waited gets pumped once; those still caught up wait
 * again. The list is moved aside first, so a reader that waits again
 * during its own wake-up is not pumped twice. */
static void coalesce_on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    coalesce_worker_t *cw = arg;
    (void)fd;
    wakeup_consume(&cw->wake);
    coalesce_link_t woken;
    link_init(&woken);
    if (cw->waiting.next != &cw->waiting) {
        woken.next = cw->waiting.next;
        woken.prev = cw->waiting.prev;
        woken.next->prev = &woken;
        woken.prev->next = &woken;
        link_init(&cw->waiting);
    }
    while (woken.next != &woken) {
        coalesce_reader_t *r = reader_of(woken.next);
        link_remove(&r->link);
        r->waiting = false;
        r->wake(r);
    }
}

static void coalesce_poke(coalesce_worker_t *cw, const coalesce_worker_t *self)
{
    if (!wakeup_claim(&cw->wake))
        return;
    if (cw == self)
        event_active(&cw->wake_ev, EV_READ, 0);
    else
        wakeup_signal(&cw->wake);
}

/* After the fetch moved on (state or published released before).
 * A reader's worker registers (fetch_or of its bit) and then looks at
 * state and published; the driver stores those and then looks at the
 * bits. That is store buffering: C11 lets each side read the other's old
 * value (x86 too: the driver's store can still sit in its store buffer
 * when its load of the bits runs), and then the reader waits while no
 * wake-up comes. A seq_cst fence between the store and the load on each
 * side forbids it: at least one sees the other's write. Each fence has a
 * test that fails without it, in a store-buffer memory model
 * (test_coalesce_storebuf.c): real threads on x86 never showed the loss. */
static void fetch_wake(coalesce_fetch_t *f, const coalesce_worker_t *self)
{
    atomic_thread_fence(memory_order_seq_cst);
    for (unsigned w = 0; w < WORKER_WORDS; w++) {
        uint64_t bits = atomic_load_explicit(&f->workers[w], memory_order_acquire);
        while (bits) {
            unsigned i = w * 64 + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            coalesce_worker_t *cw = atomic_load_explicit(&workers[i], memory_order_acquire);
            if (cw)
                coalesce_poke(cw, self);
        }
    }
}

int coalesce_worker_init(coalesce_worker_t *cw, struct event_base *base, const config_coalesce_t *cfg, char *err,
                         size_t errlen)
{
    memset(cw, 0, sizeof *cw);
    cw->cfg = cfg;
    cw->base = base;
    link_init(&cw->waiting);
    if (wakeup_init(&cw->wake) < 0) {
        snprintf(err, errlen, "coalesce: eventfd: %s", strerror(errno));
        return -1;
    }
    event_assign(&cw->wake_ev, base, wakeup_fd(&cw->wake), EV_READ | EV_PERSIST, coalesce_on_wake, cw);
    event_add(&cw->wake_ev, NULL);
    pthread_mutex_lock(&table_lock);
    unsigned i = 0;
    while (i < CONFIG_MAX_WORKERS && atomic_load_explicit(&workers[i], memory_order_relaxed))
        i++;
    if (i < CONFIG_MAX_WORKERS)
        atomic_store_explicit(&workers[i], cw, memory_order_release);
    pthread_mutex_unlock(&table_lock);
    if (i == CONFIG_MAX_WORKERS) {
        snprintf(err, errlen, "coalesce: more than %d workers", CONFIG_MAX_WORKERS);
        event_del(&cw->wake_ev);
        wakeup_close(&cw->wake);
        return -1;
    }
    cw->index = i;
    return 0;
}

void coalesce_worker_destroy(coalesce_worker_t *cw)
{
    if (cw->wake.fd < 0 || !cw->base)
        return;
    pthread_mutex_lock(&table_lock);
    atomic_store_explicit(&workers[cw->index], NULL, memory_order_release);
    pthread_mutex_unlock(&table_lock);
    event_del(&cw->wake_ev);
    wakeup_close(&cw->wake);
}

/* ---- the table --------------------------------------------------------- */

static void fetch_unref(coalesce_fetch_t *f)
{
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (f->body) {
        pthread_mutex_lock(&table_lock);
        held_bytes -= f->body_len;
        pthread_mutex_unlock(&table_lock);
    }
    for (int v = 0; v < HTTP_CONN__COUNT; v++)
        free(f->heads[v]);
    free(f->body);
    free(f);
}

/* Under table_lock. The table's reference is the caller's to drop. */
static void table_remove(coalesce_fetch_t *f)
{
    for (coalesce_fetch_t **at = &table; *at; at = &(*at)->next) {
        if (*at == f) {
            *at = f->next;
            f->next = NULL;
            f->in_table = false;
            return;
        }
    }
}

/* Under table_lock: drops fetches whose ttl passed; their references go
 * on *dead (freed outside the lock). */
static coalesce_fetch_t *table_find(const coalesce_key_t *key, uint32_t max_followers, uint64_t now,
                                    coalesce_fetch_t **dead)
{
    coalesce_fetch_t *found = NULL;
    for (coalesce_fetch_t **at = &table; *at;) {
        coalesce_fetch_t *f = *at;
        if (f->expires_ms && f->expires_ms <= now) {
            *at = f->next;
            f->in_table = false;
            f->next = *dead;
            *dead = f;
            continue;
        }
        /* The leader is a reader too: max_followers counts the others. */
        if (!found && f->upstream == key->upstream && f->n_readers <= max_followers && f->key_len == key->len &&
            memcmp(f->key, key->bytes, key->len) == 0)
            found = f;
        at = &f->next;
    }
    return found;
}

static void free_dead(coalesce_fetch_t *dead)
{
    while (dead) {
        coalesce_fetch_t *next = dead->next;
        dead->next = NULL;
        fetch_unref(dead);
        dead = next;
    }
}

static coalesce_fetch_t *fetch_new(const coalesce_key_t *key)
{
    if (key->len > COALESCE_KEY_MAX)
        return NULL;
    coalesce_fetch_t *f = calloc(1, sizeof *f + key->len);
    if (!f)
        return NULL;
    memcpy(f->key, key->bytes, key->len);
    f->key_len = key->len;
    f->upstream = key->upstream;
    atomic_init(&f->refs, 2);   /* the table's and the driver's */
    atomic_init(&f->state, FETCH_WAITING);
    return f;
}

static void reader_attach(coalesce_reader_t *r, coalesce_fetch_t *f, coalesce_worker_t *cw, coalesce_wake_cb wake,
                          sockio_t *client)
{
    *r = (coalesce_reader_t){.fetch = f, .cw = cw, .wake = wake, .client = client};
    link_init(&r->link);
    f->n_readers++;
    atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    atomic_fetch_or_explicit(&f->workers[cw->index / 64], 1ull << (cw->index % 64), memory_order_release);
    /* Before the reader's first look at state (fetch_wake says why). */
    atomic_thread_fence(memory_order_seq_cst);
}

coalesce_attach_t coalesce_attach(coalesce_worker_t *cw, const coalesce_key_t *key, coalesce_reader_t *r,
                                  coalesce_wake_cb wake, sockio_t *client, bool may_lead, coalesce_fetch_t **led)
{
    coalesce_fetch_t *dead = NULL;
    coalesce_attach_t how;
    *led = NULL;
    pthread_mutex_lock(&table_lock);
    coalesce_fetch_t *f = table_find(key, cw->cfg->max_followers, clock_coarse_ms(), &dead);
    if (f) {
        reader_attach(r, f, cw, wake, client);
        how = COALESCE_JOINED;
    } else if (may_lead && (f = fetch_new(key))) {
        f->in_table = true;
        f->next = table;
        table = f;
        reader_attach(r, f, cw, wake, client);
        *led = f;
        how = COALESCE_LEADS;
    } else {
        how = COALESCE_ABSENT;
    }
    pthread_mutex_unlock(&table_lock);
    free_dead(dead);
    return how;
}

/* Ends the fetch's life in the table (if it is still there). */
static void fetch_leave_table(coalesce_fetch_t *f)
{
    pthread_mutex_lock(&table_lock);
    bool was = f->in_table;
    if (was)
        table_remove(f);
    pthread_mutex_unlock(&table_lock);
    if (was)
        fetch_unref(f);
}

/* ---- the driver ------------------------------------------------------ */

char *coalesce_fetch_shared(coalesce_fetch_t *f, coalesce_worker_t *self, int status,
                            const char *const heads[HTTP_CONN__COUNT], const size_t head_lens[HTTP_CONN__COUNT],
                            size_t body_len)
{
    pthread_mutex_lock(&table_lock);
    bool room = held_bytes + body_len <= (uint64_t)self->cfg->max_body * COALESCE_HELD_BODIES;
    if (room)
        held_bytes += body_len;
    pthread_mutex_unlock(&table_lock);
    if (!room)
        return NULL;
    f->status = status;
    f->body_len = body_len;
    /* One byte more, so that an empty body is not a NULL buffer. */
    f->body = malloc(body_len + 1);
    if (!f->body) {
        pthread_mutex_lock(&table_lock);
        held_bytes -= body_len;
        pthread_mutex_unlock(&table_lock);
        return NULL;
    }
    for (int v = 0; v < HTTP_CONN__COUNT; v++) {
        f->heads[v] = malloc(head_lens[v]);
        if (!f->heads[v])
            return NULL;
        memcpy(f->heads[v], heads[v], head_lens[v]);
        f->head_lens[v] = head_lens[v];
    }
    atomic_store_explicit(&f->state, FETCH_SHARED, memory_order_release);
    fetch_wake(f, self);
    return f->body;
}

void coalesce_fetch_publish(coalesce_fetch_t *f, coalesce_worker_t *self, size_t len)
{
    atomic_store_explicit(&f->published, len, memory_order_release);
    fetch_wake(f, self);
}

void coalesce_fetch_done(coalesce_fetch_t *f, coalesce_worker_t *self)
{
    atomic_store_explicit(&f->state, FETCH_DONE, memory_order_release);
    uint64_t ttl = self->cfg->ttl_ms;
    if (ttl && f->status == 200) {
        pthread_mutex_lock(&table_lock);
        f->expires_ms = clock_coarse_ms() + ttl;
        pthread_mutex_unlock(&table_lock);
    } else {
        fetch_leave_table(f);
    }
    fetch_wake(f, self);
}

static void fetch_end(coalesce_fetch_t *f, coalesce_worker_t *self, fetch_state_t state)
{
    fetch_leave_table(f);
    atomic_store_explicit(&f->state, state, memory_order_release);
    fetch_wake(f, self);
}

void coalesce_fetch_fail(coalesce_fetch_t *f, coalesce_worker_t *self, int status, gate_reason_t why)
{
    f->status = status;
    f->reason = why;
    fetch_end(f, self, FETCH_FAILED);
}

void coalesce_fetch_cut(coalesce_fetch_t *f, coalesce_worker_t *self, gate_reason_t why)
{
    /* status stays the upstream's: readers were told it in the head */
    f->reason = why;
    fetch_end(f, self, FETCH_CUT);
}

void coalesce_fetch_unshare(coalesce_fetch_t *f, coalesce_worker_t *self)
{
    fetch_end(f, self, FETCH_UNSHARED);
}

void coalesce_fetch_sent_to(coalesce_fetch_t *f, uint32_t upstream)
{
    /* Only this thread writes it: reading it unlocked is safe here. */
    if (f->upstream == upstream)
        return;
    pthread_mutex_lock(&table_lock);
    f->upstream = upstream;
    pthread_mutex_unlock(&table_lock);
}

uint32_t coalesce_fetch_upstream(const coalesce_fetch_t *f)
{
    return f->upstream;
}

uint64_t coalesce_fetch_ttl_left(const coalesce_fetch_t *f)
{
    pthread_mutex_lock(&table_lock);
    uint64_t at = f->in_table ? f->expires_ms : 0;
    pthread_mutex_unlock(&table_lock);
    uint64_t now = clock_coarse_ms();
    return at > now ? at - now : 0;
}

uint64_t coalesce_fetch_keep_at_most(coalesce_fetch_t *f, uint64_t ttl_ms)
{
    uint64_t now = clock_coarse_ms();
    pthread_mutex_lock(&table_lock);
    if (f->in_table && f->expires_ms > now + ttl_ms)
        f->expires_ms = now + ttl_ms;
    uint64_t at = f->in_table ? f->expires_ms : 0;
    pthread_mutex_unlock(&table_lock);
    return at > now ? at - now : 0;
}

void coalesce_fetch_release(coalesce_fetch_t *f)
{
    fetch_leave_table(f);
    fetch_unref(f);
}

/* ---- readers ----------------------------------------------------------- */

static coalesce_result_t reader_wait(coalesce_reader_t *r)
{
    if (!r->waiting) {
        r->waiting = true;
        link_append(&r->cw->waiting, &r->link);
    }
    return COALESCE_WAIT_FETCH;
}

/* Writes from[0..len) from *sent on: false when the client would block
 * (*gone when it failed). */
static bool reader_write(coalesce_reader_t *r, const char *from, size_t len, size_t *sent, bool more_after,
                         bool *gone)
{
    *gone = false;
    while (*sent < len) {
        size_t n_try = len - *sent;
        if (r->client->ssl && n_try > RELAY_TLS_RECORD)
            n_try = RELAY_TLS_RECORD;
        bool more = more_after || *sent + n_try < len;
        ssize_t n = sockio_write(r->client, from + *sent, n_try, more ? SOCKIO_MORE : 0);
        if (n > 0) {
            *sent += (size_t)n;
            r->sent += (uint64_t)n;
            continue;
        }
        *gone = n != SOCKIO_WANT_WRITE && n != SOCKIO_WANT_READ;
        return false;
    }
    return true;
}

coalesce_result_t coalesce_reader_pump(coalesce_reader_t *r, http_conn_variant_t variant)
{
    coalesce_fetch_t *f = r->fetch;
    int state = atomic_load_explicit(&f->state, memory_order_acquire);
    switch (state) {
    case FETCH_WAITING:
        return reader_wait(r);
    case FETCH_FAILED:
        return COALESCE_FAILED;
    case FETCH_UNSHARED:
        return COALESCE_UNSHARED;
    default:
        /* Shared, done, or cut after the head: a reader of a cut fetch
         * gets what there is, as a relayed response would, and is then
         * closed short of its Content-Length. */
        break;
    }
    if (r->head_sent == 0 && r->body_sent == 0)
        r->variant = variant;
    int v = r->variant;
    size_t published = atomic_load_explicit(&f->published, memory_order_acquire);
    bool gone;
    if (!reader_write(r, f->heads[v], f->head_lens[v], &r->head_sent, published > 0, &gone))
        return gone ? COALESCE_CLIENT_GONE : COALESCE_WAIT_CLIENT;
    for (;;) {
        if (!reader_write(r, f->body, published, &r->body_sent, false, &gone))
            return gone ? COALESCE_CLIENT_GONE : COALESCE_WAIT_CLIENT;
        if (r->body_sent == f->body_len)
            return COALESCE_DONE;
        /* Caught up: look again, as more may have come while writing. */
        size_t now = atomic_load_explicit(&f->published, memory_order_acquire);
        if (now > published) {
            published = now;
            continue;
        }
        if (atomic_load_explicit(&f->state, memory_order_acquire) == FETCH_CUT)
            return COALESCE_CUT;
        return reader_wait(r);
    }
}

void coalesce_failure(const coalesce_reader_t *r, int *status, gate_reason_t *reason)
{
    *status = r->fetch->status;
    *reason = r->fetch->reason;
}

int coalesce_status(const coalesce_reader_t *r)
{
    return r->fetch->status;
}

size_t coalesce_body_len(const coalesce_reader_t *r)
{
    return r->fetch->body_len;
}

void coalesce_reader_leave(coalesce_reader_t *r)
{
    if (!r->fetch)
        return;
    if (r->waiting) {
        link_remove(&r->link);
        r->waiting = false;
    }
    fetch_unref(r->fetch);
    r->fetch = NULL;
}
