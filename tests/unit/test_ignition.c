#include <criterion/criterion.h>
#include <string.h>

#include "core/ignition.h"

static ignition_version_t spec(const char *s)
{
    ignition_version_t v;
    cr_assert_eq(ignition_version_parse(s, &v), 0, "\"%s\" should parse", s);
    return v;
}

static ignition_version_t table_spec(uint32_t major, uint32_t minor)
{
    ocp_version_t ocp = {major, minor, 0};
    const ignition_release_t *row = ignition_release_for(&ocp);
    cr_assert_not_null(row, "no row for %u.%u", major, minor);
    return row->spec;
}

Test(ignition, specs_parse_strictly)
{
    ignition_version_t v = spec("3.2.0");
    cr_expect(v.major == 3 && v.minor == 2 && v.patch == 0 && !v.prerelease);
    v = spec("2.2.0");
    cr_expect(v.major == 2 && v.minor == 2);
    static const char *const bad[] = {"", "3", "3.2", "3.2.0.0", "3.x.0", "v3.2.0", " 3.2.0", "3.2.0 ",
                                      "3.4.0-experimental", "4.0.0", "1.0.0", "0.0.0", "3.99999.0", "-3.2.0",
                                      "3..0", "3.2.", NULL};
    for (size_t i = 0; bad[i]; i++) {
        ignition_version_t out = {7, 7, 7, false};
        cr_expect_eq(ignition_version_parse(bad[i], &out), -1, "\"%s\" parsed", bad[i]);
        cr_expect(out.major == 7 && out.minor == 7 && out.patch == 7, "\"%s\": output touched", bad[i]);
    }
    cr_expect_eq(ignition_version_parse(NULL, &v), -1);
}

Test(ignition, order_is_numeric_with_prereleases_first)
{
    ignition_version_t a = spec("3.10.0"), b = spec("3.9.0"), c = spec("3.4.0"), pre = c;
    pre.prerelease = true;
    cr_expect_gt(ignition_version_cmp(&a, &b), 0);
    cr_expect_lt(ignition_version_cmp(&b, &a), 0);
    cr_expect_eq(ignition_version_cmp(&c, &c), 0);
    cr_expect_lt(ignition_version_cmp(&pre, &c), 0);
    cr_expect_gt(ignition_version_cmp(&c, &pre), 0);
    ignition_version_t two = spec("2.2.0"), three = spec("3.0.0");
    cr_expect_lt(ignition_version_cmp(&two, &three), 0);
    char buf[32];
    cr_expect_str_eq(ignition_version_format(&pre, buf, sizeof buf), "3.4.0-pre");
    cr_expect_str_eq(ignition_version_format(&a, buf, sizeof buf), "3.10.0");
}

/* The rows as the advisories give them (docs/evidence.md), and how a
 * release without a row is read. */
Test(ignition, table_rows_and_the_releases_between_them)
{
    char buf[32];
    static const struct {
        uint32_t minor;
        const char *spec;
    } rows[] = {{8, "3.2.0"},  {9, "3.2.0"},  {10, "3.2.0"}, {11, "3.3.0"}, {12, "3.3.0"},
                {13, "3.3.0"}, {14, "3.4.0"}, {15, "3.4.0"}, {16, "3.4.0"}, {19, "3.4.0"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ignition_version_t got = table_spec(4, rows[i].minor);
        cr_expect_str_eq(ignition_version_format(&got, buf, sizeof buf), rows[i].spec, "4.%u", rows[i].minor);
    }
    ignition_version_t five = table_spec(5, 0);
    cr_expect_str_eq(ignition_version_format(&five, buf, sizeof buf), "3.4.0");
    ocp_version_t old = {4, 7, 9}, three = {3, 11, 0};
    cr_expect_null(ignition_release_for(&old));
    cr_expect_null(ignition_release_for(&three));
}

Test(ignition, table_is_ordered_and_sourced)
{
    size_t n;
    const ignition_release_t *r = ignition_releases(&n);
    cr_assert_gt(n, 1);
    for (size_t i = 0; i < n; i++) {
        cr_expect(!strncmp(r[i].source, "RHSA-", 5), "row %zu: %s", i, r[i].source);
        cr_expect_not_null(r[i].ignition);
        if (i == 0)
            continue;
        cr_expect(r[i].ocp_major > r[i - 1].ocp_major ||
                  (r[i].ocp_major == r[i - 1].ocp_major && r[i].ocp_minor > r[i - 1].ocp_minor), "row %zu", i);
        cr_expect_geq(ignition_version_cmp(&r[i].spec, &r[i - 1].spec), 0, "row %zu asks less", i);
    }
}
