/* admission_token: the provisioning token policy (admission.token,
 * DESIGN 1.7), judged on a gated request before the verdict. The token
 * comes from `Authorization: Bearer TOKEN` (what Ignition sends from its
 * pointer config's httpHeaders, spec 3.1 and later) or, failing that, from
 * a `token` query parameter. Neither is forwarded to the MCS: rewrite.c
 * drops both from every request. */
#ifndef SKEWGATE_ADMISSION_TOKEN_H
#define SKEWGATE_ADMISSION_TOKEN_H

#include "http/request.h"
#include "policy/admission.h"
#include "policy/token_set.h"

/* The query parameter that may carry the token. */
#define ADMISSION_TOKEN_PARAM "token"

/* ADMISSION_PASS, ADMISSION_TOKEN_MISSING or ADMISSION_TOKEN_INVALID for
 * the request parsed from head. */
admission_result_t admission_token_judge(const token_set_t *set, const char *head, const http_request_t *req);

#endif
