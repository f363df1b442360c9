/* The Ignition spec a node asks for, read from its Accept header with the
 * list tokenizer of field.c: elements split on ',', parameters on ';'. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http/accept.h"
#include "internal.h"

#define IGNITION_MEDIA_TYPE "application/vnd.coreos.ignition+json"

typedef struct text {
    const char *p, *end;
} text_t;

static text_t trimmed(const char *p, const char *end)
{
    http_trim_ows(&p, &end);
    return (text_t){p, end};
}

/* Media types and parameter names are case-insensitive (RFC 9110 8.3.1). */
static bool text_is(text_t t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t.end - t.p) == n && strncasecmp(t.p, s, n) == 0;
}

static bool take_number(text_t *t, unsigned max_digits, uint32_t *out)
{
    uint32_t n = 0, digits = 0;
    while (t->p < t->end && *t->p >= '0' && *t->p <= '9' && digits < max_digits) {
        n = n * 10 + (unsigned)(*t->p++ - '0');
        digits++;
    }
    *out = n;
    return digits > 0;
}

/* Semantic version X.Y.Z[-pre][+build], optionally quoted. */
static bool parse_version(text_t t, ignition_version_t *v)
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
    uint32_t whole, frac = 0, frac_digits = 0;
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
static ignition_spec_t spec_for(const ignition_version_t *v)
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
        return (ignition_spec_t)(IGNITION_SPEC_3_0 + v->minor);
    return v->minor > 0 ? (ignition_spec_t)(IGNITION_SPEC_3_0 + v->minor - 1)
                        : IGNITION_SPEC_UNSUPPORTED;
}

/* One element of the Accept list, "type/subtype *(; name=value)": true
 * with its spec and q (in thousandths, 1000 when absent) when it is the
 * Ignition type with a usable version. The type is all before the first
 * ';', even when empty; the first valid version and the first valid q
 * count. */
static bool ignition_element(const char *elem, size_t len, ignition_version_t *version, uint32_t *q)
{
    const char *end = elem + len;
    const char *semicolon = memchr(elem, ';', len);
    if (!text_is(trimmed(elem, semicolon ? semicolon : end), IGNITION_MEDIA_TYPE))
        return false;
    bool have_version = false, have_q = false;
    *q = 1000;
    http_list_t params = {semicolon ? semicolon + 1 : end, end};
    const char *param;
    size_t param_len;
    while (http_list_next(&params, ';', &param, &param_len)) {
        const char *eq = memchr(param, '=', param_len);
        if (!eq)
            continue;
        text_t key = trimmed(param, eq), value = trimmed(eq + 1, param + param_len);
        if (!have_version && text_is(key, "version"))
            have_version = parse_version(value, version);
        else if (!have_q && text_is(key, "q"))
            have_q = parse_qvalue(value, q);
    }
    /* The MCS skips an Ignition type without a usable version. */
    return have_version;
}

/* The Ignition element the MCS answers: of those with a spec we render,
 * the one with the highest q, the first among equals. Its version goes to
 * *version. IGNITION_SPEC_2_2 with *found false when there is no Ignition
 * element; IGNITION_SPEC_UNSUPPORTED (version: the first such element's)
 * when none has a spec we render. */
static ignition_spec_t chosen_element(const char *accept, size_t len, ignition_version_t *version, bool *found)
{
    http_list_t list = {accept, accept + len};
    const char *elem;
    size_t elem_len;
    ignition_spec_t best = IGNITION_SPEC_UNSUPPORTED;
    uint32_t best_q = 0;
    *found = false;
    while (http_list_next(&list, ',', &elem, &elem_len)) {
        ignition_version_t v = {0};
        uint32_t q;
        if (!ignition_element(elem, elem_len, &v, &q))
            continue;
        ignition_spec_t spec = spec_for(&v);
        if (spec == IGNITION_SPEC_UNSUPPORTED) {
            if (!*found)
                *version = v;
        } else if (best == IGNITION_SPEC_UNSUPPORTED || q > best_q) {
            best = spec;
            best_q = q;
            *version = v;
        }
        *found = true;
    }
    return *found ? best : IGNITION_SPEC_2_2;
}

ignition_spec_t http_accept_ignition_spec(const char *accept, size_t len)
{
    if (!accept)
        return IGNITION_SPEC_2_2;
    ignition_version_t version;
    bool found;
    return chosen_element(accept, len, &version, &found);
}

bool http_accept_ignition_version(const char *accept, size_t len, ignition_version_t *out)
{
    bool found = false;
    if (accept)
        chosen_element(accept, len, out, &found);
    return found;
}
