#include <string.h>

#include "core/skew.h"

void verdict_limits_default(verdict_limits_t *limits)
{
    limits->ocp = (ocp_version_t){4, 13, 0};
    limits->rhel = (rhel_version_t){9, 2};
}

void verdict_policy_default(verdict_policy_t *policy)
{
    policy->when_unknown = DECISION_ADMIT;
    policy->when_unparseable = DECISION_ADMIT;
}

const char *decision_name(decision_t d) { return d == DECISION_REJECT ? "reject" : "admit"; }

int decision_parse_n(const char *s, size_t len, decision_t *out)
{
    if (len == 5 && memcmp(s, "admit", 5) == 0)
        *out = DECISION_ADMIT;
    else if (len == 6 && memcmp(s, "reject", 6) == 0)
        *out = DECISION_REJECT;
    else
        return -1;
    return 0;
}

int decision_parse(const char *s, decision_t *out)
{
    return s ? decision_parse_n(s, strlen(s), out) : -1;
}
