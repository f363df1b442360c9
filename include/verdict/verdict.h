/* verdict: the boot image skew verdict, one pure function of its inputs
 * (DESIGN 1.6). No I/O, no clock: the caller passes the time. A verdict is
 * immutable once computed; the data path shares it read-only. */
#ifndef SKEWGATE_VERDICT_H
#define SKEWGATE_VERDICT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "core/skew.h"

#define VERDICT_OVERRIDE_ANNOTATION "skewgate.openshift.io/override"


typedef enum {
    REASON_OVERRIDE,
    REASON_SOURCE_UNAVAILABLE,
    REASON_NOT_FOUND,
    REASON_STATUS_UNSET,
    REASON_ENFORCEMENT_DISABLED,
    REASON_CONTROLLER_DEGRADED,
    REASON_CONTROLLER_PROGRESSING,
    REASON_VERSION_UNPARSEABLE,
    REASON_OUT_OF_SKEW,
    REASON_COMPLIANT,
    REASON__COUNT
} verdict_reason_t;

/* An override: from the admin API (local to this gate) or from the object's
 * annotation (cluster-wide). until == 0 means no expiry. */
typedef struct verdict_override {
    bool active;
    decision_t decision;
    time_t until;
} verdict_override_t;

/* What the source knows. */
typedef enum {
    SOURCE_NO_DATA,     /* nothing confirmed yet */
    SOURCE_FAILING,     /* had data, now failing longer than max_staleness */
    SOURCE_ABSENT,      /* the object does not exist */
    SOURCE_PRESENT      /* object is the current view */
} source_state_t;

typedef struct verdict_input {
    source_state_t state;
    const json_t *object;               /* the MachineConfiguration; SOURCE_PRESENT only */
    verdict_limits_t limits;
    verdict_policy_t policy;
    bool has_previous;                  /* a previous settled decision exists */
    decision_t previous;
    verdict_override_t local_override;  /* admin API; wins over the annotation */
    time_t now;
} verdict_input_t;

#define VERDICT_MODE_LEN 16
#define VERDICT_VERSION_LEN 32
#define VERDICT_MESSAGE_LEN 512
#define VERDICT_RV_LEN 64

typedef struct verdict {
    decision_t decision;
    verdict_reason_t reason;
    bool settled;        /* decided by the object's own state (rules 4, 5, 7, 8, 9) */
    char mode[VERDICT_MODE_LEN];                    /* Automatic|Manual|None|"" */
    char ocp_version[VERDICT_VERSION_LEN];          /* boot image, "" if unset */
    char rhcos_version[VERDICT_VERSION_LEN];
    verdict_limits_t limits;
    char message[VERDICT_MESSAGE_LEN];
    char resource_version[VERDICT_RV_LEN];
    time_t since;        /* when this decision+reason began; set by the caller */
    time_t override_until;  /* reason Override: when the override lapses; 0: never */
} verdict_t;


/* Implements DESIGN 1.6 row by row; always produces a verdict, whatever
 * the shape of in->object (read only when state is SOURCE_PRESENT). Every
 * string in *out is NUL-terminated, valid UTF-8 and free of control
 * characters, truncated if need be. Readings the table leaves open:
 * - rule 1: an override annotation that does not parse is ignored and the
 *   message says so; an expired one is ignored silently.
 * - rule 3: a status whose mode is missing or "" counts as unset (the MCO
 *   has not filled it in yet).
 * - rule 6: Progressing counts as settled only when its status is "False";
 *   "Unknown" keeps the previous decision like "True".
 * - rule 7: shapes the API server refuses are VersionUnparseable under
 *   when_unparseable: a mode other than Automatic|Manual|None, Automatic
 *   without automatic or without any version, Manual without manual, a
 *   manual.mode other than OCPVersion|RHCOSVersion, Manual missing the
 *   version its mode names or also holding the other one, a version that
 *   is not a string. An empty version string counts as unset. In
 *   Automatic mode a malformed rhcosVersion is not looked at when
 *   ocpVersion is set (only the checked version matters, as for the MCO). */
void verdict_compute(const verdict_input_t *in, verdict_t *out);

/* Parses the annotation value "admit|reject[;until=RFC3339]", strictly:
 * lower-case words, no spaces. until is read by time_parse_rfc3339
 * (core/time.h says what it takes) and must lie after the epoch, since
 * until == 0 means "no expiry". 0 (out->active set), or -1 (*out
 * cleared). */
int verdict_override_parse(const char *s, verdict_override_t *out);

/* {decision, reason, settled, mode, bootImage:{ocpVersion,rhcosVersion},
 *  limit:{ocpVersion,rhelVersion}, message, resourceVersion, since}.
 * Unset strings are ""; since is RFC 3339 UTC, or null while 0. */
json_t *verdict_to_json(const verdict_t *v);

const char *verdict_reason_name(verdict_reason_t r);  /* "OutOfSkew", ... */

/* Same decision and reason, and the same facts behind them: settled,
 * mode, boot image versions, limits and message. resourceVersion and since
 * are left out, so that a status update changing nothing the verdict rests
 * on is not a new verdict. */
bool verdict_equal(const verdict_t *a, const verdict_t *b);

#endif
