/* verdict_ctl: turns what the source reports into published gate snapshots.
 * Lives on the verdict thread's event_base and owns the source. It keeps
 * what verdict_compute cannot: the previous settled decision, when the
 * current decision began, the local override, and how long the source has
 * been failing; and it wakes itself when an override expires or the last
 * good view grows too stale. */
#ifndef SKEWGATE_VERDICT_CTL_H
#define SKEWGATE_VERDICT_CTL_H

#include "conf/config.h"
#include "verdict/snapshot.h"
#include "source/source.h"
#include "verdict/verdict.h"
#include "verdict/mcs_release.h"

struct event_base;
typedef struct verdict_ctl verdict_ctl_t;

/* Hands a new snapshot to the workers; the callee owns the reference. */
typedef void (*verdict_publish_fn)(gate_snapshot_t *snap, void *arg);

/* Copies what it needs from cfg (limits, policy, max_staleness) and
 * publishes a first snapshot at once (no data yet: the when_unknown policy),
 * so that the workers never see none. NULL when out of memory. */
verdict_ctl_t *verdict_ctl_new(struct event_base *base, const config_enforcement_t *cfg,
                               reject_mode_t reject_mode, verdict_publish_fn publish, void *arg);

/* The wall clock the controller reads (CLOCK_REALTIME unless set): what
 * a verdict's since, an override's expiry and lastSync are read on. Tests
 * step it, as NTP may; durations are on the monotonic clock. */
typedef struct timespec (*verdict_wall_clock_fn)(void);
void verdict_ctl_set_wall_clock(verdict_ctl_t *ctl, verdict_wall_clock_fn wall_clock);

/* The update callback to create the source with, arg = the controller:
 *   source_file_new(base, &cfg->file, verdict_ctl_on_source, ctl) */
void verdict_ctl_on_source(source_state_t state, json_t *object, void *ctl);

/* Takes ownership of the source (freed with the controller, also on
 * failure) and starts it. 0 or -1. */
int verdict_ctl_start(verdict_ctl_t *ctl, source_t *source);

/* A reload's commit: new limits, policies, staleness and reject mode,
 * judged at once (a new snapshot goes out if the verdict or the mode
 * changed). A source given to verdict_ctl_replace_source takes over here:
 * the running one is freed and the new one's reports so far are judged
 * with this configuration, never with the one before. Staleness is judged
 * again against the new max_staleness, from the same last sync: a longer
 * bound trusts a stale view again, a shorter one may make it stale now. */
void verdict_ctl_reconfigure(verdict_ctl_t *ctl, const config_enforcement_t *cfg, reject_mode_t reject_mode);
/* Which cluster a reload's new source reads, next to the running one. */
typedef enum {
    CLUSTER_SAME,   /* the same API server (a rotated CA, a new token path), or a file */
    CLUSTER_OTHER,  /* another API server: the last view is another cluster's */
} source_cluster_t;

/* A reload with another source, before its commit: starts it beside the
 * running one (0), or frees it and changes nothing (-1). What it reports
 * is kept, unjudged and unpublished, until verdict_ctl_reconfigure commits
 * the reload or verdict_ctl_drop_replacement refuses it; the running
 * source keeps deciding until then. After the commit, on CLUSTER_SAME the
 * last view stays the verdict's input until the new source reports its
 * own; on CLUSTER_OTHER there is no view until then (when_unknown,
 * SourceUnavailable, and lastSync never), and no settled decision. */
int verdict_ctl_replace_source(verdict_ctl_t *ctl, source_t *source, source_cluster_t cluster);
/* A reload refused after verdict_ctl_replace_source: frees the new source;
 * nothing it reported was published. Nothing to do when none waits. */
void verdict_ctl_drop_replacement(verdict_ctl_t *ctl);

/* The MCS release the gate fronts (upstream.mcs_release, or what auto
 * found): logged, and a new snapshot goes out when it changed. Until set:
 * mcs_release_configured(0), the default. */
void verdict_ctl_set_mcs_release(verdict_ctl_t *ctl, const mcs_release_t *release);
const mcs_release_t *verdict_ctl_mcs_release(const verdict_ctl_t *ctl);

/* The admin API's override, local to this gate; active == false clears it.
 * Takes effect at once and lapses by itself at o->until. */
void verdict_ctl_set_override(verdict_ctl_t *ctl, const verdict_override_t *o);

/* The latest verdict (also when only its resourceVersion moved, which does
 * not republish); valid until the next event on the controller's loop. */
const verdict_t *verdict_ctl_current(const verdict_ctl_t *ctl);
/* The running source (a replacement only once its reload committed). */
const source_t *verdict_ctl_source(const verdict_ctl_t *ctl);
/* When the view the verdict stands on was last confirmed (wall seconds;
 * 0: never): by the running source, or, until it has synced, by the ones
 * a reload replaced (up to the reload, unless the last was failing). What
 * /verdict's lastSync and skewgate_source_last_sync_timestamp_seconds
 * report; staleness counts from the same moment (on the monotonic clock,
 * so a step of the wall clock does not move it): the alert on it then
 * measures what max_staleness does. */
double verdict_ctl_last_sync(const verdict_ctl_t *ctl);
/* skewgate_source_reconnects_total: the running source's reconnects and
 * those of every source a reload replaced before it. */
uint64_t verdict_ctl_reconnects(const verdict_ctl_t *ctl);
/* Ready: the running source has confirmed a view since it started (a
 * reload that replaced it counts as a start) and has not been failing for
 * longer than max_staleness. When not, *why says which. */
bool verdict_ctl_ready(const verdict_ctl_t *ctl, const char **why);

void verdict_ctl_free(verdict_ctl_t *ctl);

#endif
