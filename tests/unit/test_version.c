#include <criterion/criterion.h>
#include <string.h>

#include "core/version.h"

static ocp_version_t ocp(const char *s)
{
    ocp_version_t v;
    cr_assert_eq(version_parse_ocp(s, &v), 0, "\"%s\" should parse", s);
    return v;
}

static rhel_version_t rhcos(const char *s)
{
    rhel_version_t v;
    cr_assert_eq(version_parse_rhcos(s, &v), 0, "\"%s\" should parse", s);
    return v;
}

static rhel_version_t rhel(const char *s)
{
    rhel_version_t v;
    cr_assert_eq(version_parse_rhel(s, &v), 0, "\"%s\" should parse", s);
    return v;
}

static void assert_ocp_rejected(const char *s)
{
    ocp_version_t v = {7, 7, 7};
    cr_expect_eq(version_parse_ocp(s, &v), -1, "\"%s\" must not parse as OCP", s);
    cr_expect(v.major == 7 && v.minor == 7 && v.patch == 7, "\"%s\": output touched on error", s);
}

static void assert_rhcos_rejected(const char *s)
{
    rhel_version_t v;
    cr_expect_eq(version_parse_rhcos(s, &v), -1, "\"%s\" must not parse as RHCOS", s);
}

static void assert_rhel_rejected(const char *s)
{
    rhel_version_t v;
    cr_expect_eq(version_parse_rhel(s, &v), -1, "\"%s\" must not parse as RHEL", s);
}

/* ---- OCP */

Test(version_ocp, parses_components)
{
    ocp_version_t v = ocp("4.13.0");
    cr_assert_eq(v.major, 4);
    cr_assert_eq(v.minor, 13);
    cr_assert_eq(v.patch, 0);
    v = ocp("4.18.22");
    cr_assert(v.major == 4 && v.minor == 18 && v.patch == 22);
}

Test(version_ocp, compares_numerically_not_lexically)
{
    const char *ascending[] = {"4.9.10", "4.13.0", "4.13.1", "4.100.0", "10.0.0"};
    size_t n = sizeof ascending / sizeof *ascending;
    for (size_t i = 0; i + 1 < n; i++) {
        ocp_version_t lo = ocp(ascending[i]), hi = ocp(ascending[i + 1]);
        cr_expect_lt(version_cmp_ocp(&lo, &hi), 0, "%s < %s", ascending[i], ascending[i + 1]);
        cr_expect_gt(version_cmp_ocp(&hi, &lo), 0, "%s > %s", ascending[i + 1], ascending[i]);
    }
}

Test(version_ocp, patch_decides_when_major_and_minor_tie)
{
    ocp_version_t a = ocp("4.13.9"), b = ocp("4.13.10");
    cr_assert_lt(version_cmp_ocp(&a, &b), 0);
}

Test(version_ocp, equal_versions_compare_zero_even_with_leading_zeros)
{
    ocp_version_t a = ocp("4.13.0"), b = ocp("04.013.0");
    cr_assert_eq(version_cmp_ocp(&a, &b), 0);
    cr_assert_eq(version_cmp_ocp(&a, &a), 0);
}

Test(version_ocp, rejects_wrong_number_of_fields)
{
    assert_ocp_rejected("4.13.0.1");
    assert_ocp_rejected("4.13");
    assert_ocp_rejected("413000");
}

Test(version_ocp, rejects_empty_fields)
{
    assert_ocp_rejected("4..13.0");
    assert_ocp_rejected(".4.130");
    assert_ocp_rejected("4.130.");
    assert_ocp_rejected("4.13..");
}

Test(version_ocp, rejects_leading_and_trailing_junk)
{
    assert_ocp_rejected("v4.13.0");
    assert_ocp_rejected(" 4.13.0");
    assert_ocp_rejected("4.13.0 ");
    assert_ocp_rejected("4.13.0\n");
    assert_ocp_rejected("4.13.0-rc.1");
    assert_ocp_rejected("+4.13.0");
    assert_ocp_rejected("4.-1.00");
    assert_ocp_rejected("4.13.0x");
}

Test(version_ocp, enforces_length_5_to_10)
{
    ocp("4.1.0");                       /* 5 */
    ocp("0.0.123456");                  /* 10 */
    assert_ocp_rejected("4.1.");        /* 4 and malformed */
    assert_ocp_rejected("1234.567.89"); /* 11, well-formed otherwise */
    assert_ocp_rejected("99999999999.0.0");
    assert_ocp_rejected("");
    assert_ocp_rejected(NULL);
}

/* ---- RHCOS */

Test(version_rhcos, new_scheme_is_rhel_major_minor)
{
    rhel_version_t v = rhcos("9.6.20250523-1");
    cr_assert_eq(v.major, 9);
    cr_assert_eq(v.minor, 6);
    v = rhcos("10.0.20260301-12");
    cr_assert(v.major == 10 && v.minor == 0);
}

Test(version_rhcos, legacy_scheme_reads_rhel_from_second_field)
{
    rhel_version_t v = rhcos("418.94.202410090804-0");
    cr_assert_eq(v.major, 9);
    cr_assert_eq(v.minor, 4);
    v = rhcos("48.84.202208021106-0");
    cr_assert(v.major == 8 && v.minor == 4, "48.84 is RHEL 8.4, got %u.%u", v.major, v.minor);
}

Test(version_rhcos, legacy_810_is_rhel_8_10_above_8_4)
{
    rhel_version_t v = rhcos("48.810.202208021106-0");
    cr_assert_eq(v.major, 8);
    cr_assert_eq(v.minor, 10);
    rhel_version_t old = rhcos("48.84.202208021106-0");
    cr_assert_gt(version_cmp_rhel(&v, &old), 0);
}

Test(version_rhcos, scheme_follows_timestamp_width_not_first_field)
{
    /* Same first two fields, different width: 8 digits reads 94 as the
     * major itself, 12 digits splits it. */
    rhel_version_t by_date = rhcos("9.94.20250523-1");
    rhel_version_t by_stamp = rhcos("9.94.202505231200-1");
    cr_assert(by_date.major == 9 && by_date.minor == 94);
    cr_assert(by_stamp.major == 9 && by_stamp.minor == 4);
}

Test(version_rhcos, legacy_needs_two_digits_in_second_field)
{
    assert_rhcos_rejected("418.9.202410090804-0");
}

Test(version_rhcos, rejects_date_widths_other_than_8_or_12)
{
    assert_rhcos_rejected("9.6.2025052-1");        /* 7 */
    assert_rhcos_rejected("9.6.202505231-1");      /* 9 */
    assert_rhcos_rejected("9.6.2025052312-1");     /* 10 */
    assert_rhcos_rejected("9.6.20250523123-1");    /* 11 */
    assert_rhcos_rejected("9.66.2025052312345-1"); /* 13 */
    assert_rhcos_rejected("9.6.-1");
}

Test(version_rhcos, rejects_missing_or_malformed_build_number)
{
    assert_rhcos_rejected("9.666.20250523");
    assert_rhcos_rejected("9.66.20250523-");
    assert_rhcos_rejected("9.6.20250523-1-2");
    assert_rhcos_rejected("9.6.20250523-a");
    assert_rhcos_rejected("9.6.20250523_1");
}

Test(version_rhcos, rejects_junk_and_wrong_field_count)
{
    assert_rhcos_rejected("rhcos-9.6.20250523-1");
    assert_rhcos_rejected("9.6.20250523-1 ");
    assert_rhcos_rejected(" 9.6.20250523-1");
    assert_rhcos_rejected("9.6.1.20250523-1");
    assert_rhcos_rejected("9..20250523-12");
    assert_rhcos_rejected(".6.20250523-12");
    assert_rhcos_rejected("9.6.20250523-1\n");
    assert_rhcos_rejected(NULL);
}

Test(version_rhcos, enforces_length_14_to_21)
{
    rhcos("9.6.20250523-1");                         /* 14 */
    rhcos("9.6.20250523-12345678");                  /* 21 */
    assert_rhcos_rejected("9.6.20250523-123456789"); /* 22, well-formed otherwise */
    assert_rhcos_rejected("4180.94.202410090804-0"); /* 22 */
    assert_rhcos_rejected("");
}

/* ---- RHEL limits */

Test(version_rhel, parses_configured_limits)
{
    rhel_version_t v = rhel("9.2");
    cr_assert(v.major == 9 && v.minor == 2);
    v = rhel("8.10");
    cr_assert(v.major == 8 && v.minor == 10);
}

Test(version_rhel, compares_minor_numerically)
{
    rhel_version_t a = rhel("9.10"), b = rhel("9.2"), c = rhel("10.0"), d = rhel("8.10"),
                   e = rhel("9.0");
    cr_expect_gt(version_cmp_rhel(&a, &b), 0, "9.10 > 9.2");
    cr_expect_gt(version_cmp_rhel(&c, &a), 0, "10.0 > 9.10");
    cr_expect_lt(version_cmp_rhel(&d, &e), 0, "8.10 < 9.0");
    cr_expect_eq(version_cmp_rhel(&b, &b), 0);
}

Test(version_rhel, rejects_malformed_limits)
{
    assert_rhel_rejected("9");
    assert_rhel_rejected("9.2.0");
    assert_rhel_rejected("9.");
    assert_rhel_rejected(".2");
    assert_rhel_rejected("v9.2");
    assert_rhel_rejected("9.2 ");
    assert_rhel_rejected("");
    assert_rhel_rejected(NULL);
}

/* As long as the longest RHEL version an rhcosVersion can carry; within
 * it no component can overflow, and longer ones are refused before. */
Test(version_rhel, enforces_length_up_to_10)
{
    rhel_version_t v = rhel("12345678.0");       /* 10 */
    cr_expect_eq(v.major, 12345678u);
    v = rhel("1.23456789");                       /* 10 */
    cr_expect_eq(v.minor, 23456789u);
    rhel("0.0");                                  /* 3, the shortest */
    assert_rhel_rejected("123456789.0");          /* 11, well-formed otherwise */
    assert_rhel_rejected("9.000000002");          /* 11, leading zeros count */
    assert_rhel_rejected("4294967295.0");
    assert_rhel_rejected("4294967296.0");
    assert_rhel_rejected("9.18446744073709551617");
}

/* The longest RHEL version of a new-scheme rhcosVersion of 21 characters
 * is exactly as long as the longest limit. */
Test(version_rhel, the_length_bound_is_the_longest_rhcos_rhel_version)
{
    rhel_version_t image = rhcos("1234.56789.20250523-1");
    char buf[32];
    cr_assert_eq(strlen("1234.56789.20250523-1"), 21);
    version_format_rhel(&image, buf, sizeof buf);
    cr_assert_str_eq(buf, "1234.56789");
    rhel_version_t limit = rhel(buf);
    cr_expect_eq(version_cmp_rhel(&image, &limit), 0);
    assert_rhcos_rejected("1234.567890.20250523-1");   /* 22: a longer RHEL version does not fit */
}

/* ---- formatting */

Test(version_format, round_trips)
{
    char buf[32];
    ocp_version_t o = ocp("4.100.7");
    cr_assert_str_eq(version_format_ocp(&o, buf, sizeof buf), "4.100.7");
    rhel_version_t r = rhcos("48.810.202208021106-0");
    cr_assert_str_eq(version_format_rhel(&r, buf, sizeof buf), "8.10");
}

Test(version_format, truncates_within_the_buffer)
{
    char buf[8];
    memset(buf, 'x', sizeof buf);
    ocp_version_t o = {4294967295u, 1, 2};
    version_format_ocp(&o, buf, 5);
    cr_assert_str_eq(buf, "4294");
    cr_assert_eq(buf[5], 'x', "wrote past the given length");
}
