#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "core/log.h"
#include "source/controller.h"
#include "core/clock.h"

struct verdict_ctl {
    verdict_limits_t limits;
    verdict_policy_t policy;
    uint64_t max_staleness_ms;
    reject_mode_t reject_mode;
    mcs_release_t mcs;          /* the MCS release: how the snapshot reads Accept */
    verdict_publish_fn publish;
    void *publish_arg;
    verdict_wall_clock_fn wall_clock;
    source_t *source;

    /* The source's last good view: kept while it fails, until too stale. */
    bool have_view;
    source_state_t view_state;  /* SOURCE_PRESENT or SOURCE_ABSENT */
    json_t *view_object;
    bool failing;
    bool stale;
    uint64_t stale_from_ms;     /* monotonic ms staleness counts from, while failing */
    /* When the sources a reload replaced last confirmed the view (0:
     * never): the reload's moment when the last one had synced and was
     * not failing (its view was vouched for until then), or else when it,
     * or the ones before it, last did. Until the running source has
     * synced, the view is theirs, so staleness counts from here (on the
     * monotonic clock: _ms), not from the new source's failure (which may
     * come a connect timeout later), and so does what lastSync and
     * skewgate_source_last_sync_timestamp_seconds report (wall seconds).
     * 0 after a reload to another cluster: no view is theirs. */
    double confirmed_before;
    uint64_t confirmed_before_ms;
    /* The running source has confirmed a view since it started: a reload
     * that replaces the source with one of the same cluster keeps the last
     * view as the verdict's input, but ready waits for the new source's
     * own. */
    bool synced;
    /* Reconnects of the sources a reload replaced: the counter the
     * metrics show goes on across a reload instead of falling to 0,
     * which Prometheus would read as a restart. */
    uint64_t reconnects_before;

    /* A reload's new source, started beside the running one: what it
     * reports is kept here, unjudged, until the commit judges it with the
     * reload's limits and mode (verdict_ctl_reconfigure) or a refusal
     * drops it. Which cluster it reads, the last good view it reported,
     * and whether a failure came after it (or without one). */
    source_t *replacement;
    source_cluster_t replacement_cluster;
    bool replacement_has_view;
    source_state_t replacement_state;
    json_t *replacement_object;
    bool replacement_failing;

    bool have_settled;
    decision_t settled;         /* kept through BootImageControllerProgressing */
    verdict_override_t local_override;

    verdict_t current;
    gate_snapshot_t *published;
    struct event *stale_timer;
    struct event *override_timer;
};

static struct timespec wall_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now;
}

static void log_verdict(const verdict_t *v)
{
    log_json(LOG_INFO, "verdict",
             json_pack("{s:s, s:s, s:s, s:s, s:s}", "decision", decision_name(v->decision),
                       "reason", verdict_reason_name(v->reason), "message", v->message, "mode",
                       v->mode, "resourceVersion", v->resource_version));
}

static void publish_current(verdict_ctl_t *ctl)
{
    gate_snapshot_t *snap = gate_snapshot_new(&ctl->current, ctl->reject_mode, ctl->mcs.family);
    if (!snap) {
        log_msg(LOG_ERROR, "verdict", "out of memory: the workers keep the previous verdict");
        return;
    }
    log_verdict(&ctl->current);
    gate_snapshot_unref(ctl->published);
    ctl->published = snap;
    ctl->publish(gate_snapshot_ref(snap), ctl->publish_arg);
}

static void consider_expiry(const verdict_override_t *o, time_t now, time_t *next)
{
    if (o->active && o->until > now && (*next == 0 || o->until < *next))
        *next = o->until;
}

/* verdict_compute only looks at the clock when asked: wake it when an
 * override, local or from the annotation, runs out. */
static void arm_override_timer(verdict_ctl_t *ctl, const json_t *object, struct timespec now)
{
    time_t next = 0;
    consider_expiry(&ctl->local_override, now.tv_sec, &next);
    const char *annotation = json_string_value(json_object_get(
        json_object_get(json_object_get(object, "metadata"), "annotations"),
        VERDICT_OVERRIDE_ANNOTATION));
    verdict_override_t cluster;
    if (annotation && verdict_override_parse(annotation, &cluster) == 0)
        consider_expiry(&cluster, now.tv_sec, &next);
    if (next == 0) {
        evtimer_del(ctl->override_timer);
        return;
    }
    int64_t ms = (int64_t)(next - now.tv_sec) * 1000 - now.tv_nsec / 1000000;
    struct timeval delay = clock_timeval(ms > 0 ? (uint64_t)ms : 1);
    evtimer_add(ctl->override_timer, &delay);
}

static void recompute(verdict_ctl_t *ctl)
{
    struct timespec now = ctl->wall_clock();
    verdict_input_t in = {
        .limits = ctl->limits,
        .policy = ctl->policy,
        .has_previous = ctl->have_settled,
        .previous = ctl->settled,
        .local_override = ctl->local_override,
        .now = now.tv_sec,
    };
    if (!ctl->have_view) {
        in.state = SOURCE_NO_DATA;
    } else if (ctl->stale) {
        in.state = SOURCE_FAILING;
    } else {
        in.state = ctl->view_state;
        in.object = ctl->view_object;
    }
    verdict_t v;
    verdict_compute(&in, &v);
    if (v.settled) {
        ctl->have_settled = true;
        ctl->settled = v.decision;
    }
    bool same_run = ctl->published && v.decision == ctl->current.decision &&
                    v.reason == ctl->current.reason;
    v.since = same_run ? ctl->current.since : now.tv_sec;
    ctl->current = v;
    arm_override_timer(ctl, in.object, now);
    if (!ctl->published || !verdict_equal(&v, &ctl->published->verdict) ||
        ctl->published->mode != ctl->reject_mode)
        publish_current(ctl);
}

/* Staleness is a duration, so it is measured on the monotonic clock: an
 * NTP step of the wall clock after boot is no time spent failing. */
static uint64_t monotonic_ms(void) { return clock_monotonic_ns() / 1000000; }

/* verdict_ctl_last_sync on the monotonic clock (0: never). */
static uint64_t view_confirmed_ms(const verdict_ctl_t *ctl)
{
    uint64_t last = ctl->source ? source_last_sync_monotonic_ms(ctl->source) : 0;
    return last > 0 ? last : ctl->confirmed_before_ms;
}

/* Stale once max_staleness has passed since stale_from_ms; until then the
 * timer wakes the controller at that moment. Run when a failure begins and
 * again by each reload, whose max_staleness may be longer (a stale view is
 * trusted again) or shorter (it may be stale already). */
static void judge_staleness(verdict_ctl_t *ctl, uint64_t now_ms)
{
    evtimer_del(ctl->stale_timer);
    ctl->stale = false;
    if (!ctl->failing)
        return;
    uint64_t stale_at_ms = ctl->stale_from_ms + ctl->max_staleness_ms;
    if (stale_at_ms <= now_ms) {
        ctl->stale = true;
        return;
    }
    struct timeval delay = clock_timeval(stale_at_ms - now_ms);
    evtimer_add(ctl->stale_timer, &delay);
}

/* Staleness runs from the source's last confirmed view, not from its first
 * failure report: a source may notice a failure late. A reload's new
 * source that never confirmed one (the view is still the old source's)
 * counts from when the old one last vouched for it, or else from now. */
static void begin_failing(verdict_ctl_t *ctl, uint64_t now_ms)
{
    uint64_t last_ms = view_confirmed_ms(ctl);
    ctl->failing = true;
    ctl->stale_from_ms = last_ms > 0 ? last_ms : now_ms;
    judge_staleness(ctl, now_ms);
}

/* A report of the running source, judged by the caller; now_ms is the
 * monotonic clock's reading. */
static void take_report(verdict_ctl_t *ctl, source_state_t state, json_t *object, uint64_t now_ms)
{
    if (state == SOURCE_PRESENT || state == SOURCE_ABSENT) {
        json_t *kept = state == SOURCE_PRESENT ? json_incref(object) : NULL;
        json_decref(ctl->view_object);
        ctl->view_object = kept;
        ctl->view_state = state;
        ctl->have_view = true;
        ctl->synced = true;
        ctl->failing = false;
        judge_staleness(ctl, now_ms);
    } else if (!ctl->failing) {
        begin_failing(ctl, now_ms);
    }
}

void verdict_ctl_set_wall_clock(verdict_ctl_t *ctl, verdict_wall_clock_fn wall_clock)
{
    ctl->wall_clock = wall_clock;
}

void verdict_ctl_on_source(source_state_t state, json_t *object, void *arg)
{
    verdict_ctl_t *ctl = arg;
    take_report(ctl, state, object, monotonic_ms());
    recompute(ctl);
}

/* The reports of a reload's new source until the commit: kept, not judged,
 * so that no verdict goes out from the new source and the old limits. */
static void on_replacement_report(source_state_t state, json_t *object, void *arg)
{
    verdict_ctl_t *ctl = arg;
    if (state == SOURCE_PRESENT || state == SOURCE_ABSENT) {
        json_t *kept = state == SOURCE_PRESENT ? json_incref(object) : NULL;
        json_decref(ctl->replacement_object);
        ctl->replacement_object = kept;
        ctl->replacement_state = state;
        ctl->replacement_has_view = true;
        ctl->replacement_failing = false;
    } else {
        ctl->replacement_failing = true;
    }
}

static void forget_replacement(verdict_ctl_t *ctl)
{
    json_decref(ctl->replacement_object);
    ctl->replacement_object = NULL;
    ctl->replacement_has_view = false;
    ctl->replacement_failing = false;
    ctl->replacement = NULL;
}

/* Another cluster's source takes over: the view, and the settled decision
 * kept through Progressing, are the old cluster's and vouch for nothing
 * here, so the verdict starts from no data, as at start. */
static void forget_view(verdict_ctl_t *ctl)
{
    json_decref(ctl->view_object);
    ctl->view_object = NULL;
    ctl->have_view = false;
    ctl->failing = false;
    ctl->have_settled = false;
}

/* At a reload's commit, before the running source goes: when its view
 * was last vouched for, on both clocks. A source that has synced and is
 * not failing vouches for the view up to now; one that is failing, or has
 * not synced since a reload began it (still connecting), vouched for
 * nothing since its last sync or its predecessors' confirmation. */
static void keep_confirmation(verdict_ctl_t *ctl, uint64_t now_ms)
{
    if (!ctl->have_view) {
        ctl->confirmed_before = 0;
        ctl->confirmed_before_ms = 0;
    } else if (ctl->synced && !ctl->failing) {
        struct timespec now = ctl->wall_clock();
        ctl->confirmed_before = (double)now.tv_sec + now.tv_nsec / 1e9;
        ctl->confirmed_before_ms = now_ms;
    } else {
        ctl->confirmed_before = verdict_ctl_last_sync(ctl);
        ctl->confirmed_before_ms = view_confirmed_ms(ctl);
    }
}

/* The commit: the new source becomes the running one and what it reported
 * while the reload was being built is taken as if it came now. */
static void adopt_replacement(verdict_ctl_t *ctl, uint64_t now_ms)
{
    if (ctl->source)
        ctl->reconnects_before += source_reconnects(ctl->source);
    if (ctl->replacement_cluster == CLUSTER_OTHER)
        forget_view(ctl);
    keep_confirmation(ctl, now_ms);
    source_free(ctl->source);
    ctl->source = ctl->replacement;
    source_set_update(ctl->source, verdict_ctl_on_source, ctl);
    ctl->synced = false;
    if (ctl->replacement_has_view)
        take_report(ctl, ctl->replacement_state, ctl->replacement_object, now_ms);
    if (ctl->replacement_failing)
        take_report(ctl, SOURCE_FAILING, NULL, now_ms);
    forget_replacement(ctl);
}

static void on_stale(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    verdict_ctl_t *ctl = arg;
    ctl->stale = true;
    recompute(ctl);
}

static void on_override_expiry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    recompute(arg);
}

verdict_ctl_t *verdict_ctl_new(struct event_base *base, const config_enforcement_t *cfg,
                               reject_mode_t reject_mode, verdict_publish_fn publish, void *arg)
{
    verdict_ctl_t *ctl = calloc(1, sizeof *ctl);
    if (!ctl)
        return NULL;
    ctl->limits = cfg->limits;
    ctl->policy = cfg->policy;
    ctl->max_staleness_ms = cfg->max_staleness_ms;
    ctl->reject_mode = reject_mode;
    ctl->mcs = mcs_release_configured(0);
    ctl->publish = publish;
    ctl->publish_arg = arg;
    ctl->wall_clock = wall_now;
    ctl->stale_timer = evtimer_new(base, on_stale, ctl);
    ctl->override_timer = evtimer_new(base, on_override_expiry, ctl);
    if (!ctl->stale_timer || !ctl->override_timer) {
        verdict_ctl_free(ctl);
        return NULL;
    }
    recompute(ctl);
    if (!ctl->published) {
        verdict_ctl_free(ctl);
        return NULL;
    }
    return ctl;
}

int verdict_ctl_start(verdict_ctl_t *ctl, source_t *source)
{
    if (!source)
        return -1;
    ctl->source = source;
    return source_start(source);
}

void verdict_ctl_reconfigure(verdict_ctl_t *ctl, const config_enforcement_t *cfg, reject_mode_t reject_mode)
{
    ctl->limits = cfg->limits;
    ctl->policy = cfg->policy;
    ctl->max_staleness_ms = cfg->max_staleness_ms;
    ctl->reject_mode = reject_mode;
    uint64_t now_ms = monotonic_ms();
    if (ctl->replacement)
        adopt_replacement(ctl, now_ms);
    judge_staleness(ctl, now_ms);
    recompute(ctl);
}

int verdict_ctl_replace_source(verdict_ctl_t *ctl, source_t *source, source_cluster_t cluster)
{
    if (!source)
        return -1;
    verdict_ctl_drop_replacement(ctl);
    ctl->replacement = source;
    ctl->replacement_cluster = cluster;
    source_set_update(source, on_replacement_report, ctl);
    if (source_start(source) < 0) {
        verdict_ctl_drop_replacement(ctl);
        return -1;
    }
    return 0;
}

void verdict_ctl_drop_replacement(verdict_ctl_t *ctl)
{
    source_free(ctl->replacement);
    forget_replacement(ctl);
}

void verdict_ctl_set_mcs_release(verdict_ctl_t *ctl, const mcs_release_t *release)
{
    if (mcs_release_equal(&ctl->mcs, release))
        return;
    bool family_changed = ctl->mcs.family != release->family;
    ctl->mcs = *release;
    char text[16];
    snprintf(text, sizeof text, "4.%u", release->minor);
    json_t *j = json_pack("{s:s, s:s, s:s}", "release", text, "family", mcs_family_name(release->family), "from",
                          mcs_release_from_name(release->from));
    if (j && release->version[0])
        json_object_set_new(j, "version", json_string(release->version));
    if (j && release->why[0])
        json_object_set_new(j, "why", json_string(release->why));
    log_json(LOG_INFO, "mcs_release", j);
    /* Once a change: only a new release (or reading) comes here. */
    if (mcs_release_newer_than_known(release))
        log_msg(LOG_WARN, "mcs_release",
                "MCS release %s is newer than any this gate knows (4.%u): Accept is read as the newest family, %s",
                text, MCS_RELEASE_NEWEST, mcs_family_name(release->family));
    else if (mcs_release_older_than_known(release))
        log_msg(LOG_WARN, "mcs_release",
                "MCS release %s is older than any this gate knows (4.%u): Accept is read as the oldest family, %s",
                text, MCS_RELEASE_OLDEST, mcs_family_name(release->family));
    if (family_changed && ctl->published)
        publish_current(ctl);
}

const mcs_release_t *verdict_ctl_mcs_release(const verdict_ctl_t *ctl) { return &ctl->mcs; }

void verdict_ctl_set_override(verdict_ctl_t *ctl, const verdict_override_t *o)
{
    ctl->local_override = *o;
    recompute(ctl);
}

const verdict_t *verdict_ctl_current(const verdict_ctl_t *ctl) { return &ctl->current; }

const source_t *verdict_ctl_source(const verdict_ctl_t *ctl) { return ctl->source; }

double verdict_ctl_last_sync(const verdict_ctl_t *ctl)
{
    double last = ctl->source ? source_last_sync(ctl->source) : 0;
    return last > 0 ? last : ctl->confirmed_before;
}

uint64_t verdict_ctl_reconnects(const verdict_ctl_t *ctl)
{
    return ctl->reconnects_before + (ctl->source ? source_reconnects(ctl->source) : 0);
}

bool verdict_ctl_ready(const verdict_ctl_t *ctl, const char **why)
{
    if (!ctl->have_view) {
        *why = "the verdict source has not confirmed a view of the MachineConfiguration yet";
        return false;
    }
    if (!ctl->synced) {
        *why = "the verdict source changed at the last reload and has not synced yet (the verdict "
               "follows the previous source's last view until it does)";
        return false;
    }
    if (ctl->stale) {
        *why = "the verdict source has been failing for longer than enforcement.max_staleness";
        return false;
    }
    return true;
}

void verdict_ctl_free(verdict_ctl_t *ctl)
{
    if (!ctl)
        return;
    source_free(ctl->source);
    verdict_ctl_drop_replacement(ctl);
    if (ctl->stale_timer)
        event_free(ctl->stale_timer);
    if (ctl->override_timer)
        event_free(ctl->override_timer);
    json_decref(ctl->view_object);
    gate_snapshot_unref(ctl->published);
    free(ctl);
}
