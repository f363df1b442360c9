#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "http/accept.h"
#include "proxy/held.h"

/* A reader retries a slot the owner is writing this many times before it
 * leaves the slot out of its copy: an owner's write is a few stores, so
 * more than one retry is already rare. */
#define HELD_READ_TRIES 64
/* The words an attempt on a known client changes: last seen, attempts,
 * admitted; and with a new reason, the reason too. */
#define HELD_ATTEMPT_WORDS (offsetof(held_entry_t, reason) / sizeof(uint64_t))
#define HELD_DYNAMIC_WORDS (offsetof(held_entry_t, first_seen_ms) / sizeof(uint64_t))

int held_table_init(held_table_t *t, uint32_t cap, uint64_t forget_after_ms)
{
    memset(t, 0, sizeof *t);
    t->cap = cap ? cap : 1;
    t->forget_after_ms = forget_after_ms;
    t->mine = calloc(t->cap, sizeof *t->mine);
    t->slots = calloc(t->cap, sizeof *t->slots);
    t->reason_of = calloc(t->cap, sizeof *t->reason_of);
    if (!t->mine || !t->slots || !t->reason_of) {
        held_table_destroy(t);
        return -1;
    }
    return 0;
}

void held_table_destroy(held_table_t *t)
{
    free(t->mine);
    free(t->slots);
    free(t->reason_of);
    t->mine = NULL;
    t->slots = NULL;
    t->reason_of = NULL;
}

/* The key of a socket address: family and the 16 address bytes. */
static uint8_t held_key_of(const struct sockaddr_storage *ss, uint8_t addr[16])
{
    memset(addr, 0, 16);
    if (ss->ss_family == AF_INET) {
        memcpy(addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
        return AF_INET;
    }
    if (ss->ss_family == AF_INET6) {
        memcpy(addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
        return AF_INET6;
    }
    return 0;
}

/* The slot a key's probe starts at. Only the address is hashed (a node
 * asks for one pool; its pools share a chain): two multiplies, against
 * the ~100 instructions a byte-wise hash of address and pool took on
 * every held request. Clients do not choose their address freely, so no
 * keyed hash is needed. */
static uint32_t held_home(const held_table_t *t, const uint8_t addr[16])
{
    uint64_t lo, hi;
    memcpy(&lo, addr, 8);
    memcpy(&hi, addr + 8, 8);
    uint64_t h = (lo ^ (hi * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    return (uint32_t)(((h >> 32) * t->cap) >> 32);
}

static bool held_same_key(const held_entry_t *e, uint8_t family, const uint8_t addr[16], const char *pool)
{
    return e->family == family && !memcmp(e->addr, addr, 16) && !strcmp(e->pool, pool);
}

static bool held_forgotten(const held_table_t *t, const held_entry_t *e, uint64_t now_ms)
{
    return now_ms >= e->last_seen_ms + t->forget_after_ms;
}

/* Publishes words [0, n) of the owner's entry i to readers. */
static void held_publish(held_table_t *t, uint32_t i, size_t n)
{
    held_slot_t *s = &t->slots[i];
    const uint64_t *src = (const uint64_t *)(const void *)&t->mine[i];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t w = 0; w < n; w++)
        atomic_store_explicit(&s->words[w], src[w], memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

/* Where the key lives in t (found), or else the first slot a new entry
 * may take (never used, or forgotten); -1: neither within the probes. */
static int64_t held_find(const held_table_t *t, uint8_t family, const uint8_t addr[16], const char *pool,
                         uint64_t now_ms, bool *found)
{
    uint32_t i = held_home(t, addr);
    uint32_t probes = t->cap < HELD_MAX_PROBES ? t->cap : HELD_MAX_PROBES;
    int64_t free_at = -1;
    *found = false;
    for (uint32_t k = 0; k < probes; k++, i = i + 1 == t->cap ? 0 : i + 1) {
        const held_entry_t *e = &t->mine[i];
        if (e->family == 0) {
            /* A key is never stored past a slot that was never used. */
            return free_at >= 0 ? free_at : i;
        }
        if (held_same_key(e, family, addr, pool)) {
            *found = true;
            return i;
        }
        if (free_at < 0 && held_forgotten(t, e, now_ms))
            free_at = i;
    }
    return free_at;
}

static void held_copy_text(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = len < cap ? len : cap - 1;
    memcpy(dst, src, n);
    memset(dst + n, 0, cap - n);
}

/* Fills a new entry i for c; the caller sets what the event says. */
static void held_fill(held_table_t *t, uint32_t i, uint8_t family, const uint8_t addr[16], const held_client_t *c,
                      uint64_t now_ms)
{
    held_entry_t *e = &t->mine[i];
    if (e->family == 0)
        atomic_store_explicit(&t->n_used, atomic_load_explicit(&t->n_used, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    memset(e, 0, sizeof *e);
    t->reason_of[i] = NULL;
    e->family = family;
    memcpy(e->addr, addr, 16);
    e->first_seen_ms = now_ms;
    e->spec = (uint8_t)http_accept_ignition_spec(c->accept, c->accept_len);
    held_copy_text(e->pool, sizeof e->pool, c->pool, strlen(c->pool));
    if (c->user_agent)
        held_copy_text(e->user_agent, sizeof e->user_agent, c->user_agent, c->user_agent_len);
}

static void held_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

void held_record(held_table_t *t, const held_client_t *c, const char *reason, uint64_t now_ms)
{
    uint8_t addr[16];
    uint8_t family = held_key_of(c->addr, addr);
    bool found;
    int64_t at = family ? held_find(t, family, addr, c->pool, now_ms, &found) : -1;
    if (at < 0) {
        held_count(&t->overflow);
        return;
    }
    uint32_t i = (uint32_t)at;
    held_entry_t *e = &t->mine[i];
    size_t words = HELD_ATTEMPT_WORDS;
    if (!found || held_forgotten(t, e, now_ms)) {
        /* New, or back after a silence long enough to forget it: afresh. */
        held_fill(t, i, family, addr, c, now_ms);
        words = HELD_ENTRY_WORDS;
    }
    e->last_seen_ms = now_ms;
    e->attempts++;
    e->admitted_ms = 0;
    if (t->reason_of[i] != reason) {
        /* Reasons are names that live as long as the process: the same
         * name again costs a pointer compare, not a string compare. */
        t->reason_of[i] = reason;
        held_copy_text(e->reason, sizeof e->reason, reason, strlen(reason));
        if (words < HELD_DYNAMIC_WORDS)
            words = HELD_DYNAMIC_WORDS;
    }
    held_publish(t, i, words);
}

/* Reads slot i of a table another thread owns into *out; false when the
 * owner kept writing it for all the tries. */
static bool held_read_slot(const held_table_t *t, uint32_t i, held_entry_t *out)
{
    const held_slot_t *s = &t->slots[i];
    uint64_t *dst = (uint64_t *)(void *)out;
    for (int tries = 0; tries < HELD_READ_TRIES; tries++) {
        uint64_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (before & 1)
            continue;
        for (size_t w = 0; w < HELD_ENTRY_WORDS; w++)
            dst[w] = atomic_load_explicit(&s->words[w], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) == before)
            return true;
    }
    return false;
}

/* A peer's entry for the key, read through its slots; false if none. */
static bool held_peer_lookup(const held_table_t *p, uint8_t family, const uint8_t addr[16], const char *pool,
                             uint64_t now_ms, held_entry_t *out)
{
    if (atomic_load_explicit(&p->n_used, memory_order_relaxed) == 0)
        return false;
    uint32_t i = held_home(p, addr);
    uint32_t probes = p->cap < HELD_MAX_PROBES ? p->cap : HELD_MAX_PROBES;
    for (uint32_t k = 0; k < probes; k++, i = i + 1 == p->cap ? 0 : i + 1) {
        if (!held_read_slot(p, i, out))
            continue;
        if (out->family == 0)
            return false;
        if (held_same_key(out, family, addr, pool))
            return !held_forgotten(p, out, now_ms);
    }
    return false;
}

/* Whether a peer table holds the key, and whether one already marked it
 * admitted; *held gets a live entry of one of them. */
static void held_peers_say(const held_table_t *t, const held_table_t *const *peers, size_t n_peers, uint8_t family,
                           const uint8_t addr[16], const char *pool, uint64_t now_ms, bool *any, bool *admitted,
                           held_entry_t *held)
{
    held_entry_t theirs = {0};  /* (filled by the lookup; -O3 cannot tell) */
    *any = *admitted = false;
    for (size_t p = 0; p < n_peers && !*admitted; p++) {
        if (peers[p] == t || !held_peer_lookup(peers[p], family, addr, pool, now_ms, &theirs))
            continue;
        *admitted = theirs.admitted_ms != 0;
        if (!*any)
            *held = theirs;
        *any = true;
    }
}

bool held_admit(held_table_t *t, const held_table_t *const *peers, size_t n_peers, const held_client_t *c,
                uint64_t now_ms)
{
    uint8_t addr[16];
    uint8_t family = held_key_of(c->addr, addr);
    if (!family)
        return false;
    bool found = false;
    int64_t at = -1;
    if (atomic_load_explicit(&t->n_used, memory_order_relaxed))
        at = held_find(t, family, addr, c->pool, now_ms, &found);
    bool mine = found && !held_forgotten(t, &t->mine[at], now_ms);
    if (mine && t->mine[at].admitted_ms)
        return false;
    /* A node's retries may have come on several workers' connections:
     * the first worker to see it admitted counts it, the others only mark
     * their entry. */
    bool theirs, theirs_admitted;
    held_entry_t copy;
    held_peers_say(t, peers, n_peers, family, addr, c->pool, now_ms, &theirs, &theirs_admitted, &copy);
    if (!mine && (!theirs || theirs_admitted))
        return false;
    if (!mine) {
        if (at < 0 && !found)
            at = held_find(t, family, addr, c->pool, now_ms, &found);
        if (at < 0) {
            held_count(&t->overflow);
            return false;
        }
        if (t->mine[at].family == 0)
            atomic_store_explicit(&t->n_used, atomic_load_explicit(&t->n_used, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
        t->mine[at] = copy;
        t->mine[at].attempts = 0;   /* the attempts are the peer's */
        t->reason_of[at] = NULL;
    }
    held_entry_t *e = &t->mine[at];
    e->admitted_ms = now_ms;
    e->last_seen_ms = now_ms;
    held_publish(t, (uint32_t)at, mine ? HELD_ATTEMPT_WORDS : HELD_ENTRY_WORDS);
    if (theirs_admitted)
        return false;
    held_count(&t->admitted_after_hold);
    return true;
}

/* --- The admin thread's merged copy. */

static int held_cmp_key(const void *a, const void *b)
{
    const held_entry_t *x = a, *y = b;
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    int c = memcmp(x->addr, y->addr, 16);
    return c ? c : strcmp(x->pool, y->pool);
}

static int held_cmp_first_seen(const void *a, const void *b)
{
    const held_entry_t *x = a, *y = b;
    if (x->first_seen_ms != y->first_seen_ms)
        return x->first_seen_ms < y->first_seen_ms ? -1 : 1;
    return held_cmp_key(a, b);
}

/* Joins b (same key) into a. */
static void held_merge(held_entry_t *a, const held_entry_t *b)
{
    a->attempts += b->attempts;
    if (b->first_seen_ms < a->first_seen_ms) {
        a->first_seen_ms = b->first_seen_ms;
        a->spec = b->spec;
        memcpy(a->user_agent, b->user_agent, sizeof a->user_agent);
    }
    if (b->attempts && (b->last_seen_ms > a->last_seen_ms || !a->attempts))
        memcpy(a->reason, b->reason, sizeof a->reason);
    if (b->last_seen_ms > a->last_seen_ms)
        a->last_seen_ms = b->last_seen_ms;
    if (b->admitted_ms > a->admitted_ms)
        a->admitted_ms = b->admitted_ms;
}

int held_collect(const held_table_t *const *tables, size_t n_tables, uint64_t now_ms, held_view_t *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    for (size_t k = 0; k < n_tables; k++) {
        cap += tables[k]->cap;
        out->admitted_after_hold += atomic_load_explicit(&tables[k]->admitted_after_hold, memory_order_relaxed);
        out->overflow += atomic_load_explicit(&tables[k]->overflow, memory_order_relaxed);
        out->forget_after_ms = tables[k]->forget_after_ms;
    }
    out->max_clients = (uint32_t)cap;
    out->entries = malloc((cap ? cap : 1) * sizeof *out->entries);
    if (!out->entries)
        return -1;
    for (size_t k = 0; k < n_tables; k++) {
        const held_table_t *t = tables[k];
        uint32_t used = atomic_load_explicit(&t->n_used, memory_order_relaxed);
        for (uint32_t i = 0; used && i < t->cap; i++) {
            held_entry_t *e = &out->entries[out->n];
            if (held_read_slot(t, i, e) && e->family && !held_forgotten(t, e, now_ms))
                out->n++;
        }
    }
    qsort(out->entries, out->n, sizeof *out->entries, held_cmp_key);
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (kept && !held_cmp_key(&out->entries[kept - 1], &out->entries[i]))
            held_merge(&out->entries[kept - 1], &out->entries[i]);
        else
            out->entries[kept++] = out->entries[i];
    }
    out->n = kept;
    qsort(out->entries, out->n, sizeof *out->entries, held_cmp_first_seen);
    for (size_t i = 0; i < out->n; i++)
        out->n_held += out->entries[i].admitted_ms == 0;
    return 0;
}

void held_view_release(held_view_t *v)
{
    free(v->entries);
    memset(v, 0, sizeof *v);
}

const char *held_spec_name(uint8_t spec)
{
    static const char *const names[IGNITION_SPEC__COUNT] = {
        [IGNITION_SPEC_2_2] = "2.2.0", [IGNITION_SPEC_3_0] = "3.0.0", [IGNITION_SPEC_3_1] = "3.1.0",
        [IGNITION_SPEC_3_2] = "3.2.0", [IGNITION_SPEC_3_3] = "3.3.0", [IGNITION_SPEC_3_4] = "3.4.0",
        [IGNITION_SPEC_UNSUPPORTED] = "unsupported",
    };
    return spec < IGNITION_SPEC__COUNT ? names[spec] : "unsupported";
}

void held_addr_text(const held_entry_t *e, char *buf, size_t cap)
{
    if (!inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->addr, buf, (socklen_t)cap) && cap)
        buf[0] = '\0';
}
