/* http_accept against the Machine Config Server's reading of Accept.
 * Every case comes from reading openshift/machine-config-operator's
 * pkg/server/api.go (parseAcceptHeader, detectSpecVersionFromAcceptHeader)
 * on release-4.13 (identical through release-4.18), the go-semver it
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

static ignition_spec_t spec_of(const char *accept)
{
    return http_accept_ignition_spec(accept, accept ? strlen(accept) : 0);
}

static void check(const accept_case_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(spec_of(cases[i].accept), cases[i].spec, "%s: got %d, want %d", cases[i].accept,
                     spec_of(cases[i].accept), cases[i].spec);
}

#define CHECK(cases) check(cases, sizeof cases / sizeof cases[0])

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
    cr_expect_eq(http_accept_ignition_spec(exact, len), IGNITION_SPEC_3_1);
    cr_expect_eq(http_accept_ignition_spec(exact, len - 8), IGNITION_SPEC_2_2, "version=3.1 is no version");
    cr_expect_eq(http_accept_ignition_spec(exact, 0), IGNITION_SPEC_2_2);
    free(exact);
}

/* What evidence reads: the version as the node wrote it. */
static bool version_of(const char *accept, char *buf, size_t len)
{
    ignition_version_t v;
    if (!http_accept_ignition_version(accept, accept ? strlen(accept) : 0, &v))
        return false;
    ignition_version_format(&v, buf, len);
    return true;
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
