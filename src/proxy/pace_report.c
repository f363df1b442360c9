/* The room for reports (proxy/pace.h pace_report): counts and lists
 * copied out under its lock. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pace_room.h"

/* ---- reports ----------------------------------------------------------- */

static pace_entry_t pace_entry_of(const pace_room_t *r, const pace_node_t *n, const config_pace_t *cfg,
                                  uint64_t now_ms)
{
    pace_entry_t e = {.key = n->key, .first_ms = n->first_ms, .seen_ms = n->seen_ms, .admitted_ms = n->admitted_ms};
    memcpy(e.pool, n->pool, sizeof e.pool);
    if (n->admitted_ms)
        e.registered = n->is_node && pace_trusted(r);
    else
        e.present = pace_present(n, cfg, now_ms);
    return e;
}

/* When the first present node of the line can be admitted at the
 * soonest (pace_stats_t.head_earliest_ms). */
static uint64_t pace_head_earliest(const pace_room_t *r, const config_pace_t *cfg, const pace_stats_t *st,
                                   uint64_t now_ms)
{
    if (!st->present || st->ceiling)
        return 0;
    if (st->free)
        return now_ms;
    uint64_t at = 0;
    const pace_node_t *oldest = pace_by_order(r->joining.head);
    if (oldest)
        at = oldest->admitted_ms + cfg->join_timeout_ms;
    if (cfg->per_minute) {
        /* The admission that ends the minute's cap: the limit-th latest. */
        uint32_t ring = sizeof r->recent / sizeof r->recent[0], limit = pace_rate_limit(r, cfg);
        uint64_t t = r->recent[(r->recent_at + ring - limit) % ring];
        if (t && pace_age(now_ms, t) < 60000 && t + 60000 > at)
            at = t + 60000;
    }
    return at;
}

int pace_report(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool lists, pace_report_t *out)
{
    *out = (pace_report_t){0};
    pace_stats_t *st = &out->stats;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    pace_expire(r, cfg, now_ms);
    bool rate;
    *st = (pace_stats_t){.joining = r->joining.n, .waiting = r->line.n, .max_line = r->max_line,
                         .admitted_total = r->admitted_total, .timed_out_total = r->timed_out_total,
                         .unrecorded_total = r->unrecorded_total, .evicted_total = r->evicted_total,
                         .forgotten_total = r->forgotten_total, .api = pace_trusted(r), .unseen = r->unseen,
                         .used = pace_used(r, cfg, now_ms), .free = pace_free(r, cfg, now_ms, &rate),
                         .ceiling = pace_ceiling(r, cfg, now_ms), .joined_total = r->joined_total,
                         .join_sum_ms = r->join_sum_ms, .join_timeout_ms = cfg->join_timeout_ms,
                         .max_joining = cfg->max_joining, .max_pending_csrs = cfg->max_pending_csrs,
                         .replicas = cfg->replicas};
    memcpy(st->join_buckets, r->join_buckets, sizeof st->join_buckets);
    memcpy(st->paced_total, r->paced_total, sizeof st->paced_total);
    line_mode_t mode = pace_line_mode(r, cfg, now_ms);
    st->line_configured = r->line_api;
    st->line_shared = mode == LINE_SHARED || mode == LINE_SETTLE;
    st->claims = r->n_claims;
    if (r->shared) {
        st->shared_joining = (uint32_t)r->shared->n_joining;
        st->shared_waiting = (uint32_t)r->shared->n_line;
    }
    if (mode == LINE_SHARED) {
        st->used = pace_shared_used(r, cfg, now_ms);
        st->free = pace_shared_free_slots(r, cfg, now_ms, &rate);
    } else if (mode == LINE_SETTLE) {
        snprintf(st->line_why, sizeof st->line_why,
                 "back on the shared line after a fallback: this gate keeps to its own share of the slots for "
                 "%llu ms more, while the other gates write what they admitted blind",
                 (unsigned long long)pace_settle_left(r, now_ms));
    } else if (mode == LINE_SYNC) {
        snprintf(st->line_why, sizeof st->line_why,
                 "the shared line's Leases have not been listed since the gate started: every node waits (sync)%s%.150s",
                 r->shared && r->shared->failing ? "; " : "", r->shared && r->shared->failing ? r->shared->why : "");
        st->free = 0;
    } else if (mode == LINE_FALLBACK) {
        snprintf(st->line_why, sizeof st->line_why, "%s",
                 r->shared && r->shared->failing ? r->shared->why
                 : r->write_failing               ? r->write_why
                                                  : "the Leases are not listed");
    }
    /* An untrusted view's counts are not shown: they are not counted. */
    if (st->api) {
        st->pending_csrs = pace_pending_csrs(r, now_ms);
        st->approver_limit = (uint32_t)pace_view_approver_limit(r->view);
        st->machines_counted = r->view->n_machines >= 0;
        st->young_csrs = pace_csrs_within(r, cfg->join_timeout_ms, now_ms);
        st->young_not_ready = pace_young_not_ready(r, cfg, now_ms);
    } else if (r->view) {
        memcpy(st->why, r->view->why, sizeof st->why);
    } else {
        snprintf(st->why, sizeof st->why,
                 "no Nodes and CSRs watch: pacing follows the API only with enforcement.source: kubernetes");
    }
    if (lists) {
        out->line = malloc((r->line.n + 1) * sizeof *out->line);
        out->joining = malloc((r->joining.n + 1) * sizeof *out->joining);
        if (!out->line || !out->joining)
            rc = -1;
    }
    for (const pace_node_t *w = pace_by_order(r->line.head); w; w = pace_by_order(w->order.next)) {
        bool present = pace_present(w, cfg, now_ms);
        if (present && !st->present)
            st->longest_wait_ms = pace_age(now_ms, w->first_ms);
        st->present += present;
        if (out->line && !rc)
            out->line[out->n_line++] = pace_entry_of(r, w, cfg, now_ms);
    }
    for (const pace_node_t *j = pace_by_order(r->joining.head); out->joining && !rc && j;
         j = pace_by_order(j->order.next))
        out->joining[out->n_joining++] = pace_entry_of(r, j, cfg, now_ms);
    st->head_earliest_ms = pace_head_earliest(r, cfg, st, now_ms);
    pthread_mutex_unlock(&r->lock);
    if (rc < 0)
        pace_report_release(out);
    return rc;
}

void pace_report_release(pace_report_t *rep)
{
    free(rep->line);
    free(rep->joining);
    rep->line = rep->joining = NULL;
    rep->n_line = rep->n_joining = 0;
}
