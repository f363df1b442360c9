#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "proxy/pace.h"

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

/* A node admitted join_timeout ago has joined or never will: its slot is
 * free. (A Node of its address turning Ready will end it sooner, once the
 * room follows Nodes.) */
static void pace_expire(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    while (r->joining.head && now_ms - r->joining.head->admitted_ms >= cfg->join_timeout_ms) {
        pace_node_t *n = r->joining.head;
        pace_list_remove(&r->joining, n);
        r->timed_out_total++;
        pace_forget(r, n);
    }
}

static bool pace_present(const pace_node_t *n, const config_pace_t *cfg, uint64_t now_ms)
{
    return now_ms - n->seen_ms < cfg->head_hold_ms;
}

/* Slots free now: under max_joining, and under per_minute's admissions of
 * the last minute when it is set. */
static uint32_t pace_free(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint32_t free = r->joining.n < cfg->max_joining ? cfg->max_joining - r->joining.n : 0;
    if (cfg->per_minute) {
        uint32_t ring = sizeof r->recent / sizeof r->recent[0];
        uint32_t limit = cfg->per_minute < ring ? cfg->per_minute : ring;
        uint32_t in_minute = 0;
        for (uint32_t i = 0; i < limit; i++) {
            uint64_t t = r->recent[(r->recent_at + ring - 1 - i) % ring];
            if (t && now_ms - t < 60000)
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

policy_pace_t pace_look(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    const pace_node_t *n = pace_find(r, &k);
    policy_pace_t p = {.joining = n && n->admitted_ms};
    if (!p.joining)
        p.turn = pace_turn(r, cfg, n, now_ms);
    pthread_mutex_unlock(&r->lock);
    return p;
}

bool pace_join(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    pace_node_t *n = pace_find(r, &k);
    bool ok = true;
    if (n && n->admitted_ms) {
        n->seen_ms = now_ms;            /* a retry inside its slot */
    } else if (!pace_turn(r, cfg, n, now_ms)) {
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
        if (now_ms - w->seen_ms >= cfg->join_timeout_ms) {
            pace_list_remove(&r->line, w);
            pace_forget(r, w);
        }
    }
}

void pace_wait(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms)
{
    addrset_key_t k = pace_key(addr);
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    pace_node_t *n = pace_find(r, &k);
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
                            .timed_out_total = r->timed_out_total, .unrecorded_total = r->unrecorded_total};
    for (const pace_node_t *w = r->line.head; w; w = w->next) {
        bool present = pace_present(w, cfg, now_ms);
        if (present && !stats->present)
            stats->longest_wait_ms = now_ms - w->first_ms;
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
