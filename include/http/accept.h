/* http_accept: which Ignition config spec the Machine Config Server serves
 * for an Accept header, read exactly as the MCS of a given release reads it
 * (pkg/server/api.go of openshift/machine-config-operator: not RFC 9110's
 * negotiation; src/http/accept.c says how, one table per family of
 * releases), so that an explain response is the spec, or the 400 or 500,
 * that MCS would have given the node, and evidence reads the element it
 * reads. */
#ifndef SKEWGATE_HTTP_ACCEPT_H
#define SKEWGATE_HTTP_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/release.h"

#include "core/ignition.h"

/* What an MCS answers an Accept with: a spec it serves, which an explain
 * response is written in, or one of its two empty failures. */
typedef enum {
    IGNITION_SPEC_2_2,
    IGNITION_SPEC_3_1,
    IGNITION_SPEC_3_2,
    IGNITION_SPEC_3_3,
    IGNITION_SPEC_3_4,
    IGNITION_SPEC_3_5,          /* release-4.19 on */
    IGNITION_SPEC_UNSUPPORTED,  /* the MCS answers 400 with an empty body */
    IGNITION_SPEC_UNCONVERTIBLE,/* 4.20 on, 3.0.x: it picks 3.0.0, which its converter cannot make: 500, empty */
    IGNITION_SPEC__COUNT
} ignition_spec_t;

/* The families of MCS releases that read Accept alike (the real code of
 * each release branch; docs/mcs-fidelity.md has the table). */
typedef enum {
    MCS_FAMILY_4_13,    /* 4.13-4.18: the first served element of the sorted list; newest 3.4.0 */
    MCS_FAMILY_4_19,    /* 4.19: the same, and 3.5.0 */
    MCS_FAMILY_4_20,    /* 4.20: the first Ignition element with a version decides, by major.minor */
    MCS_FAMILY_4_21,    /* 4.21 on: the same, and newer 3.x minors get 3.5.0 */
    MCS_FAMILY__COUNT
} mcs_family_t;

#define MCS_FAMILY_NEWEST MCS_FAMILY_4_21
/* MCS_RELEASE_OLDEST, MCS_RELEASE_NEWEST: core/release.h. */

/* "4.13-4.18", "4.19", "4.20", "4.21+"; "?" out of range. */
const char *mcs_family_name(mcs_family_t family);
/* The family of release 4.minor (minor >= MCS_RELEASE_OLDEST; a release
 * newer than MCS_RELEASE_NEWEST reads as the newest family). */
mcs_family_t mcs_family_of_release(unsigned minor);

/* The spec the MCS of `family` serves for the first Accept field's value
 * (NULL = no field; the MCS reads only the first, r.Header.Get): after a
 * stable sort by descending q, the deciding Ignition element's (which one
 * decides is the family's rule); no Ignition element with a valid version:
 * IGNITION_SPEC_2_2. Case-sensitive, q as Go's strconv.ParseFloat(q, 32),
 * versions as go-semver parses them. */
ignition_spec_t http_accept_ignition_spec(mcs_family_t family, const char *accept, size_t len);

/* The version the node asks for, as written (3.7.0 stays 3.7.0; numbers
 * past 2^32-1 read as 2^32-1), of the element http_accept_ignition_spec
 * decides by; when none is served by a family that looks past unserved
 * ones, the first Ignition element's in the sorted order. false when the
 * value (NULL: none) names no Ignition type with a valid version.
 * Per-node evidence reads it (policy/evidence.h). */
bool http_accept_ignition_version(mcs_family_t family, const char *accept, size_t len, ignition_version_t *out);

#endif
