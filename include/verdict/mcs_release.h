/* mcs_release: which Machine Config Server release the gate fronts, and so
 * which family of readings of Accept (http/accept.h) its explain answers
 * and evidence use: upstream.mcs_release, or, with auto, a documented
 * default. Where the release came from is reported by /verdict
 * (mcsRelease), `skewgate status` and skewgate_mcs_release_info. */
#ifndef SKEWGATE_MCS_RELEASE_H
#define SKEWGATE_MCS_RELEASE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/release.h"
#include "http/accept.h"

typedef enum {
    MCS_RELEASE_FROM_DEFAULT,   /* auto, and nothing says: MCS_RELEASE_DEFAULT */
    MCS_RELEASE_FROM_CONFIG,    /* upstream.mcs_release */
    MCS_RELEASE_FROM_CLUSTER,   /* auto: what the cluster reports */
} mcs_release_from_t;

/* auto without the cluster's word: 4.22, the first release whose MCO
 * carries BootImageSkewEnforcement, so the oldest a cluster that sets the
 * object runs. */
#define MCS_RELEASE_DEFAULT 22u

typedef struct mcs_release {
    unsigned minor;             /* release 4.minor */
    mcs_family_t family;
    mcs_release_from_t from;
} mcs_release_t;

/* "config", "default", "cluster". */
const char *mcs_release_from_name(mcs_release_from_t from);
/* The release for upstream.mcs_release's value: minor, or 0 for auto (the
 * default, until the cluster says otherwise). */
mcs_release_t mcs_release_configured(unsigned minor);
/* Newer than any release whose code the gate has read: read as the newest
 * family, which the gate logs. */
bool mcs_release_newer_than_known(const mcs_release_t *r);
bool mcs_release_equal(const mcs_release_t *a, const mcs_release_t *b);

#endif
