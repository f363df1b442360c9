/* http_accept: which Ignition config spec the Machine Config Server serves
 * for an Accept header, read exactly as the MCS reads it (pkg/server/api.go
 * of openshift/machine-config-operator release-4.13 to release-4.18: not
 * RFC 9110's negotiation; src/http/accept.c says how), so that an explain
 * response is the spec, or the 400, the MCS would have given the node. */
#ifndef SKEWGATE_HTTP_ACCEPT_H
#define SKEWGATE_HTTP_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ignition.h"

/* The specs those MCS releases serve (3.0.0 is not one: it answers 400),
 * which an explain response is written in. */
typedef enum {
    IGNITION_SPEC_2_2,
    IGNITION_SPEC_3_1,
    IGNITION_SPEC_3_2,
    IGNITION_SPEC_3_3,
    IGNITION_SPEC_3_4,
    IGNITION_SPEC_UNSUPPORTED,  /* the MCS answers 400 with an empty body */
    IGNITION_SPEC__COUNT
} ignition_spec_t;

/* The spec the MCS serves for the first Accept field's value (NULL = no
 * field; the MCS reads only the first, r.Header.Get): after a stable sort
 * by descending q, the first Ignition element whose version it serves;
 * no Ignition element with a valid version: IGNITION_SPEC_2_2; only
 * unsupported versions: IGNITION_SPEC_UNSUPPORTED. Case-sensitive, q as
 * Go's strconv.ParseFloat(q, 32), versions as go-semver parses them. */
ignition_spec_t http_accept_ignition_spec(const char *accept, size_t len);

/* The version the node asks for, as written (3.7.0 stays 3.7.0; numbers
 * past 2^32-1 read as 2^32-1), of the element http_accept_ignition_spec
 * decides by; when none has a spec the MCS serves, the first Ignition
 * element's in the sorted order. false when the value (NULL: none) names
 * no Ignition type with a valid version. Per-node evidence reads it
 * (policy/evidence.h). */
bool http_accept_ignition_version(const char *accept, size_t len, ignition_version_t *out);

#endif
