#include <stddef.h>

#include "proxy/reason.h"

static const struct {
    const char *name;
    metrics_upstream_error_t kind;
} reasons[GATE_REASON__COUNT] = {
    [GATE_REASON_NONE] = {NULL, METRICS_UP_OTHER},
    [GATE_REASON_MALFORMED_REQUEST] = {"MalformedRequest", METRICS_UP_OTHER},
    [GATE_REASON_HEADER_TOO_LARGE] = {"HeaderTooLarge", METRICS_UP_OTHER},
    [GATE_REASON_HEADER_TIMEOUT] = {"HeaderTimeout", METRICS_UP_OTHER},
    [GATE_REASON_METHOD_NOT_ALLOWED] = {"MethodNotAllowed", METRICS_UP_OTHER},
    [GATE_REASON_BODY_ON_GET] = {"BodyOnGet", METRICS_UP_OTHER},
    [GATE_REASON_BAD_PATH] = {"BadPath", METRICS_UP_OTHER},
    [GATE_REASON_CLIENT_CLOSED] = {"ClientClosed", METRICS_UP_OTHER},
    [GATE_REASON_CLIENT_SEND_TIMEOUT] = {"ClientSendTimeout", METRICS_UP_OTHER},
    [GATE_REASON_CLIENT_TOO_SLOW] = {"ClientTooSlow", METRICS_UP_OTHER},
    [GATE_REASON_CLIENT_OVER_BUDGET] = {"ClientOverBudget", METRICS_UP_OTHER},
    [GATE_REASON_QUEUE_FULL] = {"UpstreamQueueFull", METRICS_UP_QUEUE_FULL},
    [GATE_REASON_QUEUE_TIMEOUT] = {"UpstreamQueueTimeout", METRICS_UP_QUEUE_TIMEOUT},
    [GATE_REASON_REQUEST_TOO_LARGE] = {"RequestTooLarge", METRICS_UP_OTHER},
    [GATE_REASON_UPSTREAM_CONNECT] = {"UpstreamConnect", METRICS_UP_CONNECT},
    [GATE_REASON_UPSTREAM_CONNECT_TIMEOUT] = {"UpstreamConnectTimeout", METRICS_UP_TIMEOUT},
    [GATE_REASON_UPSTREAM_TLS] = {"UpstreamTLS", METRICS_UP_CONNECT},
    [GATE_REASON_UPSTREAM_TLS_HANDSHAKE] = {"UpstreamTLSHandshake", METRICS_UP_CONNECT},
    [GATE_REASON_UPSTREAM_WRITE] = {"UpstreamWrite", METRICS_UP_CLOSED},
    [GATE_REASON_UPSTREAM_READ] = {"UpstreamRead", METRICS_UP_CLOSED},
    [GATE_REASON_UPSTREAM_CLOSED] = {"UpstreamClosed", METRICS_UP_CLOSED},
    [GATE_REASON_UPSTREAM_CLOSED_EARLY] = {"UpstreamClosedEarly", METRICS_UP_CLOSED},
    [GATE_REASON_UPSTREAM_TIMEOUT] = {"UpstreamTimeout", METRICS_UP_TIMEOUT},
    [GATE_REASON_BAD_UPSTREAM_RESPONSE] = {"BadUpstreamResponse", METRICS_UP_BAD_RESPONSE},
    [GATE_REASON_BAD_UPSTREAM_CHUNKING] = {"BadUpstreamChunking", METRICS_UP_BAD_RESPONSE},
    [GATE_REASON_UPSTREAM_HEAD_TOO_LARGE] = {"UpstreamHeadTooLarge", METRICS_UP_BAD_RESPONSE},
    [GATE_REASON_UNEXPECTED_UPGRADE] = {"UnexpectedUpgrade", METRICS_UP_BAD_RESPONSE},
};

const char *gate_reason_name(gate_reason_t r)
{
    return (unsigned)r < GATE_REASON__COUNT ? reasons[r].name : NULL;
}

metrics_upstream_error_t gate_reason_upstream_kind(gate_reason_t r)
{
    return (unsigned)r < GATE_REASON__COUNT ? reasons[r].kind : METRICS_UP_OTHER;
}

const char *request_decision_name(request_decision_t d)
{
    static const char *const names[] = {
        [REQUEST_ERROR] = "error",
        [REQUEST_ADMIT] = "admit",
        [REQUEST_REJECT] = "reject",
        [REQUEST_PASS] = "pass",
    };
    return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "error";
}
