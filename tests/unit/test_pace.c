/* The pace room (proxy/pace.h): the joining budget, the line in the order
 * nodes were first paced, the head hold, join_timeout and per_minute, with
 * injected time and loopback addresses as nodes. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "proxy/client_table.h"
#include "proxy/pace.h"

static pace_room_t room;
static config_pace_t cfg;

static void setup(void)
{
    cr_assert_eq(pace_room_init(&room, 1000), 0);
    cfg = (config_pace_t){.enabled = true, .max_joining = 10, .join_timeout_ms = 60000, .head_hold_ms = 15000,
                          .max_pending_csrs = 90, .replicas = 1};
}

static void teardown(void)
{
    pace_room_destroy(&room);
}

TestSuite(pace, .init = setup, .fini = teardown);

static struct sockaddr_storage node(int i)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(0x7f010000u + (uint32_t)i);   /* 127.1.x.y */
    return ss;
}

/* The room's decision for a request of node i at now. */
static pace_decision_t decide_in(pace_room_t *r, int i, uint64_t now)
{
    struct sockaddr_storage a = node(i);
    return pace_decide(r, &cfg, &a, "worker", now);
}

/* One request of node i at now: true when admitted. */
static bool ask(int i, uint64_t now)
{
    return decide_in(&room, i, now).cause == PACE_ADMITTED;
}

static pace_stats_t stats_at(uint64_t now)
{
    pace_report_t rep;
    cr_assert_eq(pace_report(&room, &cfg, now, false, &rep), 0);
    return rep.stats;
}

Test(pace, fifty_at_once_admit_exactly_max_joining)
{
    int admitted = 0;
    for (int i = 0; i < 50; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 10);
    /* their retries, within their slot, are admitted again; nobody else */
    admitted = 0;
    for (int i = 0; i < 50; i++)
        admitted += ask(i, 5000);
    cr_assert_eq(admitted, 10);
    for (int i = 0; i < 10; i++)
        cr_assert(ask(i, 6000), "node %d: a retry inside its slot", i);
}

Test(pace, freed_slots_go_in_the_order_nodes_first_asked_whatever_their_retry_timing)
{
    cfg.max_joining = 3;
    cfg.join_timeout_ms = 20000;
    for (int i = 0; i < 3; i++)
        cr_assert(ask(i, 1000));
    for (int i = 3; i < 10; i++)
        cr_assert_not(ask(i, 1000 + (uint64_t)i));  /* line: 3, 4, 5, ... */
    /* They retry, the latest first: nobody's turn while no slot is free. */
    for (int i = 9; i >= 3; i--)
        cr_assert_not(ask(i, 10000));
    /* The three joining ones time out; the last of the line retries first. */
    for (int i = 9; i >= 3; i--) {
        bool got = ask(i, 21001 + (uint64_t)(9 - i));
        cr_assert_eq(got, i <= 5, "node %d (line place %d) %s", i, i - 3, got ? "admitted" : "paced");
    }
}

Test(pace, a_node_that_went_away_does_not_block_the_line)
{
    cfg.max_joining = 1;
    cr_assert(ask(0, 0));
    cr_assert_not(ask(1, 100));     /* first in line, then gone */
    cr_assert_not(ask(2, 200));
    /* the slot frees at join_timeout; node 1 has not asked for 15 s */
    cr_assert(ask(2, 60000 + 200), "the head of the line is absent: the slot passes on");
    /* node 1 comes back: still first of the line, behind the node joining */
    cr_assert_not(ask(1, 60000 + 300));
}

Test(pace, a_present_head_keeps_the_free_slot)
{
    cfg.max_joining = 1;
    cr_assert(ask(0, 0));
    cr_assert_not(ask(1, 100));
    cr_assert_not(ask(2, 200));
    cr_assert_not(ask(1, 55000));   /* node 1 retries now and then */
    cr_assert_not(ask(2, 60001), "node 1 asked within head_hold: the slot is its");
    cr_assert(ask(1, 60002));
}

Test(pace, a_node_that_never_joins_frees_its_slot_at_join_timeout)
{
    cfg.max_joining = 1;
    cfg.join_timeout_ms = 4000;
    cr_assert(ask(0, 0));
    cr_assert_not(ask(1, 10));
    cr_assert_not(ask(1, 3999));
    cr_assert(ask(1, 4000));
    pace_stats_t st = stats_at(4000);
    cr_assert_eq(st.waiting, 0u);
    cr_assert_eq(st.joining, 1u);
    cr_assert_eq(st.admitted_total, 2u);
    cr_assert_eq(st.timed_out_total, 1u);
}

Test(pace, per_minute_caps_the_admissions_of_any_minute)
{
    cfg.per_minute = 4;
    int admitted = 0;
    for (int i = 0; i < 8; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 4, "max_joining 10, but 4 a minute");
    cr_assert_not(ask(4, 60999));
    cr_assert(ask(4, 61000));
}

Test(pace, the_report_lists_the_line_in_order)
{
    cfg.max_joining = 1;
    cr_assert(ask(0, 0));
    for (int i = 5; i >= 1; i--)
        cr_assert_not(ask(i, (uint64_t)(100 * (6 - i))));
    pace_report_t rep;
    cr_assert_eq(pace_report(&room, &cfg, 1000, true, &rep), 0);
    cr_assert_eq(rep.n_line, 5u);
    cr_assert_eq(rep.stats.waiting, 5u);
    cr_assert_eq(rep.stats.present, 5u);
    for (size_t k = 1; k < rep.n_line; k++)
        cr_assert_lt(rep.line[k - 1].first_ms, rep.line[k].first_ms, "line order is the order first paced");
    cr_assert_str_eq(rep.line[0].pool, "worker");
    cr_assert_eq(rep.n_joining, 1u);
    cr_assert_str_eq(rep.joining[0].pool, "worker");
    pace_report_release(&rep);
    /* Each paced request says why and where: the budget is full; node 5
     * was paced first (at 100 ms), node 1 last. */
    pace_decision_t d = decide_in(&room, 5, 1100);
    cr_assert_eq(d.cause, PACE_BUDGET);
    cr_assert_eq(d.place, 1u);
    cr_assert_eq(decide_in(&room, 1, 1100).place, 5u);
}

Test(pace, a_full_line_of_present_nodes_paces_a_newcomer_unrecorded_and_never_admits_past_the_budget)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 4), 0);
    cfg.max_joining = 2;
    int admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 2);
    pace_stats_t st = stats_at(1000);
    cr_assert_eq(st.joining, 2u, "the joining ones always fit");
    cr_assert_eq(st.waiting, 4u);
    cr_assert_eq(st.unrecorded_total, 4u);
    cr_assert_eq(st.paced_total[PACE_ROOM], 4u);
    pace_decision_t d = decide_in(&room, 11, 1001);
    cr_assert_eq(d.cause, PACE_ROOM);
    cr_assert_eq(d.place, 0u);
}

/* The review's repro: room 16, max_joining 2, join_timeout 40 s,
 * head_hold 3 s. Two strangers admitted at 0, 14 ask once at 26 s; from
 * 27.6 s a real node asks every second while a new stranger asks once
 * every 0.3 s. Before, the full room gave the real node no place and,
 * once the slots freed at 40 s, no admission: it was paced past 58 s.
 * Now the absent strangers make way, the real node keeps its place, and
 * it is admitted on its first request after 40 s. */
Test(pace, a_trickle_of_strangers_does_not_wedge_a_full_room)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 16), 0);
    cfg.max_joining = 2;
    cfg.join_timeout_ms = 40000;
    cfg.head_hold_ms = 3000;
    cr_assert(ask(1000, 0));
    cr_assert(ask(1001, 0));
    for (int i = 0; i < 14; i++)
        cr_assert_not(ask(2000 + i, 26000));
    const int real = 1;
    uint64_t admitted_at = 0;
    int stranger = 3000;
    for (uint64_t t = 27600, next_real = 27600; t <= 58000 && !admitted_at; t += 300) {
        if (t >= next_real) {
            if (ask(real, t))
                admitted_at = t;
            next_real += 1000;
        }
        if (!admitted_at)
            cr_assert_not(ask(stranger++, t), "a stranger at %llu ms, behind the real node", (unsigned long long)t);
    }
    cr_assert(admitted_at, "the real node was paced until 58 s");
    cr_assert_geq(admitted_at, 40000u);
    cr_assert_leq(admitted_at, 41000u, "admitted at %llu ms", (unsigned long long)admitted_at);
    pace_stats_t st = stats_at(admitted_at);
    cr_assert_gt(st.evicted_total, 0u);
    cr_assert_eq(st.waiting, 15u, "a full line, less the real node");
}

/* A full line of absent nodes and a free slot: the newcomer is admitted
 * (nobody present ahead) and counted, whatever the line holds. */
Test(pace, a_full_line_never_refuses_a_free_slot)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 8), 0);
    cfg.max_joining = 1;
    cfg.join_timeout_ms = 100000;
    cfg.head_hold_ms = 1000;
    cr_assert(ask(0, 0));
    for (int i = 1; i <= 8; i++)
        cr_assert_not(ask(i, 10));
    cr_assert_eq(stats_at(10).waiting, 8u);
    /* the slot frees at 100 s; all 8 of the line are long gone */
    cr_assert(ask(99, 100000));
    pace_stats_t st = stats_at(100000);
    cr_assert_eq(st.joining, 1u);
    cr_assert_eq(st.unrecorded_total, 0u);
    cr_assert_eq(decide_in(&room, 100, 100001).cause, PACE_BUDGET);
    cr_assert_eq(stats_at(100001).evicted_total, 1u, "one absent node made way for node 100");
}

/* ---- following the API (pace_room_set_view) ---------------------------- */

static addrset_key_t key_of(int i)
{
    struct sockaddr_storage a = node(i);
    addrset_key_t k;
    cr_assert_eq(addrset_key_from_sockaddr(&a, &k), 0);
    return k;
}

/* A view: nodes ready[] Ready and not_ready[] not (each created at
 * created, on the room's clock), n_csrs pending bootstrapper client CSRs
 * created at csr_created (the approver counts them too) and n_others
 * more it counts (Denied, Failed, serving) created then too; n_nodes
 * Nodes and n_machines Machines (-1: not watched); trusted or not. Any
 * list may be NULL. */
typedef struct view_spec {
    bool trusted;
    const int *ready;
    size_t n_ready;
    const int *not_ready;
    size_t n_not_ready;
    int64_t created;
    size_t n_csrs;
    int64_t csr_created;
    size_t n_others;
    size_t n_nodes;
    int64_t n_machines;
} view_spec_t;

static pace_view_t *view_of(view_spec_t s)
{
    pace_view_t *v = calloc(1, sizeof *v);
    cr_assert(v);
    v->trusted = s.trusted;
    if (!s.trusted)
        snprintf(v->why, sizeof v->why, "the API watch is failing: test");
    v->addrs = calloc(s.n_ready + s.n_not_ready + 1, sizeof *v->addrs);
    for (size_t i = 0; i < s.n_ready; i++) {
        v->addrs[v->n_addrs] = (pace_view_addr_t){.key = key_of(s.ready[i]), .created = s.created, .ready = true,
                                                  .node = (uint32_t)v->n_addrs, .primary = true};
        v->n_addrs++;
    }
    v->not_ready_created = calloc(s.n_not_ready + 1, sizeof(int64_t));
    for (size_t i = 0; i < s.n_not_ready; i++) {
        v->addrs[v->n_addrs] =
            (pace_view_addr_t){.key = key_of(s.not_ready[i]), .created = s.created, .node = (uint32_t)v->n_addrs,
                               .primary = true};
        v->n_addrs++;
        v->not_ready_created[v->n_not_ready++] = s.created;
    }
    pace_view_sort_addrs(v);
    v->csr_created = calloc(s.n_csrs + 1, sizeof(int64_t));
    for (size_t i = 0; i < s.n_csrs; i++)
        v->csr_created[v->n_csrs++] = s.csr_created;
    v->approver_created = calloc(s.n_csrs + s.n_others + 1, sizeof(int64_t));
    cr_assert(v->approver_created);
    for (size_t i = 0; i < s.n_csrs + s.n_others; i++)
        v->approver_created[v->n_approver++] = s.csr_created;
    v->n_nodes = s.n_nodes;
    v->n_machines = s.n_machines;
    cr_assert(v->addrs && v->not_ready_created && v->csr_created);
    return v;
}


Test(pace, a_ready_node_frees_its_slot_and_the_next_of_the_line_go_in_order_whatever_their_retry_timing)
{
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true}), 0);
    int admitted = 0;
    for (int i = 0; i < 50; i++)
        admitted += ask(i, 1000 + (uint64_t)i);
    cr_assert_eq(admitted, 10);
    for (int i = 10; i < 50; i++)
        cr_assert_not(ask(i, 15000));   /* the line keeps asking (head_hold 15 s) */
    /* Nodes 0, 1, 2 are Ready 20 s later: their slots free now, not at
     * join_timeout (60 s). */
    const int ready[] = {0, 1, 2};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = ready, .n_ready = 3}), 21000);
    pace_stats_t st = stats_at(21000);
    cr_assert_eq(st.joining, 7u);
    cr_assert_eq(st.joined_total, 3u);
    cr_assert_eq(st.timed_out_total, 0u);
    /* The line retries, the last first: exactly 10, 11, 12 get in. */
    for (int i = 49; i >= 10; i--) {
        bool got = ask(i, 22000 + (uint64_t)(49 - i));
        cr_assert_eq(got, i <= 12, "node %d %s", i, got ? "admitted" : "paced");
    }
    cr_assert_eq(stats_at(23000).joining, 10u);
}

Test(pace, the_budget_is_the_clusters_young_not_ready_nodes_and_csrs_plus_replicas_times_our_unseen)
{
    cfg.max_joining = 12;
    cfg.replicas = 3;
    /* Nothing joining anywhere: 12 / 3 = 4 of ours, each counted 3 times. */
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true}), 0);
    int admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 4);
    cr_assert_eq(stats_at(1000).used, 12u);
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 1000), 0);

    /* Other replicas' nodes: 3 young Nodes not Ready (addresses 100..102)
     * and 2 pending CSRs, V = 5: (12 - 5) / 3 = 2 of ours. */
    const int others[] = {100, 101, 102};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .not_ready = others, .n_not_ready = 3,
                                                    .created = 500, .n_csrs = 2, .csr_created = 500}),
                       1000);
    admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 2, "V 5 + 3 x 2 = 11 <= 12; a third would make 14");
    pace_stats_t st = stats_at(1000);
    cr_assert_eq(st.young_not_ready, 3u);
    cr_assert_eq(st.young_csrs, 2u);
    cr_assert_eq(st.unseen, 2u);
    cr_assert_eq(st.used, 11u);
    cr_assert(st.api);

    /* Node 0 (ours) shows as a Node not Ready: the API counts it (V 6),
     * ours unseen drop to 1: 6 + 3 = 9, room for one more (12). */
    const int more[] = {100, 101, 102, 0};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .not_ready = more, .n_not_ready = 4,
                                                    .created = 1500, .n_csrs = 2, .csr_created = 500}),
                       2000);
    cr_assert_eq(stats_at(2000).used, 9u);
    admitted = 0;
    for (int i = 2; i < 10; i++)
        admitted += ask(i, 2000);
    cr_assert_eq(admitted, 1);
    cr_assert_eq(stats_at(2000).used, 12u);

    /* join_timeout (60 s) and the 10 s skew later the Nodes of then are
     * no longer young, nor the CSRs (join_timeout): only ours count
     * (their slots too have timed out by then). */
    st = stats_at(72000);
    cr_assert_eq(st.young_not_ready, 0u);
    cr_assert_eq(st.young_csrs, 0u);
}

Test(pace, denied_and_serving_csrs_hold_the_ceiling_but_are_no_joining_node)
{
    cfg.max_pending_csrs = 5;
    const int64_t now = 4 * 3600 * 1000;
    /* 5 node CSRs the approver counts, none a pending client CSR (say
     * Denied ones, and serving ones of new Nodes): at the ceiling, though
     * the budget counts none of them. */
    pace_room_set_view(&room,
                       view_of((view_spec_t){.trusted = true, .n_others = 5, .csr_created = now - 1000, .n_nodes = 40,
                                             .n_machines = 70}),
                       now);
    cr_assert_eq(decide_in(&room, 1, now).cause, PACE_CEILING);
    cr_assert_not(ask(0, now + 1));
    pace_stats_t st = stats_at(now + 2);
    cr_assert(st.ceiling);
    cr_assert_eq(st.pending_csrs, 5u);
    cr_assert_eq(st.young_csrs, 0u);
    cr_assert_eq(st.used, 0u);
    cr_assert_eq(st.approver_limit, 170u, "max(Machines 70, Nodes 40) + 100");
    cr_assert(st.machines_counted);
    /* 4 of them: under the ceiling. Machines not watched: Nodes + 100. */
    pace_room_set_view(&room,
                       view_of((view_spec_t){.trusted = true, .n_others = 4, .csr_created = now - 1000, .n_nodes = 40,
                                             .n_machines = -1}),
                       now + 3);
    cr_assert(ask(0, now + 4));
    st = stats_at(now + 5);
    cr_assert_not(st.ceiling);
    cr_assert_eq(st.pending_csrs, 4u);
    cr_assert_eq(st.approver_limit, 140u);
    cr_assert_not(st.machines_counted);
}

Test(pace, the_csr_ceiling_holds_every_new_node_and_lifting_it_admits_again)
{
    cfg.max_pending_csrs = 5;
    /* 5 kubelet CSRs pending since 50 min ago (past join_timeout, so not
     * in V, but within the approver's hour): nobody new is admitted. */
    const int64_t now = 4 * 3600 * 1000;
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .n_csrs = 5, .csr_created = now - 50 * 60000}),
                       now);
    cr_assert_eq(decide_in(&room, 1, now).cause, PACE_CEILING);
    for (int i = 0; i < 5; i++)
        cr_assert_not(ask(i, now + (uint64_t)i));
    pace_stats_t st = stats_at(now + 10);
    cr_assert(st.ceiling);
    cr_assert_eq(st.pending_csrs, 5u);
    cr_assert_eq(st.joining, 0u);
    /* An hour after their creation they are no longer the approver's. */
    cr_assert(ask(0, now + 10 * 60000 + 1), "the CSRs left the hour");
    /* Back at the ceiling: node 0 (joining) is admitted again within its
     * slot; the others still wait. Then the CSRs are approved. */
    const int64_t later = now + 10 * 60000 + 20000;
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .n_csrs = 5, .csr_created = later}), later);
    cr_assert(ask(0, later + 1));
    cr_assert_not(ask(1, later + 2));
    cr_assert_eq(decide_in(&room, 2, later + 3).cause, PACE_CEILING);
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true}), later + 3);
    cr_assert(ask(1, later + 4));
    /* A view that cannot be trusted says nothing of the ceiling. */
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = false, .n_csrs = 50, .csr_created = now}), now);
    cr_assert_neq(decide_in(&room, 3, later + 5).cause, PACE_CEILING);
}

Test(pace, blind_it_frees_slots_only_at_join_timeout_and_never_admits_past_the_budget)
{
    cfg.replicas = 2;
    /* No view (file source): replicas x ours <= 10, so 5 of ours. */
    int admitted = 0;
    for (int i = 0; i < 20; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 5);
    pace_stats_t st = stats_at(1000);
    cr_assert_not(st.api);
    cr_assert_eq(st.used, 10u);
    cr_assert(strstr(st.why, "enforcement.source"), "%s", st.why);
    /* A view that cannot be trusted (a collection failing) shows nodes 0..4
     * Ready: the room does not take its word, and frees nothing. */
    const int ready[] = {0, 1, 2, 3, 4};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = false, .ready = ready, .n_ready = 5}), 2000);
    for (int i = 19; i >= 5; i--)
        cr_assert_not(ask(i, 3000));
    st = stats_at(3000);
    cr_assert_eq(st.joining, 5u);
    cr_assert_eq(st.joined_total, 0u);
    cr_assert(strstr(st.why, "failing"), "%s", st.why);
    /* A trusted view counted 2 x 3 of ours unseen, and let 2 more in (V 0:
     * 2 x 5 = 10)... then the API fails: blind, 2 x joining = 10 again,
     * and no one else gets in before join_timeout. */
    for (int i = 5; i < 20; i++)
        cr_assert_not(ask(i, 30000));
    cr_assert(ask(5, 61000), "join_timeout (60 s) freed the first five");
    cr_assert_eq(stats_at(61000).timed_out_total, 5u);
}

Test(pace, a_trusted_view_then_a_failing_one_never_admits_past_the_blind_budget)
{
    /* Trusted: nodes 0..9 admitted; 0..4 show as Nodes not Ready (counted
     * in V once), 5..9 unseen: V 5 + 5 = 10. */
    const int seen[] = {0, 1, 2, 3, 4};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true}), 0);
    for (int i = 0; i < 10; i++)
        cr_assert(ask(i, 1000));
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .not_ready = seen, .n_not_ready = 5,
                                                    .created = 1500}), 2000);
    cr_assert_eq(stats_at(2000).used, 10u);
    /* The watch fails: blind, the own joining count is the budget used. */
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = false}), 3000);
    for (int i = 10; i < 20; i++)
        cr_assert_not(ask(i, 4000));
    cr_assert_eq(stats_at(4000).used, 10u);
}

Test(pace, the_admitted_to_ready_seconds_fill_the_histogram)
{
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true}), 0);
    cr_assert(ask(0, 0));
    cr_assert(ask(1, 0));
    cr_assert(ask(2, 0));
    const int r0[] = {0};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = r0, .n_ready = 1}), 45000);
    const int r01[] = {0, 1};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = r01, .n_ready = 2}), 300000);
    cfg.join_timeout_ms = 24ull * 3600 * 1000;
    const int r012[] = {0, 1, 2};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = r012, .n_ready = 3}), 4000000);
    pace_stats_t st = stats_at(4000000);
    cr_assert_eq(st.joined_total, 3u);
    cr_assert_eq(st.join_buckets[1], 1u, "45 s: le 60");
    cr_assert_eq(st.join_buckets[3], 1u, "300 s: le 300");
    cr_assert_eq(st.join_buckets[PACE_JOIN_BUCKETS], 1u, "4000 s: +Inf");
    cr_assert_eq(st.join_sum_ms, 45000u + 300000u + 4000000u);
}

/* ---- replicas (docs/pacing.md "Replicas") ------------------------------ */

static bool ask_in(pace_room_t *r, int i, uint64_t now)
{
    return decide_in(r, i, now).cause == PACE_ADMITTED;
}

enum { SIM_WAITING, SIM_UNSEEN, SIM_CSR, SIM_NOT_READY, SIM_READY };

/* The cluster as the API would show it now: Ready and not Ready Nodes,
 * pending CSRs. */
static pace_view_t *sim_view(const int *state, int n, int64_t now)
{
    int ready[256] = {0}, not_ready[256] = {0};
    size_t n_ready = 0, n_not_ready = 0, n_csrs = 0;
    for (int i = 0; i < n; i++) {
        if (state[i] == SIM_READY)
            ready[n_ready++] = i;
        else if (state[i] == SIM_NOT_READY)
            not_ready[n_not_ready++] = i;
        n_csrs += state[i] == SIM_CSR;
    }
    return view_of((view_spec_t){.trusted = true, .ready = ready, .n_ready = n_ready, .not_ready = not_ready,
                                 .n_not_ready = n_not_ready, .created = now, .n_csrs = n_csrs, .csr_created = now});
}

/* The example of the docs: 3 gates, max_joining 12, 4 each; gate 0's
 * Nodes appear, it admits 2 more while the others' stay unseen: 14. */
Test(pace, replicas_the_documented_excess_when_one_gates_nodes_register_first)
{
    cfg.max_joining = 12;
    cfg.replicas = 3;
    pace_room_t rooms[3];
    int state[64] = {0};
    for (int g = 0; g < 3; g++) {
        cr_assert_eq(pace_room_init(&rooms[g], 100), 0);
        pace_room_set_view(&rooms[g], sim_view(state, 64, 0), 0);
    }
    int admitted = 0;
    for (int g = 0; g < 3; g++)
        for (int i = 10 * g; i < 10 * g + 10; i++)
            admitted += ask_in(&rooms[g], i, 1000);
    cr_assert_eq(admitted, 12);
    for (int i = 0; i < 4; i++)
        state[i] = SIM_NOT_READY;       /* gate 0's: 0..3 */
    for (int g = 0; g < 3; g++)
        pace_room_set_view(&rooms[g], sim_view(state, 64, 2000), 2000);
    int more = 0;
    for (int i = 4; i < 10; i++)
        more += ask_in(&rooms[0], i, 3000);
    for (int g = 1; g < 3; g++)
        for (int i = 10 * g + 4; i < 10 * g + 10; i++)
            more += ask_in(&rooms[g], i, 3000);
    cr_assert_eq(more, 2, "gate 0: 4 + 3 x 2 <= 12; gates 1, 2: 4 + 3 x 5 > 12");
    cr_assert_leq(admitted + more, 12 + 2 * (12 / 3 - 1));
    for (int g = 0; g < 3; g++)
        pace_room_destroy(&rooms[g]);
}

/* Random scale-ups through 3 gates whose views agree, or lag (a gate
 * misses some updates): the nodes admitted and not Ready stay within
 * max_joining + (replicas - 1) x (floor(max_joining / replicas) - 1). */
Test(pace, replicas_never_pass_the_documented_bound)
{
    const int n = 200, gates = 3;
    cfg.max_joining = 12;
    cfg.replicas = (uint32_t)gates;
    cfg.join_timeout_ms = 24ull * 3600 * 1000;
    cfg.head_hold_ms = 3600 * 1000;
    const int bound = 12 + (gates - 1) * (12 / gates - 1);
    unsigned seed = 26;
    int worst = 0;
    for (int run = 0; run < 20; run++) {
        pace_room_t rooms[3];
        int state[200] = {0};
        for (int g = 0; g < gates; g++) {
            cr_assert_eq(pace_room_init(&rooms[g], 1000), 0);
            pace_room_set_view(&rooms[g], sim_view(state, n, 0), 0);
        }
        int joining = 0;
        for (uint64_t step = 1; step < 4000; step++) {
            uint64_t now = step * 10;
            int i = (int)(rand_r(&seed) % (unsigned)n);
            int before = state[i];
            switch (state[i]) {
            case SIM_WAITING:
                if (ask_in(&rooms[rand_r(&seed) % (unsigned)gates], i, now)) {
                    state[i] = SIM_UNSEEN;
                    joining++;
                }
                break;
            case SIM_UNSEEN:
            case SIM_CSR:
            case SIM_NOT_READY:
                state[i]++;
                joining -= state[i] == SIM_READY;
                break;
            }
            if (state[i] != before && before != SIM_WAITING)
                for (int g = 0; g < gates; g++)     /* each gate sees it, or not yet (lag) */
                    if (run % 2 == 0 || rand_r(&seed) % 3)
                        pace_room_set_view(&rooms[g], sim_view(state, n, (int64_t)now), now);
            cr_assert_leq(joining, bound, "run %d step %llu: %d joining", run, (unsigned long long)step, joining);
            if (joining > worst)
                worst = joining;
        }
        for (int g = 0; g < gates; g++)
            pace_room_destroy(&rooms[g]);
    }
    cr_log_info("replicas 3, max_joining 12: at most %d joining (bound %d)", worst, bound);
    cr_assert_geq(worst, 12, "the budget is used");
}

/* Workers read the clock before they take the room's lock: one whose now
 * is a tick behind a node another worker just admitted must not see that
 * node as admitted 2^64 ms ago (timed out: its slot free again). */
Test(pace, a_worker_a_tick_behind_does_not_time_out_a_node_just_admitted)
{
    cfg.max_joining = 1;
    cfg.per_minute = 1;
    cr_assert(ask(0, 1004));
    cr_assert_not(ask(1, 1000), "the slot is node 0's: no join_timeout passed");
    cr_assert_not(ask(2, 1001));
    pace_stats_t st = stats_at(1000);
    cr_assert_eq(st.timed_out_total, 0u);
    cr_assert_eq(st.joining, 1u);
}

/* ---- Nodes born for a node (issue 31 item 3) ---------------------------- */

/* 200 addresses whose Nodes are 10 hours old and NotReady (hosts
 * re-imaged under Nodes that survived, new machines on stale Nodes'
 * IPs): they are not the nodes being admitted, so each admission counts
 * (before: every one was "a Node", none was counted, 200 admitted). */
Test(pace, old_not_ready_nodes_neither_free_nor_skip_a_slot)
{
    const int64_t now = 11ll * 3600 * 1000;
    cfg.join_timeout_ms = 30 * 60000;
    int stale[200];
    for (int i = 0; i < 200; i++)
        stale[i] = i;
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .not_ready = stale, .n_not_ready = 200,
                                                    .created = now - 10ll * 3600 * 1000}),
                       (uint64_t)now);
    int admitted = 0;
    for (int i = 0; i < 200; i++)
        admitted += ask(i, (uint64_t)now);
    cr_assert_eq(admitted, 10, "max_joining 10: %d admitted", admitted);
    pace_stats_t st = stats_at((uint64_t)now);
    cr_assert_eq(st.unseen, 10u);
    cr_assert_eq(st.used, 10u);
    /* The old Nodes turn Ready (the re-imaged hosts' kubelets reuse them):
     * still not born for the nodes admitted, so no slot frees. */
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = stale, .n_ready = 200,
                                                    .created = now - 10ll * 3600 * 1000}),
                       (uint64_t)now + 1000);
    st = stats_at((uint64_t)now + 1000);
    cr_assert_eq(st.joining, 10u);
    cr_assert_eq(st.joined_total, 0u);
    cr_assert_eq(decide_in(&room, 150, (uint64_t)now + 1000).cause, PACE_BUDGET);
    /* A Node created after node 0's admission is its: it registers (V
     * counts it, O no longer), then, Ready, frees the slot. */
    const int born[] = {0};
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .not_ready = born, .n_not_ready = 1,
                                                    .created = now + 60000}),
                       (uint64_t)now + 61000);
    st = stats_at((uint64_t)now + 61000);
    cr_assert_eq(st.unseen, 9u);
    cr_assert_eq(st.young_not_ready, 1u);
    cr_assert_eq(st.used, 10u);
    pace_room_set_view(&room, view_of((view_spec_t){.trusted = true, .ready = born, .n_ready = 1,
                                                    .created = now + 60000}),
                       (uint64_t)now + 62000);
    st = stats_at((uint64_t)now + 62000);
    cr_assert_eq(st.joined_total, 1u);
    cr_assert_eq(st.joining, 9u);
}

/* ---- seeded hashing (issue 31 item 5) ----------------------------------- */

/* The inverse of hash_mix64: each xorshift by 33 is its own inverse, and
 * each odd multiplier has one modulo 2^64 (Newton's iteration). */
static uint64_t inverse_odd(uint64_t a)
{
    uint64_t x = a;
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}

static uint64_t unmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= inverse_odd(0xc4ceb9fe1a85ec53ull);
    h ^= h >> 33;
    h *= inverse_odd(0xff51afd7ed558ccdull);
    h ^= h >> 33;
    return h;
}

/* 4,096 addresses of fd00::/64 that the unkeyed slot (hash_mix64(lo ^
 * hash_mix64(hi)), the room's and the client table's before) puts in one
 * bucket of 4,096, found by inverting it, as an attacker would. */
static void crafted_chain(struct sockaddr_storage *out, size_t n)
{
    uint8_t prefix[8] = {0xfd, 0, 0, 0, 0, 0, 0, 0};
    uint64_t lo;
    memcpy(&lo, prefix, 8);
    for (size_t j = 0; j < n; j++) {
        uint64_t target = (uint64_t)(j + 1) << 12;          /* low 12 bits zero: bucket 0 */
        uint64_t hi = unmix64(unmix64(target) ^ lo);
        cr_assert_eq(hash_mix64(lo ^ hash_mix64(hi)) & 4095, 0u);
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out[j];
        memset(&out[j], 0, sizeof out[j]);
        in6->sin6_family = AF_INET6;
        memcpy(in6->sin6_addr.s6_addr, prefix, 8);
        memcpy(in6->sin6_addr.s6_addr + 8, &hi, 8);
    }
}

Test(pace, crafted_addresses_no_longer_share_one_chain)
{
    enum { N = 4096 };
    static struct sockaddr_storage addrs[N];
    crafted_chain(addrs, N);
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, N), 0);
    cfg.max_joining = 1;
    cr_assert(ask(0, 0));
    for (size_t j = 0; j < N; j++)
        cr_assert_neq(pace_decide(&room, &cfg, &addrs[j], "worker", 1).cause, PACE_ADMITTED);
    cr_assert_eq(stats_at(1).waiting, (uint32_t)N);
    size_t longest = 0;
    for (uint32_t b = 0; b <= room.mask; b++) {
        size_t len = 0;
        for (const pace_node_t *n = room.buckets[b]; n; n = n->chain)
            len++;
        if (len > longest)
            longest = len;
    }
    /* 4,097 keys in 4,096 buckets at random: the longest chain is about
     * 7 (ln n / ln ln n); all in one was 4,096. */
    cr_assert_leq(longest, 16u, "longest chain %zu", longest);
}

Test(pace, crafted_addresses_spread_over_the_client_table)
{
    enum { N = 4096 };
    static struct sockaddr_storage addrs[N];
    crafted_chain(addrs, N);
    client_table_t t;
    cr_assert_eq(client_table_init(&t), 0);
    for (size_t j = 0; j < N; j++)
        cr_assert_not_null(client_table_get(&t, &addrs[j]));
    size_t longest = 0;
    for (uint32_t b = 0; b <= t.mask; b++) {
        size_t len = 0;
        for (const client_share_t *c = t.buckets[b]; c; c = c->next)
            len++;
        if (len > longest)
            longest = len;
    }
    cr_assert_leq(longest, 16u, "longest chain %zu of %u buckets", longest, t.mask + 1);
    client_table_destroy(&t);
}

/* One NotReady Node that lists the addresses of 4 joining nodes (a
 * kubelet writes its Node's addresses): it is born for one of them, the
 * first admitted, and frees one slot when Ready. Before, all 4 counted as
 * registered (V 1, O 0: 3 slots free again), and its Ready freed all 4. */
Test(pace, one_node_is_born_for_one_joining_node_whatever_addresses_it_lists)
{
    cfg.max_joining = 4;
    for (int i = 0; i < 4; i++)
        cr_assert(ask(i, 1000 + (uint64_t)i));
    pace_view_t *v = view_of((view_spec_t){.trusted = true});
    v->addrs = realloc(v->addrs, 4 * sizeof *v->addrs);
    for (int i = 0; i < 4; i++)
        v->addrs[i] = (pace_view_addr_t){.key = key_of(i), .created = 2000, .node = 0, .primary = i == 0};
    v->n_addrs = 4;
    pace_view_sort_addrs(v);
    v->not_ready_created = realloc(v->not_ready_created, sizeof(int64_t));
    v->not_ready_created[0] = 2000;
    v->n_not_ready = 1;
    pace_room_set_view(&room, v, 3000);
    pace_stats_t st = stats_at(3000);
    cr_assert_eq(st.unseen, 3u);
    cr_assert_eq(st.used, 4u, "V 1 + O 3");
    cr_assert_eq(decide_in(&room, 10, 3001).cause, PACE_BUDGET);
    /* Ready: one slot frees, not four */
    pace_view_t *ready = view_of((view_spec_t){.trusted = true});
    ready->addrs = realloc(ready->addrs, 4 * sizeof *ready->addrs);
    for (int i = 0; i < 4; i++)
        ready->addrs[i] = (pace_view_addr_t){.key = key_of(i), .created = 2000, .ready = true, .node = 0, .primary = i == 0};
    ready->n_addrs = 4;
    pace_view_sort_addrs(ready);
    pace_room_set_view(&room, ready, 4000);
    st = stats_at(4000);
    cr_assert_eq(st.joined_total, 1u);
    cr_assert_eq(st.joining, 3u);
    cr_assert(ask(10, 4001));
    cr_assert_eq(decide_in(&room, 11, 4002).cause, PACE_BUDGET);
}

/* The review's wedge: a line of 8, max_joining 2, join_timeout 5 s,
 * head_hold 3 s; a new address asks once every 30 ms, a real node every
 * second from 2 s. Before, the line stayed full of strangers that had
 * asked within head_hold, the real node was paced without a place (room)
 * every time, and both slots, free from 5 s, went to nobody. Now, once
 * the slots have been free for head_hold, the strangers that asked once
 * hold them no more: they go to whoever asks, and the real node, in line
 * before they freed and asking again, keeps its turn. */
Test(pace, a_stream_of_one_shot_addresses_does_not_keep_free_slots_from_everyone)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 8), 0);
    cfg.max_joining = 2;
    cfg.join_timeout_ms = 5000;
    cfg.head_hold_ms = 3000;
    int stranger = 1000;
    uint64_t real_at = 0;
    for (uint64_t t = 0; t <= 16000; t += 30) {
        struct sockaddr_storage s = node(stranger++);
        pace_decide(&room, &cfg, &s, "worker", t);
        if (t >= 2000 && t % 1000 < 30 && !real_at && ask(1, t))
            real_at = t;
    }
    cr_assert(real_at, "the real node was never admitted");
    cr_assert_leq(real_at, 9000u, "admitted at %llu ms", (unsigned long long)real_at);
}

/* Places from the tree agree with the line's order through churn: nodes
 * leave from anywhere (admitted, forgotten, evicted) and the tickets run
 * out and are numbered again many times over. */
Test(pace, places_stay_exact_through_churn_and_renumbering)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 32), 0);
    cfg.max_joining = 1;
    cfg.join_timeout_ms = 3600 * 1000;
    cfg.head_hold_ms = 500;
    cr_assert(ask(0, 0));
    unsigned seed = 31;
    uint64_t t = 1;
    for (int round = 0; round < 3000; round++, t += 7) {
        int i = 1 + (int)(rand_r(&seed) % 200);
        pace_decision_t d = decide_in(&room, i, t);
        cr_assert_neq(d.cause, PACE_ADMITTED);
        if (d.cause == PACE_ROOM)
            continue;
        pace_report_t rep;
        cr_assert_eq(pace_report(&room, &cfg, t, true, &rep), 0);
        size_t at = 0;
        struct sockaddr_storage a = node(i);
        addrset_key_t k;
        addrset_key_from_sockaddr(&a, &k);
        while (at < rep.n_line && memcmp(&rep.line[at].key, &k, sizeof k))
            at++;
        cr_assert_lt(at, rep.n_line);
        cr_assert_eq(d.place, at + 1, "round %d: node %d at %zu, said %u", round, i, at + 1, d.place);
        pace_report_release(&rep);
    }
}
