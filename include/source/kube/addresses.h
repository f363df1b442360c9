/* kube_addresses: what the admission policy keeps of a Machine
 * (machine.openshift.io or cluster.x-k8s.io) or a Node: the IPs of its
 * status.addresses of type InternalIP or ExternalIP (the fields
 * cluster-machine-approver matches a CSR to a Machine by) and whether it
 * has a status.nodeRef. Everything else of the object is dropped. Pure
 * JSON work, no I/O. */
#ifndef SKEWGATE_KUBE_ADDRESSES_H
#define SKEWGATE_KUBE_ADDRESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "core/addrset.h"

/* A machine has one or two NICs in practice; a dual-stack one an address
 * of each family per NIC. More are dropped, and counted. */
#define KUBE_ADDRESSES_MAX 16

typedef struct kube_addresses {
    const char *name;           /* metadata.name, borrowed from the object */
    bool has_node_ref;          /* status.nodeRef is an object */
    size_t n;
    size_t dropped;             /* beyond KUBE_ADDRESSES_MAX */
    addrset_key_t keys[KUBE_ADDRESSES_MAX];
} kube_addresses_t;

/* 0, or -1 with err when the object has no metadata.name or its
 * status.addresses is not a list. Entries of other types (Hostname,
 * InternalDNS, ...), without an address or whose address is not an IP
 * literal are skipped: they cannot match a client address. */
int kube_addresses_read(const json_t *object, kube_addresses_t *out, char *err, size_t errlen);

#endif
