/* pace_watch: what pacing (proxy/pace.h) needs of the cluster, kept
 * current on the main thread's loop through two kube_reflectors, with
 * the API client settings of enforcement.kubernetes (as machines.h):
 *   Nodes (/api/v1/nodes): each one's InternalIP/ExternalIP addresses,
 *     whether its Ready condition is True, its creationTimestamp;
 *   CSRs (/apis/certificates.k8s.io/v1/certificatesigningrequests): the
 *     node CSRs, as cluster-machine-approver tells them (its
 *     pendingNodeCertFilter): client CSRs (signer kubernetes.io/kube-
 *     apiserver-client-kubelet) whose spec.username is the node-
 *     bootstrapper's, and serving CSRs (kubernetes.io/kubelet-serving)
 *     with group system:nodes; of each, its creationTimestamp, whether it
 *     has an Approved condition (Denied and Failed are not approvals: the
 *     approver still counts those), when that approval came and whether
 *     it was the approver's own; and whether it is a client CSR still
 *     pending (no Approved, Denied or Failed condition), a new node
 *     whose Node does not exist yet. The CSRs the approver never counts
 *     (approved by itself, or long since) are not kept.
 * A Node is kept as about 25 bytes plus 16 an address, a CSR as 9 or 17
 * (the objects are 5-20 KiB and 1-2 KiB). After every change (coalesced to one
 * rebuild a loop turn), every list and every failure it builds an
 * immutable pace_view_t (core/pace_view.h) and hands it to its owner
 * through the callback it was made with: the owner (cli/gate.c) gives it
 * to the room. The view is trusted once every collection has been listed
 * since the start and while none is failing; otherwise it says why, and
 * the room counts by join_timeout alone.
 *
 * Runs while pace.enabled with enforcement.source: kubernetes; a reload
 * that turns either off frees it, one that changes the connection
 * (pace_watch_outdated) replaces it (cli/gate_reload.c). */
#ifndef SKEWGATE_PACE_WATCH_H
#define SKEWGATE_PACE_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "conf/config.h"
#include "core/pace_view.h"
#include "source/kube/addresses.h"

struct event_base;
typedef struct pace_watch pace_watch_t;

/* Takes the view over (the callee frees it). */
typedef void (*pace_publish_fn)(pace_view_t *view, void *arg);

/* cfg is referenced (config_ref) for the watch's life: its
 * enforcement.kubernetes. Its first view (not trusted: nothing listed
 * yet) goes out on the loop's next turn, so a watch made for a reload
 * that is then refused never publishes. NULL when out of memory. */
pace_watch_t *pace_watch_new(struct event_base *base, config_t *cfg, pace_publish_fn publish, void *arg);
/* Connects and lists. 0, or -1 with err (also logged) when the API server
 * settings are unusable. */
int pace_watch_start(pace_watch_t *w, char *err, size_t errlen);
void pace_watch_free(pace_watch_t *w);
/* A new view on the loop's next turn, though nothing it watches changed:
 * what its owner adds to the view (the Machines count) did. */
void pace_watch_refresh(pace_watch_t *w);
/* As machines_watch_outdated: 1 with why when cfg talks to the API
 * another way, 0 when the watch can stay, -1 with why when the CA file
 * cannot be read. */
int pace_watch_outdated(const pace_watch_t *w, const config_t *cfg, char *why, size_t len);
/* Whether cfg runs the watch: pace.enabled and the kubernetes source. */
bool pace_watch_wanted(const config_t *cfg);

/* What is kept of a Node: its name and addresses (kube_addresses_t),
 * Ready, and its creationTimestamp in wall ms (0: none or unreadable).
 * 0, or -1 with err. Pure. */
typedef struct pace_node_record {
    kube_addresses_t addresses;
    bool ready;
    int64_t created_ms;
} pace_node_record_t;
int pace_watch_read_node(const json_t *object, pace_node_record_t *out, char *err, size_t errlen);

/* Of a CSR: its name, its creationTimestamp in wall ms (0: none), and
 * what cluster-machine-approver's count needs (csr_check.go,
 * controller.go's pendingNodeCertFilter):
 *   node_csr: a client CSR (signer kube-apiserver-client-kubelet) of
 *     user system:serviceaccount:openshift-machine-config-operator:node-
 *     bootstrapper, or a serving CSR (kubelet-serving) with group
 *     system:nodes: the kinds it counts;
 *   approved: it has a condition of type Approved (whatever its status:
 *     as isApproved), then approved_ms its lastTransitionTime (wall ms,
 *     0: none or unreadable) and by_approver whether its message is the
 *     approver's own;
 *   pending_client: a node-bootstrapper client CSR without an Approved,
 *     Denied or Failed condition (a node that has no Node yet: pacing's
 *     V).
 * 0, or -1 with err (no name). Pure. */
typedef struct pace_csr_record {
    const char *name;           /* borrowed from the object */
    int64_t created_ms;
    bool node_csr;
    bool approved;
    int64_t approved_ms;
    bool by_approver;
    bool pending_client;
} pace_csr_record_t;
int pace_watch_read_csr(const json_t *object, pace_csr_record_t *out, char *err, size_t errlen);

#endif
