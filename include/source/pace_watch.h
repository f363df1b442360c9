/* pace_watch: what pacing (proxy/pace.h) needs of the cluster, kept
 * current on the main thread's loop through two kube_reflectors, with
 * the API client settings of enforcement.kubernetes (as machines.h):
 *   Nodes (/api/v1/nodes): each one's InternalIP/ExternalIP addresses,
 *     whether its Ready condition is True, its creationTimestamp;
 *   CSRs (/apis/certificates.k8s.io/v1/certificatesigningrequests): of
 *     those whose spec.signerName is kubernetes.io/kube-apiserver-client-
 *     kubelet (a new node's kubelet asking for its client certificate)
 *     and that no Approved, Denied or Failed condition has ended, the
 *     creationTimestamp.
 * A Node is kept as about 25 bytes plus 16 an address, a CSR as 8 (the
 * objects are 5-20 KiB and 1-2 KiB). After every change (coalesced to one
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

/* Of a CSR: its name, whether it counts (a kubelet client CSR not yet
 * approved, denied or failed) and its creationTimestamp in wall ms (0:
 * none). 0, or -1 with err (no name). Pure. */
typedef struct pace_csr_record {
    const char *name;           /* borrowed from the object */
    bool pending_kubelet;
    int64_t created_ms;
} pace_csr_record_t;
int pace_watch_read_csr(const json_t *object, pace_csr_record_t *out, char *err, size_t errlen);

#endif
