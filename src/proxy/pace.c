#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "pace_room.h"

const unsigned PACE_JOIN_BUCKETS_S[PACE_JOIN_BUCKETS] = {30, 60, 120, 300, 600, 900, 1200, 1800, 3600};

static const char *const PACE_CAUSE_NAMES[PACE_CAUSES] = {
    [PACE_ADMITTED] = "", [PACE_CEILING] = "ceiling", [PACE_BUDGET] = "budget",
    [PACE_RATE] = "rate", [PACE_TURN] = "turn",       [PACE_ROOM] = "room",   [PACE_CLAIM] = "claim",
    [PACE_SYNC] = "sync",
};

const char *pace_cause_name(pace_cause_t cause)
{
    return (unsigned)cause < PACE_CAUSES ? PACE_CAUSE_NAMES[cause] : "";
}

/* ---- the table and the lists ------------------------------------------ */

int pace_room_init(pace_room_t *r, uint32_t max_line)
{
    memset(r, 0, sizeof *r);
    uint32_t n = 64;
    while (n < max_line)
        n *= 2;
    r->buckets = calloc(n, sizeof *r->buckets);
    if (!r->buckets)
        return -1;
    r->mask = n - 1;
    r->max_line = max_line;
    uint32_t cap = 64;
    while (cap < 2 * (uint64_t)max_line)
        cap *= 2;
    r->places = calloc(cap + 1, sizeof *r->places);
    if (!r->places) {
        free(r->buckets);
        r->buckets = NULL;
        return -1;
    }
    r->places_cap = cap;
    hash_random_key(r->hash_key);
    pthread_mutex_init(&r->lock, NULL);
    return 0;
}

void pace_room_destroy(pace_room_t *r)
{
    if (!r->buckets)
        return;
    for (uint32_t i = 0; i <= r->mask; i++)
        while (r->buckets[i]) {
            pace_node_t *n = r->buckets[i];
            r->buckets[i] = n->chain;
            free(n);
        }
    free(r->buckets);
    r->buckets = NULL;
    free(r->places);
    r->places = NULL;
    pace_view_free(r->view);
    r->view = NULL;
    pace_shared_free(r->shared);
    r->shared = NULL;
    free(r->claims);
    free(r->waiters);
    r->claims = r->waiters = NULL;
    pthread_mutex_destroy(&r->lock);
}

/* Keyed: the addresses are the clients' to pick (hash.h). */
static uint32_t pace_slot(const pace_room_t *r, const addrset_key_t *k)
{
    return (uint32_t)hash_seeded16(r->hash_key, k->b) & r->mask;
}

pace_node_t *pace_find(const pace_room_t *r, const addrset_key_t *k)
{
    for (pace_node_t *n = r->buckets[pace_slot(r, k)]; n; n = n->chain)
        if (!memcmp(&n->key, k, sizeof *k))
            return n;
    return NULL;
}

pace_node_t *pace_by_order(pace_link_t *l)
{
    return l ? (pace_node_t *)((char *)l - offsetof(pace_node_t, order)) : NULL;
}

static pace_node_t *pace_by_seen(pace_link_t *l)
{
    return l ? (pace_node_t *)((char *)l - offsetof(pace_node_t, seen)) : NULL;
}

static void pace_list_push(pace_list_t *l, pace_link_t *n)
{
    n->next = NULL;
    n->prev = l->tail;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
    l->n++;
}

static void pace_list_remove(pace_list_t *l, pace_link_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->prev = n->next = NULL;
    l->n--;
}

void pace_forget(pace_room_t *r, pace_node_t *n)
{
    pace_node_t **at = &r->buckets[pace_slot(r, &n->key)];
    while (*at != n)
        at = &(*at)->chain;
    *at = n->chain;
    free(n);
}

/* A new node, first seen now (in no list yet); NULL out of memory. */
static pace_node_t *pace_add(pace_room_t *r, const addrset_key_t *k, uint64_t now_ms)
{
    pace_node_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->key = *k;
    n->first_ms = now_ms;
    uint32_t s = pace_slot(r, k);
    n->chain = r->buckets[s];
    r->buckets[s] = n;
    return n;
}

static void pace_copy_pool(pace_node_t *n, const char *pool)
{
    size_t len = strnlen(pool, PACE_POOL_LEN - 1);
    memcpy(n->pool, pool, len);
    n->pool[len] = '\0';
}

/* ---- places: a Fenwick tree of the waiting nodes' tickets ------------ */

static void pace_places_add(pace_room_t *r, uint32_t ticket, int32_t d)
{
    for (uint32_t i = ticket + 1; i <= r->places_cap; i += i & -i)
        r->places[i] += (uint32_t)d;
}

/* Waiting nodes whose ticket is at most ticket: a node's place. */
static uint32_t pace_places_upto(const pace_room_t *r, uint32_t ticket)
{
    uint32_t n = 0;
    for (uint32_t i = ticket + 1; i; i -= i & -i)
        n += r->places[i];
    return n;
}

/* The next newcomer's ticket; out of them, the line is numbered again
 * 0..n-1 (n <= max_line <= places_cap / 2). */
static uint32_t pace_places_take(pace_room_t *r)
{
    if (r->next_ticket >= r->places_cap) {
        memset(r->places, 0, (r->places_cap + 1) * sizeof *r->places);
        r->next_ticket = 0;
        for (pace_link_t *l = r->line.head; l; l = l->next) {
            pace_node_t *w = (pace_node_t *)((char *)l - offsetof(pace_node_t, order));
            w->ticket = r->next_ticket++;
            pace_places_add(r, w->ticket, 1);
        }
    }
    uint32_t t = r->next_ticket++;
    pace_places_add(r, t, 1);
    return t;
}

/* A waiting node leaves the line (to join, or forgotten). */
void pace_leave_line(pace_room_t *r, pace_node_t *n)
{
    pace_places_add(r, n->ticket, -1);
    pace_list_remove(&r->line, &n->order);
    pace_list_remove(&r->seen, &n->seen);
}

/* ---- time passing ------------------------------------------------------ */

/* How long ago t was at now_ms; 0 when t is later. Each caller reads its
 * clock before it takes the lock, so a time another worker wrote since
 * may be a tick (4 ms) ahead of its now: unsigned, that difference
 * wrapped to 2^64 and a node admitted an instant ago had timed out. */
uint64_t pace_age(uint64_t now_ms, uint64_t t)
{
    return now_ms > t ? now_ms - t : 0;
}

/* n is joining no more: off the joining list and forgotten. */
static void pace_unjoin(pace_room_t *r, pace_node_t *n)
{
    pace_list_remove(&r->joining, &n->order);
    if (!n->is_node)
        r->unseen--;
    pace_forget(r, n);
}

/* A node admitted join_timeout ago has joined or never will: its slot is
 * free (a Node born for it turning Ready ends it sooner, in
 * pace_room_set_view). A waiting node unseen as long has gone. */
void pace_expire(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    pace_node_t *n;
    while ((n = pace_by_order(r->joining.head)) && pace_age(now_ms, n->admitted_ms) >= cfg->join_timeout_ms) {
        r->timed_out_total++;
        pace_unjoin(r, n);
    }
    while ((n = pace_by_seen(r->seen.head)) && pace_age(now_ms, n->seen_ms) >= cfg->join_timeout_ms) {
        r->forgotten_total++;
        pace_leave_line(r, n);
        pace_forget(r, n);
    }
}

bool pace_trusted(const pace_room_t *r)
{
    return r->view && r->view->trusted;
}


/* cfg NULL: a caller that asks whether the line can be written only
 * (a gate that never listed is in sync for it). */
line_mode_t pace_line_mode(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    if (!r->line_api)
        return LINE_LOCAL;
    /* Never listed: what the set holds is not known, so nobody is
     * admitted (a gate restarted during an outage admitted floor(M/R) on
     * top of a full set); once join_timeout has passed since it started,
     * every entry the set held then has left, and a failing list falls
     * back as any other (the Leases 403 from the start: the Role is
     * missing). */
    if (!r->shared || !r->shared->listed) {
        bool blind_ok = cfg && r->shared && r->shared->failing &&
                        pace_age(now_ms, r->shared_since_ms) >= cfg->join_timeout_ms;
        return blind_ok ? LINE_FALLBACK : LINE_SYNC;
    }
    bool write_failing = r->write_failing && pace_age(now_ms, r->write_fail_ms) < PACE_WRITE_FALLBACK_MS;
    if (r->shared->failing || write_failing)
        return LINE_FALLBACK;
    return pace_settle_left(r, now_ms) ? LINE_SETTLE : LINE_SHARED;
}

/* How long the room settles still (0: it does not); a failed write's
 * fallback that lapsed without a write since settles from the lapse. */
uint64_t pace_settle_left(const pace_room_t *r, uint64_t now_ms)
{
    uint64_t settle = r->settle_until_ms;
    if (r->write_failing && r->write_fail_ms + PACE_WRITE_FALLBACK_MS + PACE_SETTLE_MS > settle)
        settle = r->write_fail_ms + PACE_WRITE_FALLBACK_MS + PACE_SETTLE_MS;
    return settle > now_ms ? settle - now_ms : 0;
}

/* The shared line is usable again after a fallback (the Leases listed
 * again, or written): the room settles from now. */
void pace_settle_from(pace_room_t *r, uint64_t now_ms)
{
    if (now_ms + PACE_SETTLE_MS > r->settle_until_ms)
        r->settle_until_ms = now_ms + PACE_SETTLE_MS;
}

/* The Node born for joining node n: the newest Node of its address,
 * created after its admission (less the clock skew); NULL: none. */
static const pace_view_addr_t *pace_born_for(const pace_room_t *r, const pace_node_t *n)
{
    if (!r->view)
        return NULL;
    const pace_view_addr_t *a = pace_view_newest(r->view, &n->key);
    return a && a->created + PACE_NODE_SKEW_MS >= (int64_t)n->admitted_ms ? a : NULL;
}

/* now - window on the view's clock: the times after it are within the
 * window (the clock may be younger than the window: nothing is before). */
static int64_t pace_since(uint64_t now_ms, uint64_t window_ms)
{
    return (int64_t)now_ms - (int64_t)window_ms;
}

/* Nodes not Ready created within join_timeout, and the clock skew a Node
 * born for a node may be older than its admission by: every Node that
 * takes a joining node out of O is counted here (docs/pacing.md, S <= V). */
uint32_t pace_young_not_ready(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    const pace_view_t *v = r->view;
    return (uint32_t)pace_view_after(v->not_ready_created, v->n_not_ready,
                                     pace_since(now_ms, cfg->join_timeout_ms + PACE_NODE_SKEW_MS));
}

uint32_t pace_csrs_within(const pace_room_t *r, uint64_t window_ms, uint64_t now_ms)
{
    const pace_view_t *v = r->view;
    return (uint32_t)pace_view_after(v->csr_created, v->n_csrs, pace_since(now_ms, window_ms));
}

/* The node CSRs cluster-machine-approver counts now
 * (pace_view_approver_count). */
uint32_t pace_pending_csrs(const pace_room_t *r, uint64_t now_ms)
{
    return (uint32_t)pace_view_approver_count(r->view, (int64_t)now_ms);
}

/* The CSR ceiling holds: the node CSRs the approver counts are near the
 * count past which it approves nothing, so no node is added to them.
 * Only a trusted view can say so. */
bool pace_ceiling(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    return pace_trusted(r) && pace_pending_csrs(r, now_ms) >= cfg->max_pending_csrs;
}

/* The budget used, as the counting mode counts it: V + replicas x O with
 * a trusted view, replicas x the joining nodes without. */
uint64_t pace_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint64_t replicas = cfg->replicas ? cfg->replicas : 1;
    /* The shared line's fallback counts the set it saw last and, blind,
     * its own admissions that set lacks: counting only replicas x its own
     * joining nodes said nothing of the other gates' entries, and a gate
     * with few of its own admitted floor(M/R) on top of them (7 admitted
     * of 6 through a 20 s outage). A Node seen does not say whose
     * admission it was, so the rest is blind. */
    line_mode_t mode = pace_line_mode(r, cfg, now_ms);
    if (mode == LINE_FALLBACK || mode == LINE_SETTLE)
        return pace_shared_blind_used(r, cfg, now_ms);
    if (!pace_trusted(r))
        return replicas * r->joining.n;
    uint64_t v = (uint64_t)pace_young_not_ready(r, cfg, now_ms) + pace_csrs_within(r, cfg->join_timeout_ms, now_ms);
    return v + replicas * r->unseen;
}

void pace_room_set_view(pace_room_t *r, pace_view_t *view, uint64_t now_ms)
{
    pthread_mutex_lock(&r->lock);
    pace_view_free(r->view);
    r->view = view;
    bool trusted = pace_trusted(r);
    r->unseen = 0;
    /* A Node is born for one joining node at most, the one admitted
     * first: a Node lists up to 16 addresses, and its kubelet writes
     * them, so one NotReady Node naming 40 joining nodes' addresses let
     * 15 more past max_joining 3 (found by a review); its Ready would
     * have freed them all. The others stay in O. */
    uint32_t n_ids = 0;
    for (size_t i = 0; view && i < view->n_addrs; i++)
        if (view->addrs[i].node >= n_ids)
            n_ids = view->addrs[i].node + 1;
    bool *vouched = n_ids ? calloc(n_ids, sizeof *vouched) : NULL;
    for (pace_node_t *n = pace_by_order(r->joining.head), *next; n; n = next) {
        next = pace_by_order(n->order.next);
        const pace_view_addr_t *born = pace_born_for(r, n);
        if (born && (!vouched || vouched[born->node]))
            born = NULL;        /* another joining node's Node (or out of memory: none) */
        else if (born)
            vouched[born->node] = true;
        if (trusted && born && born->ready) {
            /* Joined: the seconds from its admission to a Ready Node. */
            uint64_t took = pace_age(now_ms, n->admitted_ms);
            size_t b = 0;
            while (b < PACE_JOIN_BUCKETS && took > PACE_JOIN_BUCKETS_S[b] * 1000ull)
                b++;
            r->join_buckets[b]++;
            r->join_sum_ms += took;
            r->joined_total++;
            n->is_node = true;
            pace_unjoin(r, n);
            continue;
        }
        n->is_node = born != NULL;
        r->unseen += !n->is_node;
    }
    free(vouched);
    pthread_mutex_unlock(&r->lock);
}

bool pace_present(const pace_node_t *n, const config_pace_t *cfg, uint64_t now_ms)
{
    return pace_age(now_ms, n->seen_ms) < cfg->head_hold_ms;
}

/* Admissions within the last minute, of the per_minute latest kept. */
uint32_t pace_in_minute(const pace_room_t *r, uint32_t limit, uint64_t now_ms)
{
    uint32_t ring = sizeof r->recent / sizeof r->recent[0], in_minute = 0;
    for (uint32_t i = 0; i < limit; i++) {
        uint64_t t = r->recent[(r->recent_at + ring - 1 - i) % ring];
        if (t && pace_age(now_ms, t) < 60000)
            in_minute++;
    }
    return in_minute;
}

uint32_t pace_rate_limit(const pace_room_t *r, const config_pace_t *cfg)
{
    uint32_t ring = sizeof r->recent / sizeof r->recent[0];
    return cfg->per_minute < ring ? cfg->per_minute : ring;
}

/* Slots free now: under max_joining, and under per_minute's admissions of
 * the last minute when it is set (*rate: that is what left none). */
uint32_t pace_free(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool *rate)
{
    /* Each admission adds replicas to the budget used (its own, unseen
     * by the API yet, or blind): the slots are what is left, in steps. */
    uint64_t used = pace_used(r, cfg, now_ms);
    uint64_t replicas = cfg->replicas ? cfg->replicas : 1;
    uint32_t free = used < cfg->max_joining ? (uint32_t)((cfg->max_joining - used) / replicas) : 0;
    *rate = false;
    if (cfg->per_minute && free) {
        uint32_t limit = pace_rate_limit(r, cfg), in_minute = pace_in_minute(r, limit, now_ms);
        uint32_t left = limit > in_minute ? limit - in_minute : 0;
        if (left < free) {
            free = left;
            *rate = free == 0;
        }
    }
    return free;
}

/* ---- the decision ------------------------------------------------------ */

/* A node's key: its address (any other family is one key, all zeros). */
static addrset_key_t pace_key(const struct sockaddr_storage *addr)
{
    addrset_key_t k;
    if (addrset_key_from_sockaddr(addr, &k) < 0)
        memset(&k, 0, sizeof k);
    return k;
}

/* n (waiting) joins now, or a newcomer (n NULL) of key k does: the
 * joining node; NULL out of memory. */
pace_node_t *pace_admit(pace_room_t *r, pace_node_t *n, const addrset_key_t *k, const char *pool, uint64_t now_ms)
{
    if (n)
        pace_leave_line(r, n);
    else if (!(n = pace_add(r, k, now_ms)))
        return NULL;
    n->seen_ms = n->admitted_ms = now_ms;
    pace_copy_pool(n, pool);
    /* Unseen until the next view says whose Node it is (one Node, one
     * joining node: pace_room_set_view). */
    n->is_node = false;
    r->unseen++;
    pace_list_push(&r->joining, &n->order);
    uint32_t ring = sizeof r->recent / sizeof r->recent[0];
    r->recent[r->recent_at] = now_ms;
    r->recent_at = (r->recent_at + 1) % ring;
    r->admitted_total++;
    return n;
}

/* The present nodes of the line ahead of n (NULL: a newcomer, behind them
 * all), counted up to stop; *place: n's place from 1 (when n is given). */
/* Whether w, waiting, keeps a free slot from those behind it: it asked
 * within head_hold; and once slots have been free for head_hold, only a
 * node that was in line before they freed and has asked again since
 * does. A slot waits that long for the present nodes ahead, then those
 * that did not come back for it (a real node retries every 5 s) no
 * longer hold it, nor do newcomers that asked once since. Without the
 * lapse, a stream of addresses that each ask once, faster than
 * held.max_clients / head_hold (273 a second at the defaults), kept the
 * line full of "present" nodes: every newcomer was paced without a place
 * and the free slots went to nobody (found by a review: both slots free
 * for 9 s, nobody admitted). */
static bool pace_keeps_turn(const pace_room_t *r, const config_pace_t *cfg, const pace_node_t *w, uint64_t now_ms)
{
    if (!pace_present(w, cfg, now_ms))
        return false;
    bool lapsed = r->free_since_ms && pace_age(now_ms, r->free_since_ms) >= cfg->head_hold_ms;
    return !lapsed || (w->first_ms < r->free_since_ms && w->seen_ms >= r->free_since_ms);
}

static uint32_t pace_ahead(const pace_room_t *r, const config_pace_t *cfg, const pace_node_t *n, uint32_t stop,
                           uint64_t now_ms, uint32_t *place)
{
    uint32_t ahead = 0;
    if (!n) {
        /* The present ones are the line's most recently seen: the tail of
         * the seen list, walked back only as far as they go. */
        for (const pace_node_t *w = pace_by_seen(r->seen.tail); w && ahead < stop && pace_present(w, cfg, now_ms);
             w = pace_by_seen(w->seen.prev))
            ahead += pace_keeps_turn(r, cfg, w, now_ms);
        return ahead;
    }
    /* Its place from the tree; the walk stops at the answer (none at all
     * when no slot is free): a walk to every node's place cost 17.5 us at
     * place 4,096 and 389 us at 100,000, each retry, under the lock. */
    *place = pace_places_upto(r, n->ticket);
    for (const pace_node_t *w = pace_by_order(r->line.head); w && w != n && ahead < stop;
         w = pace_by_order(w->order.next))
        ahead += pace_keeps_turn(r, cfg, w, now_ms);
    return ahead;
}

/* A newcomer paced now: its place at the end of the line, the longest
 * absent making way when the line is full. 0: no place (every node of the
 * line is present, or out of memory). */
uint32_t pace_enqueue(pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, const char *pool,
                      uint64_t now_ms)
{
    if (r->line.n >= r->max_line) {
        pace_node_t *gone = pace_by_seen(r->seen.head);
        if (!gone || pace_present(gone, cfg, now_ms))
            return 0;
        r->evicted_total++;
        pace_leave_line(r, gone);
        pace_forget(r, gone);
    }
    pace_node_t *n = pace_add(r, k, now_ms);
    if (!n)
        return 0;
    n->seen_ms = now_ms;
    pace_copy_pool(n, pool);
    n->ticket = pace_places_take(r);
    pace_list_push(&r->line, &n->order);
    pace_list_push(&r->seen, &n->seen);
    return r->line.n;
}

/* A waiting node asked again: seen now, the most recent of the line. */
void pace_touch(pace_room_t *r, pace_node_t *n, const char *pool, uint64_t now_ms)
{
    n->seen_ms = now_ms;
    pace_copy_pool(n, pool);
    pace_list_remove(&r->seen, &n->seen);
    pace_list_push(&r->seen, &n->seen);
}

pace_decision_t pace_decide(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr,
                            const char *pool, uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    pace_node_t *n = pace_find(r, &k);
    pace_decision_t d = {.cause = PACE_ADMITTED};
    if (n && n->admitted_ms) {
        n->seen_ms = now_ms;            /* a retry inside its slot */
        pace_copy_pool(n, pool);
        d.rejoined = true;
        pthread_mutex_unlock(&r->lock);
        return d;
    }
    line_mode_t mode = pace_line_mode(r, cfg, now_ms);
    if (mode == LINE_SHARED || mode == LINE_SYNC) {
        if (mode == LINE_SHARED) {
            d = pace_decide_shared(r, cfg, n, &k, pool, now_ms);
        } else {
            /* Not listed yet since the start: what it or a dead gate
             * admitted is not known, so nobody is. */
            d.cause = PACE_SYNC;
            if (n)
                pace_touch(r, n, pool, now_ms);
            else if (!(d.place = pace_enqueue(r, cfg, &k, pool, now_ms)))
                r->unrecorded_total++;
            r->paced_total[d.cause]++;
        }
        pthread_mutex_unlock(&r->lock);
        return d;
    }
    /* Counting blind on the shared line: a node of the set last seen has
     * its slot there (another gate claimed it) and costs nothing more. */
    if ((mode == LINE_FALLBACK || mode == LINE_SETTLE) && pace_shared_live(r, cfg, &k, now_ms) &&
        pace_admit(r, n, &k, pool, now_ms)) {
        pthread_mutex_unlock(&r->lock);
        return d;
    }
    bool rate = false, ceiling = pace_ceiling(r, cfg, now_ms);
    uint32_t free = ceiling ? 0 : pace_free(r, cfg, now_ms, &rate);
    if (!free)
        r->free_since_ms = 0;
    else if (!r->free_since_ms)
        r->free_since_ms = now_ms ? now_ms : 1;
    uint32_t ahead = pace_ahead(r, cfg, n, free, now_ms, &d.place);
    if (ceiling)
        d.cause = PACE_CEILING;
    else if (!free)
        d.cause = rate ? PACE_RATE : PACE_BUDGET;
    else if (ahead >= free)
        d.cause = PACE_TURN;
    else if (!(n = pace_admit(r, n, &k, pool, now_ms)))
        d.cause = PACE_ROOM;            /* out of memory: it cannot be counted, so it waits */
    else if (r->line_api) {
        n->blind = true;                /* the fallback's: the writer adds it to the set */
        pace_ring(r);
    }
    if (d.cause != PACE_ADMITTED) {
        if (n) {
            pace_touch(r, n, pool, now_ms);
        } else if (!(d.place = pace_enqueue(r, cfg, &k, pool, now_ms))) {
            d.cause = PACE_ROOM;
            r->unrecorded_total++;
        }
        r->paced_total[d.cause]++;
    }
    d.place = d.cause == PACE_ADMITTED ? 0 : d.place;
    pthread_mutex_unlock(&r->lock);
    return d;
}
