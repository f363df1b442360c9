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
    return (held_client_t){ss, pool, ua, sizeof ua - 1, accept, sizeof accept - 1};
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
    held_record(&t, &c, "OutOfSkew", T0);
    held_record(&t, &c, "OutOfSkew", T0 + 5000);
    held_record(&t, &c, "UnknownMachine", T0 + 10000);
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

Test(held, address_and_pool_are_the_key)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 16, 15 * MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.7"), b = v6("fd00::7");
    held_client_t aw = client(&a, "worker"), am = client(&a, "master"), bw = client(&b, "worker");
    held_record(&t, &aw, "OutOfSkew", T0);
    held_record(&t, &am, "OutOfSkew", T0);
    held_record(&t, &bw, "OutOfSkew", T0);
    held_table_t *all[] = {&t};
    held_view_t v = collect(all, 1, T0);
    cr_assert_eq(v.n, 3);
    cr_assert_not_null(find(&v, "10.0.0.7", "worker"));
    cr_assert_not_null(find(&v, "10.0.0.7", "master"));
    cr_assert_not_null(find(&v, "fd00::7", "worker"));
    held_view_release(&v);
    held_table_destroy(&t);
}

Test(held, quiet_clients_are_forgotten_and_their_slots_reused)
{
    held_table_t t;
    cr_assert_eq(held_table_init(&t, 2, MIN), 0);
    struct sockaddr_storage a = v4("10.0.0.1"), b = v4("10.0.0.2"), c = v4("10.0.0.3");
    held_client_t ca = client(&a, "worker"), cb = client(&b, "worker"), cc = client(&c, "worker");
    held_record(&t, &ca, "OutOfSkew", T0);
    held_record(&t, &cb, "OutOfSkew", T0);
    held_record(&t, &cc, "OutOfSkew", T0);    /* no room */
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
    held_record(&t, &cc, "OutOfSkew", T0 + MIN);
    held_record(&t, &ca, "OutOfSkew", T0 + MIN);
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
        held_record(&t, &c, "OutOfSkew", T0);
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
    held_record(&a, &cx, "OutOfSkew", T0);
    held_record(&a, &cx, "OutOfSkew", T0 + 5000);
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
    held_record(&a, &cx, "OutOfSkew", T0 + 10000);
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
    held_record(&t, &ca, "OutOfSkew", T0);
    held_record(&t, &cb, "OutOfSkew", T0 + 1);
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
        held_record(r->t, &c, "OutOfSkew", T0 + i);
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
