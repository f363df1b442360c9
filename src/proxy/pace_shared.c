/* The room's shared mode (proxy/pace.h, docs/internals.md "The shared
 * line"): the set and the line the API keeps, the claims and waiters
 * the writer takes, the decision on the shared line. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "pace_room.h"

/* ---- the shared line --------------------------------------------------- */

static int pace_key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(addrset_key_t));
}

static const pace_shared_joiner_t *pace_shared_find(const pace_shared_t *s, const addrset_key_t *k)
{
    if (!s || !s->n_joining)
        return NULL;
    return bsearch(k, s->joining, s->n_joining, sizeof *s->joining, pace_key_cmp);
}

/* An entry of the set that left: admitted join_timeout ago, or a Node
 * born for it is Ready. The view need not be trusted for that: a view
 * that lost its watch still holds what it saw, and a node seen joined
 * has joined (a view that misses Nodes misses departures, the safe
 * side). Through an outage the entries whose Nodes were Ready before it
 * stay gone: counted live, they took the slots the fallback has. A Node
 * frees one entry at most: the one at the first address it lists (the
 * rooms' own rule, one Node for the first admitted, needs the whole set
 * at once; here each entry is judged alone). A Node whose kubelet listed
 * 40 joining nodes' addresses would otherwise free 40 when Ready; a node
 * that fetched from another of its Node's addresses keeps its entry
 * until join_timeout, the safe side. */
static bool pace_shared_departed(const pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k,
                                 uint64_t admitted_ms, uint64_t now_ms)
{
    if (pace_age(now_ms, admitted_ms) >= cfg->join_timeout_ms)
        return true;
    if (!r->view)
        return false;
    const pace_view_addr_t *a = pace_view_newest(r->view, k);
    return a && a->ready && a->primary && a->created + PACE_NODE_SKEW_MS >= (int64_t)admitted_ms;
}

bool pace_shared_live(const pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, uint64_t now_ms)
{
    const pace_shared_joiner_t *j = pace_shared_find(r->shared, k);
    return j && !pace_shared_departed(r, cfg, k, j->admitted_ms, now_ms);
}

static pace_claim_t *pace_claim_find(pace_claim_t *list, uint32_t n, const addrset_key_t *k)
{
    for (uint32_t i = 0; i < n; i++)
        if (!memcmp(&list[i].key, k, sizeof *k))
            return &list[i];
    return NULL;
}

static bool pace_claim_push(pace_claim_t **list, uint32_t *n, uint32_t *cap, const addrset_key_t *k, int64_t wall,
                            uint64_t now_ms)
{
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 16;
        pace_claim_t *grown = realloc(*list, c * sizeof *grown);
        if (!grown)
            return false;
        *list = grown;
        *cap = c;
    }
    (*list)[(*n)++] = (pace_claim_t){.key = *k, .wall = wall, .at_ms = now_ms, .state = PACE_CLAIM_PENDING};
    return true;
}

/* Drops the claims (or waiters) keep says no to, in order. */
static void pace_claim_filter(pace_room_t *r, pace_claim_t *list, uint32_t *n, const config_pace_t *cfg,
                              bool (*keep)(pace_room_t *, const config_pace_t *, const pace_claim_t *, uint64_t),
                              uint64_t now_ms)
{
    uint32_t o = 0;
    for (uint32_t i = 0; i < *n; i++)
        if (keep(r, cfg, &list[i], now_ms))
            list[o++] = list[i];
    *n = o;
}

/* A claim counts until the set shows it (or it went stale). */
static bool pace_claim_keep(pace_room_t *r, const config_pace_t *cfg, const pace_claim_t *c, uint64_t now_ms)
{
    (void)cfg;
    if (pace_shared_find(r->shared, &c->key))
        return false;
    return pace_age(now_ms, c->at_ms) < PACE_CLAIM_STALE_MS;
}

static bool pace_shared_in_line(const pace_shared_t *s, const addrset_key_t *k)
{
    for (size_t i = 0; s && i < s->n_line; i++)
        if (!memcmp(&s->line[i].key, k, sizeof *k))
            return true;
    return false;
}

/* A waiter queued or written until the line (or the set) shows it. */
static bool pace_waiter_keep(pace_room_t *r, const config_pace_t *cfg, const pace_claim_t *c, uint64_t now_ms)
{
    (void)cfg;
    if (c->state == PACE_CLAIM_PENDING)
        return true;
    if (pace_shared_find(r->shared, &c->key) || pace_shared_in_line(r->shared, &c->key))
        return false;
    return pace_age(now_ms, c->at_ms) < PACE_CLAIM_STALE_MS;
}

void pace_room_use_shared(pace_room_t *r, wakeup_t *bell)
{
    pthread_mutex_lock(&r->lock);
    r->line_api = true;
    r->shared_since_ms = clock_coarse_ms();
    r->bell = bell;
    pthread_mutex_unlock(&r->lock);
}

typedef struct pace_turn_seen {
    addrset_key_t key;
    uint64_t turn_ms;
} pace_turn_seen_t;

void pace_room_set_shared(pace_room_t *r, pace_shared_t *s, uint64_t now_ms)
{
    pthread_mutex_lock(&r->lock);
    pace_shared_t *old = r->shared;
    /* The turns this gate saw come stay with their nodes. */
    pace_turn_seen_t *seen = NULL;
    size_t n_seen = 0;
    if (old && s && old->n_line && (seen = malloc(old->n_line * sizeof *seen))) {
        for (size_t i = 0; i < old->n_line; i++)
            if (old->line[i].turn_ms)
                seen[n_seen++] = (pace_turn_seen_t){old->line[i].key, old->line[i].turn_ms};
        qsort(seen, n_seen, sizeof *seen, pace_key_cmp);
        for (size_t i = 0; i < s->n_line; i++) {
            const pace_turn_seen_t *t = bsearch(&s->line[i].key, seen, n_seen, sizeof *seen, pace_key_cmp);
            if (t && !s->line[i].turn_ms)
                s->line[i].turn_ms = t->turn_ms;
        }
    }
    free(seen);
    if (old && old->failing && s && !s->failing)
        pace_settle_from(r, now_ms);    /* from the return itself, whatever a write did before */
    r->shared = s;
    pace_shared_free(old);
    /* Nodes this gate kept waiting that another gate admitted: they have
     * left its line. */
    for (pace_node_t *n = pace_by_order(r->line.head), *next; s && n; n = next) {
        next = pace_by_order(n->order.next);
        if (pace_shared_find(s, &n->key)) {
            pace_leave_line(r, n);
            pace_forget(r, n);
        }
    }
    pace_claim_filter(r, r->claims, &r->n_claims, NULL, pace_claim_keep, now_ms);
    pace_claim_filter(r, r->waiters, &r->n_waiters, NULL, pace_waiter_keep, now_ms);
    pthread_mutex_unlock(&r->lock);
}

void pace_room_write_failing(pace_room_t *r, const char *why)
{
    pthread_mutex_lock(&r->lock);
    uint64_t now_ms = clock_coarse_ms();
    if (!why && r->write_failing)
        pace_settle_from(r, now_ms);
    r->write_failing = why != NULL;
    r->write_fail_ms = now_ms;
    if (why)
        snprintf(r->write_why, sizeof r->write_why, "%s", why);
    pthread_mutex_unlock(&r->lock);
}

/* The set's live entries (as last seen). */
static uint64_t pace_shared_live_entries(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint64_t live = 0;
    const pace_shared_t *s = r->shared;
    for (size_t i = 0; s && i < s->n_joining; i++)
        live += !pace_shared_departed(r, cfg, &s->joining[i].key, s->joining[i].admitted_ms, now_ms);
    return live;
}

/* j, joining, is a blind admission of this gate that has not left (by
 * the rule the set's entries follow: Ready seen, or join_timeout). */
static bool pace_blind_joining(const pace_room_t *r, const config_pace_t *cfg, const pace_node_t *j, uint64_t now_ms)
{
    return j->blind && !pace_shared_departed(r, cfg, &j->key, j->admitted_ms, now_ms);
}

/* This gate's blind admissions that have not left, and of them those the
 * set does not show (*unwritten). */
static uint64_t pace_shared_blind(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms,
                                  uint64_t *unwritten)
{
    uint64_t n = 0;
    *unwritten = 0;
    for (const pace_node_t *j = pace_by_order(r->joining.head); j; j = pace_by_order(j->order.next)) {
        if (!pace_blind_joining(r, cfg, j, now_ms))
            continue;
        n++;
        *unwritten += !pace_shared_find(r->shared, &j->key);
    }
    return n;
}

/* This gate's claims the set does not show (in flight, or written and
 * not delivered by the watch yet). */
static uint64_t pace_shared_claims_unseen(const pace_room_t *r)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < r->n_claims; i++)
        n += !pace_shared_find(r->shared, &r->claims[i].key);
    return n;
}

/* The set's live entries, and this gate's claims and blind admissions
 * it does not show yet. */
uint64_t pace_shared_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint64_t unwritten;
    pace_shared_blind(r, cfg, now_ms, &unwritten);
    return pace_shared_live_entries(r, cfg, now_ms) + unwritten + pace_shared_claims_unseen(r);
}

/* Blind (pace_used, in fallback and settle): the set as this gate saw it
 * last, less its own blind admissions, and replicas x those: each gate
 * keeps to its share of what the set left. With every gate's last view
 * the same set S, they admit floor((M - |S|) / R) each at most, so
 * |S| + R x that <= M; back on the line, a gate goes on counting so
 * until the others have written theirs (PACE_SETTLE_MS). A view older
 * than another gate's last claim misses that claim: the one way past M
 * left, as narrow as the watch's lag when the API went. */
uint64_t pace_shared_blind_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    uint64_t replicas = cfg->replicas ? cfg->replicas : 1, unwritten;
    uint64_t blind = pace_shared_blind(r, cfg, now_ms, &unwritten), written = blind - unwritten;
    uint64_t live = pace_shared_live_entries(r, cfg, now_ms);
    /* its claims the set does not show count too: written, they are in
     * the set the others see */
    return (live > written ? live - written : 0) + replicas * blind + pace_shared_claims_unseen(r);
}

uint32_t pace_shared_free_slots(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool *rate)
{
    uint64_t used = pace_shared_used(r, cfg, now_ms);
    uint32_t free = used < cfg->max_joining ? (uint32_t)(cfg->max_joining - used) : 0;
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

void pace_ring(pace_room_t *r)
{
    if (r->bell)
        wakeup_ring(r->bell);
}

/* The present nodes ahead of k in the shared line, up to stop; *place
 * its place from 1 (past the end when the line does not have it). A
 * node ahead is present when this gate saw it within head_hold, or when
 * its turn came (at this gate) less than head_hold ago, or comes now. */
static uint32_t pace_shared_ahead(pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, uint32_t stop,
                                  uint64_t now_ms, uint32_t *place, bool *in_line)
{
    pace_shared_t *s = r->shared;
    uint32_t ahead = 0;
    size_t i = 0;
    int64_t to_room = (int64_t)now_ms - (int64_t)clock_wall_coarse_ms();
    *in_line = false;
    for (; i < s->n_line; i++) {
        pace_shared_waiter_t *w = &s->line[i];
        if (!memcmp(&w->key, k, sizeof *k)) {
            *in_line = true;
            break;
        }
        if (ahead >= stop)
            continue;           /* its place only */
        if (pace_shared_find(s, &w->key) || pace_claim_find(r->claims, r->n_claims, &w->key))
            continue;           /* admitted, its wait Lease not deleted yet */
        if (pace_trusted(r)) {
            /* joined: a Ready Node born after it first asked */
            const pace_view_addr_t *a = pace_view_newest(r->view, &w->key);
            if (a && a->ready && a->primary && a->created + PACE_NODE_SKEW_MS >= w->acquire_wall + to_room)
                continue;
        }
        const pace_node_t *n = pace_find(r, &w->key);
        bool present = n && !n->admitted_ms && pace_present(n, cfg, now_ms);
        if (!present) {
            if (!w->turn_ms)
                w->turn_ms = now_ms ? now_ms : 1;
            present = pace_age(now_ms, w->turn_ms) < cfg->head_hold_ms;
        }
        ahead += present;
    }
    *place = (uint32_t)i + 1;
    return ahead;
}

/* pace_decide with the shared line usable (the lock held, n the node's
 * local record if any, not joining here). */
pace_decision_t pace_decide_shared(pace_room_t *r, const config_pace_t *cfg, pace_node_t *n, const addrset_key_t *k,
                                   const char *pool, uint64_t now_ms)
{
    pace_decision_t d = {.cause = PACE_ADMITTED};
    pace_claim_filter(r, r->claims, &r->n_claims, cfg, pace_claim_keep, now_ms);
    if (pace_shared_live(r, cfg, k, now_ms)) {
        if (pace_admit(r, n, k, pool, now_ms))
            return d;
        d.cause = PACE_ROOM;
    } else if (pace_claim_find(r->claims, r->n_claims, k)) {
        d.cause = PACE_CLAIM;
    } else if (pace_ceiling(r, cfg, now_ms)) {
        d.cause = PACE_CEILING;
    } else {
        bool rate = false, in_line = false;
        uint32_t free = pace_shared_free_slots(r, cfg, now_ms, &rate);
        uint32_t ahead = pace_shared_ahead(r, cfg, k, free, now_ms, &d.place, &in_line);
        if (!free) {
            d.cause = rate ? PACE_RATE : PACE_BUDGET;
        } else if (ahead >= free) {
            d.cause = PACE_TURN;
        } else if (pace_claim_push(&r->claims, &r->n_claims, &r->cap_claims, k, (int64_t)clock_wall_coarse_ms(),
                                   now_ms)) {
            d.cause = PACE_CLAIM;
            uint32_t ring = sizeof r->recent / sizeof r->recent[0];
            r->recent[r->recent_at] = now_ms;
            r->recent_at = (r->recent_at + 1) % ring;
            pace_ring(r);
        } else {
            d.cause = PACE_ROOM;
        }
        /* A node the shared line does not have yet enters it. */
        if (!in_line && d.cause != PACE_CLAIM && !pace_claim_find(r->waiters, r->n_waiters, k) &&
            pace_claim_push(&r->waiters, &r->n_waiters, &r->cap_waiters, k, (int64_t)clock_wall_coarse_ms(), now_ms))
            pace_ring(r);
    }
    /* Recorded in the gate's own line: seen (present), and shown. */
    if (n) {
        pace_touch(r, n, pool, now_ms);
    } else if (!pace_enqueue(r, cfg, k, pool, now_ms)) {
        r->unrecorded_total++;
    }
    r->paced_total[d.cause]++;
    return d;
}

/* A claim that will not be written (the set as read had no slot left for
 * it, or the update failed): its node takes its place in the shared line
 * at the time it was claimed, unless it has one. Without this it entered
 * the line at its next ask, behind every node that asked meanwhile (the
 * 500-node bench, three gates claiming 199 slots of 90 in the first half
 * second: 172 nodes of that burst were admitted a median 312 s after
 * asking, against 97 s for the others). */
static void pace_claim_lost(pace_room_t *r, const pace_claim_t *c, uint64_t now_ms)
{
    if (pace_shared_in_line(r->shared, &c->key) || pace_claim_find(r->waiters, r->n_waiters, &c->key))
        return;
    if (pace_claim_push(&r->waiters, &r->n_waiters, &r->cap_waiters, &c->key, c->wall, now_ms))
        pace_ring(r);
}

size_t pace_shared_plan(pace_room_t *r, const config_pace_t *cfg, const char *gate, const pace_line_entry_t *in,
                        size_t n_in, int64_t now_wall, uint64_t now_ms, pace_line_entry_t *out, size_t out_cap,
                        size_t *added)
{
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    *added = 0;
    int64_t to_room = (int64_t)now_ms - now_wall;
    for (size_t i = 0; i < n_in && n < out_cap; i++) {
        uint64_t at = (uint64_t)(in[i].admitted_wall + to_room);
        if (in[i].admitted_wall + to_room < 0)
            at = 0;
        if (!pace_shared_departed(r, cfg, &in[i].key, at, now_ms))
            out[n++] = in[i];
    }
    /* The blind admissions go in first, the set full or not: the other
     * gates must count them (else, back on the line, they see the slots
     * free and fill them again). */
    size_t blind = 0;
    for (const pace_node_t *j = pace_by_order(r->joining.head); j && blind < cfg->max_joining && n < out_cap;
         j = pace_by_order(j->order.next)) {
        if (!pace_blind_joining(r, cfg, j, now_ms))
            continue;           /* left: another gate may have dropped it, as this one would */
        bool have = false;
        for (size_t i = 0; i < n && !have; i++)
            have = !memcmp(&out[i].key, &j->key, sizeof j->key);
        if (have)
            continue;
        out[n] = (pace_line_entry_t){.key = j->key, .admitted_wall = now_wall - (int64_t)pace_age(now_ms, j->admitted_ms)};
        snprintf(out[n].gate, sizeof out[n].gate, "%s", gate);
        n++;
        blind++;
        (*added)++;
    }
    uint32_t o = 0;
    for (uint32_t i = 0; i < r->n_claims; i++) {
        pace_claim_t *c = &r->claims[i];
        if (c->state != PACE_CLAIM_WRITTEN) {
            bool have = false;
            for (size_t j = 0; j < n && !have; j++)
                have = !memcmp(&out[j].key, &c->key, sizeof c->key);
            if (have) {
                c->state = PACE_CLAIM_WRITTEN;     /* another gate claimed it first */
            } else if (n < cfg->max_joining && n < out_cap) {
                out[n] = (pace_line_entry_t){.key = c->key, .admitted_wall = now_wall};
                snprintf(out[n].gate, sizeof out[n].gate, "%s", gate);
                n++;
                (*added)++;
                c->state = PACE_CLAIM_WRITING;
            } else {
                pace_claim_lost(r, c, now_ms);      /* no slot on the set as it is: dropped */
                continue;
            }
        }
        r->claims[o++] = *c;
    }
    r->n_claims = o;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void pace_shared_written(pace_room_t *r, bool ok, uint64_t now_ms)
{
    pthread_mutex_lock(&r->lock);
    uint32_t o = 0;
    for (uint32_t i = 0; i < r->n_claims; i++) {
        pace_claim_t *c = &r->claims[i];
        if (c->state == PACE_CLAIM_WRITING) {
            if (!ok) {
                pace_claim_lost(r, c, now_ms);
                continue;
            }
            c->state = PACE_CLAIM_WRITTEN;
            c->at_ms = now_ms;
        }
        r->claims[o++] = *c;
    }
    r->n_claims = o;
    if (ok && r->write_failing) {
        pace_settle_from(r, now_ms);
        r->write_failing = false;
    }
    pthread_mutex_unlock(&r->lock);
}

uint32_t pace_shared_take_waiters(pace_room_t *r, pace_claim_t **out)
{
    pthread_mutex_lock(&r->lock);
    uint32_t n = 0;
    *out = NULL;
    for (uint32_t i = 0; i < r->n_waiters; i++)
        n += r->waiters[i].state == PACE_CLAIM_PENDING;
    if (n && (*out = malloc(n * sizeof **out))) {
        n = 0;
        for (uint32_t i = 0; i < r->n_waiters; i++)
            if (r->waiters[i].state == PACE_CLAIM_PENDING) {
                (*out)[n++] = r->waiters[i];
                r->waiters[i].state = PACE_CLAIM_WRITTEN;
                r->waiters[i].at_ms = clock_coarse_ms();
            }
    } else {
        n = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return n;
}

bool pace_shared_pending(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms)
{
    pthread_mutex_lock(&r->lock);
    bool any = false;
    for (uint32_t i = 0; i < r->n_claims && !any; i++)
        any = r->claims[i].state == PACE_CLAIM_PENDING;
    if (!any) {
        uint64_t unwritten = 0;
        line_mode_t mode = pace_line_mode(r, cfg, now_ms);
        if (mode == LINE_SHARED || mode == LINE_SETTLE)
            pace_shared_blind(r, cfg, now_ms, &unwritten);
        any = unwritten > 0;
    }
    pthread_mutex_unlock(&r->lock);
    return any;
}
