/* ignition: Ignition config spec versions, and which spec the boot images
 * of each OpenShift release can read (the data behind per-node evidence of
 * an old boot image, docs/evidence.md). In core because the configuration
 * resolves evidence.min_spec from enforcement.limits when it loads, and
 * the Accept parser (http) reports the spec a node asks for. */
#ifndef SKEWGATE_IGNITION_H
#define SKEWGATE_IGNITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/version.h"

typedef struct ignition_version {
    uint32_t major, minor, patch;
    bool prerelease;    /* 3.4.0-experimental comes before 3.4.0 */
} ignition_version_t;

/* A spec as configured: "3.2.0" (MAJOR.MINOR.PATCH, no pre-release),
 * major 2 or 3, the only ones Ignition has had. 0 or -1. */
int ignition_version_parse(const char *s, ignition_version_t *out);
/* <0, 0, >0 like strcmp: numeric per component, a pre-release just
 * before its release. */
int ignition_version_cmp(const ignition_version_t *a, const ignition_version_t *b);
/* "3.3.0" (a pre-release gets "-pre"); returns buf. */
char *ignition_version_format(const ignition_version_t *v, char *buf, size_t len);

/* One row of the table: the Ignition an OpenShift minor's RHCOS ships, as
 * Red Hat's advisory for that release lists its RPM, and the spec that
 * Ignition asks for (DESIGN 1.2). */
typedef struct ignition_release {
    uint32_t ocp_major, ocp_minor;
    const char *ignition;           /* "2.14.0" */
    ignition_version_t spec;        /* the newest spec it reads: 3.3.0 */
    const char *source;             /* "RHSA-2022:7398" */
} ignition_release_t;

/* The rows, oldest release first; *n set to their count. */
const ignition_release_t *ignition_releases(size_t *n);
/* The row that stands for boot images of OCP `ocp`: its own minor's, else
 * the newest row older than it (a release ships at least the Ignition of
 * the one before, so the older row never asks too much). NULL when `ocp`
 * is older than every row. */
const ignition_release_t *ignition_release_for(const ocp_version_t *ocp);

#endif
