#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/addrset.h"

static struct sockaddr_storage v4(const char *ip)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    sin->sin_family = AF_INET;
    cr_assert_eq(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    sin6->sin6_family = AF_INET6;
    cr_assert_eq(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
    return ss;
}

static void add(addrset_builder_t *b, const char *ip, addrset_class_t cls)
{
    addrset_key_t key;
    cr_assert_eq(addrset_key_parse(ip, &key), 0, "%s", ip);
    addrset_builder_add(b, &key, cls);
}

Test(addrset, classes_by_address_both_families)
{
    addrset_builder_t b = {0};
    add(&b, "10.0.0.5", ADDRSET_PENDING);
    add(&b, "10.0.0.6", ADDRSET_ACTIVE);
    add(&b, "fd00::5", ADDRSET_PENDING);
    addrset_t *s = addrset_build(&b);
    cr_assert_not_null(s);
    struct sockaddr_storage a = v4("10.0.0.5"), n = v4("10.0.0.6"), u = v4("10.0.0.7");
    struct sockaddr_storage p6 = v6("fd00::5"), u6 = v6("fd00::6");
    cr_assert_eq(addrset_lookup(s, &a), ADDRSET_PENDING);
    cr_assert_eq(addrset_lookup(s, &n), ADDRSET_ACTIVE);
    cr_assert_eq(addrset_lookup(s, &u), ADDRSET_UNKNOWN);
    cr_assert_eq(addrset_lookup(s, &p6), ADDRSET_PENDING);
    cr_assert_eq(addrset_lookup(s, &u6), ADDRSET_UNKNOWN);
    struct sockaddr_storage unix_addr = {.ss_family = AF_UNIX};
    cr_assert_eq(addrset_lookup(s, &unix_addr), ADDRSET_UNKNOWN);
    cr_assert_eq(addrset_count(s, ADDRSET_PENDING), 2);
    cr_assert_eq(addrset_count(s, ADDRSET_ACTIVE), 1);
    cr_assert_eq(addrset_count(s, ADDRSET_UNKNOWN), 3);
    addrset_unref(s);
}

Test(addrset, ipv4_mapped_client_is_the_ipv4_address)
{
    addrset_builder_t b = {0};
    add(&b, "192.0.2.1", ADDRSET_PENDING);
    addrset_t *s = addrset_build(&b);
    struct sockaddr_storage mapped = v6("::ffff:192.0.2.1");
    cr_assert_eq(addrset_lookup(s, &mapped), ADDRSET_PENDING);
    addrset_unref(s);
}

Test(addrset, active_wins_over_pending_whatever_the_order)
{
    addrset_builder_t b = {0};
    add(&b, "10.1.0.1", ADDRSET_PENDING);
    add(&b, "10.1.0.1", ADDRSET_ACTIVE);
    add(&b, "10.1.0.2", ADDRSET_ACTIVE);
    add(&b, "10.1.0.2", ADDRSET_PENDING);
    add(&b, "10.1.0.3", ADDRSET_PENDING);
    add(&b, "10.1.0.3", ADDRSET_PENDING);
    addrset_t *s = addrset_build(&b);
    addrset_key_t k;
    addrset_key_parse("10.1.0.1", &k);
    cr_assert_eq(addrset_lookup_key(s, &k), ADDRSET_ACTIVE);
    addrset_key_parse("10.1.0.2", &k);
    cr_assert_eq(addrset_lookup_key(s, &k), ADDRSET_ACTIVE);
    cr_assert_eq(addrset_count(s, ADDRSET_ACTIVE), 2);
    cr_assert_eq(addrset_count(s, ADDRSET_PENDING), 1);
    addrset_unref(s);
}

Test(addrset, large_set_finds_every_member_and_no_other)
{
    addrset_builder_t b = {0};
    char ip[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        add(&b, ip, i % 3 ? ADDRSET_ACTIVE : ADDRSET_PENDING);
    }
    addrset_t *s = addrset_build(&b);
    cr_assert_not_null(s);
    /* Hosts of a few /16s, as a cluster's Nodes are: no long chains. */
    cr_expect_leq(addrset_longest_probe(s), 24, "longest probe %zu", addrset_longest_probe(s));
    for (int i = 0; i < 20000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        struct sockaddr_storage ss = v4(ip);
        cr_assert_eq(addrset_lookup(s, &ss), i % 3 ? ADDRSET_ACTIVE : ADDRSET_PENDING, "%s", ip);
        snprintf(ip, sizeof ip, "11.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        ss = v4(ip);
        cr_assert_eq(addrset_lookup(s, &ss), ADDRSET_UNKNOWN, "%s", ip);
    }
    addrset_unref(s);
}

Test(addrset, one_subnet_spreads_over_the_slots)
{
    addrset_builder_t b = {0};
    char ip[48];
    for (int i = 0; i < 4096; i++) {
        snprintf(ip, sizeof ip, "10.128.%d.%d", i >> 8, i & 255);
        add(&b, ip, ADDRSET_ACTIVE);
        snprintf(ip, sizeof ip, "fd00:10:128::%x", i);
        add(&b, ip, ADDRSET_PENDING);
    }
    addrset_t *s = addrset_build(&b);
    cr_expect_leq(addrset_longest_probe(s), 24, "longest probe %zu", addrset_longest_probe(s));
    addrset_unref(s);
}

Test(addrset, empty_set_and_references)
{
    addrset_builder_t b = {0};
    addrset_t *s = addrset_build(&b);
    cr_assert_not_null(s);
    struct sockaddr_storage a = v4("10.0.0.1");
    cr_assert_eq(addrset_lookup(s, &a), ADDRSET_UNKNOWN);
    cr_assert_eq(addrset_ref(s), s);
    addrset_unref(s);
    addrset_unref(s);
    addrset_unref(NULL);
}

Test(addrset, key_parse_takes_ip_literals_only)
{
    addrset_key_t k;
    const char *bad[] = {"", "10.0.0", "10.0.0.256", "host.example", "fd00::1%eth0", " 10.0.0.1", "10.0.0.1/24"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(addrset_key_parse(bad[i], &k), -1, "%s", bad[i]);
    cr_assert_eq(addrset_key_parse("::1", &k), 0);
    cr_assert_eq(k.b[15], 1);
}
