#include <stdio.h>
#include <stdlib.h>
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

/* The room's rows are written by hand into one buffer sized for them all
 * up front (PACE_ROW_MAX a row): through stdio and jansson a row cost
 * about 9,800 instructions, 40 % of it formatting each time stamp and a
 * third inet_ntop and stdio's per-call cost (bench/held_pace: 3.4 ms of
 * CPU for 4,096 waiting nodes against the 2 ms a read may cost; now
 * 0.24 ms, and 0.6 ms for the whole GET /held of a live gate). The
 * longest row, a joining one, is about 400 bytes: an IPv6 address (45),
 * a pool of 63 characters all escaped (128), two quoted times (2 x 42),
 * three numbers and the names. */
#define PACE_ROW_MAX 512

typedef struct pace_out {
    char *p;
    size_t len;
    /* The last second formatted as RFC 3339, quoted: the line is in the
     * order nodes were first paced, so neighbours share their second. */
    int64_t cached_sec;
    char cached[TIME_RFC3339_LEN + 2];
    size_t cached_len;
} pace_out_t;

static void pace_put(pace_out_t *o, const char *s, size_t n)
{
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

#define PACE_PUT_LIT(o, lit) pace_put((o), (lit), sizeof(lit) - 1)

static void pace_put_u64(pace_out_t *o, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n)
        o->p[o->len++] = digits[--n];
}

/* A JSON string of s (valid UTF-8 without control characters, as
 * text_sanitize leaves it): only the quote and the backslash to escape. */
static void pace_put_str(pace_out_t *o, const char *s)
{
    o->p[o->len++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            o->p[o->len++] = '\\';
        o->p[o->len++] = *s;
    }
    o->p[o->len++] = '"';
}

/* A time of the room's clock (monotonic ms) as RFC 3339, by its distance
 * from now on both clocks. */
static void pace_put_time(pace_out_t *o, const pace_clocks_t *c, uint64_t mono_ms)
{
    int64_t sec = ((int64_t)c->wall_ms - ((int64_t)c->mono_ms - (int64_t)mono_ms)) / 1000;
    if (!o->cached_len || sec != o->cached_sec) {
        char when[TIME_RFC3339_LEN];
        o->cached_len = (size_t)snprintf(o->cached, sizeof o->cached, "\"%s\"",
                                         time_format_rfc3339((time_t)sec, when, sizeof when));
        o->cached_sec = sec;
    }
    pace_put(o, o->cached, o->cached_len);
}

static uint64_t pace_secs(uint64_t from_ms, uint64_t to_ms)
{
    return to_ms > from_ms ? (to_ms - from_ms) / 1000 : 0;
}

/* An address as text: IPv4 (mapped) by hand, the others by inet_ntop. */
static void pace_put_addr(pace_out_t *o, const addrset_key_t *k)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(k->b, mapped, sizeof mapped)) {
        char addr[ADDR_IP_TEXT_LEN];
        addrset_key_text(k, addr, sizeof addr);
        pace_put(o, addr, strlen(addr));
        return;
    }
    for (int i = 12; i < 16; i++) {
        if (i > 12)
            o->p[o->len++] = '.';
        pace_put_u64(o, k->b[i]);
    }
}

/* The address and pool of e, as the first members of its object. */
static void pace_put_node(pace_out_t *o, const pace_entry_t *e)
{
    char pool[PACE_POOL_LEN];
    memcpy(pool, e->pool, sizeof pool);
    text_sanitize(pool);
    PACE_PUT_LIT(o, "{\"address\":\"");
    pace_put_addr(o, &e->key);
    PACE_PUT_LIT(o, "\",\"pool\":");
    pace_put_str(o, pool);
}

static void pace_put_line(pace_out_t *o, const pace_report_t *rep, const pace_clocks_t *c)
{
    o->p[o->len++] = '[';
    for (size_t i = 0; i < rep->n_line; i++) {
        const pace_entry_t *e = &rep->line[i];
        if (i)
            o->p[o->len++] = ',';
        pace_put_node(o, e);
        PACE_PUT_LIT(o, ",\"place\":");
        pace_put_u64(o, i + 1);
        PACE_PUT_LIT(o, ",\"waitedSeconds\":");
        pace_put_u64(o, pace_secs(e->first_ms, c->mono_ms));
        PACE_PUT_LIT(o, ",\"quietSeconds\":");
        pace_put_u64(o, pace_secs(e->seen_ms, c->mono_ms));
        if (e->present)
            PACE_PUT_LIT(o, ",\"present\":true,\"firstPaced\":");
        else
            PACE_PUT_LIT(o, ",\"present\":false,\"firstPaced\":");
        pace_put_time(o, c, e->first_ms);
        o->p[o->len++] = '}';
    }
    o->p[o->len++] = ']';
}

static void pace_put_joining(pace_out_t *o, const pace_report_t *rep, const pace_clocks_t *c)
{
    const pace_stats_t *st = &rep->stats;
    o->p[o->len++] = '[';
    for (size_t i = 0; i < rep->n_joining; i++) {
        const pace_entry_t *e = &rep->joining[i];
        if (i)
            o->p[o->len++] = ',';
        pace_put_node(o, e);
        PACE_PUT_LIT(o, ",\"admittedAt\":");
        pace_put_time(o, c, e->admitted_ms);
        PACE_PUT_LIT(o, ",\"freesAt\":");
        pace_put_time(o, c, e->admitted_ms + st->join_timeout_ms);
        /* With the API view a Ready Node born for it frees it sooner. */
        if (st->api)
            PACE_PUT_LIT(o, ",\"freesOn\":\"Ready or join_timeout\",\"registered\":");
        else
            PACE_PUT_LIT(o, ",\"freesOn\":\"join_timeout\",\"registered\":");
        if (e->registered)
            PACE_PUT_LIT(o, "true,\"joiningSeconds\":");
        else
            PACE_PUT_LIT(o, "false,\"joiningSeconds\":");
        pace_put_u64(o, pace_secs(e->admitted_ms, c->mono_ms));
        o->p[o->len++] = '}';
    }
    o->p[o->len++] = ']';
}

static json_t *pace_stats_json(const pace_stats_t *st, const pace_clocks_t *c)
{
    json_t *p = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "joining",
                          (json_int_t)st->joining, "waiting", (json_int_t)st->waiting, "present",
                          (json_int_t)st->present, "maxLine", (json_int_t)st->max_line, "admittedTotal",
                          (json_int_t)st->admitted_total, "joinTimeouts", (json_int_t)st->timed_out_total,
                          "unrecordedTotal", (json_int_t)st->unrecorded_total, "evictedTotal",
                          (json_int_t)st->evicted_total, "forgottenTotal", (json_int_t)st->forgotten_total,
                          "freeSlots", (json_int_t)st->free, "roomFull", st->waiting >= st->max_line);
    /* How the budget is counted now (docs/pacing.md): by the API's Nodes
     * and CSRs, or blind, by join_timeout, and why. The CSR counts only
     * when they are counted. */
    json_t *more = json_pack("{s:s, s:s?, s:I, s:I, s:I, s:I, s:I, s:b, s:I}", "counting",
                             st->api ? "api" : "join_timeout", "why", st->api ? NULL : st->why, "unseenAdmissions",
                             (json_int_t)st->unseen, "budgetUsed", (json_int_t)st->used, "maxJoining",
                             (json_int_t)st->max_joining, "maxPendingCsrs", (json_int_t)st->max_pending_csrs,
                             "replicas", (json_int_t)st->replicas, "csrCeiling", st->ceiling, "joinedTotal",
                             (json_int_t)st->joined_total);
    /* The CSR counts, and cluster-machine-approver's limit with what is
     * left under it (negative while it approves nothing), only when
     * counted. */
    json_t *counted = st->api ? json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}", "pendingCsrs",
                                          (json_int_t)st->pending_csrs, "youngPendingCsrs", (json_int_t)st->young_csrs,
                                          "youngNotReadyNodes", (json_int_t)st->young_not_ready, "approverLimit",
                                          (json_int_t)st->approver_limit, "approverHeadroom",
                                          (json_int_t)st->approver_limit - (json_int_t)st->pending_csrs,
                                          "machinesCounted", st->machines_counted)
                              : json_pack("{s:n, s:n, s:n, s:n, s:n, s:b}", "pendingCsrs", "youngPendingCsrs",
                                          "youngNotReadyNodes", "approverLimit", "approverHeadroom",
                                          "machinesCounted", 0);
    json_t *paced = json_object();
    for (int k = PACE_ADMITTED + 1; paced && k < PACE_CAUSES; k++)
        json_object_set_new(paced, pace_cause_name((pace_cause_t)k), json_integer((json_int_t)st->paced_total[k]));
    if (!p || !more || !counted || !paced || json_object_update(p, more) < 0 || json_object_update(p, counted) < 0 ||
        json_object_set_new(p, "pacedTotal", paced) < 0) {
        json_decref(p);
        p = NULL;
    } else if (json_object_set_new(p, "headEarliestAdmission", json_null()) == 0 && st->head_earliest_ms) {
        char when[TIME_RFC3339_LEN];
        int64_t wall = (int64_t)c->wall_ms - ((int64_t)c->mono_ms - (int64_t)st->head_earliest_ms);
        json_object_set_new(p, "headEarliestAdmission",
                            json_string(time_format_rfc3339((time_t)(wall / 1000), when, sizeof when)));
    }
    /* The line: the shared one (the Leases), or this gate's own, and why
     * its own when the shared one is configured (sync, the fallback). */
    if (p) {
        json_object_set_new(p, "lineMode", json_string(st->line_shared ? "api" : "local"));
        if (st->line_configured) {
            json_object_set_new(p, "lineWhy", st->line_why[0] ? json_string(st->line_why) : json_null());
            json_object_set_new(p, "sharedJoining", json_integer((json_int_t)st->shared_joining));
            json_object_set_new(p, "sharedWaiting", json_integer((json_int_t)st->shared_waiting));
            json_object_set_new(p, "claimsInFlight", json_integer((json_int_t)st->claims));
        }
    }
    json_decref(more);
    json_decref(counted);
    return p;
}

char *pace_json_text(const pace_report_t *rep, const pace_clocks_t *c, const json_t *extra, size_t *len)
{
    json_t *st = pace_stats_json(&rep->stats, c);
    if (st && extra && json_object_update(st, (json_t *)extra) < 0) {
        json_decref(st);
        st = NULL;
    }
    char *head = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    if (!head)
        return NULL;
    size_t head_len = strlen(head);
    pace_out_t o = {.p = malloc(head_len + (rep->n_line + rep->n_joining) * PACE_ROW_MAX + 64)};
    if (!o.p) {
        free(head);
        return NULL;
    }
    /* The counts' object, its closing brace replaced by the two lists. */
    pace_put(&o, head, head_len - 1);
    free(head);
    PACE_PUT_LIT(&o, ",\"line\":");
    pace_put_line(&o, rep, c);
    PACE_PUT_LIT(&o, ",\"joiningNodes\":");
    pace_put_joining(&o, rep, c);
    PACE_PUT_LIT(&o, "}");
    o.p[o.len] = '\0';
    *len = o.len;
    return o.p;
}

/* Who may enter the line (DESIGN 1.9): the admission policies judge
 * before pacing, so without one any address that reaches the gate takes
 * a slot or a place. */
int pace_protection_json(json_t *pace, bool token, bool machines)
{
    const char *name = token && machines ? "token+machines" : token ? "token" : machines ? "machines" : "none";
    if (json_object_set_new(pace, "protection", json_string(name)) < 0)
        return -1;
    if (token || machines)
        return 0;
    return json_object_set_new(pace, "warning", json_string(PACE_OPEN_WARNING));
}
