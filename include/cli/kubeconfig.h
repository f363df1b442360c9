/* kubeconfig: where the API server is and who to be there, for
 * `skewgate override --cluster`, found as kubectl finds it: a kubeconfig
 * file (its current-context's cluster and user: server,
 * certificate-authority or certificate-authority-data,
 * insecure-skip-tls-verify, token or tokenFile), or the gate's own
 * configuration (enforcement.kubernetes: server, ca_file, token_file,
 * insecure_skip_tls_verify, name). Relative paths in a kubeconfig are
 * resolved against its directory, as kubectl does. The token is never
 * printed. */
#ifndef SKEWGATE_CLI_KUBECONFIG_H
#define SKEWGATE_CLI_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kube_credentials {
    char *server;               /* "https://HOST:PORT"; "" = in-cluster (gate config only) */
    char *ca_file;              /* NULL: none given */
    char *ca_data;              /* decoded PEM, NULL: none given */
    size_t ca_data_len;
    bool insecure;
    char *token;                /* inline token, NULL: none */
    char *token_file;           /* NULL: none */
    char *name;                 /* the MachineConfiguration: "cluster" */
} kube_credentials_t;

/* The file kubectl would read: kubeconfig_flag if given, else the first
 * path of $KUBECONFIG (colon-separated) if set, else ~/.kube/config.
 * NULL with err when none can be named (no HOME). Returns buf. */
const char *kubeconfig_path(const char *kubeconfig_flag, char *buf, size_t len, char *err, size_t errlen);

/* 0, or -1 with "FILE[:LINE:COL]: problem" in err. kube_credentials_free
 * after either. */
int kube_credentials_from_kubeconfig(const char *path, kube_credentials_t *out, char *err, size_t errlen);
int kube_credentials_from_config(const char *config_path, kube_credentials_t *out, char *err, size_t errlen);
void kube_credentials_free(kube_credentials_t *c);

#endif
