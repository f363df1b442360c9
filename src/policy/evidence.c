/* Per-node evidence of an old boot image (policy/evidence.h): one Accept
 * parse and one comparison per gated request, only when enabled. */
#include "policy/evidence.h"
#include "http/accept.h"

bool evidence_applies(verdict_reason_t reason)
{
    return reason != REASON_OVERRIDE && reason != REASON_ENFORCEMENT_DISABLED;
}

bool evidence_too_old(const config_evidence_t *e, mcs_family_t family, const char *accept, size_t accept_len)
{
    ignition_version_t asked;
    if (!http_accept_ignition_version(family, accept, accept_len, &asked))
        return false;
    return ignition_version_cmp(&asked, &e->min_spec) < 0;
}
