#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "proxy/pace.h"

const unsigned PACE_JOIN_BUCKETS_S[PACE_JOIN_BUCKETS] = {30, 60, 120, 300, 600, 900, 1200, 1800, 3600};

/* ---- the table and the lists ------------------------------------------ */

int pace_room_init(pace_room_t *r, uint32_t max_nodes)
{
    memset(r, 0, sizeof *r);
    uint32_t n = 64;
    while (n < max_nodes)
        n *= 2;
    r->buckets = calloc(n, sizeof *r->buckets);
    if (!r->buckets)
        return -1;
    r->mask = n - 1;
    r->max_nodes = max_nodes;
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
    pace_view_free(r->view);
    r->view = NULL;
    pthread_mutex_destroy(&r->lock);
}

static uint32_t pace_slot(const pace_room_t *r, const addrset_key_t *k)
{
    uint64_t lo, hi;
    memcpy(&lo, k->b, 8);
    memcpy(&hi, k->b + 8, 8);
    return (uint32_t)hash_mix64(lo ^ hash_mix64(hi)) & r->mask;
}

static pace_node_t *pace_find(const pace_room_t *r, const addrset_key_t *k)
{
    for (pace_node_t *n = r->buckets[pace_slot(r, k)]; n; n = n->chain)
        if (!memcmp(&n->key, k, sizeof *k))
            return n;
    return NULL;
}

static void pace_list_push(pace_list_t *l, pace_node_t *n)
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

static void pace_list_remove(pace_list_t *l, pace_node_t *n)
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

static void pace_forget(pace_room_t *r, pace_node_t *n)
{
    pace_node_t **at = &r->buckets[pace_slot(r, &n->key)];
    while (*at != n)
        at = &(*at)->chain;
    *at = n->chain;
    r->n_nodes--;
    free(n);
}

/* A new node, first seen now (not in a list yet); NULL out of memory. */
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
    r->n_nodes++;
    return n;
}

static void pace_copy_pool(pace_node_t *n, const char *pool)
{
    size_t len = strnlen(pool, PACE_POOL_LEN - 1);
    memcpy(n->pool, pool, len);
    n->pool[len] = '\0';
}

/* ---- time passing ------------------------------------------------------ */

/* How long ago t was at now_ms; 0 when t is later. Each caller reads its
 * clock before it takes the lock, so a time another worker wrote since
 * may be a tick (4 ms) ahead of its now: unsigned, that difference
 * wrapped to 2^64 and a node admitted an instant ago had timed out. */
static uint64_t pace_age(uint64_t now_ms, uint64_t t)
{
    return now_ms > t ? now_ms - t : 0;
}

/* n is joining no more: off the joining list and forgotten. */
static void pace_unjoin(pace_room_t *r, pace_node_t *n)
{
    pace_list_remove(&r->joining, n);
    if (!n->is_node)
        r->unseen--;
    pace_forget(r, n);
}

/* A node admitted join_timeout ago has joined or never will: its slot is
 * free. (A Node of its address turning Ready ends it sooner, in
 * pace_room_set_view.) */
static void pace_expire(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    while (r->joining.head && pace_age(now_ms, r->joining.head->admitted_ms) >= cfg->join_timeout_ms) {
        r->timed_out_total++;
        pace_unjoin(r, r->joining.head);
    }
}

static bool pace_trusted(const pace_room_t *r)
{
    return r->view && r->view->trusted;
}

/* The class of a node's address in the view: ACTIVE a Ready Node's,
 * PENDING another Node's, UNKNOWN none (or no view). */
static addrset_class_t pace_node_class(const pace_room_t *r, const addrset_key_t *k)
{
    return r->view && r->view->nodes ? addrset_lookup_key(r->view->nodes, k) : ADDRSET_UNKNOWN;
}

/* now - window on the view's clock: the times after it are within the
 * window (the clock may be younger than the window: nothing is before). */
static int64_t pace_since(uint64_t now_ms, uint64_t window_ms)
{
    return (int64_t)now_ms - (int64_t)window_ms;
}

static uint32_t pace_young_not_ready(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    const pace_view_t *v = r->view;
    return (uint32_t)pace_view_after(v->not_ready_created, v->n_not_ready, pace_since(now_ms, cfg->join_timeout_ms));
}

static uint32_t pace_csrs_within(const pace_room_t *r, uint64_t window_ms, uint64_t now_ms)
{
    const pace_view_t *v = r->view;
    return (uint32_t)pace_view_after(v->csr_created, v->n_csrs, pace_since(now_ms, window_ms));
}

/* The CSR ceiling holds: the node CSRs cluster-machine-approver counts
 * (pace_view_approver_count) are near the count past which it approves
 * nothing, so no node is added to them. Only a trusted view can say so. */
static bool pace_ceiling(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    return pace_trusted(r) && pace_view_approver_count(r->view, (int64_t)now_ms) >= cfg->max_pending_csrs;
}

/* The budget used, as the counting mode counts it: V + replicas x O with
 * a trusted view, replicas x the joining nodes without. */
static uint64_t pace_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint64_t replicas = cfg->replicas ? cfg->replicas : 1;
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
    for (pace_node_t *n = r->joining.head, *next; n; n = next) {
        next = n->next;
        addrset_class_t cls = pace_node_class(r, &n->key);
        if (trusted && cls == ADDRSET_ACTIVE) {
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
        n->is_node = cls != ADDRSET_UNKNOWN;
        r->unseen += !n->is_node;
    }
    pthread_mutex_unlock(&r->lock);
}

static bool pace_present(const pace_node_t *n, const config_pace_t *cfg, uint64_t now_ms)
{
    return pace_age(now_ms, n->seen_ms) < cfg->head_hold_ms;
}

/* Slots free now: under max_joining, and under per_minute's admissions of
 * the last minute when it is set. */
static uint32_t pace_free(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    /* Each admission adds replicas to the budget used (its own, unseen
     * by the API yet, or blind): the slots are what is left, in steps. */
    uint64_t used = pace_used(r, cfg, now_ms);
    uint64_t replicas = cfg->replicas ? cfg->replicas : 1;
    uint32_t free = used < cfg->max_joining ? (uint32_t)((cfg->max_joining - used) / replicas) : 0;
    if (cfg->per_minute) {
        uint32_t ring = sizeof r->recent / sizeof r->recent[0];
        uint32_t limit = cfg->per_minute < ring ? cfg->per_minute : ring;
        uint32_t in_minute = 0;
        for (uint32_t i = 0; i < limit; i++) {
            uint64_t t = r->recent[(r->recent_at + ring - 1 - i) % ring];
            if (t && pace_age(now_ms, t) < 60000)
                in_minute++;
        }
        uint32_t left = limit > in_minute ? limit - in_minute : 0;
        if (left < free)
            free = left;
    }
    return free;
}

/* Whether n (waiting, or NULL: a node not in line yet, behind them all)
 * has a free slot by its place: fewer present nodes ahead of it than
 * slots free. The walk stops at the answer. */
static bool pace_turn(const pace_room_t *r, const config_pace_t *cfg, const pace_node_t *n, uint64_t now_ms)
{
    uint32_t free = pace_free(r, cfg, now_ms);
    uint32_t ahead = 0;
    for (const pace_node_t *w = r->line.head; w && w != n; w = w->next) {
        if (ahead >= free)
            return false;
        if (pace_present(w, cfg, now_ms))
            ahead++;
    }
    return ahead < free;
}

/* ---- what a request asks of the room ----------------------------------- */

/* A node's key: its address (any other family is one key, all zeros). */
static addrset_key_t pace_key(const struct sockaddr_storage *addr)
{
    addrset_key_t k;
    if (addrset_key_from_sockaddr(addr, &k) < 0)
        memset(&k, 0, sizeof k);
    return k;
}

/* What every call about one node begins with: the room locked, the slots
 * of join_timeout freed, and the node of key k (NULL: not known). */
static pace_node_t *pace_enter(pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, uint64_t now_ms)
{
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    return pace_find(r, k);
}

policy_pace_t pace_look(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    const pace_node_t *n = pace_enter(r, cfg, &k, now_ms);
    policy_pace_t p = {.joining = n && n->admitted_ms};
    if (!p.joining) {
        p.ceiling = pace_ceiling(r, cfg, now_ms);
        p.turn = !p.ceiling && pace_turn(r, cfg, n, now_ms);
    }
    pthread_mutex_unlock(&r->lock);
    return p;
}

bool pace_join(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pace_node_t *n = pace_enter(r, cfg, &k, now_ms);
    bool ok = true;
    if (n && n->admitted_ms) {
        n->seen_ms = now_ms;            /* a retry inside its slot */
    } else if (pace_ceiling(r, cfg, now_ms) || !pace_turn(r, cfg, n, now_ms)) {
        ok = false;
    } else if (!n && r->n_nodes >= r->max_nodes) {
        ok = false;                     /* no room to count it: it would join unseen */
        r->unrecorded_total++;
    } else {
        if (n)
            pace_list_remove(&r->line, n);
        else
            n = pace_add(r, &k, now_ms);
        if (!n) {
            ok = false;
        } else {
            n->seen_ms = n->admitted_ms = now_ms;
            pace_copy_pool(n, pool);
            n->is_node = pace_node_class(r, &k) != ADDRSET_UNKNOWN;
            r->unseen += !n->is_node;
            pace_list_push(&r->joining, n);
            uint32_t ring = sizeof r->recent / sizeof r->recent[0];
            r->recent[r->recent_at] = now_ms;
            r->recent_at = (r->recent_at + 1) % ring;
            r->admitted_total++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

/* A full room lets go of the nodes of the line that have not asked for
 * join_timeout: gone for good, or back as newcomers. */
static void pace_sweep_line(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    for (pace_node_t *w = r->line.head, *next; w; w = next) {
        next = w->next;
        if (pace_age(now_ms, w->seen_ms) >= cfg->join_timeout_ms) {
            pace_list_remove(&r->line, w);
            pace_forget(r, w);
        }
    }
}

void pace_wait(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pace_node_t *n = pace_enter(r, cfg, &k, now_ms);
    if (!n && r->n_nodes >= r->max_nodes)
        pace_sweep_line(r, cfg, now_ms);
    if (!n && r->n_nodes < r->max_nodes && (n = pace_add(r, &k, now_ms))) {
        pace_list_push(&r->line, n);
    } else if (!n) {
        r->unrecorded_total++;
    }
    if (n) {
        n->seen_ms = now_ms;
        pace_copy_pool(n, pool);
    }
    pthread_mutex_unlock(&r->lock);
}

size_t pace_report(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, pace_stats_t *stats,
                   pace_waiter_t *out, size_t max)
{
    size_t k = 0;
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    *stats = (pace_stats_t){.joining = r->joining.n, .waiting = r->line.n, .admitted_total = r->admitted_total,
                            .timed_out_total = r->timed_out_total, .unrecorded_total = r->unrecorded_total,
                            .api = pace_trusted(r), .unseen = r->unseen, .used = pace_used(r, cfg, now_ms),
                            .ceiling = pace_ceiling(r, cfg, now_ms), .joined_total = r->joined_total,
                            .join_sum_ms = r->join_sum_ms, .max_joining = cfg->max_joining,
                            .max_pending_csrs = cfg->max_pending_csrs, .replicas = cfg->replicas};
    memcpy(stats->join_buckets, r->join_buckets, sizeof stats->join_buckets);
    /* An untrusted view's counts are not shown: they are not counted. */
    if (stats->api) {
        stats->pending_csrs = (uint32_t)pace_view_approver_count(r->view, (int64_t)now_ms);
        stats->approver_limit = (uint32_t)pace_view_approver_limit(r->view);
        stats->machines_counted = r->view->n_machines >= 0;
        stats->young_csrs = pace_csrs_within(r, cfg->join_timeout_ms, now_ms);
        stats->young_not_ready = pace_young_not_ready(r, cfg, now_ms);
    } else if (r->view) {
        memcpy(stats->why, r->view->why, sizeof stats->why);
    } else {
        snprintf(stats->why, sizeof stats->why,
                 "no Nodes and CSRs watch: pacing follows the API only with enforcement.source: kubernetes");
    }
    for (const pace_node_t *w = r->line.head; w; w = w->next) {
        bool present = pace_present(w, cfg, now_ms);
        if (present && !stats->present)
            stats->longest_wait_ms = pace_age(now_ms, w->first_ms);
        stats->present += present;
        if (k == max)
            continue;
        out[k] = (pace_waiter_t){.key = w->key, .first_ms = w->first_ms, .seen_ms = w->seen_ms, .present = present};
        memcpy(out[k].pool, w->pool, sizeof w->pool);
        k++;
    }
    pthread_mutex_unlock(&r->lock);
    return k;
}
