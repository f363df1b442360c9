/* reload: what a SIGHUP may change in a running gate, and what it did.
 * The gate loads the new file beside the running configuration; these
 * comparisons tell it which parts to rebuild (the upstream pool, the
 * verdict source, a listener) and which change needs a restart. */
#ifndef SKEWGATE_CONF_RELOAD_H
#define SKEWGATE_CONF_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "conf/config.h"

/* A change a running gate cannot take: 0, or -1 with "KEY needs a
 * restart (OLD -> NEW)" in why. workers (the threads and their sockets),
 * the admin and metrics listeners, and the limits that size the workers'
 * buffers (max_header_bytes, max_headers, max_uri_bytes). */
int config_restart_needed(const config_t *old, const config_t *new, char *why, size_t len);

/* The same listener: same address as written and the same TLS-ness; it
 * keeps its sockets across a reload (its certificate reloads anyway). */
bool config_listener_same(const config_listener_t *a, const config_listener_t *b);
/* The same MCS to connect to, the same way (address, TLS, CA, name,
 * verification): pooled connections stay usable. Pool sizes and
 * timeouts may differ. */
bool config_upstream_same_peer(const config_upstream_t *a, const config_upstream_t *b);
/* The same verdict source (kind and every setting of that kind): the
 * running source is kept. Limits, policies and staleness may differ. */
bool config_source_same(const config_enforcement_t *a, const config_enforcement_t *b);
/* The same API server, reached the same way (server, CA and token file
 * paths, verification, watch timeout; not which MachineConfiguration):
 * what the Kubernetes source and the admission.machines watch connect
 * with. The paths only: whether the CA file still holds what was loaded
 * from it is the running holder's to say (kube_api_ca_changed). */
bool config_kube_same(const config_source_kube_t *a, const config_source_kube_t *b);
/* The same API server as written ("" the in-cluster one), so the same
 * cluster: what the source and the machines watch knew of the running
 * one still describes it. Another server is another cluster, which the
 * old data does not vouch for. */
bool config_kube_same_server(const config_source_kube_t *a, const config_source_kube_t *b);
/* admission.machines: the same policy, on or off alike, watching the
 * same Machines (namespace, cluster_api and its namespace), so the same
 * objects on the same server; and that with the same page_size too, so
 * the running watch can stay (machines_watch_outdated). */
bool config_machines_same_objects(const config_admission_machines_t *a, const config_admission_machines_t *b);
bool config_machines_same(const config_admission_machines_t *a, const config_admission_machines_t *b);

/* The loaded configuration and the reloads so far (GET /config,
 * skewgate_config_reloads_total). The main thread's, like its readers. */
typedef struct config_reloads {
    const char *path;           /* the file */
    char sha256[65];            /* of the file as loaded last */
    time_t loaded_at;           /* when it was (wall clock) */
    uint64_t success, failure;
    char last_error[2 * CONFIG_ERR_LEN];   /* "" unless the last reload was refused: "FILE[:LINE:COL]: why" */
    time_t failed_at;           /* when it was (wall clock); 0 while last_error is "" */
} config_reloads_t;

#endif
