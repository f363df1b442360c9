#include <string.h>
#include <strings.h>

#include "http/query.h"
#include "policy/admission_token.h"

/* The credentials of "Bearer TOKEN" (RFC 6750 2.1: the scheme is
 * case-insensitive, then one or more spaces); false for another scheme. */
static bool bearer_token(const char *v, size_t len, http_slice_t *tok, uint32_t base)
{
    static const char scheme[] = "bearer";
    size_t n = sizeof scheme - 1;
    if (len <= n || strncasecmp(v, scheme, n) != 0 || v[n] != ' ')
        return false;
    while (n < len && v[n] == ' ')
        n++;
    *tok = (http_slice_t){base + (uint32_t)n, (uint32_t)(len - n)};
    return true;
}

admission_result_t admission_token_judge(const token_set_t *set, const char *head, const http_request_t *req)
{
    const http_header_t *auth = http_headers_get(&req->headers, HTTP_HDR_AUTHORIZATION);
    http_slice_t tok;
    if (auth && bearer_token(head + auth->value.off, auth->value.len, &tok, auth->value.off))
        return tok.len == 0 ? ADMISSION_TOKEN_MISSING
               : token_set_contains(set, head + tok.off, tok.len) ? ADMISSION_PASS
                                                                  : ADMISSION_TOKEN_INVALID;
    if (req->query.len == 0)
        return ADMISSION_TOKEN_MISSING;
    /* The parameter as Go reads it, decoded: one longer than any token
     * is one no set holds. */
    char value[TOKEN_MAX];
    int n = http_query_get(head + req->query.off, req->query.len, ADMISSION_TOKEN_PARAM, value, sizeof value);
    admission_result_t why = n == HTTP_QUERY_NONE || n == 0 ? ADMISSION_TOKEN_MISSING
                             : n == HTTP_QUERY_TOO_LONG     ? ADMISSION_TOKEN_INVALID
                             : token_set_contains(set, value, (size_t)n) ? ADMISSION_PASS
                                                                          : ADMISSION_TOKEN_INVALID;
    explicit_bzero(value, sizeof value);
    return why;
}
