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

/* A source the test drives by hand; it may report from within its start,
 * as the file source does: at_start (if set), then a failure if
 * fail_at_start. */
typedef struct fake_source {
    source_t base;
    bool started;
    json_t *at_start;
    bool fail_at_start;
    uint64_t reconnects;
} fake_source_t;

static int fake_start(source_t *src)
{
    fake_source_t *f = (fake_source_t *)src;
    f->started = true;
    if (f->at_start)
        source_report(src, SOURCE_PRESENT, f->at_start);
    if (f->fail_at_start)
        source_report(src, SOURCE_FAILING, f->at_start);
    return 0;
}

static void fake_destroy(source_t *src)
{
    json_decref(((fake_source_t *)src)->at_start);
    free(src);
}

static uint64_t fake_reconnects(const source_t *src)
{
    return ((const fake_source_t *)src)->reconnects;
}

static const source_ops_t fake_ops = {"fake", fake_start, fake_destroy, fake_reconnects, NULL};

static struct event_base *base;
static struct event *tick;
static time_t wall_step;    /* how far NTP stepped the controller's wall clock */
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
    wall_step = 0;
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

/* The wall clock, stepped by wall_step: verdict_ctl_set_wall_clock. */
static struct timespec stepped_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wall_step;
    return ts;
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

/* ---- reloads: a new source, a new max_staleness */

/* The enforcement section of a reload: the defaults, OCP limit ocp (NULL:
 * the default 4.13.0), max_staleness. */
static config_enforcement_t enforcement(const char *ocp, uint64_t max_staleness_ms)
{
    config_enforcement_t cfg = {.source = SOURCE_KIND_FILE, .max_staleness_ms = max_staleness_ms};
    verdict_limits_default(&cfg.limits);
    verdict_policy_default(&cfg.policy);
    if (ocp)
        cr_assert_eq(version_parse_ocp(ocp, &cfg.limits.ocp), 0);
    return cfg;
}

/* A reload's new source, not started. */
static fake_source_t *next_source(json_t *at_start, bool fail_at_start)
{
    fake_source_t *next = calloc(1, sizeof *next);
    cr_assert_not_null(next);
    source_init(&next->base, &fake_ops, base, verdict_ctl_on_source, ctl);
    next->at_start = at_start;
    next->fail_at_start = fail_at_start;
    return next;
}

/* gate_reload's order: the new source starts while the reload is built,
 * the commit comes after. The old one is freed at the commit (ASan: no
 * leak, no use after free). */
static void replace_in_cluster_and_commit(fake_source_t *next, source_cluster_t cluster,
                                          const config_enforcement_t *cfg, reject_mode_t mode)
{
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base, cluster), 0);
    cr_expect(next->started);
    verdict_ctl_reconfigure(ctl, cfg, mode);
    fake = next;
    cr_expect_eq(verdict_ctl_source(ctl), &next->base);
}

/* A new source on the same cluster (a rotated CA, a new token path). */
static void replace_and_commit(fake_source_t *next, const config_enforcement_t *cfg, reject_mode_t mode)
{
    replace_in_cluster_and_commit(next, CLUSTER_SAME, cfg, mode);
}

Test(verdict_ctl, a_new_source_replaces_the_running_one_and_its_view_stays_until_it_reports)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    cr_expect_eq(n_published, 2, "nothing new to publish");
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
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    cr_expect_not(verdict_ctl_ready(ctl, &why), "the new source has not synced");
    cr_expect(strstr(why, "has not synced"), "why: %s", why);
    report(SOURCE_FAILING, NULL);
    cr_expect_not(verdict_ctl_ready(ctl, &why), "failing is no sync");
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the last view still decides");
    report(SOURCE_ABSENT, NULL);
    cr_expect(verdict_ctl_ready(ctl, &why), "the new source's first view: ready");
}

/* A reload to another API server is another cluster: the old one's view
 * kept deciding (out of skew: held) until max_staleness, with lastSync
 * the reload's moment, while the machines watch already dropped the old
 * cluster's addresses. No view until the new source reports: when_unknown,
 * not ready, lastSync never. */
Test(verdict_ctl, a_reload_to_another_cluster_starts_from_no_view)
{
    const char *why = NULL;
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    cr_assert_eq(last()->reason, REASON_OUT_OF_SKEW);
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_in_cluster_and_commit(next_source(NULL, false), CLUSTER_OTHER, &cfg, REJECT_HOLD);
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE, "the old cluster's view decides: %s",
                 verdict_reason_name(last()->reason));
    cr_expect(published[n_published - 1]->admit, "when_unknown is admit by default");
    cr_expect_eq(verdict_ctl_last_sync(ctl), 0, "lastSync claims a sync of the new cluster");
    cr_expect_not(verdict_ctl_ready(ctl, &why));
    int before = n_published;
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(n_published, before, "a failure before any view changes nothing");
    cr_expect_eq(verdict_ctl_last_sync(ctl), 0);
    report(SOURCE_PRESENT, manual_ocp("9", "4.18.0"));
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
    cr_expect_gt(verdict_ctl_last_sync(ctl), 0);
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
}

/* The decision kept through BootImageControllerProgressing is the old
 * cluster's too: a new cluster whose boot image controller is at work
 * admits until it settles, as at start, rather than keep the old one's
 * reject. */
Test(verdict_ctl, a_reload_to_another_cluster_forgets_the_settled_decision)
{
    start_with(300000);
    report(SOURCE_PRESENT, automatic("1", "4.12.0", "False"));
    cr_assert_eq(last()->decision, DECISION_REJECT);
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_in_cluster_and_commit(next_source(automatic("9", "4.18.0", "True"), false), CLUSTER_OTHER, &cfg,
                                  REJECT_HOLD);
    cr_expect_eq(last()->reason, REASON_CONTROLLER_PROGRESSING);
    cr_expect_eq(last()->decision, DECISION_ADMIT, "the old cluster's settled reject was kept");
    cr_expect_str_eq(last()->resource_version, "9");
}

/* A new source that reports during its start is synced at once. */
Test(verdict_ctl, a_replaced_source_that_reports_while_starting_is_ready)
{
    const char *why = NULL;
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(manual_ocp("9", "4.18.0"), false), &cfg, REJECT_HOLD);
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
}

/* One reload switches to a source whose object (OCP 4.12.0) is out of skew
 * under the running limit (4.13.0) and lowers the limit to 4.12.0, with
 * reject.mode deny. The new source reports while it starts, before the
 * commit: judged then, with the old limit, it went out as a reject that a
 * node could get as 403 until the commit replaced it. Only the new
 * configuration's verdict may be published. */
Test(verdict_ctl, a_new_source_is_judged_only_with_its_reloads_limits_and_mode)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.18.0"));
    cr_assert_eq(n_published, 2);
    cr_assert(published[1]->admit);
    fake_source_t *next = next_source(manual_ocp("9", "4.12.0"), false);
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base, CLUSTER_SAME), 0);
    cr_expect(next->started);
    cr_expect_eq(n_published, 2, "published before the commit: %s %s",
                 decision_name(last()->decision), verdict_reason_name(last()->reason));
    cr_expect_neq(verdict_ctl_source(ctl), &next->base, "the running source decides until the commit");
    config_enforcement_t cfg = enforcement("4.12.0", 300000);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_DENY);
    fake = next;
    cr_expect_eq(verdict_ctl_source(ctl), &next->base);
    for (int i = 0; i < n_published; i++)
        cr_expect(published[i]->admit, "snapshot %d rejects: %s", i,
                  verdict_reason_name(published[i]->verdict.reason));
    cr_assert_eq(n_published, 3, "one snapshot for the reload");
    cr_expect_eq(last()->reason, REASON_COMPLIANT);
    cr_expect_str_eq(last()->resource_version, "9", "judged from the new source's object");
    cr_expect_eq(published[2]->mode, REJECT_DENY);
}

/* A reload refused after its source step: the new source goes, and what
 * it reported was never published; the running one keeps deciding. */
Test(verdict_ctl, a_refused_reload_leaves_the_running_source_and_its_verdict)
{
    const char *why = NULL;
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.18.0"));
    fake_source_t *running = fake;
    fake_source_t *next = next_source(manual_ocp("9", "4.12.0"), false);
    cr_assert_eq(verdict_ctl_replace_source(ctl, &next->base, CLUSTER_SAME), 0);
    verdict_ctl_drop_replacement(ctl);     /* frees next (ASan: no leak) */
    cr_expect_eq(n_published, 2, "nothing published");
    cr_expect_eq(verdict_ctl_source(ctl), &running->base);
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
    config_enforcement_t cfg = enforcement(NULL, 300000);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_HOLD);
    cr_expect_eq(n_published, 2, "a later reload finds no replacement to take");
    cr_expect_eq(verdict_ctl_source(ctl), &running->base);
    report(SOURCE_PRESENT, manual_ocp("2", "4.12.0"));
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the running source is still heard");
    verdict_ctl_drop_replacement(ctl);     /* none waits: nothing to do */
    cr_expect_eq(verdict_ctl_source(ctl), &running->base);
}

/* A new source that read an object and failed right after, both while
 * starting: its object is the view (trusted until stale) and it is failing. */
Test(verdict_ctl, a_replacement_that_fails_after_its_first_view_keeps_that_view)
{
    start_with(300);
    report(SOURCE_PRESENT, manual_ocp("1", "4.18.0"));
    config_enforcement_t cfg = enforcement(NULL, 300);
    replace_and_commit(next_source(manual_ocp("9", "4.12.0"), true), &cfg, REJECT_HOLD);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the new source's view decides");
    cr_assert(wait_for_publish(n_published), "it goes stale");
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
}

/* Stale under max_staleness 300ms; a reload raises it to 5 minutes, far
 * above how long the source has been failing: the last good view is
 * trusted again, at once, and the gate is ready. */
Test(verdict_ctl, a_reload_that_raises_max_staleness_trusts_the_last_view_again)
{
    const char *why = NULL;
    start_with(300);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    report(SOURCE_FAILING, NULL);
    cr_assert(wait_for_publish(2));
    cr_assert_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    cr_assert_not(verdict_ctl_ready(ctl, &why));
    config_enforcement_t cfg = enforcement(NULL, 300000);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_HOLD);
    cr_assert_eq(n_published, 4, "the reload republishes");
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the last view decides again");
    cr_expect_not(published[3]->admit);
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
    cr_expect(quiet_for(500), "stale again under the old bound");
}

/* Failing for 100ms under 5 minutes; a reload lowers it to 50ms, which has
 * passed: stale at once, not a loop turn later. */
Test(verdict_ctl, a_reload_that_lowers_max_staleness_below_the_failure_makes_it_stale_at_once)
{
    const char *why = NULL;
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    report(SOURCE_FAILING, NULL);
    long long failed_at = now_ms();
    cr_assert(quiet_for(100));
    cr_assert_geq(now_ms() - failed_at, 100);
    config_enforcement_t cfg = enforcement(NULL, 50);
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_HOLD);
    cr_assert_eq(n_published, 3, "stale with the reload");
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    cr_expect_not(verdict_ctl_ready(ctl, &why));
    cr_expect(strstr(why, "max_staleness"), "why: %s", why);
}

/* Lowered to a bound not passed yet: stale when it passes, counted from
 * the last sync (500ms after it), not from the reload (750ms). */
Test(verdict_ctl, a_reload_that_lowers_max_staleness_counts_from_the_last_sync)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    long long synced_at = now_ms();
    report(SOURCE_FAILING, NULL);
    cr_assert(quiet_for(250));
    config_enforcement_t cfg = enforcement(NULL, 500);
    long long reloaded_at = now_ms();
    verdict_ctl_reconfigure(ctl, &cfg, REJECT_HOLD);
    cr_assert_eq(n_published, 2, "not stale yet");
    cr_assert(wait_for_publish(2));
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    cr_expect_geq(now_ms() - synced_at, 490);
    cr_expect_lt(now_ms() - reloaded_at, 490, "counted from the reload, not the last sync");
}

/* skewgate_source_reconnects_total is a counter: a reload that replaces
 * the source must not take it back to 0 (Prometheus reads a fall as a
 * restart), nor a refused reload add the replacement's. */
Test(verdict_ctl, the_reconnects_go_on_across_a_reload_that_replaces_the_source)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    fake->reconnects = 5;
    cr_expect_eq(verdict_ctl_reconnects(ctl), 5);
    config_enforcement_t cfg = enforcement(NULL, 300000);
    fake_source_t *dropped = next_source(NULL, false);
    dropped->reconnects = 100;
    cr_assert_eq(verdict_ctl_replace_source(ctl, &dropped->base, CLUSTER_SAME), 0);
    verdict_ctl_drop_replacement(ctl);
    cr_expect_eq(verdict_ctl_reconnects(ctl), 5, "a refused reload's source counted");
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    cr_expect_eq(verdict_ctl_reconnects(ctl), 5, "the count fell at the reload");
    fake->reconnects = 2;
    cr_expect_eq(verdict_ctl_reconnects(ctl), 7);
}

/* A reload replaces a source that was not failing; the new one fails
 * before its first sync, a while later (a connect timeout, say). The old
 * source vouched for the view until the commit, not until that failure:
 * staleness counts from the commit. */
Test(verdict_ctl, a_new_source_failing_before_its_first_sync_counts_from_the_commit)
{
    start_with(500);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 500);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    long long committed_at = now_ms();
    int before = n_published;
    cr_assert(quiet_for(300));
    report(SOURCE_FAILING, NULL);
    cr_assert(wait_for_publish(before));
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    long long after = now_ms() - committed_at;
    cr_expect_lt(after, 700, "stale %lld ms after the commit: counted from the failure", after);
    cr_expect_geq(after, 490);
}

/* After a reload to a source that has not synced, the verdict still
 * stands on the old source's view, which was confirmed up to the reload:
 * lastSync and the metric said "never" (0), so SkewgateSourceStale
 * (time() - it > 300) fired 2 minutes in and said the gate answered by
 * when_unknown, which only max_staleness later is true (found in review).
 * Replaced while failing, the view's last confirmation is the old
 * source's last sync. */
Test(verdict_ctl, last_sync_is_the_views_last_confirmation_across_a_reload)
{
    start_with(300000);
    cr_expect_eq(verdict_ctl_last_sync(ctl), 0, "a fresh start never synced");
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    double synced = verdict_ctl_last_sync(ctl);
    cr_assert_gt(synced, 0);
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    double at_reload = verdict_ctl_last_sync(ctl);
    cr_expect_geq(at_reload, synced, "the view vouched for up to the reload reads as never confirmed");
    cr_expect_leq(at_reload, (double)wall_seconds() + 1);
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(verdict_ctl_last_sync(ctl), at_reload, "a failure changed when the view was confirmed");
    /* Replaced again while failing: still the moment of the first reload. */
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    cr_expect_eq(verdict_ctl_last_sync(ctl), at_reload);
    report(SOURCE_ABSENT, NULL);
    cr_expect_geq(verdict_ctl_last_sync(ctl), at_reload, "the new source's own sync");
}

/* A reload replaces a source that has not synced (and has not failed
 * yet: it is still connecting). Nothing vouched for the view since the
 * first reload, yet "not failing" was taken as "the running source
 * vouched for it up to now", which moved its confirmation to the second
 * reload, and each further reload of that kind pushed it forward again
 * (found in review). */
Test(verdict_ctl, a_second_reload_before_any_sync_does_not_confirm_the_view)
{
    start_with(300000);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    double at_first_reload = verdict_ctl_last_sync(ctl);
    cr_assert_gt(at_first_reload, 0);
    cr_assert(quiet_for(1100));
    /* The source of the first reload never synced nor failed. */
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    cr_expect_eq(verdict_ctl_last_sync(ctl), at_first_reload,
                 "lastSync moved %.3f s forward at a reload though nothing confirmed the view since the first",
                 verdict_ctl_last_sync(ctl) - at_first_reload);
}

/* The same, seen as staleness: max_staleness 500 ms; reload A -> B (B
 * silent), 300 ms later B -> C, and C fails at once. The view was last
 * vouched for at the first reload, so it should be stale ~500 ms after
 * it, not ~500 ms after the second. */
Test(verdict_ctl, staleness_counts_from_the_last_real_confirmation_across_two_reloads)
{
    start_with(500);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 500);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    long long first_reload_at = now_ms();
    cr_assert(quiet_for(300));
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    int before = n_published;
    report(SOURCE_FAILING, NULL);
    cr_assert(wait_for_publish(before));
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    long long after = now_ms() - first_reload_at;
    cr_expect_lt(after, 700, "stale %lld ms after the last reload that followed a confirmation", after);
}

/* ---- the clocks: staleness is a duration, on the monotonic clock */

/* NTP steps the wall clock forward by hours after boot (a node that came
 * up with a wrong RTC): the first watch error after a good sync counted
 * those hours as failing, and the verdict went stale at once, though the
 * source had confirmed its view a moment before. */
Test(verdict_ctl, a_wall_clock_step_between_a_sync_and_a_failure_is_no_staleness)
{
    const char *why = NULL;
    start_with(300000);
    verdict_ctl_set_wall_clock(ctl, stepped_wall);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    wall_step = 3 * 3600;
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the step counted as failing: %s",
                 verdict_reason_name(last()->reason));
    cr_expect_eq(n_published, 2);
    cr_expect(verdict_ctl_ready(ctl, &why), "not ready: %s", why);
}

/* The same across a reload whose new source has not synced: the view
 * counts as confirmed at the reload, and a step after it is no failure
 * time either. */
Test(verdict_ctl, a_wall_clock_step_after_a_reload_is_no_staleness)
{
    start_with(300000);
    verdict_ctl_set_wall_clock(ctl, stepped_wall);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    config_enforcement_t cfg = enforcement(NULL, 300000);
    replace_and_commit(next_source(NULL, false), &cfg, REJECT_HOLD);
    wall_step = 3 * 3600;
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(last()->reason, REASON_OUT_OF_SKEW, "the step counted as failing: %s",
                 verdict_reason_name(last()->reason));
}

/* Stepped back by hours instead: staleness still comes max_staleness
 * after the last sync, not hours later nor at once. */
Test(verdict_ctl, a_wall_clock_stepped_back_does_not_delay_staleness)
{
    start_with(300);
    verdict_ctl_set_wall_clock(ctl, stepped_wall);
    report(SOURCE_PRESENT, manual_ocp("1", "4.12.0"));
    long long synced_at = now_ms();
    wall_step = -3 * 3600;
    report(SOURCE_FAILING, NULL);
    cr_expect_eq(n_published, 2, "stale at once");
    cr_assert(wait_for_publish(2), "never stale");
    cr_expect_eq(last()->reason, REASON_SOURCE_UNAVAILABLE);
    long long after = now_ms() - synced_at;
    cr_expect(after >= 290 && after < 600, "stale %lld ms after the sync", after);
}
