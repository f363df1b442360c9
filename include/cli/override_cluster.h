/* override_cluster: `skewgate override admit|reject|clear --cluster`.
 * Every replica follows the MachineConfiguration's annotation
 * skewgate.openshift.io/override (DESIGN 3: admit|reject[;until=RFC3339]),
 * so this patches it, once, on the API server: a JSON merge patch
 * (application/merge-patch+json) of metadata.annotations, null to clear. */
#ifndef SKEWGATE_CLI_OVERRIDE_CLUSTER_H
#define SKEWGATE_CLI_OVERRIDE_CLUSTER_H

#include <stdint.h>

/* action: admit, reject or clear; for_ms 0: no expiry. Credentials from
 * kubeconfig if given, else the gate's configuration config_path if
 * given, else as kubectl finds them (kubeconfig.h). Prints what was done;
 * returns the exit status: 0 patched, 1 the API server refused or cannot
 * be reached, 2 bad credentials or kubeconfig. */
int override_cluster(const char *action, uint64_t for_ms, const char *kubeconfig, const char *config_path);

#endif
