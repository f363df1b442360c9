#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/version.h"

/* Length bounds enforced by the API server (DESIGN 1.4). */
#define OCP_VERSION_MIN_LEN 5
#define OCP_VERSION_MAX_LEN 10
#define RHCOS_VERSION_MIN_LEN 14
#define RHCOS_VERSION_MAX_LEN 21
/* The API has no RHEL field; a limit is compared with the RHEL version of an
 * rhcosVersion, and the longest one an rhcosVersion can carry is 10
 * characters (new scheme: 21, less the 8-digit date, two dots, the dash and
 * a one-digit build, leaves 9 digits and a dot). The bound also keeps each
 * component far below UINT32_MAX. */
#define RHEL_VERSION_MAX_LEN 10

/* RHCOS timestamp widths: the only two the API's regex admits, and the only
 * thing that tells the two schemes apart (see version_parse_rhcos). */
#define RHCOS_DATE_DIGITS 8       /* new scheme: YYYYMMDD */
#define RHCOS_TIMESTAMP_DIGITS 12 /* legacy scheme: YYYYMMDDHHmm */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Number of ASCII digits at s (stops at the first non-digit). */
static size_t digit_run(const char *s)
{
    size_t n = 0;
    while (is_digit(s[n]))
        n++;
    return n;
}

/* Converts exactly len digits at s. Fails on len 0 or a value above
 * UINT32_MAX: a component that does not fit is a malformed version, never a
 * wrapped-around small one. */
static int digits_to_u32(const char *s, size_t len, uint32_t *out)
{
    if (len == 0)
        return -1;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        value = value * 10 + (uint64_t)(s[i] - '0');
        if (value > UINT32_MAX)
            return -1;
    }
    *out = (uint32_t)value;
    return 0;
}

/* Reads one non-empty digit run at *p into *out and advances *p past it. */
static int take_component(const char **p, uint32_t *out)
{
    size_t n = digit_run(*p);
    if (digits_to_u32(*p, n, out) != 0)
        return -1;
    *p += n;
    return 0;
}

static int expect_char(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int version_parse_ocp(const char *s, ocp_version_t *out)
{
    if (!s)
        return -1;
    size_t len = strlen(s);
    if (len < OCP_VERSION_MIN_LEN || len > OCP_VERSION_MAX_LEN)
        return -1;
    ocp_version_t v;
    const char *p = s;
    if (take_component(&p, &v.major) || expect_char(&p, '.') || take_component(&p, &v.minor) ||
        expect_char(&p, '.') || take_component(&p, &v.patch) || *p != '\0')
        return -1;
    *out = v;
    return 0;
}

/* The scheme is told apart by the width of the third field, exactly as the
 * API's regex splits it (`[0-9]{8}|[0-9]{12}`) and as the MCO's own skew
 * check does:
 *   8 digits (YYYYMMDD)      new scheme "9.6.20250523-1": the first two
 *                            fields are the RHEL major.minor;
 *   12 digits (YYYYMMDDHHmm) legacy scheme "418.94.202410090804-0": the
 *                            first field is the OCP release (418, 48), the
 *                            second is RHEL squashed together: its first
 *                            digit is the major, the rest the minor (94 =
 *                            9.4, 810 = 8.10), so it needs two digits.
 * The first field's value is not used to tell them apart: legacy OCP-ish
 * numbers (48, 410..499) and future RHEL majors could overlap, while the
 * timestamp width is part of the format itself. */
int version_parse_rhcos(const char *s, rhel_version_t *out)
{
    if (!s)
        return -1;
    size_t len = strlen(s);
    if (len < RHCOS_VERSION_MIN_LEN || len > RHCOS_VERSION_MAX_LEN)
        return -1;

    const char *p = s;
    uint32_t first, build;
    if (take_component(&p, &first) || expect_char(&p, '.'))
        return -1;
    const char *second = p;
    size_t second_len = digit_run(second);
    p += second_len;
    if (second_len == 0 || expect_char(&p, '.'))
        return -1;
    size_t stamp_len = digit_run(p);
    p += stamp_len;
    if (expect_char(&p, '-') || take_component(&p, &build) || *p != '\0')
        return -1;

    rhel_version_t v;
    if (stamp_len == RHCOS_DATE_DIGITS) {
        v.major = first;
        if (digits_to_u32(second, second_len, &v.minor) != 0)
            return -1;
    } else if (stamp_len == RHCOS_TIMESTAMP_DIGITS) {
        /* A one-digit field leaves no minor digits, which digits_to_u32
         * refuses. */
        v.major = (uint32_t)(second[0] - '0');
        if (digits_to_u32(second + 1, second_len - 1, &v.minor) != 0)
            return -1;
    } else {
        return -1;
    }
    *out = v;
    return 0;
}

int version_parse_rhel(const char *s, rhel_version_t *out)
{
    if (!s || strlen(s) > RHEL_VERSION_MAX_LEN)
        return -1;
    rhel_version_t v;
    const char *p = s;
    if (take_component(&p, &v.major) || expect_char(&p, '.') || take_component(&p, &v.minor) ||
        *p != '\0')
        return -1;
    *out = v;
    return 0;
}

static int cmp_u32(uint32_t a, uint32_t b) { return (a > b) - (a < b); }

int version_cmp_ocp(const ocp_version_t *a, const ocp_version_t *b)
{
    int c = cmp_u32(a->major, b->major);
    if (c == 0)
        c = cmp_u32(a->minor, b->minor);
    if (c == 0)
        c = cmp_u32(a->patch, b->patch);
    return c;
}

int version_cmp_rhel(const rhel_version_t *a, const rhel_version_t *b)
{
    int c = cmp_u32(a->major, b->major);
    if (c == 0)
        c = cmp_u32(a->minor, b->minor);
    return c;
}

char *version_format_ocp(const ocp_version_t *v, char *buf, size_t len)
{
    if (len > 0)
        snprintf(buf, len, "%u.%u.%u", v->major, v->minor, v->patch);
    return buf;
}

char *version_format_rhel(const rhel_version_t *v, char *buf, size_t len)
{
    if (len > 0)
        snprintf(buf, len, "%u.%u", v->major, v->minor);
    return buf;
}
