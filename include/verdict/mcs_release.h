/* mcs_release: which Machine Config Server release the gate fronts, and so
 * which family of readings of Accept (http/accept.h) its explain answers
 * and evidence use: upstream.mcs_release, or, with auto, what the cluster
 * reports (the machine-config ClusterOperator's operator version, followed
 * by source/mcs_watch.h with the kubernetes source) or else a documented
 * default. Where the release came from is reported by /verdict
 * (mcsRelease), `skewgate status` and skewgate_mcs_release_info. */
#ifndef SKEWGATE_MCS_RELEASE_H
#define SKEWGATE_MCS_RELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

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

/* The ClusterOperator the release is read from with auto (cluster-scoped,
 * config.openshift.io/v1), and the entry of its status.versions[]. */
#define MCS_RELEASE_OPERATOR "machine-config"
#define MCS_RELEASE_OPERATOR_VERSION "operator"

#define MCS_RELEASE_VERSION_LEN 64
#define MCS_RELEASE_WHY_LEN 256

typedef struct mcs_release {
    unsigned minor;             /* release 4.minor */
    mcs_family_t family;
    mcs_release_from_t from;
    /* FROM_CLUSTER: the operator version as the cluster reported it
     * ("4.22.3"); else "". */
    char version[MCS_RELEASE_VERSION_LEN];
    /* FROM_DEFAULT under auto with the kubernetes source: why the
     * cluster's word is not taken (not read yet, absent, unreadable,
     * unparseable); else "". */
    char why[MCS_RELEASE_WHY_LEN];
} mcs_release_t;

/* "config", "default", "cluster". */
const char *mcs_release_from_name(mcs_release_from_t from);
/* The release for upstream.mcs_release's value: minor, or 0 for auto (the
 * default, until the cluster says otherwise). */
mcs_release_t mcs_release_configured(unsigned minor);
/* The default (as mcs_release_configured(0)), saying why: printf-style. */
__attribute__((format(printf, 1, 2)))
mcs_release_t mcs_release_default(const char *fmt, ...);
/* The minor of an OpenShift release version as a ClusterOperator reports
 * it: "4.N" then the end, '.', '-' or '+' ("4.22.3", "4.19.0-rc.2",
 * "4.23.0-0.nightly-2026-01-02-030405"), N decimal (no leading zero) up
 * to MCS_RELEASE_MAX; any N, also below MCS_RELEASE_OLDEST. 0 or -1. */
int mcs_release_parse_version(const char *s, unsigned *minor);
/* What the machine-config ClusterOperator co says (NULL: there is none):
 * its status.versions[] entry named "operator" read as
 * mcs_release_parse_version reads it gives FROM_CLUSTER with the version;
 * an absent object, entry or version, or one that does not parse, gives
 * the default with why. Pure. */
mcs_release_t mcs_release_of_cluster_operator(const json_t *co);
/* Newer than any release whose code the gate has read: read as the newest
 * family, which the gate logs. */
bool mcs_release_newer_than_known(const mcs_release_t *r);
/* Older than the oldest the gate reads (only the cluster can say so):
 * read as the oldest family, which the gate logs. */
bool mcs_release_older_than_known(const mcs_release_t *r);
bool mcs_release_equal(const mcs_release_t *a, const mcs_release_t *b);

#endif
