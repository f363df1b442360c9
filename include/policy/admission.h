/* policy/admission: what the admission policies (DESIGN 1.7: the token,
 * pending machines, and the PROXY protocol's trust) made of a request, and
 * the status and name each refusal is answered and counted with. */
#ifndef SKEWGATE_POLICY_ADMISSION_H
#define SKEWGATE_POLICY_ADMISSION_H

/* What the admission policies (DESIGN 1.7) made of a request: passed, or
 * refused for a reason that the Skewgate-Reason field, the access log and
 * skewgate_admission_rejects_total{reason} name. */
typedef enum {
    ADMISSION_PASS,                 /* no policy refused it */
    ADMISSION_TOKEN_MISSING,        /* 403: no Authorization: Bearer nor token parameter */
    ADMISSION_TOKEN_INVALID,        /* 403: a token, not one of the accepted ones */
    ADMISSION_BAD_PROXY_HEADER,     /* 400: no valid PROXY header within header_timeout */
    ADMISSION_UNTRUSTED_PROXY,      /* 400: a PROXY listener's peer outside trusted_proxies */
    ADMISSION_UNKNOWN_MACHINE,      /* held, 503: no Machine or Node has the client's address (yet) */
    ADMISSION_ACTIVE_NODE,          /* 403: the address of a Node, or of a Machine with a nodeRef */
    ADMISSION_PACED,                /* held, 503: pace.max_joining nodes are joining, or others
                                       asked first (pace, DESIGN 1.9) */
    ADMISSION__RESULTS
} admission_result_t;

/* "TokenMissing", ...; NULL for ADMISSION_PASS. */
const char *admission_reason_name(admission_result_t r);
/* The status a refusal is answered with. */
int admission_reason_status(admission_result_t r);

#endif
