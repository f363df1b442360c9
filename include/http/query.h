/* http/query: one parameter of a request target's query, found or cut
 * out, read exactly as Go's url.ParseQuery reads it (the MCS is a Go
 * server, and Go 1.17+ is what the gate must agree with): pairs split at
 * '&' only; a pair holding a ';' or a bad %-escape is refused (ParseQuery
 * reports an error and r.URL.Query() drops the pair); keys and values
 * percent-decoded with '+' as a space. So `to%6Ben=T`, `token=a%2Bb` and
 * `token=a+b` are all read as Go reads them: a token parameter, "a+b"
 * and "a b". */
#ifndef SKEWGATE_HTTP_QUERY_H
#define SKEWGATE_HTTP_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "http/message.h"

/* The longest name looked up. */
#define HTTP_QUERY_NAME_MAX 32

#define HTTP_QUERY_NONE (-1)        /* no pair Go keeps is called name */
#define HTTP_QUERY_TOO_LONG (-2)    /* its value decodes to more than cap bytes */

/* The decoded value of the first pair Go keeps whose decoded key is name
 * (at most HTTP_QUERY_NAME_MAX bytes), in query[0..len) (the part after
 * '?'), into out[cap]: its length (0 for "name" or "name="), or one of
 * the codes above. */
int http_query_get(const char *query, size_t len, const char *name, char *out, size_t cap);

/* Would http_target_without_param change target[0..len)? */
bool http_target_strips(const char *target, size_t len, const char *name);

/* target[0..len) without the pairs whose decoded key is name and without
 * the pairs Go refuses (they are no parameter to the MCS, and one may hold
 * a secret), the others as sent, into out[cap]: its length, or 0 when it
 * does not fit. The '?' goes too when no pair is left. */
size_t http_target_without_param(const char *target, size_t len, const char *name, char *out, size_t cap);

#endif
