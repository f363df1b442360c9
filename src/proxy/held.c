#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "core/hash.h"
#include "http/accept.h"
#include "proxy/held.h"

/* A reader retries a slot the owner is writing this many times before it
 * leaves the slot out of its copy: an owner's write is a few stores, so
 * more than one retry is already rare. */
#define HELD_READ_TRIES 64
/* The words an attempt on a known client changes: last seen, attempts,
 * latest hold and admission; and with a new reason, the reason too. */
#define HELD_ATTEMPT_WORDS (offsetof(held_entry_t, reason) / sizeof(uint64_t))
#define HELD_DYNAMIC_WORDS (offsetof(held_entry_t, first_seen_ms) / sizeof(uint64_t))

static int held_part_init(held_part_t *p, uint32_t max_clients)
{
    p->max_clients = max_clients ? max_clients : 1;
    uint64_t cap = ((uint64_t)p->max_clients * HELD_SLOTS_NUM + HELD_SLOTS_DEN - 1) / HELD_SLOTS_DEN;
    p->cap = (uint32_t)cap;
    p->mine = calloc(p->cap, sizeof *p->mine);
    p->slots = calloc(p->cap, sizeof *p->slots);
    p->own = calloc(p->cap, sizeof *p->own);
    return p->mine && p->slots && p->own ? 0 : -1;
}

static void held_part_destroy(held_part_t *p)
{
    free(p->mine);
    free(p->slots);
    free(p->own);
    p->mine = NULL;
    p->slots = NULL;
    p->own = NULL;
}

int held_table_init(held_table_t *t, uint32_t max_clients, uint64_t forget_after_ms)
{
    memset(t, 0, sizeof *t);
    t->forget_after_ms = forget_after_ms;
    max_clients = max_clients ? max_clients : 1;
    if (held_part_init(&t->held, max_clients) < 0 ||
        held_part_init(&t->refused, (max_clients + HELD_REFUSED_DIV - 1) / HELD_REFUSED_DIV) < 0) {
        held_table_destroy(t);
        return -1;
    }
    return 0;
}

void held_table_destroy(held_table_t *t)
{
    held_part_destroy(&t->held);
    held_part_destroy(&t->refused);
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

/* The slot an address's probe starts at. The high half is folded
 * into the low by a multiply (one-to-one, so the hosts of an IPv6 /64
 * never collide there), then a full mixer spreads every bit: a single
 * multiply carries only upwards, and sequential addresses, which differ
 * in the last bytes, piled up in runs longer than the probe bound (3,000
 * of a /16 in 4,096 slots: 2,516 stored). Clients do not choose their
 * address freely, so no keyed hash is needed. */
static uint32_t held_home(const held_part_t *p, const uint8_t addr[16])
{
    uint64_t lo, hi;
    memcpy(&lo, addr, 8);
    memcpy(&hi, addr + 8, 8);
    uint64_t h = hash_mix64(lo ^ (hi * 0x9e3779b97f4a7c15ull));
    return (uint32_t)(((h >> 32) * p->cap) >> 32);
}

static uint32_t held_probes(const held_part_t *p)
{
    return p->cap < HELD_MAX_PROBES ? p->cap : HELD_MAX_PROBES;
}

/* A node is its address (DESIGN 1.9): the pool it names is an attribute. */
static bool held_same_key(const held_entry_t *e, uint8_t family, const uint8_t addr[16])
{
    return e->family == family && !memcmp(e->addr, addr, 16);
}

static bool held_forgotten(const held_table_t *t, const held_entry_t *e, uint64_t now_ms)
{
    return now_ms >= e->last_seen_ms + t->forget_after_ms;
}

/* Publishes words [0, n) of the owner's entry i to readers. */
static void held_publish(held_part_t *p, uint32_t i, size_t n)
{
    held_slot_t *s = &p->slots[i];
    const uint64_t *src = (const uint64_t *)(const void *)&p->mine[i];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t w = 0; w < n; w++)
        atomic_store_explicit(&s->words[w], src[w], memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

/* A slot whose entry no longer counts against max_clients: never used,
 * or forgotten and given back by a sweep. */
static bool held_vacant(const held_part_t *p, uint32_t i)
{
    return p->mine[i].family == 0 || !p->own[i].counted;
}

/* Where the key lives in p (found), or else the first slot a new entry
 * may take (never used, or forgotten); -1: neither within the probes. */
static int64_t held_find(const held_table_t *t, const held_part_t *p, uint8_t family, const uint8_t addr[16],
                         uint64_t now_ms, bool *found)
{
    uint32_t i = held_home(p, addr);
    uint32_t probes = held_probes(p);
    int64_t free_at = -1;
    *found = false;
    for (uint32_t k = 0; k < probes; k++, i = i + 1 == p->cap ? 0 : i + 1) {
        const held_entry_t *e = &p->mine[i];
        if (e->family == 0) {
            /* A key is never stored past a slot that was never used. */
            return free_at >= 0 ? free_at : i;
        }
        bool gone = !p->own[i].counted || held_forgotten(t, e, now_ms);
        if (!gone && held_same_key(e, family, addr)) {
            *found = true;
            return i;
        }
        if (free_at < 0 && gone)
            free_at = i;
    }
    return free_at;
}

/* Gives back the room of up to HELD_SWEEP forgotten entries from the
 * hand: a part that had its share of clients, most of them forgotten
 * since, takes new ones again after at most cap / HELD_SWEEP sweeps. */
static void held_sweep(const held_table_t *t, held_part_t *p, uint64_t now_ms)
{
    uint32_t n = p->cap < HELD_SWEEP ? p->cap : HELD_SWEEP;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = p->hand;
        p->hand = i + 1 == p->cap ? 0 : i + 1;
        if (!held_vacant(p, i) && held_forgotten(t, &p->mine[i], now_ms)) {
            p->own[i].counted = false;
            p->n_counted--;
        }
    }
}

/* Whether slot i (from held_find, not holding the key) may take a new
 * entry; counts it if so. A forgotten entry's room is taken over as is. */
static bool held_claim(const held_table_t *t, held_part_t *p, uint32_t i, uint64_t now_ms)
{
    if (!held_vacant(p, i))
        return true;
    if (p->n_counted >= p->max_clients)
        held_sweep(t, p, now_ms);
    if (p->n_counted >= p->max_clients)
        return false;
    if (p->mine[i].family == 0)
        atomic_store_explicit(&p->n_used, atomic_load_explicit(&p->n_used, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    p->own[i].counted = true;
    p->n_counted++;
    return true;
}

static void held_copy_text(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = len < cap ? len : cap - 1;
    memcpy(dst, src, n);
    memset(dst + n, 0, cap - n);
}

/* Fills a new entry i for c; the caller sets what the event says. */
static void held_fill(held_part_t *p, uint32_t i, uint8_t family, const uint8_t addr[16], const held_client_t *c,
                      const char *pool, uint64_t now_ms)
{
    held_entry_t *e = &p->mine[i];
    memset(e, 0, sizeof *e);
    p->own[i].reason_of = NULL;
    e->family = family;
    memcpy(e->addr, addr, 16);
    e->first_seen_ms = now_ms;
    e->spec = (uint8_t)http_accept_ignition_spec(c->mcs_family, c->accept, c->accept_len);
    held_copy_text(e->pool, sizeof e->pool, pool, strlen(pool));
    if (c->user_agent)
        held_copy_text(e->user_agent, sizeof e->user_agent, c->user_agent, c->user_agent_len);
}

static void held_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* The latest admission any table of the process recorded. A hold is
 * written no earlier, so that one on another worker within the same tick
 * of the coarse clock (4 ms here) still counts as after it: only the
 * admitting worker reads the others' tables, a hold reads this one word
 * (a relaxed load; it changes once per admission that ends a hold). */
static _Atomic uint64_t held_last_admission_ms;

static void held_note_admission(uint64_t ms)
{
    uint64_t seen = atomic_load_explicit(&held_last_admission_ms, memory_order_relaxed);
    while (seen < ms && !atomic_compare_exchange_weak_explicit(&held_last_admission_ms, &seen, ms,
                                                               memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The pool a refusal is recorded under: none. */
static const char held_no_pool[] = "";

/* Whether an entry's pool is what it would keep of pool (held_copy_text:
 * the first HELD_POOL_LEN - 1 bytes). */
static bool held_same_pool(const held_entry_t *e, const char *pool)
{
    return !strncmp(e->pool, pool, HELD_POOL_LEN - 1);
}

/* pool: what the entry shows, the latest request's (none for a refusal). */
static void held_record_in(held_table_t *t, held_part_t *p, const held_client_t *c, const char *pool,
                           const char *reason, int status, uint64_t now_ms)
{
    uint8_t addr[16];
    uint8_t family = held_key_of(c->addr, addr);
    bool found = false;
    int64_t at = family ? held_find(t, p, family, addr, now_ms, &found) : -1;
    if (at < 0 || (!found && !held_claim(t, p, (uint32_t)at, now_ms))) {
        held_count(&t->overflow);
        return;
    }
    uint32_t i = (uint32_t)at;
    held_entry_t *e = &p->mine[i];
    size_t words = HELD_ATTEMPT_WORDS;
    if (!found) {
        /* New, or back after a silence long enough to forget it: afresh. */
        held_fill(p, i, family, addr, c, pool, now_ms);
        e->refused = p == &t->refused;
        words = HELD_ENTRY_WORDS;
    }
    if (found && !held_same_pool(e, pool)) {
        /* Rare: the node asks for another pool. An attribute, not a key. */
        held_copy_text(e->pool, sizeof e->pool, pool, strlen(pool));
        words = HELD_ENTRY_WORDS;
    }
    /* Not before any admission seen so far, this client's included. */
    uint64_t after = atomic_load_explicit(&held_last_admission_ms, memory_order_relaxed);
    e->held_ms = now_ms > after ? now_ms : after;
    e->last_seen_ms = now_ms;
    e->attempts++;
    e->status = (uint16_t)status;
    if (p->own[i].reason_of != reason) {
        /* Reasons are names that live as long as the process: the same
         * name again costs a pointer compare, not a string compare. */
        p->own[i].reason_of = reason;
        held_copy_text(e->reason, sizeof e->reason, reason, strlen(reason));
        if (words < HELD_DYNAMIC_WORDS)
            words = HELD_DYNAMIC_WORDS;
    }
    held_publish(p, i, words);
}

void held_record(held_table_t *t, const held_client_t *c, const char *reason, int status, uint64_t now_ms)
{
    held_record_in(t, &t->held, c, c->pool, reason, status, now_ms);
}

void held_record_refusal(held_table_t *t, const held_client_t *c, const char *reason, int status, uint64_t now_ms)
{
    held_record_in(t, &t->refused, c, held_no_pool, reason, status, now_ms);
}

/* Reads slot i of a part another thread owns into *out; false when the
 * owner kept writing it for all the tries. */
static bool held_read_slot(const held_part_t *p, uint32_t i, held_entry_t *out)
{
    const held_slot_t *s = &p->slots[i];
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

/* A peer's live entry for the key, read through its slots; false if none.
 * (A slot a sweep gave back still shows its forgotten entry to readers.) */
static bool held_peer_lookup(const held_table_t *pt, const held_part_t *p, uint8_t family, const uint8_t addr[16],
                             uint64_t now_ms, held_entry_t *out)
{
    if (atomic_load_explicit(&p->n_used, memory_order_relaxed) == 0)
        return false;
    uint32_t i = held_home(p, addr);
    uint32_t probes = held_probes(p);
    for (uint32_t k = 0; k < probes; k++, i = i + 1 == p->cap ? 0 : i + 1) {
        if (!held_read_slot(p, i, out))
            continue;
        if (out->family == 0)
            return false;
        if (held_same_key(out, family, addr) && !held_forgotten(pt, out, now_ms))
            return true;
    }
    return false;
}

/* The admission of an address in one part (held, or refused): whether it
 * ends a rejection, the latest event of every table being one, whatever
 * pool each asked for (a node is its address). Records it in the owner's
 * part when it does, and says in *was_held whether that rejection held
 * the node (a 503: only then is it an admission after a hold). */
static bool held_admit_in(held_table_t *t, held_part_t *p, bool refused, const held_table_t *const *peers,
                          size_t n_peers, uint8_t family, const uint8_t addr[16], uint64_t now_ms, bool *was_held)
{
    bool found = false;
    int64_t at = -1;
    if (atomic_load_explicit(&p->n_used, memory_order_relaxed))
        at = held_find(t, p, family, addr, now_ms, &found);
    uint64_t last_hold = found ? p->mine[at].held_ms : 0;
    uint64_t last_admission = found ? p->mine[at].admitted_ms : 0;
    uint16_t last_status = found ? p->mine[at].status : 0;
    /* A node's holds and admissions may have come on several workers'
     * connections: the latest of all wins. */
    held_entry_t theirs = {0}, latest = {0};
    for (size_t k = 0; k < n_peers; k++) {
        if (peers[k] == t)
            continue;
        const held_part_t *pp = refused ? &peers[k]->refused : &peers[k]->held;
        if (!held_peer_lookup(peers[k], pp, family, addr, now_ms, &theirs))
            continue;
        if (theirs.held_ms > last_hold) {
            last_hold = theirs.held_ms;
            last_status = theirs.status;
            latest = theirs;
        }
        if (theirs.admitted_ms > last_admission)
            last_admission = theirs.admitted_ms;
    }
    if (last_hold == 0 || last_admission > last_hold)
        return false;       /* never held, or admitted since its latest hold */
    if (!found) {
        /* The hold was another worker's: this part keeps a copy of the
         * entry (the attempts are the peer's) to show the admission. */
        if (at < 0)
            at = held_find(t, p, family, addr, now_ms, &found);
        if (at < 0 || !held_claim(t, p, (uint32_t)at, now_ms)) {
            held_count(&t->overflow);
            return false;
        }
        p->mine[at] = latest;
        p->mine[at].attempts = 0;
        p->own[at].reason_of = NULL;
    }
    held_entry_t *e = &p->mine[at];
    /* After the hold it ends, whatever the workers' clocks read. */
    e->admitted_ms = now_ms > last_hold ? now_ms : last_hold + 1;
    e->last_seen_ms = now_ms;
    held_publish(p, (uint32_t)at, found ? HELD_ATTEMPT_WORDS : HELD_ENTRY_WORDS);
    held_note_admission(e->admitted_ms);
    *was_held |= last_status == HELD_STATUS;
    return true;
}

/* Has any worker ever held or refused anyone? Until then (the common
 * case of a cluster that admits) an admission has nothing to end. */
static bool held_anyone(const held_table_t *t, const held_table_t *const *peers, size_t n_peers)
{
    for (size_t k = 0; k <= n_peers; k++) {
        const held_table_t *pt = k == n_peers ? t : peers[k];
        if (atomic_load_explicit(&pt->held.n_used, memory_order_relaxed) ||
            atomic_load_explicit(&pt->refused.n_used, memory_order_relaxed))
            return true;
    }
    return false;
}

bool held_admit(held_table_t *t, const held_table_t *const *peers, size_t n_peers, const held_client_t *c,
                uint64_t now_ms)
{
    if (!held_anyone(t, peers, n_peers))
        return false;
    uint8_t addr[16];
    uint8_t family = held_key_of(c->addr, addr);
    if (!family)
        return false;
    bool was_held = false;
    /* Getting its config ends the address's hold and its refusal, whatever
     * pool each asked for. */
    bool news = held_admit_in(t, &t->held, false, peers, n_peers, family, addr, now_ms, &was_held);
    news |= held_admit_in(t, &t->refused, true, peers, n_peers, family, addr, now_ms, &was_held);
    /* A denied or explained node that comes back (rebooted) and is
     * admitted is listed as admitted, but it was not held. */
    if (was_held)
        held_count(&t->admitted_after_hold);
    return news;
}

/* --- The admin thread's merged copy. */

static int held_cmp_addr(const held_entry_t *x, const held_entry_t *y)
{
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    return memcmp(x->addr, y->addr, 16);
}

/* A part's key is the address: by address, so that a client's entries in
 * both parts lie side by side, its refusal first (held_drop_superseded). */
static int held_cmp_key(const void *a, const void *b)
{
    const held_entry_t *x = a, *y = b;
    int c = held_cmp_addr(x, y);
    if (c)
        return c;
    if (x->refused != y->refused)
        return x->refused > y->refused ? -1 : 1;
    return 0;
}

static int held_cmp_first_seen(const void *a, const void *b)
{
    const held_entry_t *x = a, *y = b;
    if (x->first_seen_ms != y->first_seen_ms)
        return x->first_seen_ms < y->first_seen_ms ? -1 : 1;
    return held_cmp_key(a, b);
}

/* Joins b (same key) into a: the latest event wins (issue 20.3). */
static void held_merge(held_entry_t *a, const held_entry_t *b)
{
    a->attempts += b->attempts;
    if (b->first_seen_ms < a->first_seen_ms) {
        a->first_seen_ms = b->first_seen_ms;
        a->spec = b->spec;
        memcpy(a->user_agent, b->user_agent, sizeof a->user_agent);
    }
    if (b->held_ms > a->held_ms) {
        a->held_ms = b->held_ms;
        a->status = b->status;
        memcpy(a->pool, b->pool, sizeof a->pool);  /* its latest hold's */
        memcpy(a->reason, b->reason, sizeof a->reason);
    }
    if (b->last_seen_ms > a->last_seen_ms)
        a->last_seen_ms = b->last_seen_ms;
    if (b->admitted_ms > a->admitted_ms)
        a->admitted_ms = b->admitted_ms;
}

static uint64_t held_latest_event(const held_entry_t *e)
{
    return e->held_ms > e->admitted_ms ? e->held_ms : e->admitted_ms;
}

/* One node may have an entry in each part: a hold by the verdict and a
 * refusal by an admission policy, both by address, such as a held node
 * whose token was then rotated out (403 since), or one held
 * UnknownMachine until its Machine showed and then OutOfSkew. A node is
 * its address (DESIGN 1.9), whatever pools its requests named: what it
 * got last is the entry with the later event, and the other, left in,
 * would be listed and counted for what the node no longer gets (issue
 * 20.3: the latest event wins), so it goes from the view; on a tie (one
 * admission ends both) the hold stays, which names the pool. v merged
 * (one entry per part and address) and sorted by held_cmp_key (a refusal
 * first in its address's run); returns the entries kept, in order. */
static size_t held_drop_superseded(held_entry_t *v, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && !held_cmp_addr(&v[i], &v[end]))
            end++;
        const held_entry_t *refusal = NULL, *hold = NULL;
        for (size_t k = i; k < end; k++) {
            if (v[k].refused)
                refusal = &v[k];
            else if (refusal)
                hold = &v[k];
        }
        /* Admitted both: by one admission (each part's written after its
         * own hold, so not always at one ms) or two; the hold stays. */
        bool both_admitted = hold && hold->admitted_ms > hold->held_ms && refusal->admitted_ms > refusal->held_ms;
        bool refusal_goes = hold && (both_admitted || held_latest_event(hold) >= held_latest_event(refusal));
        bool hold_goes = hold && !refusal_goes;
        for (size_t k = i; k < end; k++)
            if (!(refusal_goes && &v[k] == refusal) && !(hold_goes && &v[k] == hold))
                v[kept++] = v[k];
        i = end;
    }
    return kept;
}

/* A part's live entries appended to out. */
static void held_collect_part(const held_table_t *t, const held_part_t *p, uint64_t now_ms, held_view_t *out)
{
    uint32_t used = atomic_load_explicit(&p->n_used, memory_order_relaxed);
    for (uint32_t i = 0; used && i < p->cap; i++) {
        held_entry_t *e = &out->entries[out->n];
        if (held_read_slot(p, i, e) && e->family && !held_forgotten(t, e, now_ms))
            out->n++;
    }
}

int held_collect(const held_table_t *const *tables, size_t n_tables, uint64_t now_ms, held_view_t *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0, max_clients = 0;
    for (size_t k = 0; k < n_tables; k++) {
        cap += (size_t)tables[k]->held.cap + tables[k]->refused.cap;
        max_clients += tables[k]->held.max_clients;
        out->admitted_after_hold += atomic_load_explicit(&tables[k]->admitted_after_hold, memory_order_relaxed);
        out->overflow += atomic_load_explicit(&tables[k]->overflow, memory_order_relaxed);
        out->forget_after_ms = tables[k]->forget_after_ms;
    }
    out->max_clients = (uint32_t)max_clients;
    out->entries = malloc((cap ? cap : 1) * sizeof *out->entries);
    if (!out->entries)
        return -1;
    for (size_t k = 0; k < n_tables; k++) {
        held_collect_part(tables[k], &tables[k]->held, now_ms, out);
        held_collect_part(tables[k], &tables[k]->refused, now_ms, out);
    }
    qsort(out->entries, out->n, sizeof *out->entries, held_cmp_key);
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (kept && !held_cmp_key(&out->entries[kept - 1], &out->entries[i]))
            held_merge(&out->entries[kept - 1], &out->entries[i]);
        else
            out->entries[kept++] = out->entries[i];
    }
    out->n = held_drop_superseded(out->entries, kept);
    qsort(out->entries, out->n, sizeof *out->entries, held_cmp_first_seen);
    for (size_t i = 0; i < out->n; i++) {
        held_entry_t *e = &out->entries[i];
        if (e->held_ms >= e->admitted_ms)
            e->admitted_ms = 0;     /* rejected again since */
        out->n_held += held_now(e);
    }
    return 0;
}

bool held_now(const held_entry_t *e)
{
    return e->admitted_ms == 0 && e->status == HELD_STATUS;
}

const char *held_state_name(const held_entry_t *e)
{
    if (e->admitted_ms)
        return "admitted";
    if (e->status == HELD_STATUS)
        return "held";
    return e->status == 403 ? "denied" : "explained";
}

void held_view_release(held_view_t *v)
{
    free(v->entries);
    memset(v, 0, sizeof *v);
}

const char *held_spec_name(uint8_t spec)
{
    static const char *const names[IGNITION_SPEC__COUNT] = {
        [IGNITION_SPEC_2_2] = "2.2.0", [IGNITION_SPEC_3_1] = "3.1.0",
        [IGNITION_SPEC_3_2] = "3.2.0", [IGNITION_SPEC_3_3] = "3.3.0", [IGNITION_SPEC_3_4] = "3.4.0",
        [IGNITION_SPEC_3_5] = "3.5.0", [IGNITION_SPEC_UNSUPPORTED] = "unsupported",
        [IGNITION_SPEC_UNCONVERTIBLE] = "unconvertible",
    };
    return spec < IGNITION_SPEC__COUNT ? names[spec] : "unsupported";
}

void held_addr_text(const held_entry_t *e, char *buf, size_t cap)
{
    if (!inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->addr, buf, (socklen_t)cap) && cap)
        buf[0] = '\0';
}
