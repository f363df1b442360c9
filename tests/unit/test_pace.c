/* The pace room (proxy/pace.h): the joining budget, the line in the order
 * nodes were first paced, the head hold, join_timeout and per_minute, with
 * injected time and loopback addresses as nodes. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>

#include "policy/decide.h"
#include "proxy/pace.h"

static pace_room_t room;
static config_pace_t cfg;

static void setup(void)
{
    cr_assert_eq(pace_room_init(&room, 1000), 0);
    cfg = (config_pace_t){.enabled = true, .max_joining = 10, .join_timeout_ms = 60000, .head_hold_ms = 15000};
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

/* One request of node i at now, as conn executes policy_decide's answer:
 * true when admitted. */
static bool ask(int i, uint64_t now)
{
    struct sockaddr_storage a = node(i);
    policy_pace_t p = pace_look(&room, &cfg, &a, now);
    if ((p.joining || p.turn) && pace_join(&room, &cfg, &a, "worker", now))
        return true;
    pace_wait(&room, &cfg, &a, "worker", now);
    return false;
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
    pace_stats_t st;
    pace_waiter_t w[4];
    cr_assert_eq(pace_report(&room, &cfg, 4000, &st, w, 4), 0u);
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
    pace_stats_t st;
    pace_waiter_t w[8];
    size_t n = pace_report(&room, &cfg, 1000, &st, w, 8);
    cr_assert_eq(n, 5u);
    cr_assert_eq(st.waiting, 5u);
    cr_assert_eq(st.present, 5u);
    for (size_t k = 1; k < n; k++)
        cr_assert_lt(w[k - 1].first_ms, w[k].first_ms, "line order is the order first paced");
    cr_assert_str_eq(w[0].pool, "worker");
}

Test(pace, a_full_room_paces_a_newcomer_unrecorded_and_never_admits_past_the_budget)
{
    pace_room_destroy(&room);
    cr_assert_eq(pace_room_init(&room, 4), 0);
    cfg.max_joining = 2;
    int admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += ask(i, 1000);
    cr_assert_eq(admitted, 2);
    pace_stats_t st;
    pace_waiter_t w[8];
    pace_report(&room, &cfg, 1000, &st, w, 8);
    cr_assert_eq(st.joining + st.waiting, 4u);
    cr_assert_eq(st.unrecorded_total, 6u);
}
