/* os/nftables, the pure parts: the scripts install and remove run, and
 * reading libnftables' JSON listings. The listings are what libnftables
 * 1.0.6 prints for the table install writes (captured with nft -j), and
 * variations of it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/nftables.h"

static const nftables_port_t mcs_ports[] = {{22623, 22643}, {22624, 22644}};
static const nftables_redirect_t mcs = {"skewgate", mcs_ports, 2};

#define META "{\"metainfo\": {\"version\": \"1.0.6\", \"release_name\": \"Lester Gooch #5\", \"json_schema_version\": 1}}"
#define TABLE(name) "{\"table\": {\"family\": \"inet\", \"name\": \"" name "\", \"handle\": 2}}"
#define CHAIN_WITH(type, prio, policy)                                                                           \
    "{\"chain\": {\"family\": \"inet\", \"table\": \"skewgate\", \"name\": \"prerouting\", \"handle\": 1, "     \
    "\"type\": \"" type "\", \"hook\": \"prerouting\", \"prio\": " prio ", \"policy\": \"" policy "\"}}"
#define CHAIN CHAIN_WITH("nat", "-100", "accept")
#define RULE_EXPR(iif, from, to)                                                                                 \
    "[{\"match\": {\"op\": \"!=\", \"left\": {\"meta\": {\"key\": \"iifname\"}}, \"right\": \"" iif "\"}}, "  \
    "{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"tcp\", \"field\": \"dport\"}}, "    \
    "\"right\": " from "}}, {\"redirect\": {\"port\": " to "}}]"
#define RULE_IN(chain, expr)                                                                                     \
    "{\"rule\": {\"family\": \"inet\", \"table\": \"skewgate\", \"chain\": \"" chain "\", \"handle\": 7, "     \
    "\"expr\": " expr "}}"
#define RULE(from, to) RULE_IN("prerouting", RULE_EXPR("lo", from, to))
#define LISTING(...) "{\"nftables\": [" __VA_ARGS__ "]}"

/* What `nft -j list table inet skewgate` printed after install. */
static const char installed[] = LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22643") ", "
                                        RULE("22624", "22644"));

static void expect_differs(const char *json, const char *why_part)
{
    char why[512] = "";
    cr_expect_eq(nftables_compare(json, &mcs, why, sizeof why), NFTABLES_DIFFERS, "accepted: %s", json);
    cr_expect(strstr(why, why_part), "why \"%s\" lacks \"%s\"", why, why_part);
}

Test(nftables, install_script_replaces_the_table_in_one_transaction)
{
    char *s = nftables_install_script(&mcs);
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "add table inet skewgate\n"
                        "delete table inet skewgate\n"
                        "add table inet skewgate {\n"
                        "\tchain prerouting {\n"
                        "\t\ttype nat hook prerouting priority dstnat; policy accept;\n"
                        "\t\tiifname != \"lo\" tcp dport 22623 redirect to :22643\n"
                        "\t\tiifname != \"lo\" tcp dport 22624 redirect to :22644\n"
                        "\t}\n"
                        "}\n");
    free(s);
    s = nftables_remove_script("skewgate");
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "add table inet skewgate\ndelete table inet skewgate\n");
    free(s);
}

Test(nftables, nothing_but_an_identifier_reaches_a_script)
{
    static const char *const bad[] = {"", "a b", "x; flush ruleset", "x\nflush ruleset", "9x", "\"q\"", NULL};
    char why[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nftables_redirect_t r = {bad[i], mcs_ports, 2};
        cr_expect_not(nftables_redirect_valid(&r, why, sizeof why), "%s", bad[i] ? bad[i] : "NULL");
        cr_expect_null(nftables_install_script(&r));
        cr_expect_null(nftables_remove_script(bad[i]));
    }
    char longest[NFTABLES_TABLE_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[NFTABLES_TABLE_MAX] = '\0';
    nftables_redirect_t r = {longest, mcs_ports, 2};
    cr_expect(nftables_redirect_valid(&r, why, sizeof why));
    longest[NFTABLES_TABLE_MAX] = 'a';
    longest[NFTABLES_TABLE_MAX + 1] = '\0';
    cr_expect_not(nftables_redirect_valid(&r, why, sizeof why));
}

Test(nftables, ports_must_be_nonzero_distinct_and_bounded)
{
    char why[256];
    nftables_port_t twice[] = {{22623, 22643}, {22623, 22644}};
    nftables_port_t zero[] = {{0, 22643}};
    nftables_port_t to_zero[] = {{22623, 0}};
    nftables_port_t many[NFTABLES_MAX_PORTS + 1];
    for (size_t i = 0; i < sizeof many / sizeof *many; i++)
        many[i] = (nftables_port_t){(uint16_t)(1000 + i), 22643};
    const nftables_redirect_t bad[] = {
        {"skewgate", twice, 2}, {"skewgate", zero, 1}, {"skewgate", to_zero, 1},
        {"skewgate", mcs_ports, 0}, {"skewgate", many, NFTABLES_MAX_PORTS + 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_not(nftables_redirect_valid(&bad[i], why, sizeof why), "case %zu", i);
        cr_expect_null(nftables_install_script(&bad[i]));
    }
    nftables_redirect_t most = {"skewgate", many, NFTABLES_MAX_PORTS};
    char *s = nftables_install_script(&most);
    cr_assert_not_null(s);
    cr_expect(strstr(s, "tcp dport 1015 redirect to :22643\n"));
    free(s);
}

Test(nftables, listing_of_tables)
{
    cr_expect_eq(nftables_listing_has_table(LISTING(META ", " TABLE("skewgate")), "skewgate"), 1);
    cr_expect_eq(nftables_listing_has_table(LISTING(META ", " TABLE("other") ", " TABLE("skewgate")), "skewgate"), 1);
    cr_expect_eq(nftables_listing_has_table(LISTING(META ", " TABLE("other")), "skewgate"), 0);
    cr_expect_eq(nftables_listing_has_table(LISTING(META), "skewgate"), 0);
    /* Another family's table of the same name is not ours. */
    cr_expect_eq(nftables_listing_has_table(
                     LISTING("{\"table\": {\"family\": \"ip\", \"name\": \"skewgate\", \"handle\": 1}}"), "skewgate"), 0);
    cr_expect_eq(nftables_listing_has_table("", "skewgate"), -1);
    cr_expect_eq(nftables_listing_has_table("{\"tables\": []}", "skewgate"), -1);
}

Test(nftables, the_table_install_writes_compares_equal)
{
    char why[512] = "";
    cr_expect_eq(nftables_compare(installed, &mcs, why, sizeof why), NFTABLES_INSTALLED, "%s", why);
    /* Handles are the kernel's and the metainfo is nft's: neither counts. */
    static const char no_meta[] = LISTING(TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22643") ", "
                                          RULE("22624", "22644"));
    cr_expect_eq(nftables_compare(no_meta, &mcs, why, sizeof why), NFTABLES_INSTALLED, "%s", why);
    nftables_port_t one[] = {{443, 8443}};
    nftables_redirect_t r = {"skewgate", one, 1};
    cr_expect_eq(nftables_compare(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("443", "8443")), &r, why,
                                  sizeof why),
                 NFTABLES_INSTALLED, "%s", why);
}

Test(nftables, rules_that_differ_from_the_config)
{
    /* a port the config does not say */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22653") ", "
                           RULE("22624", "22644")),
                   "rule 1 redirects 22623 to :22653; the config says: iifname != \"lo\" tcp dport 22623 redirect to :22643");
    /* a rule missing */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22643")),
                   "the table has 1 rules; the config also says: iifname != \"lo\" tcp dport 22624 redirect to :22644");
    /* no rule at all */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN), "the table has 0 rules");
    /* a rule more */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22643") ", "
                           RULE("22624", "22644") ", " RULE("22625", "22645")),
                   "rule 3 redirects 22625 to :22645, which the config does not");
    /* the same rules in another order */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22624", "22644") ", "
                           RULE("22623", "22643")),
                   "rule 1 redirects 22624 to :22644");
    /* a redirect that would also catch loopback */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", "
                           RULE_IN("prerouting", RULE_EXPR("eth0", "22623", "22643")) ", " RULE("22624", "22644")),
                   "rule 1 is not a redirect install writes:");
    /* a rule of another shape */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", "
                           RULE_IN("prerouting", "[{\"accept\": null}]") ", " RULE("22624", "22644")),
                   "rule 1 is not a redirect install writes: {\"chain\":\"prerouting\",\"expr\":[{\"accept\":null}]");
    /* a redirect with more in it (a counter) */
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", "
                           RULE_IN("prerouting",
                                   "[{\"match\": {\"op\": \"!=\", \"left\": {\"meta\": {\"key\": \"iifname\"}}, \"right\": \"lo\"}}, "
                                   "{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"tcp\", \"field\": \"dport\"}}, "
                                   "\"right\": 22623}}, {\"counter\": {\"packets\": 0, \"bytes\": 0}}, {\"redirect\": {\"port\": 22643}}]")
                           ", " RULE("22624", "22644")),
                   "rule 1 is not a redirect install writes:");
}

Test(nftables, chains_and_objects_that_differ)
{
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN_WITH("filter", "-100", "accept") ", "
                           RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "the chain is {");
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN_WITH("nat", "0", "accept") ", "
                           RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "install writes chain prerouting { type nat hook prerouting priority dstnat; policy accept; }");
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN_WITH("nat", "-100", "drop") ", "
                           RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "\"policy\":\"drop\"");
    expect_differs(LISTING(META ", " TABLE("skewgate")), "the table holds 0 chains");
    expect_differs(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " CHAIN ", " RULE("22623", "22643") ", "
                           RULE("22624", "22644")),
                   "the table holds 2 chains");
    expect_differs(LISTING(META ", " TABLE("skewgate") ", "
                           "{\"set\": {\"family\": \"inet\", \"name\": \"s\", \"table\": \"skewgate\", \"type\": \"ipv4_addr\", \"handle\": 4}}, "
                           CHAIN ", " RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "the table holds a set \"s\", which install does not write");
    expect_differs(LISTING(META ", " TABLE("other") ", " CHAIN ", " RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "which is not part of table inet skewgate");
    expect_differs(LISTING(META ", " CHAIN ", " RULE("22623", "22643") ", " RULE("22624", "22644")),
                   "the listing holds 0 tables named inet skewgate");
}

Test(nftables, text_that_is_no_listing_differs)
{
    expect_differs("", "not a listing of libnftables' JSON output");
    expect_differs("[1, 2]", "not a listing");
    expect_differs("{\"nftables\": [42]}", "the listing holds 42");
    char why[64];
    /* A bound message is cut, not overrun. */
    cr_expect_eq(nftables_compare(LISTING(META ", " TABLE("skewgate") ", " CHAIN_WITH("filter", "0", "drop")), &mcs,
                                  why, sizeof why),
                 NFTABLES_DIFFERS);
    cr_expect_lt(strlen(why), sizeof why);
}

/* What install and remove may not destroy unasked: objects of a table of
 * that name that install does not write. */
static void expect_foreign(const char *json, int n, const char *what)
{
    char got[512] = "?";
    cr_expect_eq(nftables_listing_foreign(json, "skewgate", got, sizeof got), n, "%s", json);
    cr_expect_str_eq(got, what, "%s", json);
}

Test(nftables, objects_install_does_not_write_are_named)
{
    /* Install's own table, with its ports or others, and an empty table. */
    expect_foreign(installed, 0, "");
    expect_foreign(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("443", "8443")), 0, "");
    expect_foreign(LISTING(META ", " TABLE("skewgate")), 0, "");
    /* A hand-made table: a set and a drop rule in a filter chain. */
    expect_foreign(LISTING(META ", " TABLE("skewgate") ", "
                           "{\"set\": {\"family\": \"inet\", \"name\": \"blocked\", \"table\": \"skewgate\", \"type\": \"ipv4_addr\", \"handle\": 4}}, "
                           "{\"chain\": {\"family\": \"inet\", \"table\": \"skewgate\", \"name\": \"input\", \"handle\": 1, "
                           "\"type\": \"filter\", \"hook\": \"input\", \"prio\": 0, \"policy\": \"accept\"}}, "
                           RULE_IN("input", "[{\"drop\": null}]")),
                   3, "set \"blocked\", chain \"input\", a rule in chain \"input\"");
    /* A rule added to install's chain; a redirect in a chain that is not install's. */
    expect_foreign(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", " RULE("22623", "22643") ", "
                           RULE_IN("prerouting", "[{\"accept\": null}]")),
                   1, "a rule in chain \"prerouting\"");
    expect_foreign(LISTING(META ", " TABLE("skewgate") ", " CHAIN_WITH("nat", "0", "accept") ", " RULE("22623", "22643")),
                   2, "chain \"prerouting\", a rule in chain \"prerouting\"");
    /* Past four, the count says the rest. */
    expect_foreign(LISTING(META ", " TABLE("skewgate") ", " CHAIN ", "
                           RULE_IN("prerouting", "[{\"accept\": null}]") ", " RULE_IN("prerouting", "[{\"accept\": null}]") ", "
                           RULE_IN("prerouting", "[{\"accept\": null}]") ", " RULE_IN("prerouting", "[{\"accept\": null}]") ", "
                           RULE_IN("prerouting", "[{\"accept\": null}]")),
                   5, "a rule in chain \"prerouting\", a rule in chain \"prerouting\", a rule in chain \"prerouting\", "
                      "a rule in chain \"prerouting\", ...");
    char got[64];
    cr_expect_eq(nftables_listing_foreign("[1]", "skewgate", got, sizeof got), -1);
}
