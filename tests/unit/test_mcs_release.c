/* mcs_release: the release auto reads from the machine-config
 * ClusterOperator's status.versions (verdict/mcs_release.h), and the
 * versions OpenShift writes there. */
#include <criterion/criterion.h>
#include <string.h>

#include "verdict/mcs_release.h"

/* A ClusterOperator with these versions (a JSON array's text). */
static json_t *co_with(const char *versions)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"ClusterOperator\","
             "\"metadata\":{\"name\":\"machine-config\"},\"status\":{\"versions\":%s}}",
             versions);
    json_error_t e;
    json_t *co = json_loads(text, 0, &e);
    cr_assert(co, "%s: %s", text, e.text);
    return co;
}

static mcs_release_t read_versions(const char *versions)
{
    json_t *co = co_with(versions);
    mcs_release_t r = mcs_release_of_cluster_operator(co);
    json_decref(co);
    return r;
}

static void expect_default(const mcs_release_t *r, const char *why_has)
{
    cr_expect_eq(r->from, MCS_RELEASE_FROM_DEFAULT);
    cr_expect_eq(r->minor, MCS_RELEASE_DEFAULT);
    cr_expect_eq(r->family, mcs_family_of_release(MCS_RELEASE_DEFAULT));
    cr_expect_str_empty(r->version);
    cr_expect(strstr(r->why, why_has), "why \"%s\" lacks \"%s\"", r->why, why_has);
}

/* The entry named operator decides, wherever it stands; the operand
 * entries beside it (MCO writes only operator) are not read. */
Test(mcs_release, the_operator_entry_gives_the_release)
{
    mcs_release_t r = read_versions("[{\"name\":\"operator\",\"version\":\"4.22.3\"}]");
    cr_expect_eq(r.from, MCS_RELEASE_FROM_CLUSTER);
    cr_expect_eq(r.minor, 22u);
    cr_expect_eq(r.family, MCS_FAMILY_4_21);
    cr_expect_str_eq(r.version, "4.22.3");
    cr_expect_str_empty(r.why);
    cr_expect_str_eq(mcs_release_from_name(r.from), "cluster");

    r = read_versions("[{\"name\":\"machine-config-daemon\",\"version\":\"4.13.0\"},"
                      "{\"name\":\"operator\",\"version\":\"4.19.5\"}]");
    cr_expect_eq(r.from, MCS_RELEASE_FROM_CLUSTER);
    cr_expect_eq(r.minor, 19u);
    cr_expect_eq(r.family, MCS_FAMILY_4_19);
    cr_expect_str_eq(r.version, "4.19.5");

    r = read_versions("[{\"name\":\"operator\",\"version\":\"4.16.0-0.nightly-2024-05-01-111315\"}]");
    cr_expect_eq(r.minor, 16u);
    cr_expect_eq(r.family, MCS_FAMILY_4_13);
    r = read_versions("[{\"name\":\"operator\",\"version\":\"4.20.0-rc.2\"}]");
    cr_expect_eq(r.minor, 20u);
    cr_expect_eq(r.family, MCS_FAMILY_4_20);
}

Test(mcs_release, absent_object_entry_or_version_is_the_default_with_why)
{
    mcs_release_t r = mcs_release_of_cluster_operator(NULL);
    expect_default(&r, "does not exist");

    json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "machine-config");
    r = mcs_release_of_cluster_operator(bare);
    json_decref(bare);
    expect_default(&r, "no status.versions entry named operator");

    r = read_versions("[]");
    expect_default(&r, "no status.versions entry named operator");
    r = read_versions("[{\"name\":\"machine-config-daemon\",\"version\":\"4.22.0\"}]");
    expect_default(&r, "no status.versions entry named operator");
    r = read_versions("{\"operator\":\"4.22.0\"}");
    expect_default(&r, "no status.versions entry named operator");
    r = read_versions("[{\"name\":\"operator\"}]");
    expect_default(&r, "is empty");
    r = read_versions("[{\"name\":\"operator\",\"version\":\"\"}]");
    expect_default(&r, "is empty");
    r = read_versions("[{\"name\":\"operator\",\"version\":422}]");
    expect_default(&r, "is empty");
}

Test(mcs_release, an_unparseable_version_is_the_default_with_why)
{
    static const char *const bad[] = {"4", "4.", "4.x.1", "v4.22.0", "5.0.0", "4.022.1", "4.22x", " 4.22.0",
                                      "4.1000.0", "0.0.1-snapshot"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char versions[128];
        snprintf(versions, sizeof versions, "[{\"name\":\"operator\",\"version\":\"%s\"}]", bad[i]);
        mcs_release_t r = read_versions(versions);
        expect_default(&r, "is not a release 4.N");
        cr_expect(strstr(r.why, bad[i]), "why \"%s\" names the version \"%s\"", r.why, bad[i]);
    }
    /* Unprintable bytes are not carried into the why (it is logged and served). */
    mcs_release_t r = read_versions("[{\"name\":\"operator\",\"version\":\"4.x\\u0007\\n\"}]");
    expect_default(&r, "\"4.x??\"");
}

/* Older than 4.13 (which the gate never read): the oldest family, and the
 * controller logs so; newer than any known: the newest. */
Test(mcs_release, older_and_newer_than_known_read_as_the_oldest_and_newest_family)
{
    mcs_release_t r = read_versions("[{\"name\":\"operator\",\"version\":\"4.9.0\"}]");
    cr_expect_eq(r.from, MCS_RELEASE_FROM_CLUSTER);
    cr_expect_eq(r.minor, 9u);
    cr_expect_eq(r.family, MCS_FAMILY_4_13);
    cr_expect(mcs_release_older_than_known(&r));
    cr_expect_not(mcs_release_newer_than_known(&r));

    r = read_versions("[{\"name\":\"operator\",\"version\":\"4.30.2\"}]");
    cr_expect_eq(r.from, MCS_RELEASE_FROM_CLUSTER);
    cr_expect_eq(r.minor, 30u);
    cr_expect_eq(r.family, MCS_FAMILY_NEWEST);
    cr_expect(mcs_release_newer_than_known(&r));
    cr_expect_not(mcs_release_older_than_known(&r));

    r = read_versions("[{\"name\":\"operator\",\"version\":\"4.13.0\"}]");
    cr_expect_not(mcs_release_older_than_known(&r));
    r = read_versions("[{\"name\":\"operator\",\"version\":\"4.23.0\"}]");
    cr_expect_not(mcs_release_newer_than_known(&r));
}

Test(mcs_release, parse_version)
{
    unsigned minor = 0;
    cr_expect_eq(mcs_release_parse_version("4.22", &minor), 0);
    cr_expect_eq(minor, 22u);
    cr_expect_eq(mcs_release_parse_version("4.0.0", &minor), 0);
    cr_expect_eq(minor, 0u);
    cr_expect_eq(mcs_release_parse_version("4.19+meta", &minor), 0);
    cr_expect_eq(minor, 19u);
    cr_expect_eq(mcs_release_parse_version("4.999.1", &minor), 0);
    cr_expect_eq(minor, 999u);
    cr_expect_eq(mcs_release_parse_version("4.01.0", &minor), -1);
    cr_expect_eq(mcs_release_parse_version("4.-1", &minor), -1);
    cr_expect_eq(mcs_release_parse_version("", &minor), -1);
}

/* What the controller compares to decide whether a reading is news. */
Test(mcs_release, equal_sees_version_and_why)
{
    mcs_release_t a = read_versions("[{\"name\":\"operator\",\"version\":\"4.22.1\"}]");
    mcs_release_t b = read_versions("[{\"name\":\"operator\",\"version\":\"4.22.3\"}]");
    cr_expect_not(mcs_release_equal(&a, &b));
    b = read_versions("[{\"name\":\"operator\",\"version\":\"4.22.1\"}]");
    cr_expect(mcs_release_equal(&a, &b));
    mcs_release_t d1 = mcs_release_default("not read yet"), d2 = mcs_release_default("absent");
    mcs_release_t plain = mcs_release_configured(0);
    cr_expect_not(mcs_release_equal(&d1, &d2));
    cr_expect_not(mcs_release_equal(&d1, &plain));
    cr_expect_str_empty(plain.why);
}
