/* http_accept: the part of content negotiation (RFC 9110 12.5.1) the gate
 * needs: which Ignition config spec a node reads, from its Accept header,
 * so that an explain response is a config it can parse. */
#ifndef SKEWGATE_HTTP_ACCEPT_H
#define SKEWGATE_HTTP_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ignition.h"

/* The Ignition specs an explain response can be written in. */
typedef enum {
    IGNITION_SPEC_2_2,
    IGNITION_SPEC_3_0,
    IGNITION_SPEC_3_1,
    IGNITION_SPEC_3_2,
    IGNITION_SPEC_3_3,
    IGNITION_SPEC_3_4,
    IGNITION_SPEC_UNSUPPORTED,  /* the MCS answers 400 with an empty body */
    IGNITION_SPEC__COUNT
} ignition_spec_t;

/* Picks the spec as the MCS does from an Accept header value (NULL = no
 * header): of the Ignition media types with a valid version, the one with
 * the highest q (the first among equals) that we can answer; the newest spec
 * we render that is not newer than it, within its major. No Ignition type:
 * IGNITION_SPEC_2_2. Only unsupported Ignition versions:
 * IGNITION_SPEC_UNSUPPORTED. Media types and parameter names match in any
 * case; OWS around '=' is allowed; a version may be quoted. */
ignition_spec_t http_accept_ignition_spec(const char *accept, size_t len);

/* The version the node asks for, as written (3.7.0 stays 3.7.0), of the
 * element http_accept_ignition_spec chooses; when no element has a spec
 * we render, the first Ignition element's. false when the header (NULL:
 * none) names no Ignition type with a valid version. Per-node evidence
 * reads it (policy/evidence.h). */
bool http_accept_ignition_version(const char *accept, size_t len, ignition_version_t *out);

#endif
