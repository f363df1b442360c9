#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/version.h"
#include "source/controller.h"

#define DEADLINE_MS 4000
#define TICK_MS 20
#define MAX_PUBLISHED 16

/* A source the test drives by hand. */
typedef struct fake_source {
    source_t base;
    bool started;
} fake_source_t;

static int fake_start(source_t *src)
{
    ((fake_source_t *)src)->started = true;
    return 0;
}

static void fake_destroy(source_t *src) { free(src); }

static const source_ops_t fake_ops = {"fake", fake_start, fake_destroy, NULL, NULL};

static struct event_base *base;
static struct event *tick;
static verdict_ctl_t *ctl;
static fake_source_t *fake;
static gate_snapshot_t *published[MAX_PUBLISHED];
static int n_published;

static void collect(gate_snapshot_t *snap, void *arg)
{
    (void)arg;
    cr_assert_lt(n_published, MAX_PUBLISHED);
    published[n_published++] = snap;
}

static const verdict_t *last(void) { return &published[n_published - 1]->verdict; }

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void start_with(uint64_t max_staleness_ms)
{
    config_enforcement_t cfg = {.source = SOURCE_KIND_FILE, .max_staleness_ms = max_staleness_ms};
    verdict_limits_default(&cfg.limits);
    verdict_policy_default(&cfg.policy);
    ctl = verdict_ctl_new(base, &cfg, REJECT_HOLD, collect, NULL);
    cr_assert_not_null(ctl);
    fake = calloc(1, sizeof *fake);
    source_init(&fake->base, &fake_ops, base, verdict_ctl_on_source, ctl);
    cr_assert_eq(verdict_ctl_start(ctl, &fake->base), 0);
    cr_assert(fake->started);
    cr_assert_eq(verdict_ctl_source(ctl), &fake->base);
}

static void setup(void)
{
    base = event_base_new();
    tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval every = {0, TICK_MS * 1000};
    event_add(tick, &every);
    n_published = 0;
    ctl = NULL;
    fake = NULL;
}

static void teardown(void)
{
    verdict_ctl_free(ctl);
    for (int i = 0; i < n_published; i++)
        gate_snapshot_unref(published[i]);
    event_free(tick);
    event_base_free(base);
}

TestSuite(verdict_ctl, .init = setup, .fini = teardown);

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The controller's clock: time(2) may lag it by a tick (it reads the coarse
 * clock), which would make a just-expired override look early. */
static time_t wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

static bool wait_for_publish(int count)
{
    long long deadline = now_ms() + DEADLINE_MS;
    while (n_published <= count && now_ms() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    return n_published > count;
}

static bool quiet_for(int ms)
{
    int count = n_published;
    long long until = now_ms() + ms;
    while (now_ms() < until)
        event_base_loop(base, EVLOOP_ONCE);
    return n_published == count;
}

/* ---- objects */

static json_t *object(const char *rv, json_t *skew_status, json_t *conditions)
{
    json_t *status = json_pack("{s:o}", "bootImageSkewEnforcementStatus", skew_status);
    if (conditions)
        json_object_set_new(status, "conditions", conditions);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "operator.openshift.io/v1",
                     "kind", "MachineConfiguration", "metadata", "name", "cluster",
                     "resourceVersion", rv, "status", status);
}

static json_t *manual_ocp(const char *rv, const char *ocp_version)
{
    return object(rv, json_pack("{s:s, s:{s:s, s:s}}", "mode", "Manual", "manual", "mode",
                                "OCPVersion", "ocpVersion", ocp_version),
                  NULL);
}

static json_t *automatic(const char *rv, const char *ocp_version, const char *progressing)
{
    return object(rv,
                  json_pack("{s:s, s:{s:s}}", "mode", "Automatic", "automatic", "ocpVersion",
                            ocp_version),
                  json_pack("[{s:s, s:s}, {s:s, s:s}]", "type", "BootImageUpdateProgressing",
                            "status", progressing, "type", "BootImageUpdateDegraded", "status",
                            "False"));
}

static void report(source_state_t state, json_t *obj)
{
    source_report(&fake->base, state, obj);
    json_decref(obj);
}

/* ---- tests */

Test(verdict_ctl, publishes_the_unknown_verdict_before_any_data)
{
    start_with(300000);
    cr_assert_eq(n_published, 1);
    cr_expect(published[0]->admit);
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    cr_expect_eq(published[0]->mode, REJECT_HOLD);

    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    cr_assert_eq(n_published, 2);
    cr_expect_not(published[1]->admit);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW);
    cr_expect_eq(verdict_ctl_current(ctl)->decision, DECISION_REJECT);
}

Test(verdict_ctl, an_identical_object_is_not_republished)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    report(SOURCE_PRESENT, manual_ocp("2", "4.12.0"));
    cr_expect_eq(n_published, 2);
    cr_expect_str_eq(verdict_ctl_current(ctl)->resource_version, "2");
}

Test(verdict_ctl, the_settled_decision_survives_progressing)
{
    start_with(300000);
    report(SOURCE_PRESENT, automatic("1", "4.12.0", "False"));
    cr_assert_eq(last()->reason, REASON_OUT_OF_SKEW);
    report(SOURCE_PRESENT, automatic("2", "4.18.0", "True"));
    cr_expect_eq(last()->reason, REASON_CONTROLLER_PROGRESSING);
    cr_expect_eq(last()->decision, DECISION_REJECT);
    report(SOURCE_PRESENT, automatic("3", "4.18.0", "False"));
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
    report(SOURCE_PRESENT, automatic("4", "4.12.0", "True"));
    cr_expect_eq(last()->reason, REASON_CONTROLLER_PROGRESSING);
    cr_expect_eq(last()->decision, DECISION_ADMIT);
}

Test(verdict_ctl, since_stays_while_decision_and_reason_stay)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    time_t began = last()->since;
    cr_assert_neq(began, 0);
    /* Let the clock pass a second boundary, by the loop, not by sleeping. */
    long long deadline = now_ms() + DEADLINE_MS;
    while (wall_seconds() == began && now_ms() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    cr_assert_gt(wall_seconds(), began);

    report(SOURCE_PRESENT, manual_ocp("2", "4.11.0"));
    cr_assert_eq(n_published, 3, "a new fact is published");
    cr_expect_eq(last()->since, began);
    report(SOURCE_PRESENT, object("3", json_pack("{s:s}", "mode", "None"), NULL));
    cr_expect_eq(last()->reason, REASON_ENFORCEMENT_DISABLED);
    cr_expect_gt(last()->since, began);
}

Test(verdict_ctl, a_local_override_applies_and_expires)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    verdict_override_t admit = {
        .active = true, .decision = DECISION_ADMIT, .until = wall_seconds() + 1};
    verdict_ctl_set_override(ctl, &admit);
    cr_assert_eq(n_published, 3);
    cr_expect_eq(last()->reason, REASON_OVERRIDE);
    cr_expect(published[2]->admit);

    cr_assert(wait_for_publish(3), "the override lapses by itself");
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW);
    cr_expect_geq(wall_seconds(), admit.until);

    verdict_override_t forever = {.active = true, .decision = DECISION_ADMIT};
    verdict_ctl_set_override(ctl, &forever);
    cr_expect_eq(last()->reason, REASON_OVERRIDE);
    verdict_override_t clear = {.active = false};
    verdict_ctl_set_override(ctl, &clear);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW);
}

Test(verdict_ctl, an_annotation_override_expires)
{
    start_with(300000);
    char value[64];
    time_t until = wall_seconds() + 1;
    struct tm tm;
    gmtime_r(&until, &tm);
    strftime(value, sizeof value, "reject;until=%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *obj = automatic("1", "4.18.0", "False");
    json_object_set_new(json_object_get(obj, "metadata"), "annotations",
                        json_pack("{s:s}", VERDICT_OVERRIDE_ANNOTATION, value));
    report(SOURCE_PRESENT, obj);
    cr_assert_eq(last()->reason, REASON_OVERRIDE, "%s", last()->message);
    cr_assert(wait_for_publish(n_published));
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
}

Test(verdict_ctl, failing_counts_only_after_max_staleness)
{
    start_with(300);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    long long failed_at = now_ms();
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(n_published, 2, "the last good object still decides");
    cr_assert(wait_for_publish(2));
    cr_expect_geq(now_ms() - failed_at, 250);
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    cr_expect(published[2]->admit, "when_unknown is admit by default");

    report(SOURCE_PRESENT, manual_ocp("2", "4.12.0"));
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW);
}

Test(verdict_ctl, a_short_failure_changes_nothing)
{
    start_with(300);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    report(SOURCE_FAILING, NULL);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    cr_expect(quiet_for(500));
    cr_expect_eq(n_published, 2);
}

Test(verdict_ctl, absent_is_not_found)
{
    start_with(300000);
    report(SOURCE_ABSENT, NULL);
    cr_expect_eq(last()->reason, REASON_NOT_FOUND);
}

Test(verdict_ctl, a_reload_republishes_for_a_new_mode_or_limit_only)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    cr_assert_eq(n_published, 2);
    config_enforcement_t cfg = {.source = SOURCE_KIND_FILE, .max_staleness_ms = 300000};
    verdict_limits_default(&cfg.limits);
    verdict_policy_default(&cfg.policy);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_HOLD);
    cr_expect_eq(n_published, 2, "nothing changed, nothing published");
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_DENY);
    cr_assert_eq(n_published, 3);
    cr_expect_eq(published[2]->mode, REJECT_DENY);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW);
    cr_assert_eq(version_parse_ocp("4.12.0", &cfg.limits.ocp), 0);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_DENY);
    cr_assert_eq(n_published, 4);
    cr_expect(published[3]->admit, "4.12.0 meets a limit of 4.12.0");
}

Test(verdict_ctl, a_new_source_replaces_the_running_one_and_its_view_stays_until_it_reports)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    fake_source_t *next = calloc(1, sizeof *next);
    source_init(&next->base, &fake_ops, base, verdict_ctl_on_source, ctl);
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base), 0);
    fake = next;   /* the old one is freed (ASan: no leak, no use after free) */
    cr_expect(next->started);
    cr_expect_eq(verdict_ctl_source(ctl), &next->base);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the last view stays");
    report(SOURCE_PRESENT, manual_ocp("7", "4.18.0"));
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
}

/* Ready means the running source has synced since it started: after a
 * reload to a source that cannot be reached, the last view still decides,
 * but /readyz says not ready until the new source reports its own. */
Test(verdict_ctl, a_replaced_source_is_not_ready_until_it_syncs)
{
    const char *why = NULL;
    start_with(300000);
    cr_expect_not(verdict_ctl_ready(ctl, &why), "a fresh start is not ready");
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    cr_assert(verdict_ctl_ready(ctl, &why), "synced");
    fake_source_t *next = calloc(1, sizeof *next);
    source_init(&next->base, &fake_ops, base, verdict_ctl_on_source, ctl);
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base), 0);
    fake = next;
    cr_expect_not(verdict_ctl_ready(ctl, &why), "the new source has not synced");
    cr_expect(strstr(why, "has not synced"), "why: %s", why);
    report(SOURCE_FAILING, NULL);
    cr_expect_not(verdict_ctl_ready(ctl, &why), "failing is no sync");
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the last view still decides");
    report(SOURCE_ABSENT, NULL);
    cr_expect(verdict_ctl_ready(ctl, &why), "the new source's first view: ready");
}

/* A new source that reports during its start is synced at once. */
static int fake_start_reporting(source_t *src)
{
    ((fake_source_t *)src)->started = true;
    json_t *obj = manual_ocp("9", "4.18.0");
    source_report(src, SOURCE_PRESENT, obj);
    json_decref(obj);
    return 0;
}

static const source_ops_t fake_reporting_ops = {"fake", fake_start_reporting, fake_destroy, NULL, NULL};

Test(verdict_ctl, a_replaced_source_that_reports_while_starting_is_ready)
{
    const char *why = NULL;
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    fake_source_t *next = calloc(1, sizeof *next);
    source_init(&next->base, &fake_reporting_ops, base, verdict_ctl_on_source, ctl);
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base), 0);
    fake = next;
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
}
