#include <string.h>

#include "core/addr.h"
#include "core/addrset.h"
#include "core/text.h"
#include "core/time.h"
#include "held_json.h"

static json_t *held_json_time(uint64_t ms)
{
    char when[TIME_RFC3339_LEN];
    return ms ? json_string(time_format_rfc3339((time_t)(ms / 1000), when, sizeof when)) : json_null();
}

static json_int_t held_json_secs(uint64_t from_ms, uint64_t to_ms)
{
    return to_ms > from_ms ? (json_int_t)((to_ms - from_ms) / 1000) : 0;
}

static json_t *held_json_entry(const held_entry_t *e, uint64_t now_ms)
{
    char addr[ADDR_IP_TEXT_LEN], pool[HELD_POOL_LEN], ua[HELD_UA_LEN], reason[HELD_REASON_LEN];
    held_addr_text(e, addr, sizeof addr);
    text_copy(pool, sizeof pool, e->pool);
    text_copy(ua, sizeof ua, e->user_agent);
    text_copy(reason, sizeof reason, e->reason);
    /* A held node's hold lasts until now; an admitted one's ended then. */
    uint64_t end_ms = e->admitted_ms ? e->admitted_ms : now_ms;
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:o, s:o, s:b, s:I, s:I}", "address", addr,
                     "pool", pool, "userAgent", ua, "spec", held_spec_name(e->spec), "reason", reason, "attempts",
                     (json_int_t)e->attempts, "status", (json_int_t)e->status, "state", held_state_name(e),
                     "firstSeen", held_json_time(e->first_seen_ms), "lastSeen", held_json_time(e->last_seen_ms),
                     "admittedAt", held_json_time(e->admitted_ms), "admitted", e->admitted_ms != 0, "heldSeconds",
                     held_json_secs(e->first_seen_ms, end_ms), "quietSeconds",
                     held_json_secs(e->last_seen_ms, now_ms));
}

json_t *held_json(const held_view_t *v, uint64_t now_ms)
{
    json_t *clients = json_array();
    for (size_t i = 0; clients && i < v->n; i++) {
        json_t *e = held_json_entry(&v->entries[i], now_ms);
        if (!e || json_array_append_new(clients, e) < 0) {
            json_decref(clients);
            return NULL;
        }
    }
    if (!clients)
        return NULL;
    return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "clients", clients, "held", (json_int_t)v->n_held,
                     "admittedAfterHold", (json_int_t)v->admitted_after_hold, "overflow",
                     (json_int_t)v->overflow, "maxClients", (json_int_t)v->max_clients, "forgetAfterSeconds",
                     (json_int_t)(v->forget_after_ms / 1000));
}

json_t *pace_json(const pace_stats_t *st, const pace_waiter_t *w, size_t n, uint64_t now_ms)
{
    json_t *line = json_array();
    for (size_t i = 0; line && i < n; i++) {
        char addr[ADDR_IP_TEXT_LEN];
        addrset_key_text(&w[i].key, addr, sizeof addr);
        char pool[PACE_POOL_LEN];
        memcpy(pool, w[i].pool, sizeof pool);
        text_sanitize(pool);
        json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:I, s:b}", "address", addr, "pool", pool, "place",
                              (json_int_t)(i + 1), "waitedSeconds", (json_int_t)((now_ms - w[i].first_ms) / 1000),
                              "quietSeconds", (json_int_t)((now_ms - w[i].seen_ms) / 1000), "present",
                              w[i].present);
        if (!e || json_array_append_new(line, e) < 0) {
            json_decref(line);
            return NULL;
        }
    }
    if (!line)
        return NULL;
    json_t *p = json_pack("{s:I, s:I, s:I, s:I, s:o}", "joining", (json_int_t)st->joining, "waiting",
                          (json_int_t)st->waiting, "admittedTotal", (json_int_t)st->admitted_total, "joinTimeouts",
                          (json_int_t)st->timed_out_total, "line", line);
    /* How the budget is counted now (docs/pacing.md): by the API's Nodes
     * and CSRs, or blind, by join_timeout, and why. */
    json_t *more = json_pack("{s:s, s:s?, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I}", "counting",
                             st->api ? "api" : "join_timeout", "why", st->api ? NULL : st->why, "pendingCsrs",
                             (json_int_t)st->pending_csrs, "youngPendingCsrs", (json_int_t)st->young_csrs,
                             "youngNotReadyNodes", (json_int_t)st->young_not_ready, "unseenAdmissions",
                             (json_int_t)st->unseen, "budgetUsed", (json_int_t)st->used, "maxJoining",
                             (json_int_t)st->max_joining, "maxPendingCsrs", (json_int_t)st->max_pending_csrs,
                             "replicas", (json_int_t)st->replicas, "csrCeiling", st->ceiling, "joinedTotal",
                             (json_int_t)st->joined_total);
    /* cluster-machine-approver's limit and what is left under it (its
     * count is pendingCsrs): negative while it approves nothing. */
    json_t *limit = json_pack("{s:I, s:I, s:b}", "approverLimit", (json_int_t)st->approver_limit,
                              "approverHeadroom", (json_int_t)st->approver_limit - (json_int_t)st->pending_csrs,
                              "machinesCounted", st->machines_counted);
    if (!p || !more || !limit || json_object_update(p, more) < 0 || json_object_update(p, limit) < 0) {
        json_decref(p);
        p = NULL;
    }
    json_decref(more);
    json_decref(limit);
    return p;
}
