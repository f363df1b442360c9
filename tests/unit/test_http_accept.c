#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "http/accept.h"

static ignition_spec_t spec_of(const char *accept)
{
    return http_accept_ignition_spec(accept, accept ? strlen(accept) : 0);
}

Test(http_accept, unsupported_majors_get_the_mcs_400)
{
    static const char *const cases[] = {
        "application/vnd.coreos.ignition+json;version=4.0.0, */*;q=0.1",
        "application/vnd.coreos.ignition+json;version=1.0.0",
        "application/vnd.coreos.ignition+json;version=2.1.0",
        "application/vnd.coreos.ignition+json;version=3.0.0-rc1",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(http_accept_ignition_spec(cases[i], strlen(cases[i])), IGNITION_SPEC_UNSUPPORTED,
                     "%s", cases[i]);
}

/* How the value is cut into elements and parameters: the list tokenizer
 * with ',' and then ';', OWS trimmed, empty elements skipped, the media
 * type being all before the first ';'. */
Test(http_accept, elements_and_parameters_are_cut_as_the_mcs_reads_them)
{
    static const struct {
        const char *accept;
        ignition_spec_t spec;
    } cases[] = {
        {"application/vnd.coreos.ignition+json;version=3.1.0", IGNITION_SPEC_3_1},
        {" \t,, application/vnd.coreos.ignition+json;version=3.1.0 ,\t, ", IGNITION_SPEC_3_1},
        {"application/vnd.coreos.ignition+json \t; \tversion \t= \t3.2.0 \t", IGNITION_SPEC_3_2},
        {"application/vnd.coreos.ignition+json;;; version=3.3.0;;", IGNITION_SPEC_3_3},
        {"application/vnd.coreos.ignition+json;flag;version=3.3.0", IGNITION_SPEC_3_3},
        /* Nothing before the first ';' is no media type, whatever follows. */
        {";application/vnd.coreos.ignition+json;version=3.1.0", IGNITION_SPEC_2_2},
        {" ; application/vnd.coreos.ignition+json;version=3.1.0", IGNITION_SPEC_2_2},
        /* The type is compared whole, not as a prefix. */
        {"application/vnd.coreos.ignition+jsonx;version=3.1.0", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition;version=3.1.0", IGNITION_SPEC_2_2},
        /* The first valid version parameter counts. */
        {"application/vnd.coreos.ignition+json;version=3.1.0;version=3.4.0", IGNITION_SPEC_3_1},
        {"application/vnd.coreos.ignition+json;version=x;version=3.4.0", IGNITION_SPEC_3_4},
        {"application/vnd.coreos.ignition+json;version=;version=3.2.0", IGNITION_SPEC_3_2},
        {"application/vnd.coreos.ignition+json;version", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+json;version=\"3.3.0\"", IGNITION_SPEC_3_3},
        {"application/vnd.coreos.ignition+json;version=\"3.3.0", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+json;version=3.3.0+build.7", IGNITION_SPEC_3_3},
        {"application/vnd.coreos.ignition+json;version=3.3.0-", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+json;version=3.3", IGNITION_SPEC_2_2},
        {"application/vnd.coreos.ignition+json;version==3.3.0", IGNITION_SPEC_2_2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(spec_of(cases[i].accept), cases[i].spec, "%s: got %d, want %d",
                     cases[i].accept, spec_of(cases[i].accept), cases[i].spec);
}

Test(http_accept, the_highest_q_wins_and_the_first_among_equals)
{
    static const struct {
        const char *accept;
        ignition_spec_t spec;
    } cases[] = {
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.50",
         IGNITION_SPEC_3_1},
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.501",
         IGNITION_SPEC_3_2},
        /* Digits past the third do not count. */
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.5009",
         IGNITION_SPEC_3_1},
        /* No q is q=1; an invalid q leaves it so, and only the first valid counts. */
        {"application/vnd.coreos.ignition+json;version=3.1.0, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=1.0",
         IGNITION_SPEC_3_1},
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.2, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=x",
         IGNITION_SPEC_3_2},
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.4, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.3;q=0.9",
         IGNITION_SPEC_3_1},
        {"application/vnd.coreos.ignition+json;version=3.1.0;Q=0.2, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.3",
         IGNITION_SPEC_3_2},
        /* An unsupported version with the highest q does not hide a supported one. */
        {"application/vnd.coreos.ignition+json;version=5.0.0, "
         "application/vnd.coreos.ignition+json;version=3.0.0;q=0.1",
         IGNITION_SPEC_3_0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(spec_of(cases[i].accept), cases[i].spec, "%s: got %d, want %d",
                     cases[i].accept, spec_of(cases[i].accept), cases[i].spec);
}

/* Only the len bytes given are read: the header value sits inside a
 * request buffer, followed by the rest of the head. */
Test(http_accept, reads_no_byte_past_len)
{
    static const char value[] = "application/vnd.coreos.ignition+json;version=3.1.0";
    size_t len = strlen(value);
    char *exact = malloc(len);
    cr_assert_not_null(exact);
    memcpy(exact, value, len);
    cr_expect_eq(http_accept_ignition_spec(exact, len), IGNITION_SPEC_3_1);
    cr_expect_eq(http_accept_ignition_spec(exact, len - 2), IGNITION_SPEC_2_2, "version=3.1 is no version");
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

Test(http_accept, the_version_asked_for_is_kept_as_written)
{
    static const struct {
        const char *accept, *version;
    } cases[] = {
        {"application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1", "3.3.0"},
        {"application/vnd.coreos.ignition+json;version=3.7.0, */*;q=0.1", "3.7.0"},
        {"application/vnd.coreos.ignition+json; version=\"3.4.0-experimental\"", "3.4.0-pre"},
        {"application/vnd.coreos.ignition+json;version=2.2.0, application/vnd.coreos.ignition+json;version=1.0.0",
         "2.2.0"},
        /* the MCS's choice: the higher q wins, the first among equals */
        {"application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, "
         "application/vnd.coreos.ignition+json;version=3.3.0;q=0.9", "3.3.0"},
        {"application/vnd.coreos.ignition+json;version=3.2.0, application/vnd.coreos.ignition+json;version=3.3.0",
         "3.2.0"},
        /* only unsupported versions: the first one */
        {"application/vnd.coreos.ignition+json;version=4.0.0, application/vnd.coreos.ignition+json;version=1.0.0",
         "4.0.0"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect(version_of(cases[i].accept, buf, sizeof buf), "%s", cases[i].accept);
        cr_expect_str_eq(buf, cases[i].version, "%s", cases[i].accept);
    }
    static const char *const none[] = {
        "*/*", "application/json", "application/vnd.coreos.ignition+json",
        "application/vnd.coreos.ignition+json;version=three", "", NULL,
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_expect_not(version_of(none[i], buf, sizeof buf), "%s", none[i] ? none[i] : "(no header)");
}
