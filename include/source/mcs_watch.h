/* mcs_watch: with upstream.mcs_release: auto and the kubernetes source,
 * the MCS release the gate fronts as the cluster reports it: the
 * machine-config ClusterOperator (config.openshift.io/v1, cluster-scoped),
 * its status.versions[] entry "operator" (verdict/mcs_release.h reads it),
 * listed and watched by a kube_reflector with
 * fieldSelector=metadata.name=machine-config (so that an RBAC rule with
 * resourceNames: [machine-config] authorises the list and the watch), on
 * the main thread's loop with the API client settings of
 * enforcement.kubernetes (as pace_watch.h).
 *
 * It hands every new reading to its owner (cli/gate.c gives it to the
 * verdict controller, which publishes a new snapshot when the family
 * moves): at each list and each event, the release the object says, or the
 * default with why when the object is absent or its version unparseable;
 * at the first failure before anything was read, the default with the
 * failure as why. A failure after a reading keeps it (the last good
 * view, as the verdict source keeps its own), and the next list catches up.
 *
 * Runs while mcs_watch_wanted; a reload that turns it off frees it, one that
 * changes the connection (mcs_watch_outdated) replaces it
 * (cli/gate_reload.c). */
#ifndef SKEWGATE_MCS_WATCH_H
#define SKEWGATE_MCS_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"
#include "verdict/mcs_release.h"

struct event_base;
typedef struct mcs_watch mcs_watch_t;

#define MCS_WATCH_PATH "/apis/config.openshift.io/v1/clusteroperators"

/* A new reading of w; release is borrowed for the call. */
typedef void (*mcs_watch_publish_fn)(mcs_watch_t *w, const mcs_release_t *release, void *arg);

/* cfg is referenced (config_ref) for the watch's life: its
 * enforcement.kubernetes. Nothing is published before the reflector's
 * first answer (a loop turn at least after mcs_watch_start), so a watch
 * made for a reload that is then refused never publishes. NULL when out of
 * memory. */
mcs_watch_t *mcs_watch_new(struct event_base *base, config_t *cfg, mcs_watch_publish_fn publish, void *arg);
/* Connects and lists. 0, or -1 with err (also logged) when the API server
 * settings are unusable. */
int mcs_watch_start(mcs_watch_t *w, char *err, size_t errlen);
void mcs_watch_free(mcs_watch_t *w);
/* What it reads now: until its first answer, the default with why "not
 * read yet". */
const mcs_release_t *mcs_watch_current(const mcs_watch_t *w);
/* Whether it has had an answer (a list, or a failure) since it started. */
bool mcs_watch_answered(const mcs_watch_t *w);
/* As pace_watch_outdated: 1 with why when cfg talks to the API another
 * way, 0 when the watch can stay, -1 with why when the CA file cannot be
 * read. */
int mcs_watch_outdated(const mcs_watch_t *w, const config_t *cfg, char *why, size_t len);
/* Whether cfg runs the watch: upstream.mcs_release auto and the kubernetes
 * source. */
bool mcs_watch_wanted(const config_t *cfg);

#endif
