/* pace_line: the shared line (docs/internals.md, "The shared line";
 * issue 34), on the main thread's loop with the API client settings of
 * enforcement.kubernetes (as pace_watch.h):
 *   reads: one reflector over the Leases labelled
 *     skewgate.openshift.io/pace-line in pace.namespace, whose records
 *     give the joining set (skewgate-pace-joining's annotation, with its
 *     resourceVersion) and the line (skewgate-pace-wait-HEX, by
 *     spec.acquireTime then name): a pace_shared_t (core/pace_shared.h)
 *     for the room after every change;
 *   writes (one request at a time, from what the room queued; never a
 *     worker): a wait Lease for a node new in the line (409 AlreadyExists:
 *     another gate was first), the joining Lease updated with every
 *     claim pending and the departed entries dropped, on the
 *     resourceVersion it planned on (409: read it again and plan again, 3
 *     tries, then the room falls back), and on success the admitted
 *     nodes' wait Leases deleted with a uid precondition.
 * The room (proxy/pace.h) is reached through the ops its owner
 * (cli/gate.c) gives: source never calls proxy. The room rings the
 * doorbell (pace_line_bell) when it queues a claim or a waiter. */
#ifndef SKEWGATE_PACE_LINE_H
#define SKEWGATE_PACE_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "core/pace_shared.h"
#include "os/wakeup.h"

struct event_base;
typedef struct pace_line pace_line_t;

#define PACE_LINE_LABEL "skewgate.openshift.io/pace-line"
#define PACE_LINE_JOINING "skewgate-pace-joining"
#define PACE_LINE_WAIT_PREFIX "skewgate-pace-wait-"
#define PACE_LINE_ANNOTATION "skewgate.openshift.io/joining"
#define PACE_LINE_RBAC "get, list, watch, create, update and delete on leases.coordination.k8s.io (namespace %s)"

typedef struct pace_line_ops {
    /* Takes the view over. */
    void (*publish)(void *arg, pace_shared_t *s);
    /* The room's plan on the joining Lease as read (pace_shared_plan). */
    size_t (*plan)(void *arg, const char *gate, const pace_line_entry_t *in, size_t n_in, int64_t now_wall,
                   pace_line_entry_t *out, size_t out_cap, size_t *added);
    void (*written)(void *arg, bool ok);
    /* The writer fails (why), or writes again (NULL). */
    void (*failing)(void *arg, const char *why);
    /* The new waiters queued (malloc'ed, the callee frees): key, first
     * paced (admitted_wall). */
    size_t (*take_waiters)(void *arg, pace_line_entry_t **out);
    bool (*pending)(void *arg);
} pace_line_ops_t;

/* Whether cfg runs the shared line: pace.enabled, and pace.line api, or
 * auto with enforcement.source kubernetes and pace.replicas > 1. */
bool pace_line_wanted(const config_t *cfg);
/* Whether pace.line (auto resolved) is the shared one, pacing on or not. */
bool pace_line_shared(const config_t *cfg);

pace_line_t *pace_line_new(struct event_base *base, config_t *cfg, const pace_line_ops_t *ops, void *arg);
int pace_line_start(pace_line_t *l, char *err, size_t errlen);
void pace_line_free(pace_line_t *l);
wakeup_t *pace_line_bell(pace_line_t *l);
/* This gate's name in the Leases. */
const char *pace_line_gate(const pace_line_t *l);

/* Writes by verb, for tests and logs: POST, PUT, DELETE, GET. */
typedef struct pace_line_counts {
    uint64_t post, put, del, get, conflicts;
} pace_line_counts_t;
pace_line_counts_t pace_line_counts(const pace_line_t *l);

/* Pure: a wait Lease's name for key, and back (0, or -1). */
void pace_line_wait_name(const addrset_key_t *key, char *buf, size_t len);
int pace_line_wait_key(const char *name, addrset_key_t *key);
/* A MicroTime ("2026-01-02T15:04:05.123456Z") in unix ms; 0 unreadable. */
int64_t pace_line_micro_ms(const char *s);

#endif
