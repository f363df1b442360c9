/* The room's shared mode (proxy/pace.h, docs/internals.md "The shared
 * line"): a node in the shared set is admitted, a turn is claimed and
 * counted until the set shows it, sync before the first list, the
 * fallback, and A <= M with several rooms sharing one simulated joining
 * Lease whose updates conflict. Injected time: the wall and the room's
 * clock are the same here. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pace_shared.h"
#include "proxy/pace.h"

static config_pace_t cfg;

static void setup(void)
{
    cfg = (config_pace_t){.enabled = true, .max_joining = 2, .join_timeout_ms = 60000, .head_hold_ms = 15000,
                          .max_pending_csrs = 90, .replicas = 3, .line = PACE_LINE_API};
}

TestSuite(pace_shared, .init = setup);

static struct sockaddr_storage node(int i)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(0x7f010000u + (uint32_t)i);
    return ss;
}

static addrset_key_t key(int i)
{
    struct sockaddr_storage a = node(i);
    addrset_key_t k;
    cr_assert_eq(addrset_key_from_sockaddr(&a, &k), 0);
    return k;
}

static pace_cause_t ask(pace_room_t *r, int i, uint64_t now)
{
    struct sockaddr_storage a = node(i);
    return pace_decide(r, &cfg, &a, "worker", now).cause;
}

/* A shared view: the joining entries (admitted at) and the line, in order. */
static pace_shared_t *view(const int *joining, const uint64_t *at, size_t nj, const int *line, size_t nl)
{
    pace_shared_t *s = calloc(1, sizeof *s);
    s->listed = true;
    s->joining = calloc(nj + 1, sizeof *s->joining);
    s->line = calloc(nl + 1, sizeof *s->line);
    for (size_t i = 0; i < nj; i++)
        s->joining[s->n_joining++] = (pace_shared_joiner_t){.key = key(joining[i]), .admitted_ms = at[i],
                                                            .admitted_wall = (int64_t)at[i]};
    for (size_t i = 0; i < nl; i++)
        s->line[s->n_line++] = (pace_shared_waiter_t){.key = key(line[i]), .acquire_wall = (int64_t)i};
    pace_shared_sort(s);
    return s;
}

static void shared_room(pace_room_t *r)
{
    cr_assert_eq(pace_room_init(r, 1000), 0);
    pace_room_use_shared(r, NULL);
}

Test(pace_shared, syncs_until_listed)
{
    pace_room_t r;
    shared_room(&r);
    cr_assert_eq(ask(&r, 1, 1000), PACE_SYNC);
    pace_shared_t *s = view(NULL, NULL, 0, NULL, 0);
    s->listed = false;
    pace_room_set_shared(&r, s, 1000);
    cr_assert_eq(ask(&r, 1, 2000), PACE_SYNC);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 3000);
    cr_assert_eq(ask(&r, 1, 4000), PACE_CLAIM);
    pace_report_t rep;
    cr_assert_eq(pace_report(&r, &cfg, 4000, false, &rep), 0);
    cr_assert(rep.stats.line_shared);
    pace_room_destroy(&r);
}

Test(pace_shared, in_the_set_is_admitted_at_any_gate_and_fills_the_budget)
{
    pace_room_t r;
    shared_room(&r);
    int j[] = {1, 2};
    uint64_t at[] = {1000, 1000};
    pace_room_set_shared(&r, view(j, at, 2, NULL, 0), 1000);
    cr_assert_eq(ask(&r, 1, 2000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 2, 2000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 3, 2000), PACE_BUDGET);
    /* join_timeout frees the set's entries as it frees a local slot */
    cr_assert_eq(ask(&r, 3, 1000 + cfg.join_timeout_ms), PACE_CLAIM);
    pace_room_destroy(&r);
}

Test(pace_shared, claims_in_flight_count_until_the_set_shows_them)
{
    pace_room_t r;
    shared_room(&r);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 1000);
    cr_assert_eq(ask(&r, 1, 1000), PACE_CLAIM);
    cr_assert_eq(ask(&r, 2, 1000), PACE_CLAIM);
    cr_assert_eq(ask(&r, 3, 1000), PACE_BUDGET);
    cr_assert_eq(ask(&r, 1, 2000), PACE_CLAIM, "its claim is in flight");
    cr_assert(pace_shared_pending(&r, &cfg, 2000));
    /* the writer's plan takes both, one update */
    pace_line_entry_t out[8];
    size_t added;
    size_t n = pace_shared_plan(&r, &cfg, "g1", NULL, 0, 3000, 3000, out, 8, &added);
    cr_assert_eq(n, 2);
    cr_assert_eq(added, 2);
    cr_assert_str_eq(out[0].gate, "g1");
    pace_shared_written(&r, true, 3000);
    cr_assert_not(pace_shared_pending(&r, &cfg, 3000));
    cr_assert_eq(ask(&r, 3, 3500), PACE_BUDGET, "written, not shown yet: still counted");
    int j[] = {1, 2};
    uint64_t at[] = {3000, 3000};
    pace_room_set_shared(&r, view(j, at, 2, NULL, 0), 4000);
    cr_assert_eq(ask(&r, 1, 5000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 3, 5000), PACE_BUDGET);
    pace_report_t rep;
    cr_assert_eq(pace_report(&r, &cfg, 5000, false, &rep), 0);
    cr_assert_eq(rep.stats.used, 2);
    cr_assert_eq(rep.stats.claims, 0);
    pace_room_destroy(&r);
}

Test(pace_shared, a_failed_update_drops_the_claims_and_falls_back_blind)
{
    pace_room_t r;
    shared_room(&r);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 1000);
    cr_assert_eq(ask(&r, 1, 1000), PACE_CLAIM);
    pace_line_entry_t out[8];
    size_t added;
    pace_shared_plan(&r, &cfg, "g1", NULL, 0, 1000, 1000, out, 8, &added);
    pace_shared_written(&r, false, 1000);
    pace_room_write_failing(&r, "conflicts did not settle");
    /* blind: floor(M/R) = 0 of 2 for 3 replicas... with M 6: 2 each */
    cfg.max_joining = 6;
    cr_assert_eq(ask(&r, 1, 1100), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 2, 1100), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 3, 1100), PACE_BUDGET);
    pace_report_t rep;
    cr_assert_eq(pace_report(&r, &cfg, 1100, false, &rep), 0);
    cr_assert_not(rep.stats.line_shared);
    cr_assert_str_eq(rep.stats.line_why, "conflicts did not settle");
    pace_room_destroy(&r);
}

Test(pace_shared, the_shared_line_orders_turns_and_an_absent_head_passes_after_head_hold)
{
    cfg.max_joining = 1;
    pace_room_t r;
    shared_room(&r);
    int line[] = {1, 2, 3};
    pace_room_set_shared(&r, view(NULL, NULL, 0, line, 3), 1000);
    cr_assert_eq(ask(&r, 3, 1000), PACE_TURN, "1 has the turn (first seen now)");
    cr_assert_eq(ask(&r, 2, 2000), PACE_TURN);
    /* 1 never asks this gate: past head_hold its turn passes to 2 */
    cr_assert_eq(ask(&r, 3, 1000 + cfg.head_hold_ms), PACE_TURN, "2 has it now");
    /* the turns seen survive a new view */
    pace_room_set_shared(&r, view(NULL, NULL, 0, line, 3), 1000 + cfg.head_hold_ms);
    cr_assert_eq(ask(&r, 2, 2000 + cfg.head_hold_ms), PACE_CLAIM);
    pace_room_destroy(&r);
}

/* ---- several rooms, one joining Lease ------------------------------------ */

typedef struct api {
    uint64_t version;
    pace_line_entry_t e[64];
    size_t n;
} api_t;

/* What a gate's writer does: plan on what it read (maybe stale), update
 * on that version; 409: read again, plan again, 3 tries. */
static int write_claims(pace_room_t *r, const char *gate, api_t *api, const api_t *cached, uint64_t now,
                        unsigned *conflicts)
{
    api_t read = *cached;
    for (int tries = 0; tries < 3; tries++) {
        pace_line_entry_t out[128];
        size_t added;
        size_t n = pace_shared_plan(r, &cfg, gate, read.e, read.n, (int64_t)now, now, out, 128, &added);
        if (!added) {
            pace_shared_written(r, true, now);
            return 0;
        }
        if (read.version == api->version) {
            cr_assert_leq(n, cfg.max_joining);
            memcpy(api->e, out, n * sizeof *out);
            api->n = n;
            api->version++;
            pace_shared_written(r, true, now);
            return (int)added;
        }
        (*conflicts)++;
        read = *api;
    }
    pace_shared_written(r, false, now);
    return -1;
}

static pace_shared_t *view_of(const api_t *api)
{
    pace_shared_t *s = calloc(1, sizeof *s);
    s->listed = true;
    s->joining = calloc(api->n + 1, sizeof *s->joining);
    for (size_t i = 0; i < api->n; i++)
        s->joining[s->n_joining++] = (pace_shared_joiner_t){.key = api->e[i].key,
                                                            .admitted_ms = (uint64_t)api->e[i].admitted_wall,
                                                            .admitted_wall = api->e[i].admitted_wall};
    pace_shared_sort(s);
    return s;
}

/* n rooms on the shared line, each having listed api at the time at. */
static void rooms_listed(pace_room_t *rooms, int n, const api_t *api, uint64_t at)
{
    for (int g = 0; g < n; g++) {
        shared_room(&rooms[g]);
        pace_room_set_shared(&rooms[g], view_of(api), at);
    }
}

/* n rooms on the shared line, each having listed the empty set api. */
static void rooms_on_one_set(pace_room_t *rooms, int n, const api_t *api, api_t *cached)
{
    rooms_listed(rooms, n, api, 0);
    for (int g = 0; g < n; g++)
        cached[g] = *api;
}

static const char *gate_name(int g)
{
    static const char *const names[] = {"g0", "g1", "g2"};
    return names[g];
}

static size_t live(const api_t *api, uint64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < api->n; i++)
        n += now - (uint64_t)api->e[i].admitted_wall < cfg.join_timeout_ms;
    return n;
}

Test(pace_shared, three_rooms_one_set_never_above_max_joining_under_conflicts)
{
    cfg.max_joining = 6;
    cfg.join_timeout_ms = 40000;
    enum { ROOMS = 3, NODES = 30 };
    pace_room_t rooms[ROOMS];
    api_t api = {.version = 1}, cached[ROOMS];
    rooms_on_one_set(rooms, ROOMS, &api, cached);
    srand(34);
    unsigned conflicts = 0, admitted_ever = 0;
    bool seen[NODES] = {0};
    for (uint64_t now = 1000; now < 400000; now += 500) {
        /* nodes ask gates at random */
        for (int k = 0; k < 8; k++) {
            int i = rand() % NODES, g = rand() % ROOMS;
            if (seen[i])
                continue;       /* admitted: it boots and joins, it asks no more */
            pace_cause_t c = ask(&rooms[g], i, now);
            if (c == PACE_ADMITTED && !seen[i]) {
                seen[i] = true;
                admitted_ever++;
            }
        }
        /* the writers, in random order, each on what it last read */
        int first = rand() % ROOMS;
        for (int k = 0; k < ROOMS; k++) {
            int g = (first + k) % ROOMS;
            char gate[8];
            snprintf(gate, sizeof gate, "g%d", g);
            if (pace_shared_pending(&rooms[g], &cfg, now))
                write_claims(&rooms[g], gate, &api, &cached[g], now, &conflicts);
            cr_assert_leq(live(&api, now), cfg.max_joining, "A <= M at %llu", (unsigned long long)now);
            for (size_t a = 0; a < api.n; a++)
                for (size_t b = a + 1; b < api.n; b++)
                    cr_assert(memcmp(&api.e[a].key, &api.e[b].key, sizeof api.e[a].key), "a node twice in the set");
        }
        /* watches lag: each gate sees the Lease now and then */
        for (int g = 0; g < ROOMS; g++)
            if (rand() % 3 == 0) {
                cached[g] = api;
                pace_room_set_shared(&rooms[g], view_of(&api), now);
            }
    }
    cr_assert_gt(conflicts, 0, "the simulation made no conflicts");
    cr_assert_eq(admitted_ever, NODES, "every node was admitted in the end (%u)", admitted_ever);
    for (int g = 0; g < ROOMS; g++)
        pace_room_destroy(&rooms[g]);
}

Test(pace_shared, joining_text_round_trips)
{
    pace_line_entry_t e[2] = {{.key = key(1), .admitted_wall = 1733300000123, .gate = "gate-a-1"},
                              {.key = key(2), .admitted_wall = 1733300000456, .gate = "gate-b-2"}};
    char *text = pace_shared_format_joining(e, 2);
    cr_assert_str_eq(text, "127.1.0.1 1733300000123 gate-a-1\n127.1.0.2 1733300000456 gate-b-2\n");
    pace_line_entry_t back[4];
    size_t bad;
    cr_assert_eq(pace_shared_parse_joining(text, back, 4, &bad), 2);
    cr_assert_eq(bad, 0);
    cr_assert_eq(back[1].admitted_wall, 1733300000456);
    cr_assert_str_eq(back[1].gate, "gate-b-2");
    cr_assert_eq(pace_shared_parse_joining("junk\n10.0.0.1 5 g\n", back, 4, &bad), 1);
    cr_assert_eq(bad, 1);
    free(text);
}

#include "source/pace_line.h"

Test(pace_shared, wait_lease_names_and_micro_times)
{
    addrset_key_t k = key(7), back;
    char name[128];
    pace_line_wait_name(&k, name, sizeof name);
    cr_assert_str_eq(name, "skewgate-pace-wait-00000000000000000000ffff7f010007");
    cr_assert_eq(pace_line_wait_key(name, &back), 0);
    cr_assert_eq(memcmp(&k, &back, sizeof k), 0);
    cr_assert_eq(pace_line_wait_key("skewgate-pace-joining", &back), -1);
    cr_assert_eq(pace_line_wait_key("skewgate-pace-wait-zz", &back), -1);
    cr_assert_eq(pace_line_micro_ms("2026-12-04T20:12:46.123456Z"), 1796415166123LL);
    cr_assert_eq(pace_line_micro_ms("2026-12-04T20:12:46Z"), 1796415166000LL);
    cr_assert_eq(pace_line_micro_ms("junk"), 0);
}

/* A Nodes view of n addresses (the caller fills them, then sorts). */
static pace_view_t *nodes_view(bool trusted, size_t n)
{
    pace_view_t *v = calloc(1, sizeof *v);
    v->trusted = trusted;
    v->addrs = calloc(n + 1, sizeof *v->addrs);
    v->n_addrs = n;
    v->not_ready_created = calloc(1, sizeof(int64_t));
    v->csr_created = calloc(1, sizeof(int64_t));
    v->approver_created = calloc(1, sizeof(int64_t));
    v->approved_other = calloc(1, sizeof *v->approved_other);
    v->n_machines = -1;
    return v;
}

/* One Ready Node listing both joining nodes' addresses frees the entry
 * at its first address only: before, both left the set and two more
 * nodes were admitted past max_joining. */
Test(pace_shared, a_node_frees_one_entry_whatever_addresses_it_lists)
{
    pace_room_t r;
    shared_room(&r);
    int j[] = {1, 2};
    uint64_t at[] = {1000, 1000};
    pace_room_set_shared(&r, view(j, at, 2, NULL, 0), 1000);
    pace_view_t *v = nodes_view(true, 2);
    v->addrs[0] = (pace_view_addr_t){.key = key(1), .created = 2000, .ready = true, .node = 0, .primary = true};
    v->addrs[1] = (pace_view_addr_t){.key = key(2), .created = 2000, .ready = true, .node = 0, .primary = false};
    pace_view_sort_addrs(v);
    pace_room_set_view(&r, v, 3000);
    cr_assert_eq(ask(&r, 3, 3000), PACE_CLAIM, "node 1's entry left");
    cr_assert_eq(ask(&r, 4, 3000), PACE_BUDGET, "node 2's did not: 1 live + 1 claim = 2");
    pace_room_destroy(&r);
}

/* ---- the fallback: the set last seen, and the way back ------------------ */

static pace_shared_t *failing(pace_shared_t *s)
{
    s->failing = true;
    snprintf(s->why, sizeof s->why, "the shared line's Leases watch is failing: HTTP 503");
    return s;
}

/* The hole of the first fallback (7 admitted of 6 through a 20 s
 * outage): a gate with no joining node of its own counted R x 0 and
 * admitted floor(M/R) on top of the other gates' entries. */
Test(pace_shared, a_fallback_counts_the_set_it_saw_last)
{
    cfg.max_joining = 6;
    pace_room_t r;
    shared_room(&r);
    int j[] = {1, 2, 3, 4};
    uint64_t at[] = {1000, 1000, 1000, 1000};
    pace_room_set_shared(&r, view(j, at, 4, NULL, 0), 1000);
    pace_room_set_shared(&r, failing(view(j, at, 4, NULL, 0)), 2000);
    cr_assert_eq(ask(&r, 5, 2000), PACE_BUDGET, "4 of 6 taken: floor(2 / 3) = 0 blind");
    cr_assert_eq(ask(&r, 1, 2000), PACE_ADMITTED, "a node of the set has its slot");
    cr_assert_eq(ask(&r, 5, 2000), PACE_BUDGET, "and it cost nothing more");
    /* three of six: one blind admission (3 + 3 x 1 = 6) */
    pace_room_set_shared(&r, failing(view(j, at, 3, NULL, 0)), 3000);
    cr_assert_eq(ask(&r, 5, 3000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 6, 3000), PACE_BUDGET);
    pace_report_t rep;
    cr_assert_eq(pace_report(&r, &cfg, 3000, false, &rep), 0);
    cr_assert_not(rep.stats.line_shared);
    cr_assert_eq(rep.stats.used, 6);
    cr_assert_str_eq(rep.stats.line_why, "the shared line's Leases watch is failing: HTTP 503");
    /* the set ages as the room does: join_timeout frees its entries */
    cr_assert_eq(ask(&r, 6, 1000 + cfg.join_timeout_ms), PACE_ADMITTED);
    pace_room_destroy(&r);
}

/* Back on the line, the blind admissions go into the set (the other
 * gates must count them), and the room keeps to its share until
 * PACE_SETTLE_MS after its return. */
Test(pace_shared, blind_admissions_are_written_and_the_room_settles_after_its_return)
{
    cfg.max_joining = 6;
    pace_room_t r;
    shared_room(&r);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 1000);
    pace_room_set_shared(&r, failing(view(NULL, NULL, 0, NULL, 0)), 2000);
    cr_assert_eq(ask(&r, 1, 2000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 2, 2000), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 3, 2000), PACE_BUDGET, "its share: floor(6 / 3) = 2");
    cr_assert_not(pace_shared_pending(&r, &cfg, 2000), "nothing to write while the Leases fail");
    /* the API is back: the set is as it was, without them */
    uint64_t back = 30000;
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), back);
    cr_assert(pace_shared_pending(&r, &cfg, back), "the blind admissions wait for a write");
    cr_assert_eq(ask(&r, 3, back + 1000), PACE_BUDGET, "settling: still its share (0 + 3 x 2 = 6)");
    pace_report_t rep;
    cr_assert_eq(pace_report(&r, &cfg, back + 1000, false, &rep), 0);
    cr_assert(rep.stats.line_shared, "settling is on the shared line");
    cr_assert(strstr(rep.stats.line_why, "its own share"), "%s", rep.stats.line_why);
    pace_line_entry_t out[16];
    size_t added;
    size_t n = pace_shared_plan(&r, &cfg, "g1", NULL, 0, 40000, back + 1000, out, 16, &added);
    cr_assert_eq(n, 2);
    cr_assert_eq(added, 2);
    cr_assert_eq(out[0].admitted_wall, 40000 - (int64_t)(back + 1000 - 2000), "admitted when it was, on the wall");
    pace_shared_written(&r, true, back + 1000);
    /* the set shows them: nothing more to write, and once settled they
     * count once, as every gate counts them */
    int j[] = {1, 2};
    uint64_t at[] = {2000, 2000};
    pace_room_set_shared(&r, view(j, at, 2, NULL, 0), back + 2000);
    cr_assert_not(pace_shared_pending(&r, &cfg, back + 2000));
    cr_assert_eq(ask(&r, 3, back + 2000), PACE_BUDGET, "settling: 2 + 3 x 2 counted");
    cr_assert_eq(ask(&r, 3, back + PACE_SETTLE_MS), PACE_CLAIM, "settled: 2 of 6");
    pace_room_destroy(&r);
}

/* Three rooms on one simulated joining Lease through an outage of the
 * API: the nodes admitted whose slot has not run out (from their entry's
 * time, or their blind admission) are never above M, before, during and
 * after it, while the gates come back at different times. */
Test(pace_shared, three_rooms_through_an_outage_never_above_max_joining)
{
    cfg.max_joining = 6;
    cfg.join_timeout_ms = 40000;
    enum { ROOMS = 3, NODES = 40 };
    const uint64_t down = 100000, up = 160000;
    pace_room_t rooms[ROOMS];
    api_t api = {.version = 1}, cached[ROOMS];
    rooms_on_one_set(rooms, ROOMS, &api, cached);
    srand(3434);
    unsigned conflicts = 0, blind_admissions = 0, peak = 0;
    bool seen[NODES] = {0}, was_back[ROOMS] = {0};
    uint64_t slot[NODES] = {0};
    for (uint64_t now = 1000; now < 500000; now += 500) {
        bool outage = now >= down && now < up;
        for (int k = 0; k < 8; k++) {
            int i = rand() % NODES;
            /* before the outage gate 0 takes most: the set is its */
            int g = now < down && rand() % 5 ? 0 : rand() % ROOMS;
            if (seen[i])
                continue;
            if (ask(&rooms[g], i, now) != PACE_ADMITTED)
                continue;
            seen[i] = true;
            slot[i] = now;
            addrset_key_t ki = key(i);
            for (size_t e = 0; e < api.n; e++)
                if (!memcmp(&api.e[e].key, &ki, sizeof ki))
                    slot[i] = (uint64_t)api.e[e].admitted_wall;
            blind_admissions += outage;
        }
        unsigned a = 0;
        for (int i = 0; i < NODES; i++)
            a += seen[i] && now - slot[i] < cfg.join_timeout_ms;
        peak = a > peak ? a : peak;
        cr_assert_leq(a, cfg.max_joining, "A <= M at %llu: %u", (unsigned long long)now, a);
        for (int g = 0; g < ROOMS; g++) {
            bool back = now >= up + (uint64_t)g * 2000;
            if (now == down) {
                pace_room_set_shared(&rooms[g], failing(view_of(&cached[g])), now);
            } else if (back && !was_back[g]) {
                was_back[g] = true;
                cached[g] = api;
                pace_room_set_shared(&rooms[g], view_of(&api), now);
            }
            if (!pace_shared_pending(&rooms[g], &cfg, now))
                continue;
            if (now >= down && !back) {
                pace_line_entry_t out[64];
                size_t added;
                pace_shared_plan(&rooms[g], &cfg, "g", cached[g].e, cached[g].n, (int64_t)now, now, out, 64,
                                 &added);
                pace_shared_written(&rooms[g], false, now);
                pace_room_write_failing(&rooms[g], "HTTP 503");
                continue;
            }
            char gate[16];
            snprintf(gate, sizeof gate, "g%d", g);
            write_claims(&rooms[g], gate, &api, &cached[g], now, &conflicts);
        }
        for (int g = 0; g < ROOMS; g++)
            if ((now < down || now >= up + (uint64_t)g * 2000) && rand() % 3 == 0) {
                cached[g] = api;
                pace_room_set_shared(&rooms[g], view_of(&api), now);
            }
    }
    cr_assert_gt(blind_admissions, 0, "nobody was admitted blind: the outage tested nothing");
    cr_assert_eq(peak, cfg.max_joining, "the budget was used");
    for (int i = 0; i < NODES; i++)
        cr_assert(seen[i], "node %d was never admitted", i);
    for (int g = 0; g < ROOMS; g++)
        pace_room_destroy(&rooms[g]);
}

/* Through an outage the Nodes watch fails too: the entries whose Nodes
 * it saw Ready stay gone (counted live, they took the fallback's slots
 * for join_timeout), and those it did not see Ready stay. */
Test(pace_shared, a_fallback_keeps_the_departures_its_view_saw)
{
    cfg.max_joining = 6;
    pace_room_t r;
    shared_room(&r);
    int j[] = {1, 2, 3, 4, 5, 6};
    uint64_t at[] = {1000, 1000, 1000, 1000, 1000, 1000};
    pace_room_set_shared(&r, view(j, at, 6, NULL, 0), 1000);
    pace_view_t *v = nodes_view(false, 3);
    for (int i = 0; i < 3; i++)
        v->addrs[i] = (pace_view_addr_t){.key = key(i + 1), .created = 2000, .ready = true, .node = (uint32_t)i,
                                         .primary = true};
    pace_view_sort_addrs(v);
    pace_room_set_view(&r, v, 3000);
    pace_room_set_shared(&r, failing(view(j, at, 6, NULL, 0)), 3000);
    cr_assert_eq(ask(&r, 7, 3000), PACE_ADMITTED, "3 left of 6: floor(3 / 3) = 1 blind");
    cr_assert_eq(ask(&r, 8, 3000), PACE_BUDGET);
    pace_room_destroy(&r);
}

/* The writer sizes its plan on the max_joining it started with; a reload
 * may raise the room's (pace.max_joining reloads, pace.line does not):
 * the plan stops at the room it was given. */
Test(pace_shared, a_plan_never_writes_past_the_room_it_was_given)
{
    cfg.max_joining = 64;
    pace_room_t r;
    shared_room(&r);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 1000);
    for (int i = 1; i <= 20; i++)
        cr_assert_eq(ask(&r, i, 1000), PACE_CLAIM);
    pace_line_entry_t *out = calloc(4, sizeof *out);
    size_t added;
    cr_assert_eq(pace_shared_plan(&r, &cfg, "g1", NULL, 0, 1000, 1000, out, 4, &added), 4);
    cr_assert_eq(added, 4);
    free(out);
    pace_room_destroy(&r);
}

/* ---- holes a review found in the way back, each with its test --------- */

#include <stdatomic.h>
#include "core/clock.h"

/* M 6 (3 replicas), and no slot times out within a test. */
static void six_slots_no_timeout(void)
{
    cfg.max_joining = 6;
    cfg.join_timeout_ms = 600000;
}

/* The nodes admitted (a node, once admitted, boots: it asks no more). */
typedef struct admitted {
    bool in[128];
} admitted_t;

static pace_cause_t ask_counted(admitted_t *a, pace_room_t *r, int i, uint64_t now)
{
    pace_cause_t c = ask(r, i, now);
    if (c == PACE_ADMITTED)
        a->in[i] = true;
    return c;
}

static unsigned admitted_count(const admitted_t *a)
{
    unsigned n = 0;
    for (int i = 0; i < 128; i++)
        n += a->in[i];
    return n;
}

/* The writer's update, on the Lease as it is now (no conflict). */
static size_t write_now(pace_room_t *r, const char *gate, api_t *api, uint64_t now)
{
    pace_line_entry_t out[128];
    size_t added;
    size_t n = pace_shared_plan(r, &cfg, gate, api->e, api->n, (int64_t)now, now, out, 128, &added);
    if (added) {
        memcpy(api->e, out, n * sizeof *out);
        api->n = n;
        api->version++;
    }
    pace_shared_written(r, true, now);
    return added;
}

/* A claim in flight when the API went failed, and its write's fallback
 * ended 5 s later: the settle was taken from then (t0 + 15 s), so after
 * a 20 s outage the first gate back claimed every slot at once: 10 of 6. */
Test(pace_shared, a_claim_failed_as_the_api_went_does_not_skip_the_settle)
{
    six_slots_no_timeout();
    enum { ROOMS = 3 };
    pace_room_t rooms[ROOMS];
    api_t api = {.version = 1};
    admitted_t a = {0};
    uint64_t t0 = clock_coarse_ms();    /* pace_room_write_failing reads this clock */
    cr_assert_gt(t0, 10000);
    rooms_listed(rooms, ROOMS, &api, t0 - 2000);
    cr_assert_eq(ask(&rooms[0], 50, t0 - 1000), PACE_CLAIM);
    for (int g = 0; g < ROOMS; g++)
        pace_room_set_shared(&rooms[g], failing(view_of(&api)), t0);
    pace_line_entry_t out[16];
    size_t added;
    pace_shared_plan(&rooms[0], &cfg, "g0", api.e, api.n, (int64_t)t0, t0, out, 16, &added);
    pace_shared_written(&rooms[0], false, t0);
    pace_room_write_failing(&rooms[0], "HTTP 503");
    for (int g = 1; g < ROOMS; g++) {
        cr_assert_eq(ask_counted(&a, &rooms[g], 2 * g - 1, t0 + 3000), PACE_ADMITTED);
        cr_assert_eq(ask_counted(&a, &rooms[g], 2 * g, t0 + 3000), PACE_ADMITTED);
    }
    uint64_t up = t0 + 20000;
    pace_room_set_shared(&rooms[0], view_of(&api), up);
    for (int i = 10; i < 16; i++)
        ask_counted(&a, &rooms[0], i, up);
    write_now(&rooms[0], "g0", &api, up);
    pace_room_set_shared(&rooms[0], view_of(&api), up + 500);
    for (int i = 10; i < 16; i++)
        ask_counted(&a, &rooms[0], i, up + 500);
    for (int g = 1; g < ROOMS; g++) {
        pace_room_set_shared(&rooms[g], view_of(&api), up + 1000);
        if (pace_shared_pending(&rooms[g], &cfg, up + 1000))
            write_now(&rooms[g], gate_name(g), &api, up + 1000);
    }
    cr_assert_leq(admitted_count(&a), cfg.max_joining, "A = %u of 6", admitted_count(&a));
    for (int g = 0; g < ROOMS; g++)
        pace_room_destroy(&rooms[g]);
}

/* A gate restarted during an outage: its first list fails. It fell back
 * on a set it never saw and admitted floor(6/3) on top of a full one
 * (8 of 6); now it holds everyone (sync) until it lists, or until
 * join_timeout has passed since it started (every entry of then has
 * left: the Leases 403 from the start still falls back). */
Test(pace_shared, a_gate_that_never_listed_admits_nobody_until_join_timeout)
{
    six_slots_no_timeout();
    pace_room_t r;
    shared_room(&r);                     /* started now, on the real clock */
    uint64_t t0 = clock_coarse_ms();
    pace_shared_t *s = failing(view(NULL, NULL, 0, NULL, 0));
    s->listed = false;
    pace_room_set_shared(&r, s, t0);
    for (int i = 10; i < 13; i++)
        cr_assert_eq(ask(&r, i, t0 + 3000), PACE_SYNC);
    cr_assert_eq(ask(&r, 10, t0 + cfg.join_timeout_ms), PACE_ADMITTED, "join_timeout since it started: blind");
    cr_assert_eq(ask(&r, 11, t0 + cfg.join_timeout_ms), PACE_ADMITTED);
    cr_assert_eq(ask(&r, 12, t0 + cfg.join_timeout_ms), PACE_BUDGET, "floor(6/3)");
    pace_room_destroy(&r);
}

/* Blind admissions made while settling rang nobody: the writer runs on
 * its bell or a change of the Lease, so two gates' 4 settle admissions
 * stayed unwritten while the third, settled, saw the set empty and
 * claimed 6: 10 of 6. */
static bool rang(wakeup_t *w)
{
    bool c = atomic_load(&w->claimed);
    if (c)
        wakeup_consume(w);
    return c;
}

Test(pace_shared, blind_admissions_while_settling_ring_the_writer)
{
    six_slots_no_timeout();
    enum { ROOMS = 3 };
    pace_room_t rooms[ROOMS];
    wakeup_t bell[ROOMS];
    uint64_t seen_version[ROOMS];
    bool kicked[ROOMS] = {0};           /* the Lease changed: the writer is kicked */
    api_t api = {.version = 1};
    admitted_t a = {0};
    for (int g = 0; g < ROOMS; g++) {
        cr_assert_eq(wakeup_init(&bell[g]), 0);
        cr_assert_eq(pace_room_init(&rooms[g], 1000), 0);
        pace_room_use_shared(&rooms[g], &bell[g]);
        pace_room_set_shared(&rooms[g], view_of(&api), 1000);
        pace_room_set_shared(&rooms[g], failing(view_of(&api)), 2000);
        pace_room_set_shared(&rooms[g], view_of(&api), 3000);      /* all back together */
        seen_version[g] = api.version;
    }
    for (uint64_t now = 3500; now <= 3000 + PACE_SETTLE_MS + 5000; now += 500) {
        if (now == 4000) {
            cr_assert_eq(ask_counted(&a, &rooms[0], 1, now), PACE_ADMITTED, "its settle share");
            cr_assert_eq(ask_counted(&a, &rooms[0], 2, now), PACE_ADMITTED);
            cr_assert_eq(ask_counted(&a, &rooms[1], 3, now), PACE_ADMITTED);
            cr_assert_eq(ask_counted(&a, &rooms[1], 4, now), PACE_ADMITTED);
        }
        if (now >= 3000 + PACE_SETTLE_MS)
            for (int i = 10; i < 16; i++)
                ask_counted(&a, &rooms[2], i, now);
        for (int g = 0; g < ROOMS; g++) {
            bool woken = rang(&bell[g]) || kicked[g];
            kicked[g] = false;
            if (woken && pace_shared_pending(&rooms[g], &cfg, now))
                write_now(&rooms[g], gate_name(g), &api, now);
        }
        for (int g = 0; g < ROOMS; g++) {
            kicked[g] = seen_version[g] != api.version;
            seen_version[g] = api.version;
            pace_room_set_shared(&rooms[g], view_of(&api), now);
        }
        cr_assert_leq(admitted_count(&a), cfg.max_joining, "A = %u of 6 at %llu", admitted_count(&a),
                      (unsigned long long)now);
    }
    for (int g = 0; g < ROOMS; g++) {
        pace_room_destroy(&rooms[g]);
        wakeup_close(&bell[g]);
    }
}

/* A gate whose list hung (30 s at most) came back 11 s after the others,
 * who had settled in 10 s and claimed: 8 of 6. The settle covers the
 * slowest return (PACE_SETTLE_MS). */
Test(pace_shared, a_gate_back_later_than_the_others_is_within_their_settle)
{
    six_slots_no_timeout();
    enum { ROOMS = 3 };
    pace_room_t rooms[ROOMS];
    api_t api = {.version = 1};
    admitted_t a = {0};
    rooms_listed(rooms, ROOMS, &api, 1000);
    for (int g = 0; g < ROOMS; g++)
        pace_room_set_shared(&rooms[g], failing(view_of(&api)), 2000);
    for (int g = 0; g < ROOMS; g++) {
        cr_assert_eq(ask_counted(&a, &rooms[g], 1 + 2 * g, 3000), PACE_ADMITTED);
        cr_assert_eq(ask_counted(&a, &rooms[g], 2 + 2 * g, 3000), PACE_ADMITTED);
    }
    for (int g = 0; g < 2; g++) {
        pace_room_set_shared(&rooms[g], view_of(&api), 30000);
        write_now(&rooms[g], gate_name(g), &api, 30000);
    }
    for (int g = 0; g < 2; g++)
        pace_room_set_shared(&rooms[g], view_of(&api), 30500);
    uint64_t late = 30000 + 42000;      /* a list hung 30 s, a write in flight 10 s, a backoff 2 s */
    for (int i = 20; i < 24; i++)
        ask_counted(&a, &rooms[0], i, late - 1000);
    write_now(&rooms[0], "g0", &api, late - 1000);
    pace_room_set_shared(&rooms[0], view_of(&api), late - 500);
    for (int i = 20; i < 24; i++)
        ask_counted(&a, &rooms[0], i, late - 500);
    pace_room_set_shared(&rooms[2], view_of(&api), late);
    write_now(&rooms[2], "g2", &api, late);
    cr_assert_leq(admitted_count(&a), cfg.max_joining, "A = %u of 6", admitted_count(&a));
    for (int g = 0; g < ROOMS; g++)
        pace_room_destroy(&rooms[g]);
}

/* Its own claim, written (200) and not delivered by the watch when the
 * API went, is in the set the others will see: the fallback counts it
 * (it did not: 7 of 6). */
Test(pace_shared, the_fallback_counts_its_own_claims_the_set_does_not_show)
{
    six_slots_no_timeout();
    enum { ROOMS = 3 };
    pace_room_t rooms[ROOMS];
    api_t api = {.version = 1};
    admitted_t a = {0};
    rooms_listed(rooms, ROOMS, &api, 1000);
    cr_assert_eq(ask(&rooms[0], 50, 1500), PACE_CLAIM);
    write_now(&rooms[0], "g0", &api, 1500);
    api_t before = {.version = 1};
    for (int g = 0; g < ROOMS; g++)
        pace_room_set_shared(&rooms[g], failing(view_of(&before)), 2000);
    for (int g = 0; g < ROOMS; g++)
        for (int i = 0; i < 3; i++)
            ask_counted(&a, &rooms[g], 10 * (g + 1) + i, 20000);
    for (int g = 0; g < ROOMS; g++) {
        pace_room_set_shared(&rooms[g], view_of(&api), 30000);
        write_now(&rooms[g], gate_name(g), &api, 30000);
        pace_room_set_shared(&rooms[g], view_of(&api), 30000);
    }
    ask_counted(&a, &rooms[1], 50, 30500);
    cr_assert_leq(admitted_count(&a), cfg.max_joining, "A = %u of 6", admitted_count(&a));
    for (int g = 0; g < ROOMS; g++)
        pace_room_destroy(&rooms[g]);
}

/* Three gates claim from their own view of the free slots at once; the
 * claims the set has no slot for when the update is planned, or whose
 * update fails, are dropped. Their nodes keep the time they were
 * claimed as their place in the shared line (a wait Lease), instead of
 * entering it at their next ask behind everyone (the 500-node bench:
 * admitted a median 312 s after asking, against 97 s). */
Test(pace_shared, a_lost_claim_keeps_its_place_in_the_shared_line)
{
    cfg.max_joining = 2;
    pace_room_t r;
    shared_room(&r);
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 1000);
    cr_assert_eq(ask(&r, 1, 1000), PACE_CLAIM);
    cr_assert_eq(ask(&r, 2, 1000), PACE_CLAIM);
    pace_claim_t *w;
    cr_assert_eq(pace_shared_take_waiters(&r, &w), 0, "claimed nodes write no wait Lease");
    cr_assert_eq(r.n_claims, 2);
    int64_t claimed[2] = {r.claims[0].wall, r.claims[1].wall};
    /* another gate filled the set first: both claims are lost */
    pace_line_entry_t in[2] = {{.key = key(8), .admitted_wall = 1000}, {.key = key(9), .admitted_wall = 1000}};
    pace_line_entry_t out[8];
    size_t added;
    cr_assert_eq(pace_shared_plan(&r, &cfg, "g1", in, 2, 1500, 1500, out, 8, &added), 2);
    cr_assert_eq(added, 0);
    uint32_t n = pace_shared_take_waiters(&r, &w);
    cr_assert_eq(n, 2, "the lost claims enter the line");
    for (uint32_t i = 0; i < n; i++)
        cr_assert(w[i].wall == claimed[0] || w[i].wall == claimed[1], "at the time they were claimed");
    free(w);
    int full[] = {8, 9};
    uint64_t at[] = {1000, 1000};
    pace_room_set_shared(&r, view(full, at, 2, NULL, 0), 1600);
    cr_assert_eq(ask(&r, 1, 1600), PACE_BUDGET);
    cr_assert_eq(pace_shared_take_waiters(&r, &w), 0, "its next ask does not queue it again, later");
    /* an update that fails: the same */
    cfg.max_joining = 4;
    pace_room_set_shared(&r, view(NULL, NULL, 0, NULL, 0), 2000);
    cr_assert_eq(ask(&r, 3, 2000), PACE_CLAIM);
    pace_shared_plan(&r, &cfg, "g1", NULL, 0, 2000, 2000, out, 8, &added);
    cr_assert_eq(added, 1);
    pace_shared_written(&r, false, 2000);
    cr_assert_eq(pace_shared_take_waiters(&r, &w), 1);
    addrset_key_t k3 = key(3);
    cr_assert_eq(memcmp(&w[0].key, &k3, sizeof k3), 0);
    free(w);
    pace_room_destroy(&r);
}
