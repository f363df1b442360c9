/* accesslog: one JSON line per request on stderr, formatted by hand into
 * a stack buffer (no allocation on the hot path): time, client, method,
 * path, pool, decision, reason, status, bytes, duration, upstream time,
 * User-Agent. */
#ifndef SKEWGATE_ACCESSLOG_H
#define SKEWGATE_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>

#include "proxy/reason.h"

/* What the access log and the metrics say of one request. The connection
 * fills in the request's side; the exchange, for an admitted request, the
 * upstream's. */
typedef struct request_log {
    uint32_t method_off, method_len;    /* slices of the request head */
    uint32_t path_off, path_len;
    uint32_t ua_off, ua_len;
    char pool[64];
    request_decision_t decision;
    const char *reason;     /* a verdict or gate reason's name; NULL if none */
    const char *pace_cause; /* Paced: why (pace_cause_name), NULL if not paced */
    uint32_t pace_place;    /* Paced: its place in line from 1, 0: none */
    int status;
    uint64_t bytes;         /* body and head bytes sent to the client */
    uint64_t start_ns;
    uint64_t upstream_start_ns, upstream_ns;  /* upstream_ns: time with the upstream */
} request_log_t;

/* The time field, formatted once per second per worker. */
typedef struct accesslog_clock {
    time_t sec;
    char text[32];
} accesslog_clock_t;

/* head: the request head the slices point into (NULL once released). */
void accesslog_write(accesslog_clock_t *clk, const request_log_t *log, const char *head,
                     const struct sockaddr_storage *peer, bool tls);

#endif
