/* The Ignition spec of an explain response, chosen from the Accept header
 * the way the MCS chooses it, so that a node gets a config it can parse. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "verdict/snapshot.h"

typedef struct text {
    const char *p, *end;
} text_t;

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static text_t trim(const char *p, const char *end)
{
    while (p < end && is_ows(*p))
        p++;
    while (end > p && is_ows(end[-1]))
        end--;
    return (text_t){p, end};
}

/* The trimmed item up to the next sep; moves *p past it. */
static text_t next_item(const char **p, const char *end, char sep)
{
    const char *start = *p;
    const char *stop = memchr(start, sep, (size_t)(end - start));
    if (!stop)
        stop = end;
    *p = stop < end ? stop + 1 : end;
    return trim(start, stop);
}

/* Media types and parameter names are case-insensitive (RFC 9110 8.3.1). */
static bool text_is(text_t t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t.end - t.p) == n && strncasecmp(t.p, s, n) == 0;
}

static bool take_number(text_t *t, unsigned max_digits, unsigned *out)
{
    unsigned n = 0, digits = 0;
    while (t->p < t->end && *t->p >= '0' && *t->p <= '9' && digits < max_digits) {
        n = n * 10 + (unsigned)(*t->p++ - '0');
        digits++;
    }
    *out = n;
    return digits > 0;
}

typedef struct requested_version {
    unsigned major, minor, patch;
    bool prerelease;    /* 3.4.0-experimental comes before 3.4.0 */
} requested_version_t;

/* Semantic version X.Y.Z[-pre][+build], optionally quoted. */
static bool parse_version(text_t t, requested_version_t *v)
{
    if (t.end - t.p >= 2 && *t.p == '"' && t.end[-1] == '"') {
        t.p++;
        t.end--;
    }
    if (!take_number(&t, 9, &v->major) || t.p == t.end || *t.p++ != '.' ||
        !take_number(&t, 9, &v->minor) || t.p == t.end || *t.p++ != '.' ||
        !take_number(&t, 9, &v->patch))
        return false;
    v->prerelease = t.p < t.end && *t.p == '-';
    if (t.p == t.end)
        return true;
    return (*t.p == '-' || *t.p == '+') && t.end - t.p > 1;
}

/* q in thousandths: "1", "0.5", "0.125". */
static bool parse_qvalue(text_t t, unsigned *milli)
{
    unsigned whole, frac = 0, frac_digits = 0;
    if (!take_number(&t, 3, &whole))
        return false;
    if (t.p < t.end && *t.p == '.') {
        t.p++;
        const char *start = t.p;
        take_number(&t, 3, &frac);
        frac_digits = (unsigned)(t.p - start);
        while (t.p < t.end && *t.p >= '0' && *t.p <= '9')
            t.p++;
    }
    if (t.p != t.end)
        return false;
    for (; frac_digits < 3; frac_digits++)
        frac *= 10;
    *milli = whole * 1000 + frac;
    return true;
}

/* The newest spec we render that is not newer than v, within v's major:
 * Ignition reads every older minor of its own major, so a client that asks
 * for 3.7.0 reads 3.4.0; a client that asks for 3.3.0 may not know 3.4.0. */
static int spec_for(const requested_version_t *v)
{
    if (v->major == 2) {
        bool at_least_2_2 = v->minor > 2 || (v->minor == 2 && (v->patch > 0 || !v->prerelease));
        return at_least_2_2 ? IGNITION_SPEC_2_2 : IGNITION_SPEC_UNSUPPORTED;
    }
    if (v->major != 3)
        return IGNITION_SPEC_UNSUPPORTED;
    if (v->minor > 4)
        return IGNITION_SPEC_3_4;
    if (v->patch > 0 || !v->prerelease)
        return IGNITION_SPEC_3_0 + (int)v->minor;
    return v->minor > 0 ? IGNITION_SPEC_3_0 + (int)v->minor - 1 : IGNITION_SPEC_UNSUPPORTED;
}

int snapshot_ignition_spec(const char *accept, size_t len)
{
    if (!accept)
        return IGNITION_SPEC_2_2;
    const char *p = accept, *end = accept + len;
    int best = -1;
    unsigned best_q = 0;
    bool unsupported = false;
    while (p < end) {
        text_t element = next_item(&p, end, ',');
        const char *params = element.p;
        if (!text_is(next_item(&params, element.end, ';'), "application/vnd.coreos.ignition+json"))
            continue;
        requested_version_t version = {0};
        bool have_version = false, have_q = false;
        unsigned q = 1000;
        while (params < element.end) {
            text_t param = next_item(&params, element.end, ';');
            const char *eq = memchr(param.p, '=', (size_t)(param.end - param.p));
            if (!eq)
                continue;
            text_t key = trim(param.p, eq), value = trim(eq + 1, param.end);
            if (!have_version && text_is(key, "version"))
                have_version = parse_version(value, &version);
            else if (!have_q && text_is(key, "q"))
                have_q = parse_qvalue(value, &q);
        }
        /* The MCS skips an Ignition type without a usable version. */
        if (!have_version)
            continue;
        int spec = spec_for(&version);
        if (spec == IGNITION_SPEC_UNSUPPORTED)
            unsupported = true;
        else if (best < 0 || q > best_q) {
            best = spec;
            best_q = q;
        }
    }
    if (best >= 0)
        return best;
    return unsupported ? IGNITION_SPEC_UNSUPPORTED : IGNITION_SPEC_2_2;
}
