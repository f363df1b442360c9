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
 * workers hold every client until then. While a watch fails, the last
 * set stays published (the reflector relists and catches up). */
#ifndef SKEWGATE_MACHINES_WATCH_H
#define SKEWGATE_MACHINES_WATCH_H

#include <stdint.h>

#include "conf/config.h"
#include "core/addrset.h"

struct event_base;
typedef struct machines_watch machines_watch_t;

/* Hands a new set to the workers; the callee owns the reference. */
typedef void (*machines_publish_fn)(addrset_t *set, void *arg);

/* cfg is borrowed: admission.machines and enforcement.kubernetes (the API
 * server). NULL when out of memory. */
machines_watch_t *machines_watch_new(struct event_base *base, config_t *cfg,
                                     machines_publish_fn publish, void *arg);
/* Connects and lists. 0, or -1 (logged) when the API server settings are
 * unusable. */
int machines_watch_start(machines_watch_t *m);
void machines_watch_free(machines_watch_t *m);

/* The RBAC rules cfg needs of the API server, as `skewgate check` prints
 * them: one "  KIND[ in NAMESPACE]: apiGroups [..] resources [..] verbs
 * [get list watch] (WHY)" line each, into buf[len] (cut short if small). */
void machines_watch_rbac(const config_t *cfg, char *buf, size_t len);

#endif
