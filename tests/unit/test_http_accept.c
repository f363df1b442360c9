/* http_accept against the Machine Config Server's reading of Accept.
 * Every case comes from reading openshift/machine-config-operator's
 * pkg/server/api.go (parseAcceptHeader, detectSpecVersionFromAcceptHeader)
 * on release-4.13 (identical through release-4.18; the per-family tests at
 * the end read release-4.19, 4.20, 4.21 and 4.22), the go-semver it
 * vendors (vendor/github.com/coreos/go-semver/semver/semver.go, the same
 * file in every branch) and Go 1.19's strconv.ParseFloat and
 * sort.SliceStable; "4.13" marks what was also checked against the MCS
 * built from release-4.13 (tests/e2e_mcs). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "http/accept.h"

#define IGN "application/vnd.coreos.ignition+json"

typedef struct accept_case {
    const char *accept;
    ignition_spec_t spec;
} accept_case_t;

static ignition_spec_t spec_in(mcs_family_t family, const char *accept)
{
    return http_accept_ignition_spec(family, accept, accept ? strlen(accept) : 0);
}

static void check(mcs_family_t family, const accept_case_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(spec_in(family, cases[i].accept), cases[i].spec, "%s (%s): got %d, want %d", cases[i].accept,
                     mcs_family_name(family), spec_in(family, cases[i].accept), cases[i].spec);
}

/* The tests before the per-family ones read as release-4.13 does. */
#define CHECK(cases) check(MCS_FAMILY_4_13, cases, sizeof cases / sizeof cases[0])
#define CHECK_IN(family, cases) check(family, cases, sizeof cases / sizeof cases[0])

/* detectSpecVersionFromAcceptHeader's switch (release-4.13..4.18): [3.4.0,
 * 4.0.0) -> 3.4.0, [3.3.0, 3.4.0), [3.2.0, 3.3.0), [3.1.0, 3.2.0), [2.2.0,
 * 3.0.0) -> 2.2.0; anything else is unsupported: 400 (3.0.0 among them).
 * A pre-release comes before its release (go-semver preReleaseCompare). */
Test(http_accept, the_spec_each_version_gets)
{
    static const accept_case_t cases[] = {
        {IGN ";version=3.4.0, */*;q=0.1", IGNITION_SPEC_3_4},
        {IGN ";version=3.5.0, */*;q=0.1", IGNITION_SPEC_3_4},   /* release-4.19 serves 3.5.0 */
        {IGN ";version=3.99.0", IGNITION_SPEC_3_4},
        {IGN ";version=4.0.0-rc", IGNITION_SPEC_3_4},           /* 4.13: below 4.0.0 */
        {IGN ";version=4.0.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.4.0-experimental", IGNITION_SPEC_3_3},
        {IGN ";version=3.3.0, */*;q=0.1", IGNITION_SPEC_3_3},
        {IGN ";version=3.3.0-experimental", IGNITION_SPEC_3_2},
        {IGN ";version=3.2.0, */*;q=0.1", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.1", IGNITION_SPEC_3_1},
        {IGN ";version=3.1.0, */*;q=0.1", IGNITION_SPEC_3_1},
        {IGN ";version=3.1.0-rc.1", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.0.0, */*;q=0.1", IGNITION_SPEC_UNSUPPORTED},   /* 4.13: 400 */
        {IGN ";version=3.0.1", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.0.0-x", IGNITION_SPEC_2_2},            /* 4.13: below 3.0.0, so 2.2.0 */
        {IGN ";version=2.99.99", IGNITION_SPEC_2_2},
        {IGN ";version=2.2.0", IGNITION_SPEC_2_2},
        {IGN ";version=2.2.0-rc", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=2.1.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=1.0.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=9223372036854775807.0.0", IGNITION_SPEC_UNSUPPORTED},
    };
    CHECK(cases);
}

/* Version.Set: metadata after the first '+', the pre-release after the
 * first '-' of the rest (either may be empty), three dot parts parsed by
 * strconv.ParseInt(s, 10, 64), identifiers matching
 * ^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$. A version that does not parse is no
 * version: the element is skipped, so no Ignition element is left. */
Test(http_accept, versions_parse_as_go_semver_parses_them)
{
    static const accept_case_t cases[] = {
        {IGN ";version=3.4.0-", IGNITION_SPEC_3_4},             /* 4.13 */
        {IGN ";version=3.4.0+", IGNITION_SPEC_3_4},
        {IGN ";version=3.4.0+meta", IGNITION_SPEC_3_4},
        {IGN ";version=3.2.0-rc+b", IGNITION_SPEC_3_1},
        {IGN ";version=3.4.0--1", IGNITION_SPEC_3_3},           /* 4.13: pre-release "-1" */
        {IGN ";version=03.04.00", IGNITION_SPEC_3_4},
        {IGN ";version=3.1.0-0.3.7", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.4.0-a..b", IGNITION_SPEC_2_2},
        {IGN ";version=3.4.0-a_b", IGNITION_SPEC_2_2},
        {IGN ";version=3.4", IGNITION_SPEC_2_2},
        {IGN ";version=3.4.0.0", IGNITION_SPEC_2_2},
        {IGN ";version=\"3.4.0\"", IGNITION_SPEC_2_2},
        {IGN ";version= 3.4.0", IGNITION_SPEC_2_2},
        {IGN ";version=+3.4.0", IGNITION_SPEC_2_2},
        {IGN ";version=", IGNITION_SPEC_2_2},
        {IGN ";version=9223372036854775808.0.0", IGNITION_SPEC_2_2},   /* past int64 */
        {IGN ";version=3.9223372036854775807.0", IGNITION_SPEC_3_4},
        /* the first version that parses counts */
        {IGN ";version=x;version=3.2.0", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;version=3.4.0", IGNITION_SPEC_3_1},
    };
    CHECK(cases);
}

/* parseAcceptHeader cuts with strings.Split (',' then ';', no quoting)
 * and strings.TrimSpace (Unicode white space); an element needs a '/' in
 * its first part, the subtype after the first '/' is compared exactly and
 * the type not at all; parameter names are exact, cut at the first '='. */
Test(http_accept, elements_are_cut_and_matched_byte_for_byte)
{
    static const accept_case_t cases[] = {
        {NULL, IGNITION_SPEC_2_2},
        {"", IGNITION_SPEC_2_2},
        {"*/*", IGNITION_SPEC_2_2},
        {"application/json;version=3.4.0", IGNITION_SPEC_2_2},
        {"Application/vnd.coreos.ignition+json;version=3.4.0", IGNITION_SPEC_3_4},
        {"x/vnd.coreos.ignition+json;version=3.4.0", IGNITION_SPEC_3_4},
        {"/vnd.coreos.ignition+json;version=3.4.0", IGNITION_SPEC_3_4},
        {"application/VND.coreos.ignition+json;version=3.4.0", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+JSON;version=3.4.0", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+json/x;version=3.4.0", IGNITION_SPEC_2_2},
        {"vnd.coreos.ignition+json;version=3.4.0", IGNITION_SPEC_2_2},
        {IGN ";Version=3.4.0", IGNITION_SPEC_2_2},
        {IGN ";version =3.4.0", IGNITION_SPEC_2_2},
        {IGN ";version==3.4.0", IGNITION_SPEC_2_2},
        {IGN " \t; \tversion=3.3.0 \t, */*", IGNITION_SPEC_3_3},
        {IGN ";;flag;version=3.3.0;", IGNITION_SPEC_3_3},
        {";" IGN ";version=3.1.0", IGNITION_SPEC_2_2},
        {",," IGN ";version=3.1.0,,", IGNITION_SPEC_3_1},
        /* 4.13: U+00A0 and U+2003 are white space to TrimSpace */
        {"\xc2\xa0" IGN ";version=3.2.0\xc2\xa0", IGNITION_SPEC_3_2},
        {"\xe2\x80\x83" IGN "\xe2\x80\x83;\xe2\x80\x83version=3.3.0\xe2\x80\x83", IGNITION_SPEC_3_3},
        {"\xe3\x80\x80" IGN ";version=3.3.0\xe1\x9a\x80", IGNITION_SPEC_3_3},
        /* but not a lone continuation byte or U+200B */
        {"\xa0" IGN ";version=3.2.0", IGNITION_SPEC_3_2},
        {IGN ";version=3.2.0\xe2\x80\x8b", IGNITION_SPEC_2_2},
    };
    CHECK(cases);
}

/* q: the first that strconv.ParseFloat(q, 32) takes (an out-of-range one
 * is an error and is skipped; no q is 1), compared as float32; the stable
 * sort keeps the first among equals. The first supported Ignition element
 * in that order decides; an unsupported one with a higher q does not stop
 * the search (release-4.13..4.19; main stops at it). */
Test(http_accept, q_is_a_go_float32_and_the_order_is_a_stable_sort)
{
    static const accept_case_t cases[] = {
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.2.0;q=0.9", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.2.0;q=0.50", IGNITION_SPEC_3_1},
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.2.0;q=0.5000000001", IGNITION_SPEC_3_1},   /* 4.13 */
        {IGN ";version=3.1.0;q=0.3333333, " IGN ";version=3.2.0;q=0.33333334", IGNITION_SPEC_3_2},     /* 4.13 */
        {IGN ";version=3.1.0;q=0.33333333, " IGN ";version=3.2.0;q=0.33333334", IGNITION_SPEC_3_1},    /* 4.13 */
        {IGN ";version=3.1.0, " IGN ";version=3.2.0;q=2", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0, " IGN ";version=3.2.0;q=inf", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0, " IGN ";version=3.2.0;q=+Infinity", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;q=-inf, " IGN ";version=3.2.0;q=-1", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.2.0;q=1e40", IGNITION_SPEC_3_2},    /* 4.13: range error */
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.2.0;q=1e40;q=0.1", IGNITION_SPEC_3_1},
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=0x1p-1", IGNITION_SPEC_3_1},  /* 4.13 */
        {IGN ";version=3.1.0;q=0.4, " IGN ";version=3.2.0;q=0x_1p-1", IGNITION_SPEC_3_2}, /* 4.13 */
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=0x1", IGNITION_SPEC_3_2},     /* no 'p': invalid */
        {IGN ";version=3.1.0;q=0.4, " IGN ";version=3.2.0;q=1_0", IGNITION_SPEC_3_2},     /* 4.13: invalid, 1 */
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=.5", IGNITION_SPEC_3_1},
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=5.", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=1e-50", IGNITION_SPEC_3_1},  /* underflow: 0 */
        {IGN ";version=3.1.0;q=0.6, " IGN ";version=3.2.0;q=+nan;q=0.7", IGNITION_SPEC_3_2},
        {IGN ";version=3.1.0;Q=0.2, " IGN ";version=3.2.0;q=0.3", IGNITION_SPEC_3_1},   /* Q is not q */
        {IGN ";version=1.0.0, " IGN ";version=3.4.0;q=0.5", IGNITION_SPEC_3_4},        /* 4.13 */
        {IGN ";version=5.0.0, " IGN ";version=1.0.0;q=0.1", IGNITION_SPEC_UNSUPPORTED},
        {"*/*;q=1, " IGN ";version=3.3.0;q=0.1", IGNITION_SPEC_3_3},
    };
    CHECK(cases);
}

/* NaN compares false both ways, so the order is whatever Go's stable sort
 * makes of it: insertion sort in blocks of 20, then SymMerge. */
Test(http_accept, a_nan_q_orders_as_go_sorts_it)
{
    static char past_block[2048], merged[2048], nan_first[2048];
    strcpy(past_block, "");
    for (int i = 0; i < 19; i++)
        strcat(past_block, "*/*;q=0.1, ");
    strcat(past_block, IGN ";version=3.1.0;q=0.2, */*;q=NaN, " IGN ";version=3.3.0;q=0.9");
    strcpy(merged, IGN ";version=3.1.0;q=0.2");
    for (int i = 0; i < 19; i++)
        strcat(merged, ", */*;q=0.5");
    strcat(merged, ", */*;q=NaN, " IGN ";version=3.3.0;q=0.9");
    strcpy(nan_first, "*/*;q=NaN, " IGN ";version=3.2.0;q=0.3");
    for (int i = 0; i < 25; i++)
        strcat(nan_first, ", */*;q=0.5");
    strcat(nan_first, ", " IGN ";version=3.3.0;q=0.4");
    const accept_case_t cases[] = {
        /* 4.13: the NaN between them stops the insertion sort */
        {IGN ";version=3.1.0;q=0.5, */*;q=nan, " IGN ";version=3.2.0;q=0.9", IGNITION_SPEC_3_1},
        {past_block, IGNITION_SPEC_3_1},    /* 4.13: 22 elements */
        {merged, IGNITION_SPEC_3_3},        /* 4.13 */
        {nan_first, IGNITION_SPEC_3_3},     /* 4.13: 28 elements */
        {IGN ";version=3.1.0;q=nan, " IGN ";version=3.2.0;q=0.9", IGNITION_SPEC_3_1},
    };
    CHECK(cases);
}

/* Only the len bytes given are read: the value sits inside a request
 * buffer, followed by the rest of the head. */
Test(http_accept, reads_no_byte_past_len)
{
    static const char value[] = IGN ";version=3.1.0;q=0.5";
    size_t len = strlen(value);
    char *exact = malloc(len);
    cr_assert_not_null(exact);
    memcpy(exact, value, len);
    for (int f = 0; f < MCS_FAMILY__COUNT; f++) {
        cr_expect_eq(http_accept_ignition_spec((mcs_family_t)f, exact, len), IGNITION_SPEC_3_1);
        cr_expect_eq(http_accept_ignition_spec((mcs_family_t)f, exact, len - 8), IGNITION_SPEC_2_2,
                     "version=3.1 is no version");
        cr_expect_eq(http_accept_ignition_spec((mcs_family_t)f, exact, 0), IGNITION_SPEC_2_2);
    }
    free(exact);
}

/* What evidence reads: the version as the node wrote it. */
static bool version_in(mcs_family_t family, const char *accept, char *buf, size_t len)
{
    ignition_version_t v;
    if (!http_accept_ignition_version(family, accept, accept ? strlen(accept) : 0, &v))
        return false;
    ignition_version_format(&v, buf, len);
    return true;
}

static bool version_of(const char *accept, char *buf, size_t len)
{
    return version_in(MCS_FAMILY_4_13, accept, buf, len);
}

Test(http_accept, the_version_asked_for_is_the_deciding_elements)
{
    static const struct {
        const char *accept, *version;
    } cases[] = {
        {IGN ";version=3.3.0, */*;q=0.1", "3.3.0"},
        {IGN ";version=3.7.0, */*;q=0.1", "3.7.0"},
        {IGN ";version=3.4.0-experimental", "3.4.0-pre"},
        {IGN ";version=3.4.0-", "3.4.0"},
        {IGN ";version=2.2.0, " IGN ";version=1.0.0", "2.2.0"},
        {IGN ";version=1.0.0, " IGN ";version=3.2.0;q=0.5", "3.2.0"},
        {IGN ";version=3.1.0;q=0.5, " IGN ";version=3.3.0;q=0.9", "3.3.0"},
        {IGN ";version=3.2.0, " IGN ";version=3.3.0", "3.2.0"},
        /* only unsupported versions: the first in the sorted order */
        {IGN ";version=4.0.0, " IGN ";version=1.0.0", "4.0.0"},
        {IGN ";version=4.0.0;q=0.1, " IGN ";version=1.0.0", "1.0.0"},
        {IGN ";version=3.0.0;q=0.1, " IGN ";version=3.9223372036854775807.0", "3.4294967295.0"},
    };
    char buf[40];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect(version_of(cases[i].accept, buf, sizeof buf), "%s", cases[i].accept);
        cr_expect_str_eq(buf, cases[i].version, "%s", cases[i].accept);
    }
    static const char *const none[] = {
        "*/*", "application/json", IGN, IGN ";version=three", "application/VND.coreos.ignition+json;version=3.2.0",
        "", NULL,
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_expect_not(version_of(none[i], buf, sizeof buf), "%s", none[i] ? none[i] : "(no header)");
}

/* ---- the families of releases (accept.c's readings) */

Test(http_accept, each_release_has_its_family)
{
    static const struct {
        unsigned minor;
        mcs_family_t family;
    } cases[] = {
        {13, MCS_FAMILY_4_13}, {16, MCS_FAMILY_4_13}, {18, MCS_FAMILY_4_13}, {19, MCS_FAMILY_4_19},
        {20, MCS_FAMILY_4_20}, {21, MCS_FAMILY_4_21}, {22, MCS_FAMILY_4_21}, {23, MCS_FAMILY_4_21},
        {99, MCS_FAMILY_4_21}, /* newer than the gate knows: the newest family */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(mcs_family_of_release(cases[i].minor), cases[i].family, "4.%u", cases[i].minor);
    cr_expect_str_eq(mcs_family_name(MCS_FAMILY_4_13), "4.13-4.18");
    cr_expect_str_eq(mcs_family_name(MCS_FAMILY_4_19), "4.19");
    cr_expect_str_eq(mcs_family_name(MCS_FAMILY_4_20), "4.20");
    cr_expect_str_eq(mcs_family_name(MCS_FAMILY_4_21), "4.21+");
    cr_expect_str_eq(mcs_family_name(MCS_FAMILY__COUNT), "?");
}

/* release-4.19: 4.13's switch with a first case [3.5.0, 4.0.0) -> 3.5.0. */
Test(http_accept, release_4_19_adds_3_5_0)
{
    static const accept_case_t cases[] = {
        {IGN ";version=3.5.0, */*;q=0.1", IGNITION_SPEC_3_5},
        {IGN ";version=3.6.0", IGNITION_SPEC_3_5},
        {IGN ";version=3.99.0", IGNITION_SPEC_3_5},
        {IGN ";version=3.5.0-experimental", IGNITION_SPEC_3_4},
        {IGN ";version=3.4.0", IGNITION_SPEC_3_4},
        {IGN ";version=3.4.0-experimental", IGNITION_SPEC_3_3},
        {IGN ";version=3.0.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=2.2.0-rc", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=2.5.0", IGNITION_SPEC_2_2},
        {IGN ";version=4.0.0", IGNITION_SPEC_UNSUPPORTED},
        /* an unsupported first choice is passed over, as in 4.13 */
        {IGN ";version=1.0.0, " IGN ";version=3.5.0;q=0.5", IGNITION_SPEC_3_5},
    };
    CHECK_IN(MCS_FAMILY_4_19, cases);
}

/* What 4.20 on share: the first Ignition element with a version decides;
 * 2.x at or above 2.2.0 is 2.2.0; otherwise major.minor must be the
 * converter's (2.2, 3.0 .. 3.5), patch and pre-release dropped; 3.0 is
 * picked and then fails to convert (500). */
static const accept_case_t first_decides[] = {
    {IGN ";version=3.5.0, */*;q=0.1", IGNITION_SPEC_3_5},          /* 4.22: every Ignition from 2.20 */
    {IGN ";version=3.5.0-experimental", IGNITION_SPEC_3_5},
    {IGN ";version=3.4.0-experimental", IGNITION_SPEC_3_4},        /* 4.22; 4.13 serves 3.3.0 */
    {IGN ";version=3.4.0", IGNITION_SPEC_3_4},
    {IGN ";version=3.3.0-experimental", IGNITION_SPEC_3_3},
    {IGN ";version=3.1.0-rc.1", IGNITION_SPEC_3_1},
    {IGN ";version=3.1.7", IGNITION_SPEC_3_1},
    {IGN ";version=3.0.0, */*;q=0.1", IGNITION_SPEC_UNCONVERTIBLE},  /* 4.22: 500, 4.13: 400 */
    {IGN ";version=3.0.0-x", IGNITION_SPEC_UNCONVERTIBLE},         /* 4.13: 2.2.0 */
    {IGN ";version=3.0.1", IGNITION_SPEC_UNCONVERTIBLE},
    {IGN ";version=2.2.0", IGNITION_SPEC_2_2},
    {IGN ";version=2.2.0-rc", IGNITION_SPEC_2_2},                  /* 4.13: 400 */
    {IGN ";version=2.3.0", IGNITION_SPEC_2_2},
    {IGN ";version=2.99.99", IGNITION_SPEC_2_2},
    {IGN ";version=2.1.0", IGNITION_SPEC_UNSUPPORTED},
    {IGN ";version=2.0.0", IGNITION_SPEC_UNSUPPORTED},
    {IGN ";version=1.0.0", IGNITION_SPEC_UNSUPPORTED},
    {IGN ";version=4.0.0", IGNITION_SPEC_UNSUPPORTED},
    {IGN ";version=4.0.0-rc", IGNITION_SPEC_UNSUPPORTED},          /* 4.13: 3.4.0 */
    {IGN ";version=9223372036854775807.0.0", IGNITION_SPEC_UNSUPPORTED},
    /* a first Ignition element the release does not serve ends the search */
    {IGN ";version=1.0.0, " IGN ";version=3.4.0;q=0.5", IGNITION_SPEC_UNSUPPORTED},  /* 4.13: 3.4.0 */
    {IGN ";version=2.1.0, " IGN ";version=3.2.0", IGNITION_SPEC_UNSUPPORTED},
    {IGN ";version=3.0.0;q=0.9, " IGN ";version=3.3.0;q=0.5", IGNITION_SPEC_UNCONVERTIBLE},
    /* in the sorted order: a served one at a higher q still comes first */
    {IGN ";version=1.0.0;q=0.1, " IGN ";version=3.4.0;q=0.5", IGNITION_SPEC_3_4},
    /* elements without a version do not count */
    {IGN ", " IGN ";version=three, " IGN ";version=3.2.0", IGNITION_SPEC_3_2},
    {"*/*, " IGN ";version=3.3.0;q=0.1", IGNITION_SPEC_3_3},
    {NULL, IGNITION_SPEC_2_2},
    {"application/json", IGNITION_SPEC_2_2},
};

/* release-4.20: no fallback, so a newer 3.x minor is a 400. */
Test(http_accept, release_4_20_lets_the_first_ignition_element_decide)
{
    CHECK_IN(MCS_FAMILY_4_20, first_decides);
    static const accept_case_t newer[] = {
        {IGN ";version=3.6.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.99.0", IGNITION_SPEC_UNSUPPORTED},
        {IGN ";version=3.9223372036854775807.0", IGNITION_SPEC_UNSUPPORTED},
    };
    CHECK_IN(MCS_FAMILY_4_20, newer);
}

/* release-4.21 on (4.22 is the one measured): a 3.x minor above 3.5 gets
 * ign3types.MaxVersion, 3.5.0. */
Test(http_accept, release_4_21_on_serve_newer_3_x_minors_3_5_0)
{
    CHECK_IN(MCS_FAMILY_4_21, first_decides);
    static const accept_case_t newer[] = {
        {IGN ";version=3.6.0", IGNITION_SPEC_3_5},                 /* 4.22 */
        {IGN ";version=3.6.0-experimental", IGNITION_SPEC_3_5},
        {IGN ";version=3.99.0", IGNITION_SPEC_3_5},
        {IGN ";version=3.9223372036854775807.0", IGNITION_SPEC_3_5},
        {IGN ";version=3.7.0, " IGN ";version=3.2.0", IGNITION_SPEC_3_5},
        {IGN ";version=4.1.0, " IGN ";version=3.6.0", IGNITION_SPEC_UNSUPPORTED},
    };
    CHECK_IN(MCS_FAMILY_4_21, newer);
}

/* Evidence reads the element the release reads. */
Test(http_accept, evidence_reads_the_element_each_family_reads)
{
    static const char both[] = IGN ";version=1.0.0, " IGN ";version=3.2.0;q=0.5";
    char buf[40];
    cr_expect(version_in(MCS_FAMILY_4_13, both, buf, sizeof buf));
    cr_expect_str_eq(buf, "3.2.0");
    cr_expect(version_in(MCS_FAMILY_4_19, both, buf, sizeof buf));
    cr_expect_str_eq(buf, "3.2.0");
    cr_expect(version_in(MCS_FAMILY_4_20, both, buf, sizeof buf));
    cr_expect_str_eq(buf, "1.0.0");
    cr_expect(version_in(MCS_FAMILY_4_21, both, buf, sizeof buf));
    cr_expect_str_eq(buf, "1.0.0");
    cr_expect(version_in(MCS_FAMILY_4_21, IGN ";version=3.6.0", buf, sizeof buf));
    cr_expect_str_eq(buf, "3.6.0", "as written, whatever spec it is served");
    cr_expect_not(version_in(MCS_FAMILY_4_21, "*/*", buf, sizeof buf));
}
