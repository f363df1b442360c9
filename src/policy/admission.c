#include <stddef.h>

#include "policy/admission.h"

static const struct {
    const char *name;
    int status;
} admission_reasons[ADMISSION__RESULTS] = {
    [ADMISSION_PASS] = {NULL, 0},
    /* 403, not a 5xx: Ignition fails the fetch at once, so a node without
     * the token is visible at once and an attacker learns nothing by
     * retrying. */
    [ADMISSION_TOKEN_MISSING] = {"TokenMissing", 403},
    [ADMISSION_TOKEN_INVALID] = {"TokenInvalid", 403},
    [ADMISSION_BAD_PROXY_HEADER] = {"BadProxyHeader", 400},
    [ADMISSION_UNTRUSTED_PROXY] = {"UntrustedProxy", 400},
    /* A 503 with an empty body: Ignition retries it on the same connection
     * every 5 s, so a held machine boots on the first try after its
     * Machine shows its address. */
    [ADMISSION_UNKNOWN_MACHINE] = {"UnknownMachine", 503},
    [ADMISSION_ACTIVE_NODE] = {"ActiveNode", 403},
    /* Held as the verdict holds: Ignition retries, and the node boots
     * once a slot is its. */
    [ADMISSION_PACED] = {"Paced", 503},
};

const char *admission_reason_name(admission_result_t r)
{
    return (unsigned)r < ADMISSION__RESULTS ? admission_reasons[r].name : NULL;
}

int admission_reason_status(admission_result_t r)
{
    return (unsigned)r < ADMISSION__RESULTS ? admission_reasons[r].status : 400;
}
