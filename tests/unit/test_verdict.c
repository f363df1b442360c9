#include <criterion/criterion.h>
#include <string.h>

#include "verdict/verdict.h"

/* 2026-11-15T00:00:00Z */
#define NOW ((time_t)1794700800)
/* 2026-12-01T10:00:00Z */
#define DEC_1_10H ((time_t)1796119200)

/* ---- building MachineConfiguration objects */

static json_t *condition(const char *type, const char *status, const char *message)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", "TestReason",
                     "message", message ? message : "");
}

/* The conditions of a boot image controller at rest. */
static json_t *settled_conditions(void)
{
    return json_pack("[o, o]", condition("BootImageUpdateProgressing", "False", NULL),
                     condition("BootImageUpdateDegraded", "False", NULL));
}

static json_t *versions(const char *ocp, const char *rhcos)
{
    json_t *section = json_object();
    if (ocp)
        json_object_set_new(section, "ocpVersion", json_string(ocp));
    if (rhcos)
        json_object_set_new(section, "rhcosVersion", json_string(rhcos));
    return section;
}

static json_t *automatic_status(const char *ocp, const char *rhcos)
{
    return json_pack("{s:s, s:o}", "mode", "Automatic", "automatic", versions(ocp, rhcos));
}

static json_t *manual_status(const char *manual_mode, const char *ocp, const char *rhcos)
{
    json_t *manual = versions(ocp, rhcos);
    if (manual_mode)
        json_object_set_new(manual, "mode", json_string(manual_mode));
    return json_pack("{s:s, s:o}", "mode", "Manual", "manual", manual);
}

/* A MachineConfiguration "cluster"; steals skew_status and conditions,
 * either of which may be NULL (left out). */
static json_t *machine_configuration(json_t *skew_status, json_t *conditions)
{
    json_t *status = json_object();
    if (skew_status)
        json_object_set_new(status, "bootImageSkewEnforcementStatus", skew_status);
    if (conditions)
        json_object_set_new(status, "conditions", conditions);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}, s:o}", "apiVersion",
                     "operator.openshift.io/v1", "kind", "MachineConfiguration", "metadata", "name",
                     "cluster", "resourceVersion", "51234", "spec", "status", status);
}

static void annotate(json_t *object, const char *value)
{
    json_t *metadata = json_object_get(object, "metadata");
    json_object_set_new(metadata, "annotations",
                        json_pack("{s:s}", VERDICT_OVERRIDE_ANNOTATION, value));
}

static verdict_input_t present(const json_t *object)
{
    verdict_input_t in;
    memset(&in, 0, sizeof in);
    in.state = SOURCE_PRESENT;
    in.object = object;
    verdict_limits_default(&in.limits);
    verdict_policy_default(&in.policy);
    in.now = NOW;
    return in;
}

static verdict_t compute(const verdict_input_t *in)
{
    verdict_t v;
    memset(&v, 0xAB, sizeof v); /* garbage: compute must set every field */
    verdict_compute(in, &v);
    return v;
}

/* Computes the verdict for object with default inputs, then frees it. */
static verdict_t compute_object(json_t *object)
{
    verdict_input_t in = present(object);
    verdict_t v = compute(&in);
    json_decref(object);
    return v;
}

static void assert_verdict(const verdict_t *v, decision_t decision, verdict_reason_t reason)
{
    cr_assert_eq(v->decision, decision, "decision %s, expected %s (reason %s: %s)",
                 decision_name(v->decision), decision_name(decision),
                 verdict_reason_name(v->reason), v->message);
    cr_assert_eq(v->reason, reason, "reason %s, expected %s (%s)", verdict_reason_name(v->reason),
                 verdict_reason_name(reason), v->message);
}

static bool valid_utf8_without_controls(const char *s)
{
    json_t *j = json_string(s);
    bool ok = j != NULL;
    json_decref(j);
    for (const unsigned char *p = (const unsigned char *)s; ok && *p; p++)
        ok = *p >= 0x20 && *p != 0x7f;
    return ok;
}

/* ---- names and defaults */

Test(verdict_names, reason_names_are_exact)
{
    const char *expected[REASON__COUNT] = {
        [REASON_OVERRIDE] = "Override",
        [REASON_SOURCE_UNAVAILABLE] = "SourceUnavailable",
        [REASON_NOT_FOUND] = "NotFound",
        [REASON_STATUS_UNSET] = "StatusUnset",
        [REASON_ENFORCEMENT_DISABLED] = "EnforcementDisabled",
        [REASON_CONTROLLER_DEGRADED] = "BootImageControllerDegraded",
        [REASON_CONTROLLER_PROGRESSING] = "BootImageControllerProgressing",
        [REASON_VERSION_UNPARSEABLE] = "VersionUnparseable",
        [REASON_OUT_OF_SKEW] = "OutOfSkew",
        [REASON_COMPLIANT] = "Compliant",
    };
    for (int r = 0; r < REASON__COUNT; r++)
        cr_expect_str_eq(verdict_reason_name((verdict_reason_t)r), expected[r]);
}

Test(verdict_names, decisions_round_trip_and_parse_strictly)
{
    decision_t d;
    cr_assert_str_eq(decision_name(DECISION_ADMIT), "admit");
    cr_assert_str_eq(decision_name(DECISION_REJECT), "reject");
    cr_assert_eq(decision_parse("admit", &d), 0);
    cr_assert_eq(d, DECISION_ADMIT);
    cr_assert_eq(decision_parse("reject", &d), 0);
    cr_assert_eq(d, DECISION_REJECT);
    cr_expect_eq(decision_parse("Admit", &d), -1);
    cr_expect_eq(decision_parse("rejected", &d), -1);
    cr_expect_eq(decision_parse("adm", &d), -1);
    cr_expect_eq(decision_parse("", &d), -1);
    cr_expect_eq(decision_parse(NULL, &d), -1);
}

Test(verdict_defaults, limits_are_ocp_4_13_0_and_rhel_9_2_policies_admit)
{
    verdict_limits_t limits;
    verdict_policy_t policy;
    verdict_limits_default(&limits);
    verdict_policy_default(&policy);
    cr_assert(limits.ocp.major == 4 && limits.ocp.minor == 13 && limits.ocp.patch == 0);
    cr_assert(limits.rhel.major == 9 && limits.rhel.minor == 2);
    cr_assert_eq(policy.when_unknown, DECISION_ADMIT);
    cr_assert_eq(policy.when_unparseable, DECISION_ADMIT);
}

/* ---- rule 9 and 8: the skew check */

Test(verdict_skew, automatic_compliant_admits_with_all_facts)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status("4.18.2", "9.6.20250523-1"), settled_conditions()));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
    cr_assert(v.settled);
    cr_assert_str_eq(v.mode, "Automatic");
    cr_assert_str_eq(v.ocp_version, "4.18.2");
    cr_assert_str_eq(v.rhcos_version, "9.6.20250523-1");
    cr_assert_str_eq(v.resource_version, "51234");
    cr_assert(v.limits.ocp.minor == 13 && v.limits.rhel.minor == 2);
    cr_assert_eq(v.since, 0);
    cr_assert_str_eq(v.message, "the cluster is using OCP boot image version 4.18.2, which meets "
                                "the minimum required version 4.13.0");
}

Test(verdict_skew, automatic_old_ocp_rejects_with_mco_wording)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status("4.12.0", NULL), settled_conditions()));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert(v.settled);
    cr_assert_str_eq(v.message, "the cluster is using OCP boot image version 4.12.0, which is "
                                "below the minimum required version 4.13.0");
}

Test(verdict_skew, ocp_equal_to_the_limit_admits)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status("4.13.0", NULL), settled_conditions()));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_skew, ocp_is_compared_numerically)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status("4.9.99", NULL), settled_conditions()));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    v = compute_object(
        machine_configuration(automatic_status("4.100.0", NULL), settled_conditions()));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_skew, ocp_decides_before_rhcos_so_new_ocp_with_old_rhcos_admits)
{
    verdict_t v = compute_object(machine_configuration(
        automatic_status("4.14.0", "48.84.202208021106-0"), settled_conditions()));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_skew, ocp_decides_before_rhcos_so_old_ocp_with_new_rhcos_rejects)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status("4.12.0", "9.6.20250523-1"), settled_conditions()));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
}

Test(verdict_skew, automatic_rhcos_only_is_checked_against_the_rhel_limit)
{
    verdict_t v = compute_object(
        machine_configuration(automatic_status(NULL, "9.0.20240101-0"), settled_conditions()));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert_str_eq(v.message, "the cluster is using RHCOS boot image version 9.0.20240101-0 "
                                "(RHEL 9.0), which is below the minimum required RHEL version 9.2");
    v = compute_object(
        machine_configuration(automatic_status("", "9.2.20240101-0"), settled_conditions()));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_skew, manual_legacy_rhcos_48_84_rejects_as_rhel_8_4)
{
    verdict_t v = compute_object(
        machine_configuration(manual_status("RHCOSVersion", NULL, "48.84.202208021106-0"), NULL));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert(v.settled);
    cr_assert_str_eq(v.mode, "Manual");
    cr_assert_str_eq(v.rhcos_version, "48.84.202208021106-0");
    cr_assert_str_eq(v.message,
                     "the cluster is using RHCOS boot image version 48.84.202208021106-0 "
                     "(RHEL 8.4), which is below the minimum required RHEL version 9.2");
}

Test(verdict_skew, manual_legacy_rhcos_on_rhel_9_4_admits)
{
    verdict_t v = compute_object(
        machine_configuration(manual_status("RHCOSVersion", NULL, "418.94.202410090804-0"), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_skew, manual_ocp_is_checked_against_the_ocp_limit)
{
    verdict_t v =
        compute_object(machine_configuration(manual_status("OCPVersion", "4.16.3", NULL), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
    cr_assert_str_eq(v.ocp_version, "4.16.3");
    v = compute_object(machine_configuration(manual_status("OCPVersion", "4.12.9", NULL), NULL));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
}

Test(verdict_skew, configured_limits_are_used_and_reported)
{
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), settled_conditions());
    verdict_input_t in = present(object);
    in.limits.ocp = (ocp_version_t){4, 19, 0};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert(strstr(v.message, "minimum required version 4.19.0"), "%s", v.message);
    cr_assert_eq(v.limits.ocp.minor, 19);
    json_decref(object);

    object =
        machine_configuration(manual_status("RHCOSVersion", NULL, "418.94.202410090804-0"), NULL);
    in = present(object);
    in.limits.rhel = (rhel_version_t){9, 6};
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert(strstr(v.message, "minimum required RHEL version 9.6"), "%s", v.message);
    json_decref(object);
}

Test(verdict_skew, rhel_minor_is_compared_numerically)
{
    json_t *object =
        machine_configuration(manual_status("RHCOSVersion", NULL, "9.10.20260101-0"), NULL);
    verdict_input_t in = present(object);
    in.limits.rhel = (rhel_version_t){9, 6};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
    json_decref(object);
}

/* ---- rule 4 */

Test(verdict_none, mode_none_admits_settled)
{
    verdict_t v = compute_object(machine_configuration(json_pack("{s:s}", "mode", "None"), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_ENFORCEMENT_DISABLED);
    cr_assert(v.settled);
    cr_assert_str_eq(v.mode, "None");
    cr_assert(strstr(v.message, "disabled"), "%s", v.message);
}

Test(verdict_none, mode_none_beats_a_degraded_condition)
{
    json_t *conditions = json_pack("[o]", condition("BootImageUpdateDegraded", "True", "broken"));
    verdict_t v =
        compute_object(machine_configuration(json_pack("{s:s}", "mode", "None"), conditions));
    assert_verdict(&v, DECISION_ADMIT, REASON_ENFORCEMENT_DISABLED);
}

/* ---- rule 5 */

Test(verdict_degraded, automatic_degraded_rejects_with_the_condition_message)
{
    json_t *conditions = json_pack(
        "[o, o]", condition("BootImageUpdateProgressing", "False", NULL),
        condition("BootImageUpdateDegraded", "True", "error syncing MachineSet worker-us-east-1a"));
    verdict_t v =
        compute_object(machine_configuration(automatic_status("4.19.0", NULL), conditions));
    assert_verdict(&v, DECISION_REJECT, REASON_CONTROLLER_DEGRADED);
    cr_assert(v.settled);
    cr_assert(strstr(v.message, "error syncing MachineSet worker-us-east-1a"), "%s", v.message);
    cr_assert(strstr(v.message, "TestReason"), "%s", v.message);
}

Test(verdict_degraded, degraded_beats_progressing)
{
    json_t *conditions = json_pack("[o, o]", condition("BootImageUpdateProgressing", "True", NULL),
                                   condition("BootImageUpdateDegraded", "True", "x"));
    verdict_t v =
        compute_object(machine_configuration(automatic_status("4.19.0", NULL), conditions));
    assert_verdict(&v, DECISION_REJECT, REASON_CONTROLLER_DEGRADED);
}

Test(verdict_degraded, only_status_true_counts)
{
    json_t *conditions = json_pack("[o, o]", condition("BootImageUpdateProgressing", "False", NULL),
                                   condition("BootImageUpdateDegraded", "true", "x"));
    verdict_t v =
        compute_object(machine_configuration(automatic_status("4.19.0", NULL), conditions));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

Test(verdict_degraded, manual_mode_ignores_controller_conditions)
{
    json_t *conditions = json_pack("[o]", condition("BootImageUpdateDegraded", "True", "x"));
    verdict_t v = compute_object(
        machine_configuration(manual_status("OCPVersion", "4.16.3", NULL), conditions));
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
}

/* ---- rule 6 */

Test(verdict_progressing, true_without_previous_admits_unsettled)
{
    json_t *conditions = json_pack("[o, o]", condition("BootImageUpdateProgressing", "True", NULL),
                                   condition("BootImageUpdateDegraded", "False", NULL));
    verdict_t v =
        compute_object(machine_configuration(automatic_status("4.12.0", NULL), conditions));
    assert_verdict(&v, DECISION_ADMIT, REASON_CONTROLLER_PROGRESSING);
    cr_assert_not(v.settled);
}

Test(verdict_progressing, absent_condition_counts_as_progressing)
{
    verdict_t v = compute_object(machine_configuration(automatic_status("4.18.2", NULL), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_CONTROLLER_PROGRESSING);
    cr_assert_not(v.settled);
}

Test(verdict_progressing, keeps_a_previous_reject)
{
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), NULL);
    verdict_input_t in = present(object);
    in.has_previous = true;
    in.previous = DECISION_REJECT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_CONTROLLER_PROGRESSING);
    cr_assert_not(v.settled);
    json_decref(object);
}

Test(verdict_progressing, keeps_a_previous_admit_even_for_old_versions)
{
    json_t *conditions = json_pack("[o]", condition("BootImageUpdateProgressing", "True", NULL));
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), conditions);
    verdict_input_t in = present(object);
    in.has_previous = true;
    in.previous = DECISION_ADMIT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_CONTROLLER_PROGRESSING);
    json_decref(object);
}

Test(verdict_progressing, unknown_status_is_not_settled)
{
    json_t *conditions =
        json_pack("[o, o]", condition("BootImageUpdateProgressing", "Unknown", NULL),
                  condition("BootImageUpdateDegraded", "False", NULL));
    verdict_t v =
        compute_object(machine_configuration(automatic_status("4.12.0", NULL), conditions));
    assert_verdict(&v, DECISION_ADMIT, REASON_CONTROLLER_PROGRESSING);
}

Test(verdict_progressing, manual_mode_does_not_wait_for_the_controller)
{
    verdict_t v =
        compute_object(machine_configuration(manual_status("OCPVersion", "4.12.0", NULL), NULL));
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
}

/* ---- rule 7 */

Test(verdict_unparseable, bad_ocp_applies_when_unparseable)
{
    json_t *object = machine_configuration(automatic_status("4.13", NULL), settled_conditions());
    verdict_input_t in = present(object);
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_VERSION_UNPARSEABLE);
    cr_assert(v.settled);
    cr_assert(strstr(v.message, "\"4.13\""), "%s", v.message);
    in.policy.when_unparseable = DECISION_REJECT;
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_VERSION_UNPARSEABLE);
    json_decref(object);
}

Test(verdict_unparseable, bad_manual_rhcos_applies_when_unparseable)
{
    json_t *object =
        machine_configuration(manual_status("RHCOSVersion", NULL, "9.6.2025052-1"), NULL);
    verdict_input_t in = present(object);
    in.policy.when_unparseable = DECISION_REJECT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_VERSION_UNPARSEABLE);
    json_decref(object);
}

Test(verdict_unparseable, unchecked_rhcos_does_not_matter_when_ocp_is_set)
{
    json_t *object =
        machine_configuration(automatic_status("4.18.2", "garbage"), settled_conditions());
    verdict_input_t in = present(object);
    in.policy.when_unparseable = DECISION_REJECT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_COMPLIANT);
    json_decref(object);
}

/* Shapes the API server refuses: each must land on when_unparseable. */
static void assert_malformed(json_t *skew_status, json_t *conditions)
{
    json_t *object = machine_configuration(skew_status, conditions);
    verdict_input_t in = present(object);
    in.policy.when_unparseable = DECISION_REJECT;
    verdict_t v = compute(&in);
    char *dump = json_dumps(
        json_object_get(json_object_get(object, "status"), "bootImageSkewEnforcementStatus"),
        JSON_COMPACT);
    cr_expect_eq(v.reason, REASON_VERSION_UNPARSEABLE, "%s: got %s (%s)", dump,
                 verdict_reason_name(v.reason), v.message);
    cr_expect_eq(v.decision, DECISION_REJECT, "%s", dump);
    cr_expect(v.settled, "%s", dump);
    free(dump);
    json_decref(object);
}

Test(verdict_unparseable, automatic_without_a_usable_version)
{
    assert_malformed(json_pack("{s:s}", "mode", "Automatic"), settled_conditions());
    assert_malformed(json_pack("{s:s, s:s}", "mode", "Automatic", "automatic", "4.18.2"),
                     settled_conditions());
    assert_malformed(automatic_status(NULL, NULL), settled_conditions());
    assert_malformed(automatic_status("", ""), settled_conditions());
    assert_malformed(json_pack("{s:s, s:{s:i}}", "mode", "Automatic", "automatic", "ocpVersion", 4),
                     settled_conditions());
    assert_malformed(json_pack("{s:s, s:{s:n, s:s}}", "mode", "Automatic", "automatic",
                               "ocpVersion", "rhcosVersion", "9.6.20250523-1"),
                     settled_conditions());
}

Test(verdict_unparseable, manual_without_a_usable_version)
{
    assert_malformed(json_pack("{s:s}", "mode", "Manual"), NULL);
    assert_malformed(manual_status(NULL, "4.16.3", NULL), NULL);
    assert_malformed(manual_status("Latest", "4.16.3", NULL), NULL);
    assert_malformed(manual_status("OCPVersion", NULL, "9.6.20250523-1"), NULL);
    assert_malformed(manual_status("RHCOSVersion", "4.16.3", NULL), NULL);
    assert_malformed(manual_status("RHCOSVersion", "4.16.3", "9.6.20250523-1"), NULL);
    assert_malformed(json_pack("{s:s, s:{s:s, s:b}}", "mode", "Manual", "manual", "mode",
                               "OCPVersion", "ocpVersion", 1),
                     NULL);
}

Test(verdict_unparseable, unknown_mode)
{
    assert_malformed(
        json_pack("{s:s, s:o}", "mode", "Strict", "automatic", versions("4.18.2", NULL)),
        settled_conditions());
    assert_malformed(json_pack("{s:i}", "mode", 3), NULL);
    verdict_t v = compute_object(machine_configuration(json_pack("{s:s}", "mode", "Strict"), NULL));
    cr_assert(strstr(v.message, "mode is \"Strict\", not Automatic, Manual or None"), "%s",
              v.message);
    cr_assert_str_eq(v.mode, "Strict");
}

/* ---- rule 3 */

Test(verdict_status_unset, missing_status_applies_when_unknown)
{
    json_t *object = machine_configuration(NULL, NULL);
    verdict_input_t in = present(object);
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
    cr_assert_not(v.settled);
    cr_assert_str_eq(v.resource_version, "51234");
    in.policy.when_unknown = DECISION_REJECT;
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_STATUS_UNSET);
    json_decref(object);
}

Test(verdict_status_unset, non_object_or_modeless_status_is_unset)
{
    verdict_t v = compute_object(machine_configuration(json_string("Automatic"), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
    v = compute_object(machine_configuration(json_object(), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
    v = compute_object(machine_configuration(json_pack("{s:s}", "mode", ""), NULL));
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
    v = compute_object(
        json_pack("{s:s, s:{s:s}}", "kind", "MachineConfiguration", "metadata", "name", "cluster"));
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
    v = compute_object(json_pack("{s:s, s:[]}", "kind", "MachineConfiguration", "status"));
    assert_verdict(&v, DECISION_ADMIT, REASON_STATUS_UNSET);
}

/* ---- rule 2 */

Test(verdict_source, no_data_and_failing_are_source_unavailable)
{
    verdict_input_t in = present(NULL);
    in.state = SOURCE_NO_DATA;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_SOURCE_UNAVAILABLE);
    cr_assert_not(v.settled);
    in.state = SOURCE_FAILING;
    in.policy.when_unknown = DECISION_REJECT;
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_SOURCE_UNAVAILABLE);
    cr_assert(strstr(v.message, "max_staleness"), "%s", v.message);
}

Test(verdict_source, absent_is_not_found_and_follows_when_unknown)
{
    verdict_input_t in = present(NULL);
    in.state = SOURCE_ABSENT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_NOT_FOUND);
    in.policy.when_unknown = DECISION_REJECT;
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_NOT_FOUND);
}

Test(verdict_source, absent_beats_a_stale_object)
{
    /* A caller may leave the last object in place; only PRESENT reads it. */
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    annotate(object, "reject");
    verdict_input_t in = present(object);
    in.state = SOURCE_ABSENT;
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_NOT_FOUND);
    cr_assert_str_eq(v.mode, "");
    cr_assert_str_eq(v.ocp_version, "");
    cr_assert_str_eq(v.resource_version, "");
    json_decref(object);
}

Test(verdict_source, present_without_an_object_is_source_unavailable)
{
    verdict_input_t in = present(NULL);
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_SOURCE_UNAVAILABLE);
}

/* ---- rule 1 */

Test(verdict_override, local_override_beats_degraded)
{
    json_t *conditions = json_pack("[o]", condition("BootImageUpdateDegraded", "True", "x"));
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), conditions);
    verdict_input_t in = present(object);
    in.local_override = (verdict_override_t){.active = true, .decision = DECISION_ADMIT};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_OVERRIDE);
    cr_assert_not(v.settled);
    cr_assert_str_eq(v.ocp_version, "4.18.2", "facts are still recorded");
    json_decref(object);
}

Test(verdict_override, local_override_beats_absent)
{
    verdict_input_t in = present(NULL);
    in.state = SOURCE_ABSENT;
    in.local_override =
        (verdict_override_t){.active = true, .decision = DECISION_REJECT, .until = DEC_1_10H};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_OVERRIDE);
    cr_assert(strstr(v.message, "until 2026-12-01T10:00:00Z"), "%s", v.message);
}

Test(verdict_override, annotation_rejects_a_compliant_cluster)
{
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), settled_conditions());
    annotate(object, "reject;until=2026-12-01T10:00:00Z");
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_OVERRIDE);
    cr_assert(strstr(v.message, VERDICT_OVERRIDE_ANNOTATION), "%s", v.message);
}

Test(verdict_override, local_override_wins_over_the_annotation)
{
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), settled_conditions());
    annotate(object, "reject");
    verdict_input_t in = present(object);
    in.local_override = (verdict_override_t){.active = true, .decision = DECISION_ADMIT};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_OVERRIDE);
    cr_assert(strstr(v.message, "admin API"), "%s", v.message);
    json_decref(object);
}

Test(verdict_override, expired_local_override_is_ignored_even_at_the_exact_second)
{
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    verdict_input_t in = present(object);
    in.local_override =
        (verdict_override_t){.active = true, .decision = DECISION_ADMIT, .until = NOW};
    verdict_t v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    in.local_override.until = NOW + 1;
    v = compute(&in);
    assert_verdict(&v, DECISION_ADMIT, REASON_OVERRIDE);
    in.local_override.active = false;
    v = compute(&in);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    json_decref(object);
}

Test(verdict_override, expired_annotation_is_ignored)
{
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    annotate(object, "admit;until=2026-11-14T23:59:59Z");
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
}

Test(verdict_override, invalid_annotation_is_ignored_and_said_so)
{
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    annotate(object, "admit; until=2026-12-01T10:00:00Z");
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
    cr_assert(strstr(v.message, "below the minimum required version 4.13.0"), "%s", v.message);
    cr_assert(strstr(v.message, "ignored the annotation"), "%s", v.message);
}

Test(verdict_override, annotation_until_the_epoch_is_not_permanent)
{
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    annotate(object, "admit;until=1970-01-01T00:00:00Z");
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_OUT_OF_SKEW);
}

Test(verdict_override_parse, accepts_decisions_and_rfc3339_forms)
{
    verdict_override_t o;
    cr_assert_eq(verdict_override_parse("admit", &o), 0);
    cr_assert(o.active && o.decision == DECISION_ADMIT && o.until == 0);
    cr_assert_eq(verdict_override_parse("reject;until=2026-12-01T10:00:00Z", &o), 0);
    cr_assert(o.active && o.decision == DECISION_REJECT);
    cr_assert_eq(o.until, DEC_1_10H);
    cr_assert_eq(verdict_override_parse("admit;until=2026-12-01T12:00:00+02:00", &o), 0);
    cr_assert_eq(o.until, DEC_1_10H, "+02:00 is two hours ahead of UTC");
    cr_assert_eq(verdict_override_parse("admit;until=2026-12-01T05:30:00-04:30", &o), 0);
    cr_assert_eq(o.until, DEC_1_10H);
    cr_assert_eq(verdict_override_parse("admit;until=2026-12-01T10:00:00.999999Z", &o), 0);
    cr_assert_eq(o.until, DEC_1_10H);
    cr_assert_eq(verdict_override_parse("admit;until=2026-12-01t10:00:00z", &o), 0);
    cr_assert_eq(o.until, DEC_1_10H);
    cr_assert_eq(verdict_override_parse("admit;until=2028-02-29T23:59:59Z", &o), 0);
    cr_assert_eq(o.until, (time_t)1835481599);
    cr_assert_eq(verdict_override_parse("admit;until=2000-03-01T00:00:00Z", &o), 0);
    cr_assert_eq(o.until, (time_t)951868800);
}

Test(verdict_override_parse, rejects_everything_else)
{
    const char *bad[] = {
        "",
        "Admit",
        "REJECT",
        "allow",
        "admit ",
        " admit",
        "admit;",
        "admit;until=",
        "admit; until=2026-12-01T10:00:00Z",
        "admit;for=5m",
        "admit;until=2026-12-01T10:00:00",
        "admit;until=2026-12-01 10:00:00Z",
        "admit;until=2026-12-01T10:00Z",
        "admit;until=2026-13-01T10:00:00Z",
        "admit;until=2026-02-29T10:00:00Z",
        "admit;until=2026-04-31T10:00:00Z",
        "admit;until=2026-12-01T24:00:00Z",
        "admit;until=2026-12-01T10:60:00Z",
        "admit;until=2026-12-01T10:00:61Z",
        "admit;until=2026-12-01T10:00:00.Z",
        "admit;until=2026-12-01T10:00:00+0200",
        "admit;until=2026-12-01T10:00:00+24:00",
        "admit;until=2026-12-01T10:00:00Zjunk",
        "admit;until=2026-12-01T10:00:00Z;until=2027-01-01T00:00:00Z",
        "admit;until=26-12-01T10:00:00Z",
        "admit;until=1969-12-31T23:59:59Z",
        "admit;after=2026-12-01T10:00:00Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        verdict_override_t o = {.active = true};
        cr_expect_eq(verdict_override_parse(bad[i], &o), -1, "\"%s\" must not parse", bad[i]);
        cr_expect_not(o.active, "\"%s\" left an active override behind", bad[i]);
    }
    verdict_override_t o;
    cr_expect_eq(verdict_override_parse(NULL, &o), -1);
}

/* ---- output, equality, bounds */

Test(verdict_output, json_has_the_documented_shape)
{
    json_t *object =
        machine_configuration(automatic_status("4.12.0", "9.6.20250523-1"), settled_conditions());
    verdict_input_t in = present(object);
    verdict_t v = compute(&in);
    v.since = DEC_1_10H;
    json_t *j = verdict_to_json(&v);
    cr_assert_not_null(j);
    const char *decision, *reason, *mode, *ocp, *rhcos, *ocp_limit, *rhel_limit, *message, *rv,
        *since;
    int settled;
    cr_assert_eq(json_unpack(j, "{s:s, s:s, s:b, s:s, s:{s:s, s:s}, s:{s:s, s:s}, s:s, s:s, s:s}",
                             "decision", &decision, "reason", &reason, "settled", &settled, "mode",
                             &mode, "bootImage", "ocpVersion", &ocp, "rhcosVersion", &rhcos,
                             "limit", "ocpVersion", &ocp_limit, "rhelVersion", &rhel_limit,
                             "message", &message, "resourceVersion", &rv, "since", &since),
                 0);
    cr_expect_str_eq(decision, "reject");
    cr_expect_str_eq(reason, "OutOfSkew");
    cr_expect(settled);
    cr_expect_str_eq(mode, "Automatic");
    cr_expect_str_eq(ocp, "4.12.0");
    cr_expect_str_eq(rhcos, "9.6.20250523-1");
    cr_expect_str_eq(ocp_limit, "4.13.0");
    cr_expect_str_eq(rhel_limit, "9.2");
    cr_expect_str_eq(message, v.message);
    cr_expect_str_eq(rv, "51234");
    cr_expect_str_eq(since, "2026-12-01T10:00:00Z");
    json_decref(j);

    v.since = 0;
    j = verdict_to_json(&v);
    cr_expect(json_is_null(json_object_get(j, "since")));
    json_decref(j);
    json_decref(object);
}

Test(verdict_output, equal_ignores_resource_version_and_since_only)
{
    json_t *object = machine_configuration(automatic_status("4.12.0", NULL), settled_conditions());
    verdict_input_t in = present(object);
    verdict_t a = compute(&in), b = compute(&in);
    cr_assert(verdict_equal(&a, &b));
    b.since = 42;
    strcpy(b.resource_version, "99999");
    cr_assert(verdict_equal(&a, &b));
    b = a;
    b.decision = DECISION_ADMIT;
    cr_assert_not(verdict_equal(&a, &b));
    b = a;
    b.reason = REASON_OVERRIDE;
    cr_assert_not(verdict_equal(&a, &b));
    b = a;
    strcpy(b.ocp_version, "4.12.1");
    cr_assert_not(verdict_equal(&a, &b));
    b = a;
    b.limits.rhel.minor = 4;
    cr_assert_not(verdict_equal(&a, &b));
    b = a;
    strcpy(b.message, "other");
    cr_assert_not(verdict_equal(&a, &b));
    json_decref(object);
}

Test(verdict_bounds, long_hostile_strings_are_truncated_to_valid_text)
{
    /* 2000 bytes of three-byte characters with control characters mixed
     * in: whatever the cut, the verdict stays bounded, valid UTF-8 and free
     * of control characters, so that JSON and a console can show it. */
    char message[2001];
    for (size_t i = 0; i < 2000; i += 3)
        memcpy(message + i, i % 30 == 0 ? "\n\x1b[" : "\xe2\x82\xac", 3);
    message[1998] = '\0';
    char long_rv[200];
    memset(long_rv, '7', sizeof long_rv - 1);
    long_rv[sizeof long_rv - 1] = '\0';
    char long_version[100];
    memset(long_version, '4', sizeof long_version - 1);
    long_version[sizeof long_version - 1] = '\0';

    json_t *conditions = json_pack("[o]", condition("BootImageUpdateDegraded", "True", message));
    json_t *object = machine_configuration(automatic_status(long_version, NULL), conditions);
    json_object_set_new(json_object_get(object, "metadata"), "resourceVersion",
                        json_string(long_rv));
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_CONTROLLER_DEGRADED);
    cr_assert_lt(strlen(v.message), sizeof v.message);
    cr_assert_gt(strlen(v.message), sizeof v.message - 8, "truncated, not emptied");
    cr_assert(valid_utf8_without_controls(v.message), "message: %s", v.message);
    cr_assert_eq(strlen(v.resource_version), sizeof v.resource_version - 1);
    cr_assert_eq(strlen(v.ocp_version), sizeof v.ocp_version - 1);
    json_t *j = verdict_to_json(&v);
    cr_assert_not_null(json_object_get(j, "message"), "message lost in JSON");
    json_decref(j);
}

Test(verdict_bounds, truncation_drops_a_character_cut_in_half)
{
    /* Shifting the text by one byte at a time puts the cut at every
     * position inside a three-byte character once. */
    for (size_t shift = 0; shift < 3; shift++) {
        char message[1200] = "xx";
        size_t len = shift;
        while (len + 3 < sizeof message) {
            memcpy(message + len, "\xe2\x82\xac", 3);
            len += 3;
        }
        message[len] = '\0';
        json_t *conditions =
            json_pack("[o]", condition("BootImageUpdateDegraded", "True", message));
        verdict_t v =
            compute_object(machine_configuration(automatic_status("4.18.2", NULL), conditions));
        size_t n = strlen(v.message);
        cr_assert_gt(n, sizeof v.message - 4, "shift %zu: cut too much", shift);
        cr_assert_not(strchr(v.message, '?'), "shift %zu: a cut character became '?'", shift);
        cr_assert(valid_utf8_without_controls(v.message), "shift %zu", shift);
        cr_assert_str_eq(v.message + n - 3, "\xe2\x82\xac", "shift %zu", shift);
    }
}

Test(verdict_bounds, invalid_utf8_in_the_object_never_breaks_the_json)
{
    json_t *conditions = json_pack("[o]", condition("BootImageUpdateDegraded", "True", "ok"));
    json_t *object = machine_configuration(automatic_status("4.18.2", NULL), conditions);
    /* json_string_nocheck is how a careless reader could hand us bytes that
     * are not UTF-8: overlong '/' in two and three bytes, a lone
     * continuation byte, a surrogate. */
    json_t *degraded =
        json_array_get(json_object_get(json_object_get(object, "status"), "conditions"), 0);
    json_object_set_new(degraded, "message",
                        json_string_nocheck("a\xc0\xaf"
                                            "b\x80"
                                            "c\xed\xa0\x80"
                                            "d\xe0\x80\xaf"
                                            "e"));
    verdict_t v = compute_object(object);
    assert_verdict(&v, DECISION_REJECT, REASON_CONTROLLER_DEGRADED);
    cr_assert(valid_utf8_without_controls(v.message), "message: %s", v.message);
    cr_assert(strstr(v.message, "a??b?c???d???e"), "%s", v.message);
}
