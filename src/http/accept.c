/* The Ignition spec a node gets, read from its Accept header exactly as the
 * Machine Config Server of a given release reads it: parseAcceptHeader and
 * detectSpecVersionFromAcceptHeader of pkg/server/api.go (and, from 4.20,
 * the Ignition converter of pkg/controller/common) in
 * openshift/machine-config-operator. parseAcceptHeader is the same in every
 * release from 4.13 to 4.23; the choice comes in four families, one table
 * each (`readings` below; docs/mcs-fidelity.md has them as measured).
 * What the Go code does, step by step, and where each step is here:
 *   - split the value on every ',', trim each element as strings.TrimSpace
 *     (Unicode white space), split it on every ';' and trim each part
 *     (no quoting, no OWS rules: byte-exact Go string operations);
 *   - keep elements whose first part holds a '/'; the subtype is all after
 *     the first '/', compared case-sensitively with the Ignition one (the
 *     type before the '/' is not looked at);
 *   - of the parts "key=value" (cut at the first '='), the first "version"
 *     whose value go-semver parses and the first "q" that
 *     strconv.ParseFloat(value, 32) takes count; no valid q is q=1;
 *   - sort.SliceStable by descending q (float32); then, by the family:
 *     4.13-4.19: the first Ignition element with a version the release
 *       serves decides (semver ranges, a pre-release below its release);
 *       if only unsupported versions are there, 400;
 *     4.20 on: the first Ignition element with a version decides, served
 *       or not: its major.minor (2.x from 2.2 up read as 2.2) must be one
 *       the converter knows (2.2, 3.0-3.5; 3.0 then fails to convert: 500),
 *       else 400, except that from 4.21 a newer 3.x minor gets 3.5.0;
 *   - no Ignition element with a version: 2.2.0. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/accept.h"

#define IGNITION_SUBTYPE "vnd.coreos.ignition+json"

typedef struct text {
    const char *p, *end;
} text_t;

/* ---- strings.TrimSpace: Unicode white space at both ends */

/* Length of the white-space rune starting at p (0: none). unicode.IsSpace
 * is true for \t \n \v \f \r, space, U+0085, U+00A0, U+1680, U+2000-U+200A,
 * U+2028, U+2029, U+202F, U+205F and U+3000; their UTF-8 forms are below. */
static size_t space_rune(const unsigned char *p, const unsigned char *end)
{
    size_t n = (size_t)(end - p);
    if (n == 0)
        return 0;
    if (*p < 0x80)
        return *p == ' ' || (*p >= '\t' && *p <= '\r');
    if (n >= 2 && p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
        return 2;
    if (n < 3)
        return 0;
    if ((p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) ||
        (p[0] == 0xe2 && p[1] == 0x80 && (p[2] <= 0x8a || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf)) ||
        (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) || (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80))
        return 3;
    return 0;
}

static text_t trim_space(const char *p, const char *end)
{
    const unsigned char *s = (const unsigned char *)p, *e = (const unsigned char *)end;
    for (size_t n; s < e && (n = space_rune(s, e)) > 0;)
        s += n;
    while (e > s) {
        if (e[-1] < 0x80) {     /* the common case: one ASCII byte */
            if (space_rune(e - 1, e) == 0)
                break;
            e--;
        } else if (e - s >= 2 && space_rune(e - 2, e) == 2) {
            e -= 2;
        } else if (e - s >= 3 && space_rune(e - 3, e) == 3) {
            e -= 3;
        } else {
            break;
        }
    }
    return (text_t){(const char *)s, (const char *)e};
}

static bool text_is(text_t t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t.end - t.p) == n && memcmp(t.p, s, n) == 0;
}

/* Cuts t at the first c: the part before goes to *head, t keeps the rest;
 * false (t untouched, *head = all of t) when c is not there. */
static bool cut(text_t *t, char c, text_t *head)
{
    const char *at = memchr(t->p, c, (size_t)(t->end - t->p));
    *head = (text_t){t->p, at ? at : t->end};
    if (at)
        t->p = at + 1;
    return at != NULL;
}

/* ---- go-semver (github.com/coreos/go-semver, vendored by every release) */

/* reIdentifier: ^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$, or empty. */
static bool semver_identifier(text_t t)
{
    bool in_part = false;
    for (const char *p = t.p; p < t.end; p++) {
        if (*p == '.') {
            if (!in_part)
                return false;
            in_part = false;
        } else if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-') {
            in_part = true;
        } else {
            return false;
        }
    }
    return t.p == t.end || in_part;
}

/* strconv.ParseInt(s, 10, 64) of a part without '+' or '-' (Set cut them
 * off before): digits only, at most INT64_MAX. Kept as uint64. */
static bool semver_number(text_t t, uint64_t *out)
{
    uint64_t n = 0;
    if (t.p == t.end)
        return false;
    for (const char *p = t.p; p < t.end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (n > ((uint64_t)INT64_MAX - d) / 10)
            return false;
        n = n * 10 + d;
    }
    *out = n;
    return true;
}

typedef struct semver {
    uint64_t num[3];
    bool prerelease;    /* non-empty PreRelease: before its release */
} semver_t;

/* Version.Set: metadata after the first '+', then the pre-release after
 * the first '-' of what is left (so "3.4.0-" and "3.4.0+" are 3.4.0), then
 * SplitN(".", 3): three numbers, the third holding any further dot. */
static bool semver_parse(text_t t, semver_t *v)
{
    text_t version, pre = {t.end, t.end}, meta = {t.end, t.end};
    if (cut(&t, '+', &version))
        meta = t;
    t = version;
    if (cut(&t, '-', &version))
        pre = t;
    if (!semver_identifier(pre) || !semver_identifier(meta))
        return false;
    text_t part;
    for (int i = 0; i < 2; i++)
        if (!cut(&version, '.', &part) || !semver_number(part, &v->num[i]))
            return false;
    if (!semver_number(version, &v->num[2]))
        return false;
    v->prerelease = pre.p < pre.end;
    return true;
}

/* v.LessThan(major.minor.0) */
static bool semver_below(const semver_t *v, uint64_t major, uint64_t minor)
{
    if (v->num[0] != major)
        return v->num[0] < major;
    if (v->num[1] != minor)
        return v->num[1] < minor;
    return v->num[2] == 0 && v->prerelease;
}

/* (v.major, v.minor) < (major, minor): where the converter of 4.20 on
 * places a version (GetSupportedMinorVersion drops patch and pre-release). */
static bool minor_below(const semver_t *v, uint64_t major, uint64_t minor)
{
    return v->num[0] != major ? v->num[0] < major : v->num[1] < minor;
}

/* ---- the readings: one table per family of releases */

/* A version from lo (inclusive) to hi (exclusive) is served spec. */
typedef struct served {
    uint32_t lo_major, lo_minor, hi_major, hi_minor;
    ignition_spec_t spec;
} served_t;

typedef struct reading {
    const char *releases;
    /* false: ranges in go-semver order (3.4.0-rc is below 3.4.0), as the
     * switch of 4.13-4.19 compares; true: by major.minor alone. */
    bool by_minor;
    /* true: the first Ignition element with a version decides, served or
     * not (4.20 on); false: the first served one, and an unserved one
     * before it is passed over (4.13-4.19). */
    bool first_decides;
    const served_t *served;
    size_t n_served;
} reading_t;

/* release-4.13..4.18: the if/else chain (4.13-4.16), the same switch
 * (4.17, 4.18). */
static const served_t served_4_13[] = {
    {3, 4, 4, 0, IGNITION_SPEC_3_4}, {3, 3, 3, 4, IGNITION_SPEC_3_3}, {3, 2, 3, 3, IGNITION_SPEC_3_2},
    {3, 1, 3, 2, IGNITION_SPEC_3_1}, {2, 2, 3, 0, IGNITION_SPEC_2_2},
};
/* release-4.19: the switch with 3.5.0 (commit 995bf2614). */
static const served_t served_4_19[] = {
    {3, 5, 4, 0, IGNITION_SPEC_3_5}, {3, 4, 3, 5, IGNITION_SPEC_3_4}, {3, 3, 3, 4, IGNITION_SPEC_3_3},
    {3, 2, 3, 3, IGNITION_SPEC_3_2}, {3, 1, 3, 2, IGNITION_SPEC_3_1}, {2, 2, 3, 0, IGNITION_SPEC_2_2},
};
/* release-4.20 (commit 84e407b70): 2.x at or above 2.2.0 is 2.2.0, then
 * GetSupportedMinorVersion among the converter's 2.2, 3.0 .. 3.5; 3.0.0
 * has no converter to it, so ConvertRawExtIgnitionToVersion fails: 500. */
static const served_t served_4_20[] = {
    {2, 2, 3, 0, IGNITION_SPEC_2_2}, {3, 0, 3, 1, IGNITION_SPEC_UNCONVERTIBLE}, {3, 1, 3, 2, IGNITION_SPEC_3_1},
    {3, 2, 3, 3, IGNITION_SPEC_3_2}, {3, 3, 3, 4, IGNITION_SPEC_3_3}, {3, 4, 3, 5, IGNITION_SPEC_3_4},
    {3, 5, 3, 6, IGNITION_SPEC_3_5},
};
/* release-4.21 on (MCO-2182, commits c24449d90 in 4.21, 9a0ff4208 in
 * 4.22): an unknown 3.x minor above ign3types.MaxVersion (3.5) gets it. */
static const served_t served_4_21[] = {
    {2, 2, 3, 0, IGNITION_SPEC_2_2}, {3, 0, 3, 1, IGNITION_SPEC_UNCONVERTIBLE}, {3, 1, 3, 2, IGNITION_SPEC_3_1},
    {3, 2, 3, 3, IGNITION_SPEC_3_2}, {3, 3, 3, 4, IGNITION_SPEC_3_3}, {3, 4, 3, 5, IGNITION_SPEC_3_4},
    {3, 5, 4, 0, IGNITION_SPEC_3_5},
};

#define SERVED(t) t, sizeof t / sizeof t[0]
static const reading_t readings[MCS_FAMILY__COUNT] = {
    [MCS_FAMILY_4_13] = {"4.13-4.18", false, false, SERVED(served_4_13)},
    [MCS_FAMILY_4_19] = {"4.19", false, false, SERVED(served_4_19)},
    [MCS_FAMILY_4_20] = {"4.20", true, true, SERVED(served_4_20)},
    [MCS_FAMILY_4_21] = {"4.21+", true, true, SERVED(served_4_21)},
};

/* The first release (4.N) of each family, oldest first. */
static const struct {
    unsigned minor;
    mcs_family_t family;
} family_starts[] = {
    {13, MCS_FAMILY_4_13}, {19, MCS_FAMILY_4_19}, {20, MCS_FAMILY_4_20}, {21, MCS_FAMILY_4_21},
};

const char *mcs_family_name(mcs_family_t family)
{
    return (unsigned)family < MCS_FAMILY__COUNT ? readings[family].releases : "?";
}

mcs_family_t mcs_family_of_release(unsigned minor)
{
    mcs_family_t f = family_starts[0].family;
    for (size_t i = 0; i < sizeof family_starts / sizeof family_starts[0]; i++)
        if (minor >= family_starts[i].minor)
            f = family_starts[i].family;
    return f;
}

static const reading_t *reading_of(mcs_family_t family)
{
    return &readings[(unsigned)family < MCS_FAMILY__COUNT ? family : MCS_FAMILY_NEWEST];
}

/* The spec a release of reading r serves for version v. */
static ignition_spec_t semver_spec(const reading_t *r, const semver_t *v)
{
    bool (*below)(const semver_t *, uint64_t, uint64_t) = r->by_minor ? minor_below : semver_below;
    for (size_t i = 0; i < r->n_served; i++) {
        const served_t *s = &r->served[i];
        if (!below(v, s->lo_major, s->lo_minor) && below(v, s->hi_major, s->hi_minor))
            return s->spec;
    }
    return IGNITION_SPEC_UNSUPPORTED;
}

/* ---- strconv.ParseFloat(s, 32) */

static char lower(char c)
{
    return (char)(c | 0x20);
}

static bool ci_equal(text_t t, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(t.end - t.p) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(t.p[i]) != s[i])
            return false;
    return true;
}

/* special(): [+-]inf, [+-]infinity, nan (no sign), in any case. */
static bool go_special(text_t t, float *out)
{
    bool neg = t.p < t.end && *t.p == '-';
    text_t rest = {t.p + (t.p < t.end && (*t.p == '+' || *t.p == '-')), t.end};
    if (ci_equal(rest, "inf") || ci_equal(rest, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (ci_equal(t, "nan")) {
        *out = NAN;
        return true;
    }
    return false;
}

/* underscoreOK: an '_' only between digits, or after the base prefix. */
static bool go_underscores_ok(text_t t)
{
    const char *p = t.p;
    if (p < t.end && (*p == '+' || *p == '-'))
        p++;
    char saw = '^';
    bool hex = false;
    if (t.end - p >= 2 && p[0] == '0' && (lower(p[1]) == 'x' || lower(p[1]) == 'b' || lower(p[1]) == 'o')) {
        hex = lower(p[1]) == 'x';
        p += 2;
        saw = '0';
    }
    for (; p < t.end; p++) {
        char c = lower(*p);
        if ((*p >= '0' && *p <= '9') || (hex && c >= 'a' && c <= 'f')) {
            saw = '0';
        } else if (*p == '_') {
            if (saw != '0')
                return false;
            saw = '_';
        } else {
            if (saw == '_')
                return false;
            saw = '!';
        }
    }
    return saw != '_';
}

/* The digits of a number, as strtof reads them once Go has said the text
 * is a number: at most MAX_DIGITS significant ones, and a final 1 when a
 * non-zero one was dropped (a sticky digit: the value stays on the same
 * side of every rounding midpoint, the longest of which for float32 has
 * 112 significant decimal digits), the point's place kept in the exponent. */
#define MAX_DIGITS 160

typedef struct digits {
    char buf[MAX_DIGITS + 2];
    size_t n;
    bool sticky;
} digits_t;

static bool is_digit(char c, bool hex)
{
    return (c >= '0' && c <= '9') || (hex && lower(c) >= 'a' && lower(c) <= 'f');
}

/* readFloat's syntax with the value left to strtof: true when all of t
 * is a number ParseFloat accepts (ErrRange aside), *out its float32. */
static bool go_parse_float32(text_t t, float *out)
{
    if (go_special(t, out))
        return true;
    const char *p = t.p;
    bool neg = false, underscores = false, hex = false, sawdot = false, sawdigits = false;
    if (p < t.end && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    if (t.end - p > 2 && p[0] == '0' && lower(p[1]) == 'x') {
        hex = true;
        p += 2;
    }
    digits_t d = {.n = 0, .sticky = false};
    long seen = 0, dot_at = 0;  /* significant digits seen; how many before the point */
    for (; p < t.end; p++) {
        if (*p == '_') {
            underscores = true;
        } else if (*p == '.') {
            if (sawdot)
                break;
            sawdot = true;
            dot_at = seen;
        } else if (is_digit(*p, hex)) {
            sawdigits = true;
            if (*p == '0' && seen == 0) {
                dot_at -= sawdot ? 1 : 0;   /* a leading zero after the point moves it */
                continue;
            }
            if (d.n < MAX_DIGITS)
                d.buf[d.n++] = *p;
            else if (*p != '0')
                d.sticky = true;
            seen++;
        } else {
            break;
        }
    }
    if (!sawdigits)
        return false;
    if (!sawdot)
        dot_at = seen;
    long exp10 = 0;
    if (p < t.end && lower(*p) == (hex ? 'p' : 'e')) {
        p++;
        int esign = 1;
        if (p < t.end && (*p == '+' || *p == '-'))
            esign = *p++ == '-' ? -1 : 1;
        if (p == t.end || *p < '0' || *p > '9')
            return false;
        long e = 0;
        for (; p < t.end && ((*p >= '0' && *p <= '9') || *p == '_'); p++) {
            if (*p == '_')
                underscores = true;
            else if (e < 100000)
                e = e * 10 + (*p - '0');
        }
        exp10 = esign * e;
    } else if (hex) {
        return false;   /* a hexadecimal mantissa requires a 'p' exponent */
    }
    if (p != t.end || (underscores && !go_underscores_ok(t)))
        return false;
    long kept = (long)d.n + (d.sticky ? 1 : 0);
    long shift = (dot_at - kept) * (hex ? 4 : 1) + exp10;
    /* Go's own fast path (atof32exact): at most 7 digits are exact in a
     * float32, as is 10^k for k <= 10, and one IEEE multiply or divide
     * rounds correctly. q=0.1, q=0.5, q=1 take it. */
    static const float pow10f[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    if (!hex && d.n <= 7 && shift >= -10 && shift <= 10) {
        uint32_t m = 0;
        for (size_t i = 0; i < d.n; i++)
            m = m * 10 + (uint32_t)(d.buf[i] - '0');
        float f = shift < 0 ? (float)m / pow10f[-shift] : (float)m * pow10f[shift];
        *out = neg ? -f : f;
        return true;
    }
    /* Otherwise strtof, on it rebuilt in strtof's syntax: sign, "0x"?,
     * digits, sticky, exponent moved by the point's place (hex digits are
     * 4 bits). */
    char num[MAX_DIGITS + 48];
    size_t at = 0;
    if (neg)
        num[at++] = '-';
    if (hex) {
        num[at++] = '0';
        num[at++] = 'x';
    }
    if (d.n == 0)
        num[at++] = '0';
    memcpy(num + at, d.buf, d.n);
    at += d.n;
    if (d.sticky)
        num[at++] = '1';
    if (shift < -1000000)
        shift = -1000000;
    if (shift > 1000000)
        shift = 1000000;
    at += (size_t)snprintf(num + at, sizeof num - at, "%c%ld", hex ? 'p' : 'e', d.n ? shift : 0L);
    float f = strtof(num, NULL);
    if (isinf(f))
        return false;   /* ErrRange: the MCS keeps looking for a q */
    *out = f;
    return true;
}

/* ---- parseAcceptHeader, one element at a time */

typedef struct element {
    bool media;             /* parts[0] holds a '/': it takes part in the sort */
    bool ignition;          /* the Ignition subtype with a version go-semver takes */
    semver_t version;
    float q;
} element_t;

static void read_element(text_t e, element_t *out)
{
    memset(out, 0, sizeof *out);
    out->q = 1.0f;
    text_t part;
    bool more = cut(&e, ';', &part);
    part = trim_space(part.p, part.end);
    text_t subtype = part;
    if (!cut(&subtype, '/', &part))
        return;
    out->media = true;
    bool is_ignition = text_is(subtype, IGNITION_SUBTYPE), have_version = false, have_q = false;
    while (more) {
        more = cut(&e, ';', &part);
        part = trim_space(part.p, part.end);
        text_t value = part, key;
        if (!cut(&value, '=', &key))
            continue;
        if (text_is(key, "version") && !have_version)
            have_version = semver_parse(value, &out->version);
        else if (text_is(key, "q") && !have_q)
            have_q = go_parse_float32(value, &out->q);
    }
    out->ignition = is_ignition && have_version;
}

/* ---- the choice */

/* Walks the elements of accept[0..len) in order, those with a media type
 * only; false when there are no more. */
typedef struct walk {
    text_t rest;
    bool done;
} walk_t;

static bool walk_next(walk_t *w, element_t *e)
{
    while (!w->done) {
        text_t elem;
        w->done = !cut(&w->rest, ',', &elem);
        read_element(trim_space(elem.p, elem.end), e);
        if (e->media)
            return true;
    }
    return false;
}

typedef struct choice {
    ignition_spec_t spec;
    bool found;             /* an Ignition element with a version is there */
    semver_t version;       /* the deciding element's (found) */
} choice_t;

/* sort.SliceStable(header, q[i] > q[j]) as Go 1.19 to 1.25 run it (4.13 is built with 1.19, 4.22 with 1.25) (sort's
 * stable_func: insertion sort of 20-element blocks, then SymMerge). With
 * every q a number any stable sort gives this order; a q of NaN compares
 * false both ways, and then only the same steps give the MCS's order. */
typedef struct slot {
    float q;
    uint32_t index;     /* the element's place among those with a media type */
    uint8_t kind;       /* SLOT_OTHER, SLOT_DECIDES, SLOT_PASSED */
} slot_t;

/* An element that is no Ignition one with a version; one that ends the
 * search (served, or any, by the family's rule); one an older release
 * passes over (not served), kept for the 400 and for evidence. */
enum { SLOT_OTHER, SLOT_DECIDES, SLOT_PASSED };

static bool slot_less(const slot_t *s, size_t i, size_t j)
{
    return s[i].q > s[j].q;
}

static void slot_swap(slot_t *s, size_t i, size_t j)
{
    slot_t t = s[i];
    s[i] = s[j];
    s[j] = t;
}

static void insertion_sort(slot_t *s, size_t a, size_t b)
{
    for (size_t i = a + 1; i < b; i++)
        for (size_t j = i; j > a && slot_less(s, j, j - 1); j--)
            slot_swap(s, j, j - 1);
}

static void swap_range(slot_t *s, size_t a, size_t b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        slot_swap(s, a + i, b + i);
}

static void rotate(slot_t *s, size_t a, size_t m, size_t b)
{
    size_t i = m - a, j = b - m;
    while (i != j) {
        if (i > j) {
            swap_range(s, m - i, m, j);
            i -= j;
        } else {
            swap_range(s, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(s, m - i, m, i);
}

static void sym_merge(slot_t *s, size_t a, size_t m, size_t b)
{
    if (m - a == 1) {
        size_t i = m, j = b;
        while (i < j) {
            size_t h = (i + j) / 2;
            if (slot_less(s, h, a))
                i = h + 1;
            else
                j = h;
        }
        for (size_t k = a; k + 1 < i; k++)
            slot_swap(s, k, k + 1);
        return;
    }
    if (b - m == 1) {
        size_t i = a, j = m;
        while (i < j) {
            size_t h = (i + j) / 2;
            if (!slot_less(s, m, h))
                i = h + 1;
            else
                j = h;
        }
        for (size_t k = m; k > i; k--)
            slot_swap(s, k, k - 1);
        return;
    }
    size_t mid = (a + b) / 2, n = mid + m, start, r;
    if (m > mid) {
        start = n - b;
        r = mid;
    } else {
        start = a;
        r = m;
    }
    size_t p = n - 1;
    while (start < r) {
        size_t c = (start + r) / 2;
        if (!slot_less(s, p - c, c))
            start = c + 1;
        else
            r = c;
    }
    size_t end = n - start;
    if (start < m && m < end)
        rotate(s, start, m, end);
    if (a < start && start < mid)
        sym_merge(s, a, start, mid);
    if (mid < end && end < b)
        sym_merge(s, mid, end, b);
}

static void stable_sort(slot_t *s, size_t n)
{
    size_t block = 20, a = 0, b = block;
    for (; b <= n; a = b, b += block)
        insertion_sort(s, a, b);
    insertion_sort(s, a, n);
    for (; block < n; block *= 2) {
        for (a = 0, b = 2 * block; b <= n; a = b, b += 2 * block)
            sym_merge(s, a, a + block, b);
        if (a + block < n)
            sym_merge(s, a, a + block, n);
    }
}

/* Elements sorted exactly when a q is NaN: 24 KiB of stack. Past it (a
 * head of thousands of elements and a NaN) NaN sorts as -Inf: the one
 * reading that can differ from the MCS's (docs/mcs-fidelity.md). */
#define SORT_SLOTS 2048

static float sort_key(float q)
{
    return isnan(q) ? -INFINITY : q;
}

static uint8_t kind_of(const reading_t *r, const element_t *e)
{
    if (!e->ignition)
        return SLOT_OTHER;
    return r->first_decides || semver_spec(r, &e->version) != IGNITION_SPEC_UNSUPPORTED ? SLOT_DECIDES
                                                                                        : SLOT_PASSED;
}

/* The element at place `index` (among those with a media type). */
static void element_at(const char *accept, size_t len, uint32_t index, element_t *e)
{
    walk_t w = {{accept, accept + len}, false};
    for (uint32_t i = 0; walk_next(&w, e) && i < index; i++)
        ;
}

static choice_t choose(const reading_t *r, const char *accept, size_t len)
{
    choice_t none = {IGNITION_SPEC_2_2, false, {{0, 0, 0}, false}};
    element_t e;
    walk_t w = {{accept, accept + len}, false};
    uint32_t n = 0;
    bool nan = false;
    /* Without a NaN the sorted order is descending q, first among equals:
     * keep the first deciding element of the highest q, and the first
     * passed-over one of the highest q. */
    element_t best[3];
    bool have[3] = {false, false, false};
    while (walk_next(&w, &e)) {
        n++;
        nan = nan || isnan(e.q);
        uint8_t kind = kind_of(r, &e);
        if (kind != SLOT_OTHER && (!have[kind] || sort_key(e.q) > sort_key(best[kind].q))) {
            best[kind] = e;
            have[kind] = true;
        }
    }
    if (nan && n <= SORT_SLOTS) {
        slot_t slots[SORT_SLOTS];
        w = (walk_t){{accept, accept + len}, false};
        for (uint32_t i = 0; walk_next(&w, &e); i++)
            slots[i] = (slot_t){e.q, i, kind_of(r, &e)};
        stable_sort(slots, n);
        have[SLOT_DECIDES] = have[SLOT_PASSED] = false;
        for (uint32_t k = 0; k < n && !have[SLOT_DECIDES]; k++) {
            uint8_t kind = slots[k].kind;
            if (kind == SLOT_OTHER || have[kind])
                continue;
            element_at(accept, len, slots[k].index, &best[kind]);
            have[kind] = true;
        }
    }
    if (have[SLOT_DECIDES])
        return (choice_t){semver_spec(r, &best[SLOT_DECIDES].version), true, best[SLOT_DECIDES].version};
    if (have[SLOT_PASSED])
        return (choice_t){IGNITION_SPEC_UNSUPPORTED, true, best[SLOT_PASSED].version};
    return none;
}

ignition_spec_t http_accept_ignition_spec(mcs_family_t family, const char *accept, size_t len)
{
    return choose(reading_of(family), accept ? accept : "", accept ? len : 0).spec;
}

static uint32_t clamp32(uint64_t n)
{
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

bool http_accept_ignition_version(mcs_family_t family, const char *accept, size_t len, ignition_version_t *out)
{
    choice_t c = choose(reading_of(family), accept ? accept : "", accept ? len : 0);
    if (!c.found)
        return false;
    *out = (ignition_version_t){clamp32(c.version.num[0]), clamp32(c.version.num[1]), clamp32(c.version.num[2]),
                                c.version.prerelease};
    return true;
}
