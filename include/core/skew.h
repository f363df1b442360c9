/* skew: the values a boot image skew policy is made of, shared by the
 * configuration (which reads them) and the verdict (which applies them):
 * the limits, the two decisions and what to decide when the object cannot
 * tell. They sit in core because conf is below verdict. */
#ifndef SKEWGATE_SKEW_H
#define SKEWGATE_SKEW_H

#include "core/version.h"

typedef enum { DECISION_ADMIT = 0, DECISION_REJECT = 1 } decision_t;

typedef struct verdict_limits {
    ocp_version_t ocp;          /* default 4.13.0 */
    rhel_version_t rhel;        /* default 9.2 */
} verdict_limits_t;

typedef struct verdict_policy {
    decision_t when_unknown;      /* default admit */
    decision_t when_unparseable;  /* default admit, as the MCO */
} verdict_policy_t;

/* The MCO's current limits (DESIGN 1.5): OCP 4.13.0, RHEL 9.2. */
void verdict_limits_default(verdict_limits_t *limits);
/* Admit when unknown and when unparseable. */
void verdict_policy_default(verdict_policy_t *policy);

const char *decision_name(decision_t d);              /* "admit" | "reject" */
int decision_parse(const char *s, decision_t *out);   /* 0 or -1 */
/* The same for s[0..len): exactly "admit" or "reject". */
int decision_parse_n(const char *s, size_t len, decision_t *out);

#endif
