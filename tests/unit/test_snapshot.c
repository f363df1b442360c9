#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verdict/snapshot.h"

#define VALIDATOR "/usr/bin/ignition-validate"

extern char **environ;

static const char out_of_skew_message[] =
    "the cluster is using OCP boot image version 4.12.0, which is below the minimum "
    "required version 4.13.0";

static verdict_t rejecting(void)
{
    verdict_t v = {.decision = DECISION_REJECT, .reason = REASON_OUT_OF_SKEW, .settled = true};
    snprintf(v.mode, sizeof v.mode, "Manual");
    snprintf(v.ocp_version, sizeof v.ocp_version, "4.12.0");
    snprintf(v.message, sizeof v.message, "%s", out_of_skew_message);
    return v;
}

static const char *mode_name(reject_mode_t mode)
{
    return mode == REJECT_HOLD ? "hold" : mode == REJECT_DENY ? "deny" : "explain";
}

/* The head as a string, and the body as its own allocation. */
static char *head_of(const gate_response_t *r)
{
    return strndup(r->data, r->head_len);
}

static char *body_of(const gate_response_t *r)
{
    return strndup(r->data + r->head_len, r->len - r->head_len);
}

static json_t *explain_json(const gate_snapshot_t *s, const char *accept)
{
    int spec = http_accept_ignition_spec(s->mcs_family, accept, accept ? strlen(accept) : 0);
    const gate_response_t *r = gate_snapshot_reject(s, spec, HTTP_CONN_KEEP_ALIVE);
    char *body = body_of(r);
    json_error_t error;
    json_t *config = json_loads(body, 0, &error);
    cr_assert_not_null(config, "accept %s: %s in %s", accept, error.text, body);
    free(body);
    return config;
}

static const char *ignition_version(const json_t *config)
{
    return json_string_value(json_object_get(json_object_get(config, "ignition"), "version"));
}

Test(snapshot, hold_is_byte_exact)
{
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_HOLD, MCS_FAMILY_4_13);
    cr_assert_not_null(s);
    cr_expect_not(s->admit);
    const char *base = "HTTP/1.1 503 Service Unavailable\r\n"
                       "Content-Length: 0\r\n"
                       "Skewgate-Reason: OutOfSkew\r\n"
                       "Cache-Control: no-store\r\n";
    const char *endings[HTTP_CONN__COUNT] = {
        [HTTP_CONN_KEEP_ALIVE] = "\r\n",
        [HTTP_CONN_CLOSE] = "Connection: close\r\n\r\n",
        [HTTP_CONN_KEEP_ALIVE_10] = "Connection: keep-alive\r\n\r\n",
    };
    for (int variant = 0; variant < HTTP_CONN__COUNT; variant++) {
        char want[512];
        snprintf(want, sizeof want, "%s%s", base, endings[variant]);
        const gate_response_t *r = gate_snapshot_reject(s, 0, variant);
        cr_expect_eq(r->len, strlen(want), "variant %d", variant);
        cr_expect_eq(r->head_len, r->len, "an empty body: HEAD gets the same bytes");
        cr_expect(r->len == strlen(want) && memcmp(r->data, want, r->len) == 0, "variant %d: %.*s",
                  variant, (int)r->len, r->data);
    }
    gate_snapshot_unref(s);
}

Test(snapshot, hold_and_deny_ignore_the_spec)
{
    verdict_t v = rejecting();
    for (reject_mode_t mode = REJECT_HOLD; mode <= REJECT_DENY; mode++) {
        gate_snapshot_t *s = gate_snapshot_new(&v, mode, MCS_FAMILY_4_13);
        for (int spec = 0; spec < IGNITION_SPEC__COUNT; spec++)
            cr_expect_eq(gate_snapshot_reject(s, spec, HTTP_CONN_CLOSE)->data,
                         gate_snapshot_reject(s, 0, HTTP_CONN_CLOSE)->data);
        gate_snapshot_unref(s);
    }
}

Test(snapshot, deny_is_403_with_the_reason)
{
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_DENY, MCS_FAMILY_4_13);
    const gate_response_t *r = gate_snapshot_reject(s, 0, HTTP_CONN_KEEP_ALIVE);
    char *head = head_of(r), *body = body_of(r);
    cr_expect(strncmp(head, "HTTP/1.1 403 Forbidden\r\n", 24) == 0, "%s", head);
    cr_expect(strstr(head, "\r\nContent-Type: text/plain; charset=utf-8\r\n"), "%s", head);
    cr_expect(strstr(head, "\r\nSkewgate-Reason: OutOfSkew\r\n"), "%s", head);
    char want[1024];
    snprintf(want, sizeof want, "skewgate: OutOfSkew: %s\n", out_of_skew_message);
    cr_expect_str_eq(body, want);
    free(head);
    free(body);
    gate_snapshot_unref(s);
}

Test(snapshot, explain_400_is_empty)
{
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_EXPLAIN, MCS_FAMILY_4_13);
    const gate_response_t *r = gate_snapshot_reject(s, IGNITION_SPEC_UNSUPPORTED, HTTP_CONN_KEEP_ALIVE);
    const char *want = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                       "Skewgate-Reason: OutOfSkew\r\nCache-Control: no-store\r\n\r\n";
    cr_expect(r->len == strlen(want) && memcmp(r->data, want, r->len) == 0, "%.*s", (int)r->len,
              r->data);
    gate_snapshot_unref(s);
}

/* Content-Length, parsed back, is the body length of every response. */
Test(snapshot, content_length_matches_every_body)
{
    verdict_t v = rejecting();
    for (reject_mode_t mode = REJECT_HOLD; mode <= REJECT_EXPLAIN; mode++) {
        gate_snapshot_t *s = gate_snapshot_new(&v, mode, MCS_FAMILY_4_13);
        for (int spec = 0; spec < IGNITION_SPEC__COUNT; spec++)
            for (int variant = 0; variant < HTTP_CONN__COUNT; variant++) {
                const gate_response_t *r = gate_snapshot_reject(s, spec, variant);
                char *head = head_of(r);
                size_t head_len = strlen(head);
                cr_assert(head_len >= 4 && strcmp(head + head_len - 4, "\r\n\r\n") == 0 &&
                              strstr(head, "\r\n\r\n") == head + head_len - 4,
                          "%s spec %d variant %d: head ends at its only blank line",
                          mode_name(mode), spec, variant);
                const char *cl = strstr(head, "\r\nContent-Length: ");
                cr_assert_not_null(cl, "%s", head);
                cr_expect_eq(strtoull(cl + 18, NULL, 10), r->len - r->head_len,
                             "%s spec %d variant %d", mode_name(mode), spec, variant);
                free(head);
            }
        gate_snapshot_unref(s);
    }
}

Test(snapshot, explain_follows_the_accept_header)
{
    static const struct {
        const char *accept;
        const char *version;
    } cases[] = {
        {"application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1", "3.4.0"},
        {"application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1", "3.3.0"},
        {"application/vnd.coreos.ignition+json;version=3.2.0", "3.2.0"},
        {"application/vnd.coreos.ignition+json;version=2.2.0", "2.2.0"},
        {"application/vnd.coreos.ignition+json; version=2.4.0, "
         "application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1",
         "2.2.0"},
        {NULL, "2.2.0"},
        {"", "2.2.0"},
        {"*/*", "2.2.0"},
        {"application/json", "2.2.0"},
        {"application/vnd.coreos.ignition+json", "2.2.0"},
        {"application/vnd.coreos.ignition+json;version=3.7.0, */*;q=0.1", "3.4.0"},
        /* the MCS matches the subtype and "version" case-sensitively (release-4.13) */
        {"Application/VND.CoreOS.Ignition+JSON ; q=0.9 ; Version=\"3.1.0\"", "2.2.0"},
        {"Application/vnd.coreos.ignition+json ; q=0.9 ; version=3.1.0", "3.1.0"},
        {"application/vnd.coreos.ignition+json;version=3.4.0-experimental", "3.3.0"},
        {"application/vnd.coreos.ignition+json;version=3.0.0-x", "2.2.0"},   /* the MCS's answer (release-4.13) */
        {"application/vnd.coreos.ignition+json;version=2.2.0;q=0.2, "
         "application/vnd.coreos.ignition+json;version=3.1.0;q=0.8",
         "3.1.0"},
        {"application/vnd.coreos.ignition+json;version=4.0.0, "
         "application/vnd.coreos.ignition+json;version=3.2.0;q=0.5",
         "3.2.0"},
        {"application/vnd.coreos.ignition+json;version=bogus, "
         "application/vnd.coreos.ignition+json;version=3.3.0",
         "3.3.0"},
    };
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_EXPLAIN, MCS_FAMILY_4_13);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *config = explain_json(s, cases[i].accept);
        cr_expect_str_eq(ignition_version(config), cases[i].version, "accept %s",
                         cases[i].accept ? cases[i].accept : "(none)");
        json_decref(config);
    }
    gate_snapshot_unref(s);
}

Test(snapshot, explain_writes_the_reason_and_nothing_else)
{
    verdict_t v = rejecting();
    snprintf(v.message, sizeof v.message, "50%% done: a/b");
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_EXPLAIN, MCS_FAMILY_4_13);
    const char *source = "data:,skewgate%3A%20this%20node%20was%20not%20admitted%3A%2050%25%20done"
                         "%3A%20a%2Fb%0A";
    json_t *spec3 = explain_json(s, "application/vnd.coreos.ignition+json;version=3.4.0");
    json_t *want3 = json_pack(
        "{s:{s:s}, s:{s:[{s:s, s:b, s:i, s:{s:s}}, {s:s, s:b, s:i, s:{s:s}}]}}", "ignition",
        "version", "3.4.0", "storage", "files", "path", "/etc/issue", "overwrite", 1, "mode", 420,
        "contents", "source", source, "path", "/etc/motd", "overwrite", 1, "mode", 420, "contents",
        "source", source);
    cr_expect(json_equal(spec3, want3));
    json_t *spec2 = explain_json(s, NULL);
    json_t *want2 = json_pack(
        "{s:{s:s}, s:{s:[{s:s, s:s, s:i, s:{s:s}}, {s:s, s:s, s:i, s:{s:s}}]}}", "ignition",
        "version", "2.2.0", "storage", "files", "filesystem", "root", "path", "/etc/issue", "mode",
        420, "contents", "source", source, "filesystem", "root", "path", "/etc/motd", "mode", 420,
        "contents", "source", source);
    cr_expect(json_equal(spec2, want2));
    json_decref(spec3);
    json_decref(want3);
    json_decref(spec2);
    json_decref(want2);
    gate_snapshot_unref(s);
}

static int validate_file(const char *path, bool quiet)
{
    pid_t pid;
    char *argv[] = {(char *)"ignition-validate", (char *)path, NULL};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (quiet) {
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    }
    int spawned = posix_spawn(&pid, VALIDATOR, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0)
        return -1;
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int validate_text(const char *text, bool quiet)
{
    char path[] = "/tmp/skewgate-explain-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    int rc = validate_file(path, quiet);
    unlink(path);
    return rc;
}

/* Debian's ignition-validate (2.14) knows spec 3.0 to 3.3 and the 3.4 schema
 * only under its pre-release name, and no spec 2 at all (Ignition 2.x
 * dropped it; spec 2.2 is checked field by field above). */
static char *as_validator_knows_it(const char *body, const char *version)
{
    char probe[64];
    snprintf(probe, sizeof probe, "{\"ignition\":{\"version\":\"%s\"}}", version);
    if (validate_text(probe, true) == 0)
        return strdup(body);
    json_t *config = json_loads(body, 0, NULL);
    char experimental[32];
    snprintf(experimental, sizeof experimental, "%s-experimental", version);
    json_object_set_new(json_object_get(config, "ignition"), "version", json_string(experimental));
    char *renamed = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    return renamed;
}

Test(snapshot, explain_configs_pass_ignition_validate)
{
    if (access(VALIDATOR, X_OK) != 0)
        cr_skip_test(VALIDATOR " is not installed (Debian package ignition)");
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_EXPLAIN, MCS_FAMILY_4_13);
    for (int spec = IGNITION_SPEC_3_1; spec <= IGNITION_SPEC_3_4; spec++) {
        char *body = body_of(gate_snapshot_reject(s, spec, HTTP_CONN_KEEP_ALIVE));
        json_t *config = json_loads(body, 0, NULL);
        char *checked = as_validator_knows_it(body, ignition_version(config));
        cr_expect_eq(validate_text(checked, false), 0, "spec %s: %s", ignition_version(config), checked);
        json_decref(config);
        free(checked);
        free(body);
    }
    gate_snapshot_unref(s);
}

Test(snapshot, admit_flag_and_verdict_are_kept)
{
    verdict_t v = {.decision = DECISION_ADMIT, .reason = REASON_COMPLIANT};
    snprintf(v.resource_version, sizeof v.resource_version, "42");
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_HOLD, MCS_FAMILY_4_13);
    cr_expect(s->admit);
    cr_expect_str_eq(s->verdict.resource_version, "42");
    gate_snapshot_unref(s);
}

Test(snapshot, the_last_unref_frees)
{
    verdict_t v = rejecting();
    gate_snapshot_t *s = gate_snapshot_new(&v, REJECT_EXPLAIN, MCS_FAMILY_4_13);
    cr_assert_eq(gate_snapshot_ref(s), s);
    gate_snapshot_unref(s);
    /* Still alive: ASan would flag this read after a premature free. */
    cr_expect_eq(gate_snapshot_reject(s, 0, 0)->data[0], 'H');
    gate_snapshot_unref(s);
    gate_snapshot_unref(NULL);
}

/* Every snapshot carries the evidence answers of its mode: the mode's
 * status, its own reason, and (explain) a config in the node's spec that
 * names the limit. The verdict's own answers keep the verdict's reason. */
Test(snapshot, evidence_answers_in_every_mode)
{
    verdict_t v = {.decision = DECISION_ADMIT, .reason = REASON_COMPLIANT, .settled = true};
    verdict_limits_default(&v.limits);
    static const struct {
        reject_mode_t mode;
        const char *status;
    } modes[] = {{REJECT_HOLD, "HTTP/1.1 503 "}, {REJECT_DENY, "HTTP/1.1 403 "}, {REJECT_EXPLAIN, "HTTP/1.1 200 "}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        gate_snapshot_t *s = gate_snapshot_new(&v, modes[i].mode, MCS_FAMILY_4_13);
        cr_assert_not_null(s);
        cr_expect(s->admit);
        for (int variant = 0; variant < HTTP_CONN__COUNT; variant++) {
            char *head = head_of(gate_snapshot_evidence(s, IGNITION_SPEC_3_3, variant));
            cr_expect(!strncmp(head, modes[i].status, strlen(modes[i].status)), "%s: %s", mode_name(modes[i].mode), head);
            cr_expect_not_null(strstr(head, "\r\nSkewgate-Reason: ClientBootImageTooOld\r\n"), "%s", head);
            free(head);
            head = head_of(gate_snapshot_reject(s, IGNITION_SPEC_3_3, variant));
            cr_expect_not_null(strstr(head, "\r\nSkewgate-Reason: Compliant\r\n"), "%s", head);
            free(head);
        }
        if (modes[i].mode == REJECT_EXPLAIN) {
            char *body = body_of(gate_snapshot_evidence(s, IGNITION_SPEC_3_3, HTTP_CONN_KEEP_ALIVE));
            json_error_t error;
            json_t *config = json_loads(body, 0, &error);
            cr_assert_not_null(config, "%s in %s", error.text, body);
            cr_expect_str_eq(ignition_version(config), "3.3.0");
            cr_expect_not_null(strstr(body, "4.13.0"), "%s", body);
            cr_expect_not_null(strstr(body, "older%20boot%20image"), "%s", body);
            json_decref(config);
            free(body);
        }
        if (modes[i].mode == REJECT_DENY) {
            char *body = body_of(gate_snapshot_evidence(s, 0, HTTP_CONN_CLOSE));
            cr_expect(!strncmp(body, "skewgate: ClientBootImageTooOld: ", 33), "%s", body);
            free(body);
        }
        gate_snapshot_unref(s);
    }
}
