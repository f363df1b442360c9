/* pace_view: what pacing (proxy/pace.h) learns of the cluster through the
 * API (source/pace_watch.h): the Nodes' addresses and whether each is
 * Ready, when the Nodes not Ready yet and the pending node-bootstrapper
 * client CSRs were created, what cluster-machine-approver counts of the
 * node CSRs and its limit, and whether all of it can be trusted. Built on the main
 * thread, then handed to the room, which owns it from then on and reads
 * it under its lock only; so it needs no reference count.
 *
 * Creation times are on the room's clock (clock_coarse_ms, monotonic):
 * the builder moves each creationTimestamp by (monotonic - wall) once, so
 * the room counts "created within join_timeout" as time passes without a
 * new view, and a reload that changes join_timeout needs none either.
 * Approval times (an Approved condition's lastTransitionTime) are moved
 * the same way. */
#ifndef SKEWGATE_PACE_VIEW_H
#define SKEWGATE_PACE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addrset.h"

#define PACE_VIEW_WHY_LEN 256

typedef struct pace_view_addr {
    addrset_key_t key;
    int64_t created;            /* its Node's creationTimestamp, on the room's clock */
    bool ready;                 /* its Node's Ready condition is True */
    uint32_t node;              /* which Node of the view (0..): a Node has up to 16 addresses */
    bool primary;               /* the first address its Node lists */
} pace_view_addr_t;

/* A node CSR approved by another controller than the approver: its
 * creation and its approval, on the room's clock. */
typedef struct pace_view_approved {
    int64_t created;
    int64_t approved_at;
} pace_view_approved_t;

typedef struct pace_view {
    /* Every collection listed since the watch (re)started, and none
     * failing now: the counts below are the cluster's. When false, why
     * says what is missing and pacing counts by join_timeout alone. */
    bool trusted;
    char why[PACE_VIEW_WHY_LEN];
    /* Every address of every Node with that Node's creation (the room's
     * clock) and Ready, sorted by address (pace_view_sort_addrs), so the
     * room asks whether a Node was born at an address after a node's
     * admission: an older Node there (a host re-imaged under a Node that
     * survived, a stale NotReady Node on a reused IP) is not the node it
     * admitted. */
    pace_view_addr_t *addrs;
    size_t n_addrs;
    /* Ascending creation times (ms, the room's clock): the Nodes not
     * Ready, and the client CSRs (signer kube-apiserver-client-kubelet)
     * of the node-bootstrapper that no Approved, Denied or Failed
     * condition has ended: each a node admitted by some replica whose
     * Node does not exist yet (V, proxy/pace.h). */
    int64_t *not_ready_created;
    size_t n_not_ready;
    int64_t *csr_created;
    size_t n_csrs;
    /* What cluster-machine-approver counts (pace_view_approver_count):
     * the node CSRs (node-bootstrapper client CSRs, and serving CSRs,
     * signer kubelet-serving, of group system:nodes) without an Approved
     * condition, Denied and Failed ones included: their ascending
     * creation times; and those another controller approved (not the
     * approver itself), which it counts for 30 s after the approval. */
    int64_t *approver_created;
    size_t n_approver;
    pace_view_approved_t *approved_other;
    size_t n_approved_other;
    /* Every Node; the Machines admission.machines watches (both APIs),
     * or -1: not watched (or not listed yet), so not counted. */
    size_t n_nodes;
    int64_t n_machines;
} pace_view_t;

/* The approver's windows (openshift/cluster-machine-approver,
 * pkg/controller/csr_check.go): a CSR counts while created within
 * (now - 1 h, now + 10 s) (maxPendingDelta, maxMachineClockSkew); one
 * another controller approved, while approved within (now - 30 s,
 * now + 10 s) (maxApprovedDelta); it approves nothing while the count
 * exceeds max(Machines, Nodes) + 100. */
#define PACE_APPROVER_WINDOW_MS (3600 * 1000)
#define PACE_APPROVER_SKEW_MS (10 * 1000)
#define PACE_APPROVER_APPROVED_MS (30 * 1000)
#define PACE_APPROVER_MARGIN 100

/* The node CSRs cluster-machine-approver counts at now (the room's
 * clock), as its recentlyPendingNodeCSRs does. Pure. */
size_t pace_view_approver_count(const pace_view_t *v, int64_t now_ms);
/* The count past which it approves nothing: max(Machines, Nodes) + 100,
 * Machines counted only when watched (n_machines >= 0). Pure. */
size_t pace_view_approver_limit(const pace_view_t *v);

/* How many of the ascending times t[0..n) are after from (t > from). */
size_t pace_view_after(const int64_t *t, size_t n, int64_t from);
/* Sorts v->addrs by address, so pace_view_newest finds them. */
void pace_view_sort_addrs(pace_view_t *v);
/* Of the Nodes with address key, the one created last (NULL: none). A
 * second Node on an address is rare (a stale one beside its successor):
 * the run of equal keys is walked. */
const pace_view_addr_t *pace_view_newest(const pace_view_t *v, const addrset_key_t *key);
/* Frees v and what it holds; NULL is ignored. */
void pace_view_free(pace_view_t *v);

#endif
