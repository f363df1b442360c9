#include <string.h>

#include "internal.h"
#include "http/query.h"

/* One pair of a query as Go's url.ParseQuery (Go 1.17 and later) reads
 * it: the bytes up to the next '&', the key before the first '=', the
 * value after it. Go refuses a pair holding a ';' or a '%' not followed
 * by two hex digits (in its key or value): ParseQuery reports an error and
 * goes on without it, and r.URL.Query(), which drops the error, never
 * shows it. */
typedef struct pair {
    size_t at, end;             /* the pair: q[at..end); end is the '&' or len */
    size_t eq;                  /* its '=', or end */
    bool refused;
} pair_t;

/* Does s[0..n) decode (QueryUnescape: %XX, '+' as a space) without error? */
static bool unescapes(const char *s, size_t n)
{
    for (const char *p = memchr(s, '%', n); p; p = memchr(p, '%', (size_t)(s + n - p))) {
        size_t left = (size_t)(s + n - p);
        if (left < 3 || !http_is((unsigned char)p[1], HTTP_C_HEX) || !http_is((unsigned char)p[2], HTTP_C_HEX))
            return false;
        p += 3;
    }
    return true;
}

static pair_t pair_at(const char *q, size_t len, size_t at)
{
    const char *amp = memchr(q + at, '&', len - at);
    pair_t p = {at, amp ? (size_t)(amp - q) : len, 0, false};
    const char *eq = memchr(q + at, '=', p.end - at);
    p.eq = eq ? (size_t)(eq - q) : p.end;
    p.refused = memchr(q + at, ';', p.end - at) != NULL || !unescapes(q + at, p.end - at);
    return p;
}

/* Decodes s[0..n) into out[cap]: the decoded length, or cap + 1 when it
 * does not fit (s has been checked by unescapes). */
static size_t unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++, w++) {
        char c = s[i];
        if (c == '%') {
            c = (char)(http_hex_value((unsigned char)s[i + 1]) << 4 | http_hex_value((unsigned char)s[i + 2]));
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (w == cap)
            return cap + 1;
        out[w] = c;
    }
    return w;
}

/* Is the pair's decoded key name? A key that decodes longer is not. */
static bool pair_named(const char *q, const pair_t *p, const char *name)
{
    if (p->refused)
        return false;
    size_t nlen = strlen(name);
    char key[HTTP_QUERY_NAME_MAX + 1];
    size_t klen = unescape(q + p->at, p->eq - p->at, key, nlen < sizeof key ? nlen : sizeof key - 1);
    return klen == nlen && memcmp(key, name, nlen) == 0;
}

int http_query_get(const char *query, size_t len, const char *name, char *out, size_t cap)
{
    for (size_t at = 0; at < len;) {
        pair_t p = pair_at(query, len, at);
        if (pair_named(query, &p, name)) {
            size_t v = p.eq < p.end ? p.eq + 1 : p.end;
            size_t n = unescape(query + v, p.end - v, out, cap);
            return n > cap ? HTTP_QUERY_TOO_LONG : (int)n;
        }
        at = p.end + 1;
    }
    return HTTP_QUERY_NONE;
}

bool http_target_strips(const char *target, size_t len, const char *name)
{
    const char *mark = memchr(target, '?', len);
    if (!mark)
        return false;
    const char *q = mark + 1;
    size_t qlen = len - (size_t)(q - target);
    for (size_t at = 0; at < qlen;) {
        pair_t p = pair_at(q, qlen, at);
        if (p.refused || pair_named(q, &p, name))
            return true;
        at = p.end + 1;
    }
    return false;
}

size_t http_target_without_param(const char *target, size_t len, const char *name, char *out, size_t cap)
{
    const char *mark = memchr(target, '?', len);
    size_t path_len = mark ? (size_t)(mark - target) : len;
    if (path_len > cap)
        return 0;
    memcpy(out, target, path_len);
    size_t at_out = path_len;
    if (!mark)
        return at_out;
    const char *q = mark + 1;
    size_t qlen = len - path_len - 1;
    bool first = true;
    for (size_t at = 0; at <= qlen;) {
        pair_t p = pair_at(q, qlen, at);
        if (!p.refused && !pair_named(q, &p, name)) {
            size_t plen = p.end - at;
            if (at_out + 1 + plen > cap)
                return 0;
            out[at_out++] = first ? '?' : '&';
            memcpy(out + at_out, q + at, plen);
            at_out += plen;
            first = false;
        }
        at = p.end + 1;
    }
    return at_out;
}
