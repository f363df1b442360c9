/* machines_watch: what admission.machines needs to know, kept current on
 * the verdict thread: the Machines of machine.openshift.io (and, if
 * configured, of cluster.x-k8s.io) and the Nodes, each through a
 * kube_reflector (paged lists, watches). Of each object it keeps only its
 * name, its InternalIP/ExternalIP addresses and whether it has a nodeRef;
 * after every change it builds an immutable address set (core/addrset.h)
 * and publishes it:
 *   a Machine without nodeRef       ADDRSET_PENDING
 *   a Machine with one, or a Node   ADDRSET_ACTIVE (wins over pending)
 * Nothing is published before every collection was listed once; the
 * workers hold every client until then, and the gate is not ready. While
 * a watch fails, the last set stays published (the reflector relists and
 * catches up). What it can vouch for (machines_watch_health) is what
 * /readyz, /verdict's machinesWatch and the skewgate_machines_watch_*
 * metrics tell: a watch that never lists (no RBAC rule: 403) holds every
 * node, and must not look healthy.
 *
 * A reload that turns admission.machines on starts a watch, one that
 * turns it off frees it; one that changes the connection
 * (enforcement.kubernetes, or the contents of its CA file) or the
 * Machines watched (machines_watch_outdated) gets a new watch in place of
 * this one, against the new configuration. When the policy comes on, or
 * the new watch reads another server or other Machines, the gate
 * publishes an empty set, so that until the new watch's first full list
 * every client is held, as at start (cli/gate_reload.c). */
#ifndef SKEWGATE_MACHINES_WATCH_H
#define SKEWGATE_MACHINES_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "core/addrset.h"

struct event_base;
typedef struct machines_watch machines_watch_t;

/* Hands a new set to the workers; the callee owns the reference. */
typedef void (*machines_publish_fn)(addrset_t *set, void *arg);

/* cfg is referenced (config_ref) for the watch's life: admission.machines
 * and enforcement.kubernetes (the API server). NULL when out of memory. */
machines_watch_t *machines_watch_new(struct event_base *base, config_t *cfg,
                                     machines_publish_fn publish, void *arg);
/* Connects and lists. 0, or -1 with err (also logged) when the API server
 * settings are unusable. */
int machines_watch_start(machines_watch_t *m, char *err, size_t errlen);
void machines_watch_free(machines_watch_t *m);
/* Whether a started watch talks to another API server, or another way,
 * or watches other Machines, than cfg says: 1 when cfg's
 * enforcement.kubernetes differs from the watch's (config_kube_same), its
 * admission.machines does (config_machines_same: namespaces, cluster_api,
 * page_size), or its CA file holds other bytes than were loaded
 * (kube_api_ca_changed), with which in why; 0 when the watch can stay; -1
 * with why when the CA file cannot be read. */
int machines_watch_outdated(const machines_watch_t *m, const config_t *cfg, char *why, size_t len);

typedef enum {
    MACHINES_SYNCING,   /* not every collection listed since the start, none failing */
    MACHINES_SYNCED,    /* every collection listed, none failing now */
    MACHINES_FAILING,   /* a collection's last request failed: it lists again after a backoff */
} machines_state_t;

typedef struct machines_health {
    machines_state_t state;
    double since;               /* wall seconds the state began (the watch's start, at first) */
    /* Wall seconds the oldest of the lists the view stands on came in; 0
     * until every collection has been listed since the start. A healthy
     * watch lists at start and after a 410 only, so this dates the view's
     * base, not its freshness. */
    double last_list;
    /* Why a request last failed ("Machines (...) in NS: list: HTTP 403:
     * ..."), kept after the watch recovers; NULL: none since the start.
     * Valid until the watch's next event. */
    const char *last_error;
    double last_error_at;       /* wall seconds */
} machines_health_t;

/* How /readyz's reason begins when the watch is what is not ready (the
 * verdict source is asked first, so it is ready then): `skewgate status`
 * tells it from the source's. */
#define MACHINES_NOT_READY_PREFIX "admission.machines: "

/* "syncing", "synced", "failing". */
const char *machines_state_name(machines_state_t state);
void machines_watch_health(const machines_watch_t *m, machines_health_t *out);
/* Ready: every collection listed since the watch started (a reload that
 * builds it again starts it). When not, *why says so. */
bool machines_watch_ready(const machines_watch_t *m, const char **why);
/* The Machines it keeps (machine.openshift.io, and cluster.x-k8s.io when
 * configured, as cluster-machine-approver sums them), or -1 until every
 * collection has been listed since the start. */
int64_t machines_watch_machine_count(const machines_watch_t *m);

/* The RBAC rules cfg needs of the API server (the verdict source's, the
 * machine-config ClusterOperator's for upstream.mcs_release auto,
 * admission.machines', and pace's Nodes and CSRs with the kubernetes
 * source), as `skewgate check` prints
 * them: one "  KIND[ in NAMESPACE]: apiGroups [..] resources [..]
 * [resourceNames [..] ]verbs [get list watch] (WHY)" line each, into
 * buf[len] (cut short if small). */
void machines_watch_rbac(const config_t *cfg, char *buf, size_t len);

#endif
