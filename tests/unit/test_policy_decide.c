/* policy_decide, row by row: every combination of gated path, token
 * policy, pending-machines policy, verdict and evidence that changes the
 * outcome, and the order the rules apply in. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "http/path.h"
#include "policy/decide.h"

#define GOOD "s3cret-token"
#define ACCEPT_34 "application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1"
#define ACCEPT_32 "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1"

typedef enum { TOKEN_OFF, TOKEN_ON } token_policy_t;
typedef enum { MACHINES_OFF, MACHINES_NO_LIST, MACHINES_PENDING, MACHINES_ACTIVE, MACHINES_UNKNOWN } machines_t;
/* pace.enabled: a request every rule admits is the pace room's to decide
 * (POLICY_PACE, one call, proxy/pace.h); the rules never ask it twice. */
typedef enum { PACE_OFF, PACE_ON } pace_t;

typedef struct row {
    const char *path;               /* the request target */
    token_policy_t token;
    const char *auth;               /* Authorization value sent, or NULL */
    machines_t machines;
    bool admit;                     /* the verdict */
    verdict_reason_t reason;
    bool evidence;                  /* evidence.enabled, min_spec 3.4.0 */
    const char *accept;             /* NULL: none sent */
    policy_action_t want;
    admission_result_t want_refusal;
    pace_t pace;                    /* PACE_OFF: pace.enabled false */
} row_t;

static const row_t rows[] = {
    /* 1. ungated paths pass, whatever else */
    {"/healthz", TOKEN_ON, NULL, MACHINES_UNKNOWN, false, REASON_OUT_OF_SKEW, true, ACCEPT_32, POLICY_PASS, ADMISSION_PASS, PACE_OFF},
    {"/configs/worker", TOKEN_OFF, NULL, MACHINES_OFF, false, REASON_OUT_OF_SKEW, false, NULL, POLICY_PASS, ADMISSION_PASS, PACE_OFF},
    /* a spelling that cleans into the prefix is gated (the clean path is judged) */
    {"/config/../config/worker", TOKEN_OFF, NULL, MACHINES_OFF, false, REASON_OUT_OF_SKEW, false, NULL, POLICY_REJECT, ADMISSION_PASS, PACE_OFF},
    /* 2. the token, before everything else that is gated */
    {"/config/worker", TOKEN_ON, NULL, MACHINES_PENDING, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_TOKEN_MISSING, PACE_OFF},
    {"/config/worker", TOKEN_ON, "Bearer wrong", MACHINES_PENDING, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_TOKEN_INVALID, PACE_OFF},
    {"/config/worker", TOKEN_ON, NULL, MACHINES_UNKNOWN, false, REASON_OUT_OF_SKEW, true, ACCEPT_32, POLICY_REFUSE, ADMISSION_TOKEN_MISSING, PACE_OFF},
    {"/config/worker?token=" GOOD, TOKEN_ON, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_ON, "Bearer " GOOD, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    /* 3. pending machines, after the token and before the verdict */
    {"/config/worker", TOKEN_ON, "Bearer " GOOD, MACHINES_UNKNOWN, false, REASON_OUT_OF_SKEW, false, NULL, POLICY_REFUSE, ADMISSION_UNKNOWN_MACHINE, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_NO_LIST, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_UNKNOWN_MACHINE, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_ACTIVE, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_ACTIVE_NODE, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_PENDING, true, REASON_COMPLIANT, false, NULL, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_PENDING, false, REASON_OUT_OF_SKEW, false, NULL, POLICY_REJECT, ADMISSION_PASS, PACE_OFF},
    /* 4. the verdict, before evidence: the broader reason answers */
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, false, REASON_OUT_OF_SKEW, true, ACCEPT_32, POLICY_REJECT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, false, REASON_CONTROLLER_DEGRADED, false, NULL, POLICY_REJECT, ADMISSION_PASS, PACE_OFF},
    /* 5. evidence: only what the verdict admits, only for reasons it applies to */
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, true, ACCEPT_32, POLICY_EVIDENCE, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_SOURCE_UNAVAILABLE, true, ACCEPT_32, POLICY_EVIDENCE, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_OVERRIDE, true, ACCEPT_32, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_ENFORCEMENT_DISABLED, true, ACCEPT_32, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, true, ACCEPT_34, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, true, NULL, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, ACCEPT_32, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
    /* 6. pacing: after everything else, the room decides what every rule admits */
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_PACE, ADMISSION_PASS, PACE_ON},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_PENDING, true, REASON_COMPLIANT, false, NULL, POLICY_PACE, ADMISSION_PASS, PACE_ON},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, true, ACCEPT_34, POLICY_PACE, ADMISSION_PASS, PACE_ON},
    /* and never sees a request another rule answers */
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, false, REASON_OUT_OF_SKEW, false, NULL, POLICY_REJECT, ADMISSION_PASS, PACE_ON},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, true, ACCEPT_32, POLICY_EVIDENCE, ADMISSION_PASS, PACE_ON},
    {"/config/worker", TOKEN_ON, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_TOKEN_MISSING, PACE_ON},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_UNKNOWN, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_UNKNOWN_MACHINE, PACE_ON},
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_ACTIVE, true, REASON_COMPLIANT, false, NULL, POLICY_REFUSE, ADMISSION_ACTIVE_NODE, PACE_ON},
    {"/healthz", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_PASS, ADMISSION_PASS, PACE_ON},
    /* 7. admitted */
    {"/config/worker", TOKEN_OFF, NULL, MACHINES_OFF, true, REASON_COMPLIANT, false, NULL, POLICY_ADMIT, ADMISSION_PASS, PACE_OFF},
};

static const char *action_name(policy_action_t a)
{
    static const char *const names[] = {"pass", "admit", "refuse", "reject", "evidence", "pace"};
    return names[a];
}

static addrset_t *addresses(machines_t m, const struct sockaddr_storage *peer)
{
    if (m == MACHINES_OFF || m == MACHINES_NO_LIST)
        return NULL;
    addrset_builder_t b = {0};
    addrset_key_t k;
    cr_assert_eq(addrset_key_from_sockaddr(peer, &k), 0);
    if (m != MACHINES_UNKNOWN)
        addrset_builder_add(&b, &k, m == MACHINES_PENDING ? ADDRSET_PENDING : ADDRSET_ACTIVE);
    addrset_t *s = addrset_build(&b);
    addrset_builder_free(&b);
    cr_assert_not_null(s);
    return s;
}

Test(policy_decide, every_row)
{
    char tokfile[] = "/tmp/skewgate-decide-XXXXXX";
    int fd = mkstemp(tokfile);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, GOOD "\n", sizeof GOOD), (ssize_t)sizeof GOOD);
    close(fd);
    char err[256];
    const char *files[] = {tokfile};
    token_set_t *tokens = token_set_load(files, 1, err, sizeof err);
    cr_assert_not_null(tokens, "%s", err);
    unlink(tokfile);

    struct sockaddr_storage peer = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&peer;
    in->sin_family = AF_INET;
    inet_pton(AF_INET, "10.0.0.7", &in->sin_addr);

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row_t *r = &rows[i];
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 "listeners:\n  - address: \"127.0.0.1:0\"\nadmission:\n  machines:\n    enabled: %s\n"
                 "evidence:\n  enabled: %s\n  min_spec: \"3.4.0\"\npace:\n  enabled: %s\n",
                 r->machines == MACHINES_OFF ? "false" : "true", r->evidence ? "true" : "false",
                 r->pace == PACE_ON ? "true" : "false");
        config_t *cfg = config_parse(yaml, strlen(yaml), "t.yaml", err, sizeof err);
        cr_assert_not_null(cfg, "row %zu: %s", i, err);

        char head[1024];
        int n = snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%s%s%s%s\r\n", r->path,
                         r->auth ? "Authorization: " : "", r->auth ? r->auth : "", r->auth ? "\r\n" : "",
                         r->accept ? "Accept: " : "", r->accept ? r->accept : "", r->accept ? "\r\n" : "");
        http_header_t fields[16];
        http_request_t req;
        http_limits_t lim = {16384, 16, 8192};
        http_request_init(&req, fields, 16);
        cr_assert_gt(http_request_parse(head, (size_t)n, &lim, &req), 0, "row %zu: %s", i, head);
        char clean[256];
        size_t clean_len;
        cr_assert_geq(http_path_normalize(head + req.path.off, req.path.len, clean, sizeof clean, &clean_len), 0);

        verdict_t v = {.decision = r->admit ? DECISION_ADMIT : DECISION_REJECT, .reason = r->reason, .settled = true};
        gate_snapshot_t *snap = gate_snapshot_new(&v, REJECT_HOLD, MCS_FAMILY_4_13);
        cr_assert_not_null(snap);
        addrset_t *set = addresses(r->machines, &peer);
        policy_request_t rq = {.head = head, .req = &req, .clean = clean, .clean_len = clean_len, .peer = &peer};
        policy_view_t view = {.cfg = cfg, .tokens = r->token == TOKEN_ON ? tokens : NULL, .addresses = set,
                              .snapshot = snap};
        policy_decision_t d = policy_decide(&rq, &view);
        cr_expect_eq(d.action, r->want, "row %zu (%s): %s, want %s", i, r->path, action_name(d.action),
                     action_name(r->want));
        cr_expect_eq(d.refusal, r->want_refusal, "row %zu (%s): refusal %s, want %s", i, r->path,
                     admission_reason_name(d.refusal) ? admission_reason_name(d.refusal) : "none",
                     admission_reason_name(r->want_refusal) ? admission_reason_name(r->want_refusal) : "none");
        if (set)
            addrset_unref(set);
        gate_snapshot_unref(snap);
        config_free(cfg);
    }
    token_set_unref(tokens);
}
