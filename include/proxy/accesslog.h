/* accesslog: one JSON line per request on stderr, formatted by hand into
 * a stack buffer (no allocation on the hot path): time, client, method,
 * path, pool, decision, reason, status, bytes, duration, upstream time,
 * User-Agent. */
#ifndef SKEWGATE_ACCESSLOG_H
#define SKEWGATE_ACCESSLOG_H

#include <stddef.h>

struct conn;

void accesslog_write(struct conn *c);

#endif
