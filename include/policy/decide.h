/* policy/decide: what the gate does with one request, as one pure step.
 * It reads an immutable view of the request (its bytes, its parse, its
 * clean path, the client's address) and of what is published to the
 * worker (the configuration, the token set, the address set, the verdict
 * snapshot), and returns an action with its reason. It answers nothing,
 * records nothing and counts nothing: conn executes what it returns, so
 * the order of the rules is here and only here:
 *
 *   1. a path under no gated prefix passes (relayed, unjudged by policy);
 *   2. the token policy (admission.token): missing or wrong refuses;
 *   3. pending machines (admission.machines): a Node's or an unknown
 *      address refuses (403 ActiveNode, 503 UnknownMachine);
 *   4. the verdict: reject rejects, with the verdict's reason;
 *   5. evidence (evidence.enabled): a request the verdict admits for a
 *      reason evidence applies to, asking for too old a spec, is held;
 *   6. pacing (pace.enabled): the request is the pace room's to admit or
 *      hold (503 Paced), in one call under its lock (proxy/pace.h
 *      pace_decide), which conn makes for POLICY_PACE alone: the room
 *      owns that outcome wholly, and only a request the rules above
 *      admit ever takes its lock;
 *   7. otherwise the request is admitted.
 *
 * The policies come before the verdict: a node without the token is
 * refused whatever the verdict, and learns nothing of it. */
#ifndef SKEWGATE_POLICY_DECIDE_H
#define SKEWGATE_POLICY_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "core/addrset.h"
#include "http/request.h"
#include "policy/admission.h"
#include "policy/token_set.h"
#include "verdict/snapshot.h"

typedef struct policy_request {
    const char *head;                   /* the request head's bytes, which req's slices index */
    const http_request_t *req;
    const char *clean;                  /* the decoded, cleaned path */
    size_t clean_len;
    const struct sockaddr_storage *peer;    /* the client (the PROXY header's source, if any) */
} policy_request_t;

/* What the worker has published, read as one view for the request. */
typedef struct policy_view {
    const config_t *cfg;                /* gate.prefixes, admission.machines.enabled, evidence, pace.enabled */
    const token_set_t *tokens;          /* NULL: admission.token is off */
    const addrset_t *addresses;         /* NULL: no full list of Machines and Nodes yet */
    const gate_snapshot_t *snapshot;    /* the verdict */
} policy_view_t;

typedef enum {
    POLICY_PASS,        /* not gated: relayed */
    POLICY_ADMIT,       /* gated and admitted: relayed */
    POLICY_REFUSE,      /* an admission policy refused it: .refusal says why */
    POLICY_REJECT,      /* the verdict rejects: the snapshot's answer */
    POLICY_EVIDENCE,    /* evidence holds it: the snapshot's evidence answer */
    POLICY_PACE,        /* admitted by every rule, and pacing is on: the pace room decides */
} policy_action_t;

typedef struct policy_decision {
    policy_action_t action;
    admission_result_t refusal;         /* POLICY_REFUSE's reason, else ADMISSION_PASS */
} policy_decision_t;

policy_decision_t policy_decide(const policy_request_t *rq, const policy_view_t *view);

#endif
