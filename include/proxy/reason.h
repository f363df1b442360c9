/* reason: why the data path answered a request as it did, when the
 * verdict is not the reason: one enum, one table of names (for the access
 * log and the Skewgate-Reason words) and of the upstream error kind each
 * counts as in skewgate_upstream_errors_total. */
#ifndef SKEWGATE_REASON_H
#define SKEWGATE_REASON_H

#include "policy/admission.h"


/* The series of skewgate_upstream_errors_total. */
typedef enum {
    METRICS_UP_CONNECT,        /* refused, TLS setup or handshake failed */
    METRICS_UP_TIMEOUT,        /* connect or response timeout (504) */
    METRICS_UP_CLOSED,         /* closed or failed mid-exchange, response truncated */
    METRICS_UP_BAD_RESPONSE,   /* unparseable or oversized response head, bad chunking */
    METRICS_UP_QUEUE_FULL,     /* no upstream slot and the wait queue is full (503) */
    METRICS_UP_QUEUE_TIMEOUT,  /* waited queue_timeout for a slot (503) */
    METRICS_UP_OTHER,          /* e.g. a request head too large to forward */
    METRICS_N_UPSTREAM_ERRORS
} metrics_upstream_error_t;

typedef enum {
    GATE_REASON_NONE,
    /* the client's request */
    GATE_REASON_MALFORMED_REQUEST,
    GATE_REASON_HEADER_TOO_LARGE,
    GATE_REASON_HEADER_TIMEOUT,
    GATE_REASON_METHOD_NOT_ALLOWED,
    GATE_REASON_BODY_ON_GET,
    GATE_REASON_BAD_PATH,
    GATE_REASON_CLIENT_CLOSED,
    GATE_REASON_CLIENT_SEND_TIMEOUT,
    GATE_REASON_CLIENT_TOO_SLOW,    /* a client past its read deadline (coalesce.min_read_rate) */
    GATE_REASON_CLIENT_OVER_BUDGET, /* the slowest reader when the bytes kept for slow readers
                                       reached limits.max_buffered (or its address's share) */
    /* the upstream slot */
    GATE_REASON_QUEUE_FULL,
    GATE_REASON_QUEUE_TIMEOUT,
    /* the upstream exchange */
    GATE_REASON_REQUEST_TOO_LARGE,
    GATE_REASON_UPSTREAM_CONNECT,
    GATE_REASON_UPSTREAM_CONNECT_TIMEOUT,
    GATE_REASON_UPSTREAM_TLS,
    GATE_REASON_UPSTREAM_TLS_HANDSHAKE,
    GATE_REASON_UPSTREAM_WRITE,
    GATE_REASON_UPSTREAM_READ,
    GATE_REASON_UPSTREAM_CLOSED,
    GATE_REASON_UPSTREAM_CLOSED_EARLY,
    GATE_REASON_UPSTREAM_TIMEOUT,
    GATE_REASON_BAD_UPSTREAM_RESPONSE,
    GATE_REASON_BAD_UPSTREAM_CHUNKING,
    GATE_REASON_UPSTREAM_HEAD_TOO_LARGE,
    GATE_REASON_UNEXPECTED_UPGRADE,
    GATE_REASON__COUNT
} gate_reason_t;

/* "MalformedRequest", "UpstreamConnect", ...; NULL for GATE_REASON_NONE. */
const char *gate_reason_name(gate_reason_t r);
/* What a failure for this reason, answered before any byte of the
 * response went to the client, counts as. */
metrics_upstream_error_t gate_reason_upstream_kind(gate_reason_t r);

/* What the gate did with a request, as the access log and
 * skewgate_requests_total{decision} say it. */
typedef enum {
    REQUEST_ERROR,      /* answered with an error of the gate's own */
    REQUEST_ADMIT,      /* gated, admitted, relayed */
    REQUEST_REJECT,     /* gated and rejected by the verdict */
    REQUEST_PASS,       /* not gated, relayed */
    REQUEST__DECISIONS
} request_decision_t;

const char *request_decision_name(request_decision_t d);   /* "error", "admit", ... */


#endif
