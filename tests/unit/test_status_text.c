#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/machines.h"
#include "verdict/verdict.h"
#include "../../src/cli/status_text.h"

Test(status_text, ages_as_people_read_them)
{
    static const struct {
        long long s;
        const char *text;
    } cases[] = {
        {-5, "0s"}, {0, "0s"}, {59, "59s"}, {60, "1m00s"}, {192, "3m12s"}, {3599, "59m59s"},
        {3600, "1h00m"}, {7500, "2h05m"}, {86400, "1d00h"}, {273600, "3d04h"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        status_age(cases[i].s, buf, sizeof buf);
        cr_assert_str_eq(buf, cases[i].text, "%lld", cases[i].s);
    }
}

Test(status_text, every_verdict_reason_has_words)
{
    for (int r = 0; r < REASON__COUNT; r++)
        cr_assert_not_null(status_reason_words(verdict_reason_name((verdict_reason_t)r)), "%s",
                           verdict_reason_name((verdict_reason_t)r));
    cr_assert_not_null(status_reason_words("UnknownMachine"));
    cr_assert_null(status_reason_words("NoSuchReason"));
    cr_assert_null(status_reason_words(NULL));
}

Test(status_text, the_summary_of_a_held_node)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}, s:s, s:s, s:n, s:{s:s, s:s}}",
                          "decision", "admit", "reason", "Override", "message", "admitted by an override",
                          "mode", "Automatic", "bootImage", "ocpVersion", "4.12.0", "rhcosVersion", "",
                          "limit", "ocpVersion", "4.13.0", "rhelVersion", "9.2", "source", "kubernetes",
                          "since", "2026-12-01T10:00:00Z", "lastSync", "override", "decision", "admit",
                          "until", "2026-12-01T10:30:00Z");
    json_t *held = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:s}], s:i, s:i, s:i, s:i}",
                             "clients", "address", "10.0.32.17", "pool", "worker", "userAgent",
                             "Ignition/2.14.0", "spec", "3.4.0", "reason", "OutOfSkew", "attempts", 38,
                             "heldSeconds", 192, "quietSeconds", 2, "admitted", 0, "state", "held", "held", 1,
                             "admittedAfterHold", 4, "overflow", 0, "forgetAfterSeconds", 900);
    cr_assert(v && held);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    time_t now = 1796119800;   /* 2026-12-01T10:10:00Z */
    status_print_text(f, v, "the source has not confirmed a view", held, now);
    fclose(f);
    cr_assert_not_null(strstr(text, "Decision:    ADMIT new nodes: an override set by an administrator decides (Override)\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Boot image:  OCP 4.12.0; limit OCP 4.13.0, RHEL 9.2\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Source:      kubernetes, NOT READY: the source has not confirmed a view; last sync never\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Override:    admit, lapses 2026-12-01T10:30:00Z (in 20m00s)\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Since:       2026-12-01T10:00:00Z (10m00s ago)\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Held nodes:  1 held, 4 admitted after a hold; forgotten after 15m00s of silence\n"), "%s", text);
    cr_assert_not_null(strstr(text, "ADDRESS     POOL    IGNITION         SPEC   REASON     ATTEMPTS  HELD FOR  LAST SEEN  STATE\n"
                                    "10.0.32.17  worker  Ignition/2.14.0  3.4.0  OutOfSkew  38        3m12s     2s ago     held\n"),
                       "%s", text);
    free(text);
    json_decref(v);
    json_decref(held);
}

/* A refused reload comes first and says when, where, why and what serves;
 * a local override says who set it and why, and its undo hint carries the
 * flags status was run with (issue 33). */
Test(status_text, a_refused_reload_and_who_set_the_override)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:i, s:i}, s:s, s:s}, "
                          "s:{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s}}",
                          "decision", "reject", "reason", "Override", "source", "file", "override", "decision",
                          "reject", "until", "2026-12-01T10:30:00Z", "origin", "local",
                          "setBy", "via", "socket", "uid", 1000, "pid", 4242, "reason", "rack 4", "setAt",
                          "2026-12-01T10:08:00Z", "reloadRefused", "at", "2026-12-01T10:09:00Z", "file",
                          "/etc/skewgate/skewgate.yaml", "line", 31, "column", 3, "location",
                          "/etc/skewgate/skewgate.yaml:31:3", "message", "upstream.adress: unknown key",
                          "servingSince", "2026-12-01T09:00:00Z", "sha256", "ab");
    cr_assert(v);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text_with(f, v, NULL, NULL, 1796119800, "--admin /run/skewgate/admin.sock");
    fclose(f);
    cr_assert_eq(strncmp(text, "DEGRADED:    the last reload (at 2026-12-01T10:09:00Z (1m00s ago)) was refused: "
                               "/etc/skewgate/skewgate.yaml:31:3: upstream.adress: unknown key\n"
                               "             the gate serves the configuration loaded at 2026-12-01T09:00:00Z "
                               "(1h10m ago); fix the file, then reload (SIGHUP)\n"
                               "Decision:    HOLD", 249), 0, "%s", text);
    cr_assert_not_null(strstr(text, "Override:    reject, lapses 2026-12-01T10:30:00Z (in 20m00s)\n"
                                    "             set by uid 1000 (pid 4242) over the admin socket at "
                                    "2026-12-01T10:08:00Z (2m00s ago)\n"
                                    "             reason: rack 4\n"
                                    "             undo: skewgate override clear --admin /run/skewgate/admin.sock\n"),
                       "%s", text);
    free(text);
    json_decref(v);
}

/* A refusal by an admission policy has no pool (issue 20.5): a dash keeps
 * the column. */
Test(status_text, a_refusal_shows_a_dash_for_its_pool)
{
    json_t *v = json_pack("{s:s, s:s}", "decision", "reject", "reason", "OutOfSkew");
    json_t *held = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:s}], s:i, s:i, s:i, s:i}",
                             "clients", "address", "10.0.32.9", "pool", "", "userAgent", "curl/8.5.0", "spec",
                             "unsupported", "reason", "TokenMissing", "attempts", 1, "heldSeconds", 0,
                             "quietSeconds", 1, "admitted", 0, "state", "denied", "held", 0, "admittedAfterHold", 0, "overflow", 0,
                             "forgetAfterSeconds", 900);
    cr_assert(v && held);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text(f, v, NULL, held, 1796119800);
    fclose(f);
    cr_assert_not_null(strstr(text, "\n10.0.32.9  -     curl/8.5.0  unsupported  TokenMissing  1         0s        1s ago     denied\n"),
                       "%s", text);
    free(text);
    json_decref(v);
    json_decref(held);
}

/* admission.machines' watch that never listed (a 403 on the Machines):
 * its own line says not ready, with the last error; the source's line
 * stays healthy, since /readyz's reason is the watch's. */
Test(status_text, a_machines_watch_that_never_listed)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:n, s:{s:s, s:s}}}", "decision", "admit", "reason",
                          "Compliant", "source", "kubernetes", "lastSync", "2026-12-01T10:09:58Z", "machinesWatch",
                          "state", "failing", "since", "2026-12-01T10:07:00Z", "lastList", "lastError", "message",
                          "Machines (machine.openshift.io) in ns: list: HTTP 403: Forbidden", "at",
                          "2026-12-01T10:09:57Z");
    cr_assert(v);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text(f, v, MACHINES_NOT_READY_PREFIX "the watch has not listed", NULL, 1796119800);
    fclose(f);
    cr_assert_not_null(strstr(text, "Source:      kubernetes, healthy; last sync 2026-12-01T10:09:58Z (2s ago)\n"), "%s", text);
    cr_assert_not_null(strstr(text, "Machines:    NOT READY: failing since 2026-12-01T10:07:00Z (3m00s ago); never listed: "
                                    "every gated client is held (UnknownMachine)\n"
                                    "             last error: Machines (machine.openshift.io) in ns: list: HTTP 403: "
                                    "Forbidden (2026-12-01T10:09:57Z (3s ago))\n"), "%s", text);
    free(text);
    json_decref(v);
}

/* Once listed: its state and last list; the source's own reason stays on
 * the source's line; no machines line when the policy is off. */
Test(status_text, a_machines_watch_that_listed)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:n}}", "decision", "admit", "reason", "Compliant",
                          "source", "kubernetes", "machinesWatch", "state", "synced", "since", "2026-12-01T10:05:00Z",
                          "lastList", "2026-12-01T10:04:59Z", "lastError");
    cr_assert(v);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text(f, v, "the verdict source has not synced", NULL, 1796119800);
    json_object_del(v, "machinesWatch");
    status_print_text(f, v, NULL, NULL, 1796119800);
    fclose(f);
    cr_assert_not_null(strstr(text, "Source:      kubernetes, NOT READY: the verdict source has not synced; last sync never\n"
                                    "Machines:    synced since 2026-12-01T10:05:00Z (5m00s ago); last list "
                                    "2026-12-01T10:04:59Z (5m01s ago)\n"
                                    "Override:"), "%s", text);
    cr_assert_null(strstr(text, "last error"), "%s", text);
    const char *second = strstr(text, "Decision:");
    second = second ? strstr(second + 1, "Decision:") : NULL;
    cr_assert(second && !strstr(second, "Machines:"), "%s", text);
    free(text);
    json_decref(v);
}

/* Pacing: how the budget is counted, and the CSR ceiling (issue 26). */
static char *pace_text(json_t *pace)
{
    json_t *v = json_pack("{s:s, s:s, s:s}", "decision", "admit", "reason", "Compliant", "source", "kubernetes");
    json_t *held = json_pack("{s:[], s:i, s:i, s:i, s:i, s:o}", "clients", "held", 0, "admittedAfterHold", 0,
                             "overflow", 0, "forgetAfterSeconds", 900, "pace", pace);
    cr_assert(v && held);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text(f, v, NULL, held, 1796119800);
    fclose(f);
    json_decref(v);
    json_decref(held);
    return text;
}

Test(status_text, pacing_by_the_api_and_at_the_csr_ceiling)
{
    char *text = pace_text(json_pack(
        "{s:i, s:i, s:i, s:i, s:[], s:s, s:n, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:i, s:i, s:i, s:b}",
        "joining", 4, "waiting", 20, "admittedTotal", 9, "joinTimeouts", 0, "line", "counting", "api", "why",
        "pendingCsrs", 90, "youngPendingCsrs", 2, "youngNotReadyNodes", 3, "unseenAdmissions", 1, "budgetUsed", 8,
        "maxJoining", 10, "maxPendingCsrs", 90, "replicas", 3, "csrCeiling", 1, "joinedTotal", 5, "approverLimit", 85,
        "approverHeadroom", -5, "machinesCounted", 1));
    cr_assert_not_null(strstr(text, "  counting:  by the API: 8 of 10 used (3 young Nodes not Ready + 2 pending CSRs + "
                                    "3 x 1 admitted, no Node yet), 5 joined Ready\n"), "%s", text);
    cr_assert_not_null(strstr(text, "  node CSRs: 90 as the approver counts them (both kinds, Denied and Failed "
                                    "included), ceiling 90: at the ceiling, nobody is admitted; the approver's "
                                    "limit 85 (max(Machines, Nodes) + 100), headroom -5: it approves nothing\n"),
                       "%s", text);
    free(text);
}

Test(status_text, pacing_blind_says_why)
{
    char *text = pace_text(json_pack(
        "{s:i, s:i, s:i, s:i, s:[], s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:i}", "joining", 10,
        "waiting", 2, "admittedTotal", 10, "joinTimeouts", 0, "line", "counting", "join_timeout", "why",
        "the API watch is failing: Nodes: connect: refused", "pendingCsrs", 0, "youngPendingCsrs", 0,
        "youngNotReadyNodes", 0, "unseenAdmissions", 10, "budgetUsed", 10, "maxJoining", 10, "maxPendingCsrs", 90,
        "replicas", 1, "csrCeiling", 0, "joinedTotal", 0));
    cr_assert_not_null(strstr(text, "  counting:  by join_timeout alone (10 of 10 used): the API watch is failing: "
                                    "Nodes: connect: refused\n"), "%s", text);
    cr_assert_not_null(strstr(text, "  node CSRs: not counted without the API view; ceiling 90\n"), "%s", text);
    free(text);
}

/* The shared line: on it, settling after a fallback (its why under it),
 * and off it (issue 34). */
Test(status_text, the_shared_line_on_settling_and_off)
{
    json_t *on = json_pack("{s:i, s:i, s:i, s:i, s:[], s:s, s:n, s:i, s:i, s:i}", "joining", 2, "waiting", 3,
                           "admittedTotal", 2, "joinTimeouts", 0, "line", "lineMode", "api", "lineWhy",
                           "sharedJoining", 4, "sharedWaiting", 3, "claimsInFlight", 1);
    char *text = pace_text(json_deep_copy(on));
    cr_assert_not_null(strstr(text, "  line:      shared (the pace-line Leases): 4 joining, 3 waiting, 1 claims in "
                                    "flight\n"), "%s", text);
    cr_assert_null(strstr(text, "back on the shared line"), "%s", text);
    free(text);
    json_object_set_new(on, "lineWhy", json_string("back on the shared line after a fallback: this gate keeps to "
                                                   "its own share of the slots for 8000 ms more"));
    text = pace_text(json_deep_copy(on));
    cr_assert_not_null(strstr(text, "1 claims in flight\n             back on the shared line after a fallback: "
                                    "this gate keeps to its own share of the slots for 8000 ms more\n"), "%s", text);
    free(text);
    json_object_set_new(on, "lineMode", json_string("local"));
    json_object_set_new(on, "lineWhy", json_string("the shared line's Leases watch is failing: HTTP 503"));
    text = pace_text(on);
    cr_assert_not_null(strstr(text, "  line:      the gate's own, not the shared one: the shared line's Leases "
                                    "watch is failing: HTTP 503\n"), "%s", text);
    cr_assert_null(strstr(text, "pace-line Leases"), "%s", text);
    free(text);
}

/* /held's pace.protection in words: what protects the line, or that
 * nothing does (issue 31 item 2); a gate before the field says nothing. */
Test(status_text, what_protects_the_line)
{
    static const struct {
        const char *protection, *warning, *line;
    } cases[] = {
        {"none", "open to any address: without admission.token.files or admission.machines.enabled, any address "
                 "that can reach the gate can take a joining slot or a place in the line",
         "  protected: NO, open to any address: without admission.token.files or admission.machines.enabled, any "
         "address that can reach the gate can take a joining slot or a place in the line\n"},
        {"machines", NULL, "  protected: machines (admission.machines: only addresses of pending Machines enter the line)\n"},
        {"token", NULL, "  protected: token (admission.token: only holders of a provisioning token enter the line)\n"},
        {"token+machines", NULL, "  protected: token+machines (admission.token and admission.machines: only a pending "
                                 "Machine's address with a provisioning token enters the line)\n"},
        {NULL, NULL, NULL},
    };
    json_t *v = json_pack("{s:s, s:s, s:s}", "decision", "admit", "reason", "Compliant", "mode", "Automatic");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *pace = json_pack("{s:i, s:i, s:i, s:i, s:[]}", "joining", 0, "waiting", 0, "admittedTotal", 0,
                                 "joinTimeouts", 0, "line");
        if (cases[i].protection)
            json_object_set_new(pace, "protection", json_string(cases[i].protection));
        if (cases[i].warning)
            json_object_set_new(pace, "warning", json_string(cases[i].warning));
        json_t *held = json_pack("{s:[], s:i, s:i, s:i, s:i, s:o}", "clients", "held", 0, "admittedAfterHold", 0,
                                 "overflow", 0, "forgetAfterSeconds", 900, "pace", pace);
        cr_assert(v && held);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        status_print_text(f, v, NULL, held, 1796119800);
        fclose(f);
        if (cases[i].line)
            cr_expect_not_null(strstr(text, cases[i].line), "%s", text);
        else
            cr_expect_null(strstr(text, "protected:"), "%s", text);
        free(text);
        json_decref(held);
    }
    json_decref(v);
}

/* The MCS release line: where it came from, and with auto the operator
 * version read, or why the default stands. */
static char *mcs_line_of(json_t *mcs)
{
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:o}", "decision", "admit", "reason", "Compliant", "source",
                          "kubernetes", "since", "2026-12-01T10:00:00Z", "mcsRelease", mcs);
    cr_assert(v);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    status_print_text(f, v, NULL, NULL, 1796119800);
    fclose(f);
    json_decref(v);
    return text;
}

Test(status_text, the_mcs_release_and_where_it_came_from)
{
    char *text = mcs_line_of(json_pack("{s:s, s:s, s:s, s:s}", "release", "4.19", "family", "4.19", "from",
                                       "cluster", "version", "4.19.5"));
    cr_expect_not_null(strstr(text, "MCS release: 4.19, Accept read as 4.19 (from cluster: ClusterOperator version 4.19.5)\n"),
                       "%s", text);
    free(text);
    text = mcs_line_of(json_pack("{s:s, s:s, s:s, s:s}", "release", "4.22", "family", "4.21+", "from", "default",
                                 "why", "the ClusterOperator machine-config does not exist"));
    cr_expect_not_null(strstr(text, "MCS release: 4.22, Accept read as 4.21+ (from default): the ClusterOperator "
                                    "machine-config does not exist\n"),
                       "%s", text);
    free(text);
    text = mcs_line_of(json_pack("{s:s, s:s, s:s}", "release", "4.13", "family", "4.13-4.18", "from", "config"));
    cr_expect_not_null(strstr(text, "MCS release: 4.13, Accept read as 4.13-4.18 (from config)\n"), "%s", text);
    free(text);
}
