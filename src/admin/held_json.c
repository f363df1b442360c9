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

/* A JSON string of s (valid UTF-8 without control characters, as
 * text_sanitize leaves it): only the quote and the backslash to escape. */
static void pace_put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A time of the room's clock (monotonic ms) as RFC 3339, by its distance
 * from now on both clocks. */
static void pace_put_time(FILE *f, const pace_clocks_t *c, uint64_t mono_ms)
{
    char when[TIME_RFC3339_LEN];
    int64_t wall = (int64_t)c->wall_ms - ((int64_t)c->mono_ms - (int64_t)mono_ms);
    fprintf(f, "\"%s\"", time_format_rfc3339((time_t)(wall / 1000), when, sizeof when));
}

static long long pace_secs(uint64_t from_ms, uint64_t to_ms)
{
    return to_ms > from_ms ? (long long)((to_ms - from_ms) / 1000) : 0;
}

/* The address and pool of e, as the first members of its object. */
static void pace_put_node(FILE *f, const pace_entry_t *e)
{
    char addr[ADDR_IP_TEXT_LEN], pool[PACE_POOL_LEN];
    addrset_key_text(&e->key, addr, sizeof addr);
    memcpy(pool, e->pool, sizeof pool);
    text_sanitize(pool);
    fprintf(f, "{\"address\":\"%s\",\"pool\":", addr);
    pace_put_str(f, pool);
}

/* The rows are written as text, not built as jansson objects: 4,096
 * waiting nodes are read in well under the 2 ms a /held read may cost
 * (bench/held_pace), where a json_pack a row cost about 3.5 us. */
static void pace_put_line(FILE *f, const pace_report_t *rep, const pace_clocks_t *c)
{
    fputs("[", f);
    for (size_t i = 0; i < rep->n_line; i++) {
        const pace_entry_t *e = &rep->line[i];
        fputs(i ? "," : "", f);
        pace_put_node(f, e);
        fprintf(f, ",\"place\":%zu,\"waitedSeconds\":%lld,\"quietSeconds\":%lld,\"present\":%s,\"firstPaced\":", i + 1,
                pace_secs(e->first_ms, c->mono_ms), pace_secs(e->seen_ms, c->mono_ms), e->present ? "true" : "false");
        pace_put_time(f, c, e->first_ms);
        fputs("}", f);
    }
    fputs("]", f);
}

static void pace_put_joining(FILE *f, const pace_report_t *rep, const pace_clocks_t *c)
{
    const pace_stats_t *st = &rep->stats;
    fputs("[", f);
    for (size_t i = 0; i < rep->n_joining; i++) {
        const pace_entry_t *e = &rep->joining[i];
        fputs(i ? "," : "", f);
        pace_put_node(f, e);
        fputs(",\"admittedAt\":", f);
        pace_put_time(f, c, e->admitted_ms);
        fputs(",\"freesAt\":", f);
        pace_put_time(f, c, e->admitted_ms + st->join_timeout_ms);
        /* With the API view a Ready Node born for it frees it sooner. */
        fprintf(f, ",\"freesOn\":\"%s\",\"registered\":%s,\"joiningSeconds\":%lld}",
                st->api ? "Ready or join_timeout" : "join_timeout", e->registered ? "true" : "false",
                pace_secs(e->admitted_ms, c->mono_ms));
    }
    fputs("]", f);
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
    json_t *counted = st->api ? json_pack("{s:I, s:I, s:I}", "pendingCsrs", (json_int_t)st->pending_csrs,
                                          "youngPendingCsrs", (json_int_t)st->young_csrs, "youngNotReadyNodes",
                                          (json_int_t)st->young_not_ready)
                              : json_pack("{s:n, s:n, s:n}", "pendingCsrs", "youngPendingCsrs",
                                          "youngNotReadyNodes");
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
    char *text = NULL;
    FILE *f = head ? open_memstream(&text, len) : NULL;
    if (!f) {
        free(head);
        return NULL;
    }
    /* The counts' object, its closing brace replaced by the two lists. */
    fwrite(head, 1, strlen(head) - 1, f);
    free(head);
    fputs(",\"line\":", f);
    pace_put_line(f, rep, c);
    fputs(",\"joiningNodes\":", f);
    pace_put_joining(f, rep, c);
    fputs("}", f);
    if (ferror(f) | (fclose(f) != 0)) {
        free(text);
        return NULL;
    }
    return text;
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
