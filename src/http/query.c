#include <string.h>

#include "http/query.h"

/* The parameter at q[at..): its end (the '&' or len) and whether its name is name. */
static size_t param_end(const char *q, size_t len, size_t at, const char *name, bool *named)
{
    const char *amp = memchr(q + at, '&', len - at);
    size_t end = amp ? (size_t)(amp - q) : len;
    size_t nlen = strlen(name);
    *named = end - at >= nlen && !memcmp(q + at, name, nlen) && (end - at == nlen || q[at + nlen] == '=');
    return end;
}

bool http_query_param(const char *query, size_t len, const char *name, http_slice_t *value)
{
    size_t nlen = strlen(name);
    for (size_t at = 0; at <= len;) {
        bool named;
        size_t end = param_end(query, len, at, name, &named);
        if (named) {
            size_t v = end - at == nlen ? end : at + nlen + 1;
            *value = (http_slice_t){(uint32_t)v, (uint32_t)(end - v)};
            return true;
        }
        at = end + 1;
    }
    return false;
}

bool http_target_has_param(const char *target, size_t len, const char *name)
{
    const char *mark = memchr(target, '?', len);
    http_slice_t v;
    return mark && http_query_param(mark + 1, len - (size_t)(mark + 1 - target), name, &v);
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
        bool named;
        size_t end = param_end(q, qlen, at, name, &named);
        if (!named) {
            size_t plen = end - at;
            if (at_out + 1 + plen > cap)
                return 0;
            out[at_out++] = first ? '?' : '&';
            memcpy(out + at_out, q + at, plen);
            at_out += plen;
            first = false;
        }
        at = end + 1;
    }
    return at_out;
}
