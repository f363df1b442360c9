#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "proxy/held.h"

#define MIN 60000ull
#define T0 1800000000000ull     /* a wall-clock time in ms */

static struct sockaddr_storage v4(const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    sin->sin_family = AF_INET;
    cr_assert_eq(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    sin6->sin6_family = AF_INET6;
    cr_assert_eq(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
    return ss;
}

static held_client_t client(const struct sockaddr_storage *ss, const char *pool)
{
    static const char ua[] = "Ignition/2.14.0";
    static const char accept[] = "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1";
    return (held_client_t){ss, pool, ua, sizeof ua - 1, accept, sizeof accept - 1, MCS_FAMILY_4_13};
}

static held_view_t collect(held_table_t *const *tables, size_t n, uint64_t now)
{
    const held_table_t *t[8];
    for (size_t i = 0; i < n; i++)
        t[i] = tables[i];
    held_view_t v;
    cr_assert_eq(held_collect(t, n, now, &v), 0);
    return v;
}

static const held_entry_t *find(const held_view_t *v, const char *ip, const char *pool)
{
    char text[64];
    for (size_t i = 0; i < v->n; i++) {
        held_addr_text(&v->entries[i], text, sizeof text);
        if (!strcmp(text, ip) && !strcmp(v->entries[i].pool, pool))
            return &v->entries[i];
    }
    return NULL;
}

Test(held, records_attempts_and_what_the_first_one_said)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 16, 15 * MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.7");
    held_client_t c = client(&a, "worker");
    held_record(&t, &c, "OutOfSkew", HELD_STATUS, T0);
    held_record(&t, &c, "OutOfSkew", HELD_STATUS, T0 + 5000);
    held_record(&t, &c, "UnknownMachine", HELD_STATUS, T0 + 10000);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + 11000);
    cr_assert_eq(v.n, 1);
    const held_entry_t *e = find(&v, "10.0.0.7", "worker");
    cr_assert_not_null(e);
    cr_assert_eq(e->attempts, 3);
    cr_assert_eq(e->first_seen_ms, T0);
    cr_assert_eq(e->last_seen_ms, T0 + 10000);
    cr_assert_str_eq(e->reason, "UnknownMachine");
    cr_assert_str_eq(e->user_agent, "Ignition/2.14.0");
    cr_assert_str_eq(held_spec_name(e->spec), "3.4.0");
    cr_assert_eq(e->admitted_ms, 0);
    cr_assert_eq(v.n_held, 1);
    held_view_release(&v);
    held_table_destroy(&t);
}

/* Held means held now: a node answered 403 (deny) or 200 (explain) does
 * not retry, so it is listed, with what it was answered, but not held;
 * a 503 after makes it held again, and the latest answer is the one
 * that counts across workers. */
Test(held, only_a_503_holds_a_node_and_the_latest_answer_counts)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 16, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 16, 15 * MIN), 0);
    struct sockaddr_storage addr = v4("10.0.0.9");
    held_client_t c = client(&addr, "worker");
    held_table_t *all[] = {&a, &b};
    static const struct { int status; const char *state; size_t n_held; } steps[] = {
        {403, "denied", 0}, {200, "explained", 0}, {400, "explained", 0}, {HELD_STATUS, "held", 1}, {403, "denied", 0},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        held_record(i % 2 ? &b : &a, &c, "OutOfSkew", steps[i].status, T0 + 1000 * i);
        held_view_t v = collect(all, 2, T0 + 1000 * i + 1);
        cr_assert_eq(v.n, 1);
        cr_assert_eq(v.entries[0].status, steps[i].status, "step %zu", i);
        cr_assert_str_eq(held_state_name(&v.entries[0]), steps[i].state, "step %zu", i);
        cr_assert_eq(v.n_held, steps[i].n_held, "step %zu: %zu held", i, v.n_held);
        cr_assert_eq(held_now(&v.entries[0]), steps[i].n_held == 1);
        held_view_release(&v);
    }
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* admittedAfterHold counts nodes that were held: one denied (403) and
 * admitted later, after a reboot, is listed as admitted but not counted;
 * one held (503) on another worker's table is. */
Test(held, an_admission_after_a_denial_is_not_an_admission_after_a_hold)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 16, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 16, 15 * MIN), 0);
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage denied_addr = v4("10.0.1.1"), held_addr = v4("10.0.1.2");
    held_client_t denied = client(&denied_addr, "worker"), held = client(&held_addr, "worker");
    held_record(&a, &denied, "OutOfSkew", 403, T0);
    held_record(&b, &held, "OutOfSkew", HELD_STATUS, T0);
    cr_expect(held_admit(&a, peers, 2, &denied, T0 + 1000), "the denied node's admission is news");
    cr_expect(held_admit(&a, peers, 2, &held, T0 + 1000), "the held node's admission is news");
    held_table_t *all[] = {&a, &b};
    held_view_t v = collect(all, 2, T0 + 2000);
    cr_expect_eq(v.admitted_after_hold, 1, "%llu admitted after a hold", (unsigned long long)v.admitted_after_hold);
    cr_expect_str_eq(held_state_name(find(&v, "10.0.1.1", "worker")), "admitted");
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* A node is its address (DESIGN 1.9, issue 26): the pool its latest
 * request asked for is an attribute, not part of the key. */
Test(held, the_address_is_the_key_and_the_pool_an_attribute)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 16, 15 * MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.7"), b = v6("fd00::7");
    held_client_t aw = client(&a, "worker"), am = client(&a, "master"), bw = client(&b, "worker");
    held_record(&t, &aw, "OutOfSkew", HELD_STATUS, T0);
    held_record(&t, &am, "OutOfSkew", HELD_STATUS, T0 + 1);
    held_record(&t, &bw, "OutOfSkew", HELD_STATUS, T0);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + 2);
    cr_assert_eq(v.n, 2);
    cr_assert_null(find(&v, "10.0.0.7", "worker"), "the pool is the latest request's");
    const held_entry_t *e = find(&v, "10.0.0.7", "master");
    cr_assert_not_null(e);
    cr_assert_eq(e->attempts, 2);
    cr_assert_eq(e->first_seen_ms, T0);
    cr_assert_not_null(find(&v, "fd00::7", "worker"));
    held_view_release(&v);
    held_table_destroy(&t);
}

/* Issue 26 (found in review): made-up pools, the last segment of a path
 * any client chooses, filled the held part when it was keyed by address
 * and pool: 542 addresses x 8 pools take the default 4096, and a real
 * node held after them was not recorded. By address, they are 542. */
Test(held, made_up_pools_cannot_fill_the_table)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 4096, 15 * MIN), 0);
    char ip[32], pool[32];
    for (int i = 0; i < 542; i++) {
        snprintf(ip, sizeof ip, "10.5.%d.%d", i / 250, i % 250 + 1);
        struct sockaddr_storage a = v4(ip);
        for (int k = 0; k < 8; k++) {
            snprintf(pool, sizeof pool, "made-up-%d", k);
            held_client_t c = client(&a, pool);
            held_record(&t, &c, "OutOfSkew", HELD_STATUS, T0 + (uint64_t)k);
        }
    }
    struct sockaddr_storage real = v4("10.6.0.1");
    held_client_t cr = client(&real, "worker");
    held_record(&t, &cr, "OutOfSkew", HELD_STATUS, T0 + 10);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + 11);
    cr_expect_not_null(find(&v, "10.6.0.1", "worker"), "the real node held after the made-up pools is not recorded");
    cr_expect_eq(v.overflow, 0, "%llu not recorded", (unsigned long long)v.overflow);
    cr_expect_eq(v.n, 543, "%zu entries", v.n);
    cr_expect_eq(v.n_held, 543);
    held_view_release(&v);
    held_table_destroy(&t);
}

Test(held, quiet_clients_are_forgotten_and_their_slots_reused)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 2, MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.1"), b = v4("10.0.0.2"), c = v4("10.0.0.3");
    held_client_t ca = client(&a, "worker"), cb = client(&b, "worker"), cc = client(&c, "worker");
    held_record(&t, &ca, "OutOfSkew", HELD_STATUS, T0);
    held_record(&t, &cb, "OutOfSkew", HELD_STATUS, T0);
    held_record(&t, &cc, "OutOfSkew", HELD_STATUS, T0);    /* no room */
    cr_assert_eq(atomic_load(&t.overflow), 1);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + MIN - 1);
    cr_assert_eq(v.n, 2);
    cr_assert_eq(v.overflow, 1);
    held_view_release(&v);
    v = collect(all, 1, T0 + MIN);
    cr_assert_eq(v.n, 0, "a minute of silence forgets");
    held_view_release(&v);
    /* The forgotten slots take new clients; one that comes back starts afresh. */
    held_record(&t, &cc, "OutOfSkew", HELD_STATUS, T0 + MIN);
    held_record(&t, &ca, "OutOfSkew", HELD_STATUS, T0 + MIN);
    v = collect(all, 1, T0 + MIN);
    cr_assert_eq(v.n, 2);
    cr_assert_eq(find(&v, "10.0.0.1", "worker")->attempts, 1);
    cr_assert_eq(find(&v, "10.0.0.1", "worker")->first_seen_ms, T0 + MIN);
    cr_assert_not_null(find(&v, "10.0.0.3", "worker"));
    held_view_release(&v);
    held_table_destroy(&t);
}

Test(held, a_full_table_stays_bounded)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 64, 15 * MIN), 0);
    char ip[32];
    for (int i = 0; i < 500; i++) {
        snprintf(ip, sizeof ip, "10.1.%d.%d", i / 200, i % 200 + 1);
        struct sockaddr_storage a = v4(ip);
        held_client_t c = client(&a, "worker");
        held_record(&t, &c, "OutOfSkew", HELD_STATUS, T0);
    }
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0);
    cr_assert_leq(v.n, 64);
    cr_assert_geq(v.n, 48, "probing fills most of the table: %zu", v.n);
    cr_assert_eq(v.n + v.overflow, 500);
    held_view_release(&v);
    held_table_destroy(&t);
}

Test(held, admission_marks_once_also_across_workers)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.0.9"), y = v4("10.0.0.10");
    held_client_t cx = client(&x, "worker"), cy = client(&y, "worker");
    /* Never held: admitting it records nothing. */
    cr_assert_not(held_admit(&a, peers, 2, &cy, T0));
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0);
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0 + 5000);
    /* Its admitted request came on worker b's connection. */
    cr_assert(held_admit(&b, peers, 2, &cx, T0 + 6000));
    cr_assert_not(held_admit(&b, peers, 2, &cx, T0 + 7000), "counted once");
    cr_assert_not(held_admit(&a, peers, 2, &cx, T0 + 8000), "the holder marks it, uncounted");
    held_table_t *all[] = {&a, &b};
    held_view_t v = collect(all, 2, T0 + 9000);
    cr_assert_eq(v.n, 1, "one client, merged");
    cr_assert_eq(v.entries[0].attempts, 2);
    cr_assert_eq(v.entries[0].first_seen_ms, T0);
    cr_assert_neq(v.entries[0].admitted_ms, 0);
    cr_assert_eq(v.n_held, 0);
    cr_assert_eq(v.admitted_after_hold, 1);
    held_view_release(&v);
    /* Held again (a node re-provisioned at the same address): held anew. */
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0 + 10000);
    v = collect(all, 2, T0 + 10000);
    cr_assert_eq(v.n, 1);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

Test(held, views_are_sorted_oldest_first)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 16, 15 * MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.5"), b = v4("10.0.0.1");
    held_client_t ca = client(&a, "worker"), cb = client(&b, "worker");
    held_record(&t, &ca, "OutOfSkew", HELD_STATUS, T0);
    held_record(&t, &cb, "OutOfSkew", HELD_STATUS, T0 + 1);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + 2);
    char text[64];
    held_addr_text(&v.entries[0], text, sizeof text);
    cr_assert_str_eq(text, "10.0.0.5");
    held_view_release(&v);
    held_table_destroy(&t);
}

/* The owner writes while another thread copies: every copy it gets is
 * one the owner wrote whole (attempts and last seen move together). */
typedef struct {
    held_table_t *t;
    _Atomic int done;
} race_t;

static void *race_writer(void *arg)
{
    race_t *r = arg;
    struct sockaddr_storage a = v4("10.0.0.1");
    held_client_t c = client(&a, "worker");
    for (uint64_t i = 1; i <= 200000; i++)
        held_record(r->t, &c, "OutOfSkew", HELD_STATUS, T0 + i);
    atomic_store(&r->done, 1);
    return NULL;
}

Test(held, readers_never_see_a_torn_entry)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 4, 15 * MIN), 0);
    race_t r = {&t, 0};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, race_writer, &r), 0);
    held_table_t *all[] = {&t};
    size_t copies = 0;
    for (int k = 0; k < 100000 && !atomic_load(&r.done); k++) {
        held_view_t v = collect(all, 1, T0);
        for (size_t i = 0; i < v.n; i++) {
            cr_assert_eq(v.entries[i].last_seen_ms, T0 + v.entries[i].attempts, "torn: %llu vs %llu",
                         (unsigned long long)v.entries[i].last_seen_ms, (unsigned long long)v.entries[i].attempts);
            copies++;
        }
        held_view_release(&v);
    }
    pthread_join(th, NULL);
    held_view_t v = collect(all, 1, T0);
    cr_assert_eq(v.n, 1);
    cr_assert_eq(v.entries[0].attempts, 200000);
    held_view_release(&v);
    held_table_destroy(&t);
    cr_log_info("%zu consistent copies", copies);
}

/* Issue 20.3: held on worker a's keep-alive connection, admitted once on a
 * new connection that worker b took, then held again on a's connection:
 * held now, whatever the tables' order, and the next admission is news. */
Test(held, the_latest_event_wins_across_workers)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.0.9");
    held_client_t cx = client(&x, "worker");
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0);
    cr_assert(held_admit(&b, peers, 2, &cx, T0 + 1000));
    held_record(&a, &cx, "BootImageControllerDegraded", HELD_STATUS, T0 + 2000);
    held_table_t *ab[] = {&a, &b}, *ba[] = {&b, &a};
    for (int order = 0; order < 2; order++) {
        held_view_t v = collect(order ? ba : ab, 2, T0 + 2500);
        cr_assert_eq(v.n, 1);
        cr_assert_eq(v.entries[0].admitted_ms, 0, "held again: not admitted");
        cr_assert_eq(v.n_held, 1);
        cr_assert_eq(v.entries[0].attempts, 2);
        cr_assert_eq(v.entries[0].last_seen_ms, T0 + 2000);
        cr_assert_str_eq(v.entries[0].reason, "BootImageControllerDegraded", "the latest hold's reason");
        held_view_release(&v);
    }
    /* Admitted again, on b: news, counted; then admitted. */
    cr_assert(held_admit(&b, peers, 2, &cx, T0 + 3000), "the second admission ends the second hold");
    cr_assert_not(held_admit(&a, peers, 2, &cx, T0 + 3500), "and only once");
    held_view_t v = collect(ab, 2, T0 + 4000);
    cr_assert_eq(v.n, 1);
    cr_assert_eq(v.entries[0].admitted_ms, T0 + 3000);
    cr_assert_eq(v.n_held, 0);
    cr_assert_eq(v.admitted_after_hold, 2);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* The merge alone: two workers' entries of one client, the admission on
 * one, the hold on the other; the later decides, whichever it is. */
Test(held, the_merge_compares_the_latest_hold_with_the_latest_admission)
{
    for (int admitted_last = 0; admitted_last < 2; admitted_last++) {
        /* Each round later than the last, as the wall clock goes. */
        const uint64_t t0 = T0 + (uint64_t)admitted_last * 60 * MIN;
        held_table_t a, b;
        cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
        cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
        const held_table_t *peers[] = {&a, &b};
        struct sockaddr_storage x = v4("10.0.0.9");
        held_client_t cx = client(&x, "worker");
        held_record(&a, &cx, "OutOfSkew", HELD_STATUS, t0);
        held_record(&b, &cx, "OutOfSkew", HELD_STATUS, t0 + 100);
        /* a admits it (news), then b holds it again, or not. */
        cr_assert(held_admit(&a, peers, 2, &cx, t0 + 200));
        if (!admitted_last)
            held_record(&b, &cx, "OutOfSkew", HELD_STATUS, t0 + 300);
        held_table_t *all[] = {&a, &b};
        held_view_t v = collect(all, 2, t0 + 400);
        cr_assert_eq(v.n, 1);
        cr_assert_eq(v.n_held, admitted_last ? 0 : 1);
        cr_assert_eq(v.entries[0].admitted_ms, admitted_last ? t0 + 200 : 0);
        cr_assert_eq(v.entries[0].attempts, admitted_last ? 2 : 3);
        held_view_release(&v);
        held_table_destroy(&a);
        held_table_destroy(&b);
    }
}

/* In one table the order of events is never lost to the clock's tick. */
Test(held, a_hold_and_an_admission_in_one_ms_keep_their_order)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&t};
    struct sockaddr_storage x = v4("10.0.0.9");
    held_client_t cx = client(&x, "worker");
    held_table_t *all[] = {&t};
    held_record(&t, &cx, "OutOfSkew", HELD_STATUS, T0);
    cr_assert(held_admit(&t, peers, 1, &cx, T0));
    held_view_t v = collect(all, 1, T0);
    cr_assert_eq(v.n_held, 0, "admitted after the hold");
    held_view_release(&v);
    held_record(&t, &cx, "OutOfSkew", HELD_STATUS, T0);
    v = collect(all, 1, T0);
    cr_assert_eq(v.n_held, 1, "held after the admission");
    held_view_release(&v);
    held_table_destroy(&t);
}

/* The same across workers: held on a, admitted on b, held again on a, all
 * in one tick of the clock (the hold does not read b's table). */
Test(held, a_hold_after_another_workers_admission_in_one_ms_wins)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.0.9");
    held_client_t cx = client(&x, "worker");
    held_table_t *all[] = {&a, &b};
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0);
    cr_assert(held_admit(&b, peers, 2, &cx, T0));
    held_view_t v = collect(all, 2, T0);
    cr_assert_eq(v.n_held, 0, "admitted after the hold");
    held_view_release(&v);
    held_record(&a, &cx, "OutOfSkew", HELD_STATUS, T0);
    v = collect(all, 2, T0);
    cr_assert_eq(v.n_held, 1, "held after the admission");
    held_view_release(&v);
    cr_assert(held_admit(&b, peers, 2, &cx, T0), "and admitted after that");
    v = collect(all, 2, T0);
    cr_assert_eq(v.n_held, 0);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* Issue 20.4: max_clients clients stored, at least 99 %, from sequential
 * and random addresses of either family; never more than max_clients. */
typedef enum { SEQ_V4, RANDOM_V4, SEQ_V6, RANDOM_V6, SEQ_V6_PREFIX } addrs_t;

static struct sockaddr_storage nth_addr(addrs_t kind, uint32_t i, uint64_t *rng)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(*rng >> 32);
    if (kind == SEQ_V4 || kind == RANDOM_V4) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(kind == SEQ_V4 ? (10u << 24 | 1u << 16) + i : r);
        return ss;
    }
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr.s6_addr[0] = 0xfd;
    if (kind == SEQ_V6) {
        /* fd00::1, fd00::2, ...: the host part counts. */
        sin6->sin6_addr.s6_addr[14] = (uint8_t)(i >> 8);
        sin6->sin6_addr.s6_addr[15] = (uint8_t)i;
    } else if (kind == SEQ_V6_PREFIX) {
        /* fd00:0:0:N::1: one host per /64, the prefix counts. */
        sin6->sin6_addr.s6_addr[6] = (uint8_t)(i >> 8);
        sin6->sin6_addr.s6_addr[7] = (uint8_t)i;
        sin6->sin6_addr.s6_addr[15] = 1;
    } else {
        for (int k = 1; k < 16; k++) {
            *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
            sin6->sin6_addr.s6_addr[k] = (uint8_t)(*rng >> 56);
        }
    }
    return ss;
}

static size_t fill(held_table_t *t, addrs_t kind, uint32_t n, uint32_t from, uint64_t now)
{
    uint64_t rng = 42 + kind + from;
    for (uint32_t i = 0; i < n; i++) {
        struct sockaddr_storage a = nth_addr(kind, from + i, &rng);
        held_client_t c = client(&a, "worker");
        held_record(t, &c, "OutOfSkew", HELD_STATUS, now);
    }
    held_table_t *all[] = {t};
    held_view_t v = collect(all, 1, now);
    size_t n_stored = v.n;
    held_view_release(&v);
    return n_stored;
}

Test(held, a_table_stores_99_percent_of_max_clients)
{
    static const uint32_t sizes[] = {4096, 2048, 1000, 100};
    static const char *const names[] = {"sequential IPv4", "random IPv4", "sequential IPv6", "random IPv6",
                                        "sequential IPv6 /64s"};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (addrs_t kind = SEQ_V4; kind <= SEQ_V6_PREFIX; kind++) {
            held_table_t t;
            uint32_t max = sizes[s];
            cr_assert_eq(held_table_init(&t, max, 15 * MIN), 0);
            size_t n = fill(&t, kind, max, 0, T0);
            cr_log_info("%u %s: %zu stored", max, names[kind], n);
            cr_assert_geq(n * 100, (size_t)max * 99, "%u %s: %zu stored", max, names[kind], n);
            /* As many again: the bound holds. */
            n = fill(&t, kind, max, max, T0);
            cr_assert_eq(n, max, "%u %s: %zu stored past the bound", max, names[kind], n);
            cr_assert_eq(atomic_load(&t.overflow), (uint64_t)max * 2 - max);
            held_table_destroy(&t);
        }
    }
}

/* A full table whose clients were all forgotten takes as many new ones. */
Test(held, forgotten_clients_give_their_room_back)
{
    held_table_t t;
    uint32_t max = 1000;
    cr_assert_eq(held_table_init(&t, max, MIN), 0);
    size_t n = fill(&t, SEQ_V4, max, 0, T0);
    cr_assert_geq(n * 100, (size_t)max * 99, "%zu stored", n);
    n = fill(&t, RANDOM_V4, max, 0, T0 + MIN);
    cr_assert_geq(n * 100, (size_t)max * 99, "%zu stored after the first ones were forgotten", n);
    cr_assert_leq(n, max);
    held_table_destroy(&t);
}

/* Issue 20.5: refusals by the admission policies, from many addresses and
 * pools, take no room of the held nodes, before or after them. */
Test(held, refusals_cannot_push_held_nodes_out)
{
    held_table_t t;
    uint32_t max = 64;
    cr_assert_eq(held_table_init(&t, max, 15 * MIN), 0);
    struct sockaddr_storage before = v4("10.9.0.1"), after = v4("10.9.0.2");
    held_client_t cb = client(&before, "worker"), ca = client(&after, "master");
    held_record(&t, &cb, "OutOfSkew", HELD_STATUS, T0);
    char ip[32], pool[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(ip, sizeof ip, "10.1.%d.%d", i / 250, i % 250 + 1);
        snprintf(pool, sizeof pool, "pool-%d", i);
        struct sockaddr_storage a = v4(ip);
        held_client_t c = client(&a, pool);
        held_record_refusal(&t, &c, "TokenMissing", 403, T0 + 1);
    }
    /* One address asking for many pools is one client. */
    struct sockaddr_storage one = v4("10.2.0.1");
    for (int i = 0; i < 100; i++) {
        snprintf(pool, sizeof pool, "p%d", i);
        held_client_t c = client(&one, pool);
        held_record_refusal(&t, &c, "TokenInvalid", 403, T0 + 2);
    }
    held_record(&t, &ca, "OutOfSkew", HELD_STATUS, T0 + 3);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0 + 4);
    cr_assert_not_null(find(&v, "10.9.0.1", "worker"), "the node held before the flood is listed");
    cr_assert_not_null(find(&v, "10.9.0.2", "master"), "a node held after the flood is listed");
    size_t refused = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.entries[i].refused) {
            refused++;
            cr_assert_str_eq(v.entries[i].pool, "", "a refusal has no pool");
        }
    }
    cr_assert_eq(refused, max / HELD_REFUSED_DIV, "the refusals fill their own part: %zu", refused);
    cr_assert_eq(v.n, refused + 2);
    held_view_release(&v);
    held_table_destroy(&t);
}

/* A refused node that then gets its config (given the token, say) shows
 * as admitted, whichever pool it asked for. */
Test(held, an_admission_ends_a_refusal_of_the_address)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.0.9");
    held_client_t refused = client(&x, "worker"), admitted = client(&x, "worker");
    held_record_refusal(&a, &refused, "TokenMissing", 403, T0);
    cr_assert(held_admit(&b, peers, 2, &admitted, T0 + 1000));
    held_table_t *all[] = {&a, &b};
    held_view_t v = collect(all, 2, T0 + 2000);
    cr_assert_eq(v.n, 1);
    cr_assert_eq(v.n_held, 0);
    cr_assert_str_eq(v.entries[0].reason, "TokenMissing");
    cr_assert_eq(v.entries[0].admitted_ms, T0 + 1000);
    cr_assert_eq(v.admitted_after_hold, 0, "a 403 held nobody");
    held_view_release(&v);
    /* A policy's hold (UnknownMachine, a 503) that an admission ends is. */
    held_record_refusal(&a, &refused, "UnknownMachine", HELD_STATUS, T0 + 3000);
    cr_assert(held_admit(&b, peers, 2, &admitted, T0 + 4000));
    v = collect(all, 2, T0 + 5000);
    cr_assert_eq(v.admitted_after_hold, 1);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* One node, an entry in each part (found in review): held by the verdict,
 * then refused (its token rotated out): it is denied now, not held; held
 * UnknownMachine by the machines policy, then OutOfSkew once its Machine
 * showed: held once, for OutOfSkew. Whichever worker saw each. */
Test(held, an_address_hold_and_refusal_count_by_the_later_one)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.0.3"), y = v4("10.0.0.4");
    held_client_t xw = client(&x, "worker"), yw = client(&y, "worker");
    held_record(&a, &xw, "OutOfSkew", HELD_STATUS, T0);
    held_record_refusal(&b, &xw, "TokenInvalid", 403, T0 + 1000);
    held_record_refusal(&a, &yw, "UnknownMachine", HELD_STATUS, T0);
    held_record(&b, &yw, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_view_t v = collect(all, 2, T0 + 2000);
    cr_expect_eq(v.n, 2, "an address's older entry of the other part is still listed");
    cr_expect_eq(v.n_held, 1);
    const held_entry_t *ex = find(&v, "10.0.0.3", ""), *ey = find(&v, "10.0.0.4", "worker");
    cr_assert_not_null(ex);
    cr_expect_str_eq(held_state_name(ex), "denied");
    cr_expect_null(find(&v, "10.0.0.3", "worker"), "the hold the refusal came after is listed");
    cr_assert_not_null(ey);
    cr_expect_str_eq(ey->reason, "OutOfSkew");
    cr_expect_null(find(&v, "10.0.0.4", ""), "the UnknownMachine hold the verdict's came after is listed");
    held_view_release(&v);
    /* Held by the verdict again after the refusal: held, for OutOfSkew. */
    held_record(&a, &xw, "OutOfSkew", HELD_STATUS, T0 + 3000);
    v = collect(all, 2, T0 + 4000);
    ex = find(&v, "10.0.0.3", "worker");
    cr_assert_not_null(ex);
    cr_expect_str_eq(held_state_name(ex), "held");
    cr_expect_null(find(&v, "10.0.0.3", ""));
    cr_expect_eq(v.n_held, 2);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* Holds of one address for two pools are one node (issue 26; they were
 * two, as NAT neighbours), whichever worker saw each: listed once, with
 * the pool of its latest hold. */
Test(held, holds_of_one_address_for_two_pools_are_one_node)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    held_table_t *ab[] = {&a, &b}, *ba[] = {&b, &a};
    struct sockaddr_storage x = v4("10.0.0.5");
    held_client_t w = client(&x, "worker"), i = client(&x, "infra");
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0);
    held_record(&b, &i, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0 + 2000);
    held_record(&b, &i, "OutOfSkew", HELD_STATUS, T0 + 3000);
    for (int order = 0; order < 2; order++) {
        held_view_t v = collect(order ? ba : ab, 2, T0 + 4000);
        cr_expect_eq(v.n, 1);
        cr_expect_eq(v.n_held, 1);
        cr_expect_not_null(find(&v, "10.0.0.5", "infra"), "the latest hold's pool");
        cr_expect_eq(v.entries[0].attempts, 4);
        held_view_release(&v);
    }
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* A hold and a later refusal of one address for another pool are one
 * node (issue 26; the refusal was a NAT neighbour's and hid nothing): the
 * later event counts, it is denied, not held. */
Test(held, a_refusal_for_another_pool_supersedes_an_earlier_hold)
{
    held_table_t a;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a};
    struct sockaddr_storage x = v4("10.0.0.7");
    held_client_t w = client(&x, "worker"), i = client(&x, "infra");
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0);
    held_record_refusal(&a, &i, "TokenInvalid", 403, T0 + 1000);
    held_view_t v = collect(all, 1, T0 + 1500);
    cr_expect_eq(v.n, 1);
    cr_expect_eq(v.n_held, 0);
    cr_expect_null(find(&v, "10.0.0.7", "worker"), "the hold the refusal came after is listed");
    held_view_release(&v);
    held_table_destroy(&a);
}

/* One node held, then refused (token rotated out), then admitted: the
 * admission ends both entries at once (a tie), and the node is listed
 * once, by its hold, which names the pool (found in review). */
Test(held, one_admitted_node_is_listed_once)
{
    held_table_t a;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a};
    held_table_t *all[] = {&a};
    struct sockaddr_storage x = v4("10.0.0.8");
    held_client_t w = client(&x, "worker");
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0);
    held_record_refusal(&a, &w, "TokenInvalid", 403, T0 + 1000);
    cr_assert(held_admit(&a, peers, 1, &w, T0 + 2000));
    held_view_t v = collect(all, 1, T0 + 3000);
    cr_expect_eq(v.n, 1, "one node, %zu entries in /held", v.n);
    cr_expect_not_null(find(&v, "10.0.0.8", "worker"));
    cr_expect_eq(v.n_held, 0);
    held_view_release(&v);
    held_table_destroy(&a);
}

/* A pool name longer than an entry keeps: the refusal of a long pool's
 * node supersedes that node's hold, and its held entry keeps the first
 * HELD_POOL_LEN - 1 bytes. */
Test(held, a_long_pool_name_is_matched_by_what_the_entry_keeps)
{
    held_table_t a;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a};
    struct sockaddr_storage x = v4("10.0.0.9");
    char pool[200];
    memset(pool, 'p', sizeof pool - 1);
    pool[sizeof pool - 1] = '\0';
    held_client_t c = client(&x, pool);
    held_record(&a, &c, "OutOfSkew", HELD_STATUS, T0);
    held_record(&a, &c, "OutOfSkew", HELD_STATUS, T0 + 500);
    held_view_t v = collect(all, 1, T0 + 600);
    cr_expect_eq(v.n, 1);
    cr_expect_eq(strlen(v.entries[0].pool), HELD_POOL_LEN - 1);
    held_view_release(&v);
    held_record_refusal(&a, &c, "TokenInvalid", 403, T0 + 1000);
    v = collect(all, 1, T0 + 2000);
    cr_expect_eq(v.n, 1, "%zu entries", v.n);
    cr_expect_eq(v.n_held, 0);
    held_view_release(&v);
    held_table_destroy(&a);
}

/* A refusal seen by two workers is merged into one entry. Address X:
 * refused (pool worker) at T0 on worker a, then held OutOfSkew at
 * T0+1000, then refused for another pool (infra) at T0+2000 on worker b.
 * Address Y: the same with the workers swapped. A node is its address
 * (issue 26; the infra refusal was a NAT neighbour's and both holds
 * stayed): the latest event is the refusal, so neither is held. */
Test(held, a_merged_refusal_later_than_the_hold_supersedes_it_whatever_pool)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.1.1"), y = v4("10.0.1.2");
    held_client_t xw = client(&x, "worker"), xi = client(&x, "infra");
    held_client_t yw = client(&y, "worker"), yi = client(&y, "infra");
    held_record_refusal(&a, &xw, "UnknownMachine", HELD_STATUS, T0);
    held_record(&a, &xw, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_record_refusal(&b, &xi, "TokenInvalid", 403, T0 + 2000);
    held_record_refusal(&b, &yw, "UnknownMachine", HELD_STATUS, T0);
    held_record(&b, &yw, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_record_refusal(&a, &yi, "TokenInvalid", 403, T0 + 2000);
    held_view_t v = collect(all, 2, T0 + 3000);
    cr_expect_null(find(&v, "10.0.1.1", "worker"), "X: a hold a later refusal superseded is listed");
    cr_expect_null(find(&v, "10.0.1.2", "worker"), "Y: a hold a later refusal superseded is listed");
    cr_expect_eq(v.n, 2, "%zu entries", v.n);
    cr_expect_eq(v.n_held, 0, "held nodes counted: %zu", v.n_held);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* The same merge, the other way: held at T0+1000, refused (token rotated
 * out, pool worker) at T0+2000 on the other worker; an older refusal
 * (pool infra, T0) sits on the first. The latest refusal is later than
 * the hold: denied, not held. */
Test(held, a_merged_refusal_of_the_holds_pool_supersedes_it_whichever_worker)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.2.1"), y = v4("10.0.2.2");
    held_client_t xw = client(&x, "worker"), xi = client(&x, "infra");
    held_client_t yw = client(&y, "worker"), yi = client(&y, "infra");
    held_record_refusal(&a, &xi, "TokenInvalid", 403, T0);
    held_record(&a, &xw, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_record_refusal(&b, &xw, "TokenInvalid", 403, T0 + 2000);
    held_record_refusal(&b, &yi, "TokenInvalid", 403, T0);
    held_record(&b, &yw, "OutOfSkew", HELD_STATUS, T0 + 1000);
    held_record_refusal(&a, &yw, "TokenInvalid", 403, T0 + 2000);
    held_view_t v = collect(all, 2, T0 + 3000);
    cr_expect_null(find(&v, "10.0.2.1", "worker"), "X: a hold its own later refusal superseded is listed");
    cr_expect_null(find(&v, "10.0.2.2", "worker"), "Y: a hold its own later refusal superseded is listed");
    cr_expect_eq(v.n_held, 0, "held nodes counted: %zu", v.n_held);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* One admission ends a node's hold and its refusal, and the hold stays
 * listed (it names the pool). The admitting worker's clock may read no
 * later than the refusal (another worker's cached time): the refusal's
 * admission is then written at refusal + 1 ms and the hold's at now, no
 * tie, and the hold went (found in review). */
Test(held, one_admission_after_a_refusal_on_a_worker_ahead_keeps_the_hold)
{
    held_table_t a, b;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    cr_assert_eq(held_table_init(&b, 8, 15 * MIN), 0);
    held_table_t *all[] = {&a, &b};
    const held_table_t *peers[] = {&a, &b};
    struct sockaddr_storage x = v4("10.0.3.1");
    held_client_t w = client(&x, "worker");
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0);
    held_record_refusal(&a, &w, "TokenInvalid", 403, T0 + 1000);
    /* Worker b admits it with a clock reading the refusal's moment. */
    cr_assert(held_admit(&b, peers, 2, &w, T0 + 1000));
    held_view_t v = collect(all, 2, T0 + 3000);
    cr_expect_eq(v.n, 1, "%zu entries", v.n);
    cr_expect_not_null(find(&v, "10.0.3.1", "worker"), "the admitted node is listed by its refusal (no pool)");
    cr_expect_eq(v.n_held, 0);
    held_view_release(&v);
    held_table_destroy(&a);
    held_table_destroy(&b);
}

/* An admission of the address ends its refusal and its hold whatever
 * pool each asked for (issue 26; one for another pool was a NAT
 * neighbour's and ended neither), and counts as an admission after that
 * (UnknownMachine) hold. */
Test(held, an_admission_for_another_pool_ends_the_addresss_refusal_and_hold)
{
    held_table_t a;
    cr_assert_eq(held_table_init(&a, 8, 15 * MIN), 0);
    const held_table_t *peers[] = {&a};
    held_table_t *all[] = {&a};
    struct sockaddr_storage x = v4("10.0.4.1");
    held_client_t w = client(&x, "worker"), i = client(&x, "infra");
    held_record_refusal(&a, &w, "UnknownMachine", HELD_STATUS, T0);
    cr_expect(held_admit(&a, peers, 1, &i, T0 + 1000), "another pool's admission did not end the refusal");
    held_view_t v = collect(all, 1, T0 + 2000);
    cr_expect_eq(v.n_held, 0);
    cr_expect_eq(v.admitted_after_hold, 1);
    held_view_release(&v);
    held_record(&a, &w, "OutOfSkew", HELD_STATUS, T0 + 3000);
    cr_expect(held_admit(&a, peers, 1, &i, T0 + 4000), "another pool's admission did not end the hold");
    v = collect(all, 1, T0 + 5000);
    cr_expect_eq(v.n_held, 0);
    cr_expect_eq(v.admitted_after_hold, 2);
    held_view_release(&v);
    held_table_destroy(&a);
}
