/* accesslog: one JSON line per request on stderr, formatted by hand into
 * a stack buffer (no allocation on the hot path): time, client, method,
 * path, pool, decision, reason, status, bytes, duration, upstream time,
 * User-Agent. */
#ifndef SKEWGATE_ACCESSLOG_H
#define SKEWGATE_ACCESSLOG_H

#include <stddef.h>

struct conn;

void accesslog_write(struct conn *c);
/* Appends s as the inside of a JSON string (quotes not included);
 * returns the new length, never past cap. */
size_t accesslog_escape(char *out, size_t at, size_t cap, const char *s, size_t len);

#endif
