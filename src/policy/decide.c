/* The decision (policy/decide.h): the rules in their order, each one call. */
#include "http/path.h"
#include "policy/admission_machines.h"
#include "policy/admission_token.h"
#include "policy/decide.h"
#include "policy/evidence.h"

static bool path_gated(const config_gate_t *gate, const char *clean, size_t len)
{
    for (size_t i = 0; i < gate->n_prefixes; i++)
        if (http_path_has_prefix(clean, len, gate->prefixes[i]))
            return true;
    return false;
}

static bool evidence_holds(const policy_request_t *rq, const policy_view_t *view)
{
    const config_evidence_t *e = &view->cfg->evidence;
    if (!e->enabled || !evidence_applies(view->snapshot->verdict.reason))
        return false;
    const http_header_t *accept = http_headers_get(&rq->req->headers, HTTP_HDR_ACCEPT);
    mcs_family_t family = view->snapshot->mcs_family;
    return accept ? evidence_too_old(e, family, rq->head + accept->value.off, accept->value.len)
                  : evidence_too_old(e, family, NULL, 0);
}

static policy_decision_t decided(policy_action_t action, admission_result_t refusal)
{
    return (policy_decision_t){.action = action, .refusal = refusal};
}

policy_decision_t policy_decide(const policy_request_t *rq, const policy_view_t *view)
{
    if (!path_gated(&view->cfg->gate, rq->clean, rq->clean_len))
        return decided(POLICY_PASS, ADMISSION_PASS);
    admission_result_t why = view->tokens ? admission_token_judge(view->tokens, rq->head, rq->req) : ADMISSION_PASS;
    if (why == ADMISSION_PASS && view->cfg->admission.machines.enabled)
        why = admission_machines_judge(view->addresses, rq->peer);
    if (why != ADMISSION_PASS)
        return decided(POLICY_REFUSE, why);
    if (!view->snapshot->admit)
        return decided(POLICY_REJECT, ADMISSION_PASS);
    if (evidence_holds(rq, view))
        return decided(POLICY_EVIDENCE, ADMISSION_PASS);
    if (view->cfg->pace.enabled)
        return decided(POLICY_PACE, ADMISSION_PASS);
    return decided(POLICY_ADMIT, ADMISSION_PASS);
}
