/* pace_view: what pacing (proxy/pace.h) learns of the cluster through the
 * API (source/pace_watch.h): the Nodes' addresses and whether each is
 * Ready, when the Nodes not Ready yet and the pending kubelet client CSRs
 * were created, and whether all of it can be trusted. Built on the main
 * thread, then handed to the room, which owns it from then on and reads
 * it under its lock only; so it needs no reference count.
 *
 * Creation times are on the room's clock (clock_coarse_ms, monotonic):
 * the builder moves each creationTimestamp by (monotonic - wall) once, so
 * the room counts "created within join_timeout" as time passes without a
 * new view, and a reload that changes join_timeout needs none either. */
#ifndef SKEWGATE_PACE_VIEW_H
#define SKEWGATE_PACE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addrset.h"

#define PACE_VIEW_WHY_LEN 256

typedef struct pace_view {
    /* Every collection listed since the watch (re)started, and none
     * failing now: the counts below are the cluster's. When false, why
     * says what is missing and pacing counts by join_timeout alone. */
    bool trusted;
    char why[PACE_VIEW_WHY_LEN];
    /* ADDRSET_ACTIVE: a Ready Node's address; ADDRSET_PENDING: a Node's
     * that is not Ready. NULL: no Node known. */
    addrset_t *nodes;
    /* Ascending creation times (ms, the room's clock): the Nodes not
     * Ready, and the kubelet client CSRs no condition has ended. */
    int64_t *not_ready_created;
    size_t n_not_ready;
    int64_t *csr_created;
    size_t n_csrs;
} pace_view_t;

/* How many of the ascending times t[0..n) are after from (t > from). */
size_t pace_view_after(const int64_t *t, size_t n, int64_t from);
/* Frees v and what it holds; NULL is ignored. */
void pace_view_free(pace_view_t *v);

#endif
