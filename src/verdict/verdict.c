/* verdict_compute: DESIGN 1.6, row by row. The reading of the object is
 * here; the annotation's grammar is in override.c, the JSON in
 * verdict_json.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "core/time.h"
#include "verdict/verdict.h"

#define CONDITION_DEGRADED "BootImageUpdateDegraded"
#define CONDITION_PROGRESSING "BootImageUpdateProgressing"

static const char *const reason_names[REASON__COUNT] = {
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

const char *verdict_reason_name(verdict_reason_t r)
{
    return (unsigned)r < REASON__COUNT ? reason_names[r] : "Unknown";
}

/* ---- the message: parts of it come from the object, so it is sanitized
 * (core/text.h) after every write. */

static void append_message(verdict_t *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void append_message(verdict_t *out, const char *fmt, ...)
{
    size_t used = strlen(out->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message + used, sizeof out->message - used, fmt, ap);
    va_end(ap);
    text_sanitize(out->message);
}

static void decide(verdict_t *out, decision_t decision, verdict_reason_t reason, bool settled,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void decide(verdict_t *out, decision_t decision, verdict_reason_t reason, bool settled,
                   const char *fmt, ...)
{
    out->decision = decision;
    out->reason = reason;
    out->settled = settled;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    text_sanitize(out->message);
}

/* ---- reading the object: every lookup tolerates any shape */

static const json_t *member(const json_t *obj, const char *key)
{
    return json_is_object(obj) ? json_object_get(obj, key) : NULL;
}

static const char *member_string(const json_t *obj, const char *key)
{
    const json_t *value = member(obj, key);
    return json_is_string(value) ? json_string_value(value) : NULL;
}

static const json_t *find_condition(const json_t *status, const char *type)
{
    const json_t *conditions = member(status, "conditions");
    size_t i;
    const json_t *condition;
    if (!json_is_array(conditions))
        return NULL;
    json_array_foreach (conditions, i, condition) {
        const char *t = member_string(condition, "type");
        if (t && strcmp(t, type) == 0)
            return condition;
    }
    return NULL;
}

static bool str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

/* The section of the status that holds the boot image versions for mode. */
static const json_t *version_section(const json_t *skew, const char *mode)
{
    if (str_is(mode, "Automatic"))
        return member(skew, "automatic");
    if (str_is(mode, "Manual"))
        return member(skew, "manual");
    return NULL;
}

/* Mode, boot image versions and resourceVersion, whatever rule decides. */
static void record_facts(const json_t *object, const json_t *skew, verdict_t *out)
{
    const char *mode = member_string(skew, "mode");
    const json_t *section = version_section(skew, mode);
    text_copy(out->mode, sizeof out->mode, mode);
    text_copy(out->ocp_version, sizeof out->ocp_version, member_string(section, "ocpVersion"));
    text_copy(out->rhcos_version, sizeof out->rhcos_version,
              member_string(section, "rhcosVersion"));
    text_copy(out->resource_version, sizeof out->resource_version,
              member_string(member(object, "metadata"), "resourceVersion"));
}

/* ---- the skew check (rules 7 to 9) */

typedef enum { CHECK_OCP, CHECK_RHCOS } version_kind_t;

/* A version field: absent and "" both mean unset, as for the MCO. */
typedef enum { FIELD_UNSET, FIELD_SET, FIELD_NOT_STRING } field_state_t;

static field_state_t version_field(const json_t *section, const char *key, const char **value)
{
    const json_t *field = member(section, key);
    *value = NULL;
    if (!field)
        return FIELD_UNSET;
    if (!json_is_string(field))
        return FIELD_NOT_STRING;
    *value = json_string_value(field);
    return **value ? FIELD_SET : FIELD_UNSET;
}

/* Picks the version the MCO's Upgradeable guard checks: in Automatic mode
 * ocpVersion when set, else rhcosVersion; in Manual mode the field that
 * manual.mode names. The API server rules out the shapes refused here (a
 * missing section, no version, a Manual status naming one field and
 * holding the other, a non-string), so one of them means the status cannot
 * be read as the MCO meant it: the caller reports VersionUnparseable.
 * Returns false with why filled in. */
static bool choose_version(const json_t *skew, const char *mode, version_kind_t *kind,
                           const char **version, char *why, size_t why_len)
{
    const json_t *section = version_section(skew, mode);
    const char *ocp, *rhcos;
    if (!json_is_object(section)) {
        snprintf(why, why_len,
                 "mode %s without an object in status.bootImageSkewEnforcementStatus.%s", mode,
                 str_is(mode, "Automatic") ? "automatic" : "manual");
        return false;
    }
    field_state_t ocp_state = version_field(section, "ocpVersion", &ocp);
    field_state_t rhcos_state = version_field(section, "rhcosVersion", &rhcos);

    if (str_is(mode, "Automatic")) {
        if (ocp_state == FIELD_SET) {
            *kind = CHECK_OCP;
            *version = ocp;
            return true;
        }
        if (ocp_state == FIELD_UNSET && rhcos_state == FIELD_SET) {
            *kind = CHECK_RHCOS;
            *version = rhcos;
            return true;
        }
        snprintf(why, why_len, "mode Automatic %s",
                 ocp_state == FIELD_NOT_STRING || rhcos_state == FIELD_NOT_STRING
                     ? "holds a version that is not a string"
                     : "reports neither ocpVersion nor rhcosVersion");
        return false;
    }

    const char *manual_mode = member_string(section, "mode");
    bool by_ocp = str_is(manual_mode, "OCPVersion");
    if (!by_ocp && !str_is(manual_mode, "RHCOSVersion")) {
        snprintf(why, why_len, "manual.mode is \"%s\", neither OCPVersion nor RHCOSVersion",
                 manual_mode ? manual_mode : "<missing or not a string>");
        return false;
    }
    field_state_t wanted = by_ocp ? ocp_state : rhcos_state;
    field_state_t other = by_ocp ? rhcos_state : ocp_state;
    if (wanted != FIELD_SET || other != FIELD_UNSET) {
        bool wanted_bad = wanted != FIELD_SET;
        snprintf(why, why_len, "manual.mode is %s but manual.%s %s", manual_mode,
                 by_ocp == wanted_bad ? "ocpVersion" : "rhcosVersion",
                 !wanted_bad             ? "is set as well"
                 : wanted == FIELD_UNSET ? "is not set"
                                         : "is not a string");
        return false;
    }
    *kind = by_ocp ? CHECK_OCP : CHECK_RHCOS;
    *version = by_ocp ? ocp : rhcos;
    return true;
}

static void check_ocp(const verdict_input_t *in, const char *version, verdict_t *out)
{
    ocp_version_t boot;
    char limit[32];
    version_format_ocp(&in->limits.ocp, limit, sizeof limit);
    if (version_parse_ocp(version, &boot) != 0) {
        decide(out, in->policy.when_unparseable, REASON_VERSION_UNPARSEABLE, true,
               "the OCP boot image version \"%s\" does not parse (expected MAJOR.MINOR.PATCH, "
               "5 to 10 characters); applying the when_unparseable policy (%s)",
               version, decision_name(in->policy.when_unparseable));
    } else if (version_cmp_ocp(&boot, &in->limits.ocp) < 0) {
        decide(out, DECISION_REJECT, REASON_OUT_OF_SKEW, true,
               "the cluster is using OCP boot image version %s, which is below the minimum "
               "required version %s",
               version, limit);
    } else {
        decide(out, DECISION_ADMIT, REASON_COMPLIANT, true,
               "the cluster is using OCP boot image version %s, which meets the minimum "
               "required version %s",
               version, limit);
    }
}

static void check_rhcos(const verdict_input_t *in, const char *version, verdict_t *out)
{
    rhel_version_t boot;
    char limit[32], rhel[32];
    version_format_rhel(&in->limits.rhel, limit, sizeof limit);
    if (version_parse_rhcos(version, &boot) != 0) {
        decide(out, in->policy.when_unparseable, REASON_VERSION_UNPARSEABLE, true,
               "the RHCOS boot image version \"%s\" does not parse (expected "
               "MAJOR.MINOR.YYYYMMDD-N or legacy OCP.RHEL.YYYYMMDDHHMM-N); applying the "
               "when_unparseable policy (%s)",
               version, decision_name(in->policy.when_unparseable));
        return;
    }
    version_format_rhel(&boot, rhel, sizeof rhel);
    if (version_cmp_rhel(&boot, &in->limits.rhel) < 0) {
        decide(out, DECISION_REJECT, REASON_OUT_OF_SKEW, true,
               "the cluster is using RHCOS boot image version %s (RHEL %s), which is below the "
               "minimum required RHEL version %s",
               version, rhel, limit);
    } else {
        decide(out, DECISION_ADMIT, REASON_COMPLIANT, true,
               "the cluster is using RHCOS boot image version %s (RHEL %s), which meets the "
               "minimum required RHEL version %s",
               version, rhel, limit);
    }
}

/* ---- the table, rows 2 to 9 */

/* What the rows look at: the input, and the object while it is the
 * source's current view, with the parts of its status the rows read. */
typedef struct view {
    const verdict_input_t *in;
    const json_t *object;   /* NULL unless state is SOURCE_PRESENT */
    const json_t *status;   /* .status */
    const json_t *skew;     /* .status.bootImageSkewEnforcementStatus */
    const char *mode;       /* skew.mode when a string, else NULL */
} view_t;

/* A row: decides and returns true when its condition holds. */
typedef bool rule_t(const view_t *v, verdict_t *out);

/* Row 2: no data yet, the source failing longer than max_staleness, or
 * the object absent. */
static bool rule_no_object(const view_t *v, verdict_t *out)
{
    decision_t unknown = v->in->policy.when_unknown;
    if (v->in->state == SOURCE_ABSENT)
        decide(out, unknown, REASON_NOT_FOUND, false,
               "the MachineConfiguration object does not exist; applying the when_unknown "
               "policy (%s)",
               decision_name(unknown));
    else if (v->in->state == SOURCE_FAILING)
        decide(out, unknown, REASON_SOURCE_UNAVAILABLE, false,
               "the MachineConfiguration source has been failing for longer than "
               "max_staleness; applying the when_unknown policy (%s)",
               decision_name(unknown));
    else if (!v->object)
        decide(out, unknown, REASON_SOURCE_UNAVAILABLE, false,
               "the MachineConfiguration has not been read yet; applying the when_unknown "
               "policy (%s)",
               decision_name(unknown));
    else
        return false;
    return true;
}

/* Row 3: status.bootImageSkewEnforcementStatus unset. An empty mode counts
 * as unset: it is what the MCO leaves before it first fills the status in. */
static bool rule_status_unset(const view_t *v, verdict_t *out)
{
    bool is_object = json_is_object(v->skew);
    if (is_object && member(v->skew, "mode") && !str_is(v->mode, ""))
        return false;
    decide(out, v->in->policy.when_unknown, REASON_STATUS_UNSET, false,
           "status.bootImageSkewEnforcementStatus%s is not set: the Machine Config "
           "Operator has not reported boot image skew enforcement yet; applying the "
           "when_unknown policy (%s)",
           is_object ? ".mode" : "", decision_name(v->in->policy.when_unknown));
    return true;
}

/* Row 4: mode None. */
static bool rule_enforcement_disabled(const view_t *v, verdict_t *out)
{
    if (!str_is(v->mode, "None"))
        return false;
    decide(out, DECISION_ADMIT, REASON_ENFORCEMENT_DISABLED, true,
           "boot image skew enforcement is disabled (mode None): nodes may scale up from "
           "boot images too old to join the cluster");
    return true;
}

/* Row 5: mode Automatic and BootImageUpdateDegraded is True. */
static bool rule_controller_degraded(const view_t *v, verdict_t *out)
{
    if (!str_is(v->mode, "Automatic"))
        return false;
    const json_t *degraded = find_condition(v->status, CONDITION_DEGRADED);
    if (!str_is(member_string(degraded, "status"), "True"))
        return false;
    const char *reason = member_string(degraded, "reason");
    const char *message = member_string(degraded, "message");
    decide(out, DECISION_REJECT, REASON_CONTROLLER_DEGRADED, true,
           "the boot image controller is degraded (%s)%s%s",
           reason && *reason ? reason : CONDITION_DEGRADED, message && *message ? ": " : "",
           message ? message : "");
    return true;
}

/* Row 6: mode Automatic and BootImageUpdateProgressing absent or True.
 * Settled only once the controller says it is not progressing: "Unknown"
 * is no more settled than "True". */
static bool rule_controller_progressing(const view_t *v, verdict_t *out)
{
    const verdict_input_t *in = v->in;
    if (!str_is(v->mode, "Automatic"))
        return false;
    const json_t *progressing = find_condition(v->status, CONDITION_PROGRESSING);
    const char *progressing_status = member_string(progressing, "status");
    if (str_is(progressing_status, "False"))
        return false;
    decision_t kept = in->has_previous ? in->previous : DECISION_ADMIT;
    decide(out, kept, REASON_CONTROLLER_PROGRESSING, false,
           "the boot image controller is still updating boot images (%s %s); %s%s%s",
           CONDITION_PROGRESSING,
           progressing ? (progressing_status ? progressing_status : "without status") : "absent",
           in->has_previous ? "keeping the previous decision (" : "admitting until it settles",
           in->has_previous ? decision_name(kept) : "", in->has_previous ? ")" : "");
    return true;
}

/* Row 7, first half: a mode the API server refuses (None went by at row 4). */
static bool rule_mode_unknown(const view_t *v, verdict_t *out)
{
    if (str_is(v->mode, "Automatic") || str_is(v->mode, "Manual"))
        return false;
    decide(out, v->in->policy.when_unparseable, REASON_VERSION_UNPARSEABLE, true,
           "status.bootImageSkewEnforcementStatus.mode is \"%s\", not Automatic, Manual or "
           "None; applying the when_unparseable policy (%s)",
           v->mode ? v->mode : "<not a string>", decision_name(v->in->policy.when_unparseable));
    return true;
}

/* Rows 7 to 9 on the version the MCO checks: malformed or unparseable (7),
 * below the limit (8), otherwise compliant (9). Always decides. */
static bool rule_skew(const view_t *v, verdict_t *out)
{
    version_kind_t kind;
    const char *version;
    char why[160];
    if (!choose_version(v->skew, v->mode, &kind, &version, why, sizeof why))
        decide(out, v->in->policy.when_unparseable, REASON_VERSION_UNPARSEABLE, true,
               "status.bootImageSkewEnforcementStatus is malformed: %s; applying the "
               "when_unparseable policy (%s)",
               why, decision_name(v->in->policy.when_unparseable));
    else if (kind == CHECK_OCP)
        check_ocp(v->in, version, out);
    else
        check_rhcos(v->in, version, out);
    return true;
}

/* DESIGN 1.6 rows 2 to 9 in order; the first that decides wins, and the
 * last always does. */
static rule_t *const object_rules[] = {
    rule_no_object,              /* 2 SourceUnavailable, NotFound */
    rule_status_unset,           /* 3 StatusUnset */
    rule_enforcement_disabled,   /* 4 EnforcementDisabled */
    rule_controller_degraded,    /* 5 BootImageControllerDegraded */
    rule_controller_progressing, /* 6 BootImageControllerProgressing */
    rule_mode_unknown,           /* 7 VersionUnparseable */
    rule_skew,                   /* 7 VersionUnparseable, 8 OutOfSkew, 9 Compliant */
};

/* ---- row 1: overrides */

static bool override_in_force(const verdict_override_t *o, time_t now)
{
    return o->active && (o->until == 0 || o->until > now);
}

static void decide_by_override(verdict_t *out, const verdict_override_t *o, const char *origin)
{
    char until[TIME_RFC3339_LEN] = "";
    out->override_until = o->until;
    if (o->until != 0)
        time_format_rfc3339(o->until, until, sizeof until);
    decide(out, o->decision, REASON_OVERRIDE, false, "%s by %s, %s%s",
           o->decision == DECISION_REJECT ? "rejected" : "admitted", origin,
           o->until != 0 ? "until " : "without expiry", until);
}

void verdict_compute(const verdict_input_t *in, verdict_t *out)
{
    memset(out, 0, sizeof *out);
    out->limits = in->limits;
    view_t v = {.in = in, .object = in->state == SOURCE_PRESENT ? in->object : NULL};
    v.status = member(v.object, "status");
    v.skew = member(v.status, "bootImageSkewEnforcementStatus");
    v.mode = member_string(v.skew, "mode");
    record_facts(v.object, v.skew, out);

    if (override_in_force(&in->local_override, in->now)) {
        decide_by_override(out, &in->local_override, "an override set on this gate's admin API");
        return;
    }
    const char *annotation = member_string(member(member(v.object, "metadata"), "annotations"),
                                           VERDICT_OVERRIDE_ANNOTATION);
    verdict_override_t cluster_override;
    bool annotation_invalid =
        annotation && verdict_override_parse(annotation, &cluster_override) != 0;
    if (annotation && !annotation_invalid && override_in_force(&cluster_override, in->now)) {
        decide_by_override(out, &cluster_override,
                           "the cluster-wide override annotation " VERDICT_OVERRIDE_ANNOTATION);
        return;
    }

    for (size_t i = 0; i < sizeof object_rules / sizeof *object_rules; i++)
        if (object_rules[i](&v, out))
            break;
    /* Someone meant to override: say why it did not take. */
    if (annotation_invalid)
        append_message(out, " (ignored the annotation " VERDICT_OVERRIDE_ANNOTATION
                            ": not admit|reject[;until=RFC3339])");
}
