/* http/query: one parameter of a request target's query, found or cut
 * out, as sent (no percent-decoding: a value is compared byte for byte).
 * Parameters are separated by '&', as Go's url.ParseQuery splits them. */
#ifndef SKEWGATE_HTTP_QUERY_H
#define SKEWGATE_HTTP_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "http/message.h"

/* The value of the first parameter called name in query[0..len) (the
 * part after '?'), into *value as a slice of query; false when there is
 * none. "name" without '=' has an empty value. */
bool http_query_param(const char *query, size_t len, const char *name, http_slice_t *value);

/* Does target[0..len) carry a parameter called name? */
bool http_target_has_param(const char *target, size_t len, const char *name);

/* target[0..len) with every parameter called name left out, into
 * out[cap]: its length, or 0 when it does not fit. The '?' goes too when
 * no parameter is left. */
size_t http_target_without_param(const char *target, size_t len, const char *name, char *out, size_t cap);

#endif
