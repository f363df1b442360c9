/* kube_endpoint: where the Kubernetes API server is and the request
 * targets skewgate sends it. Pure string work, no I/O. */
#ifndef SKEWGATE_KUBE_ENDPOINT_H
#define SKEWGATE_KUBE_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KUBE_HOST_MAX 256
#define KUBE_TARGET_MAX 4096

typedef struct kube_endpoint {
    bool tls;
    char host[KUBE_HOST_MAX];       /* name or IP literal, without brackets */
    char port[8];
    char authority[KUBE_HOST_MAX + 10]; /* for Host: IPv6 in brackets */
} kube_endpoint_t;

/* server: "https://HOST[:PORT][/]" or "http://HOST[:PORT][/]" (IPv6 in
 * brackets); "" means in-cluster, from service_host and service_port (the
 * values of KUBERNETES_SERVICE_HOST and _PORT, NULL when unset). 0, or -1
 * with a message in err. */
int kube_endpoint_parse(const char *server, const char *service_host, const char *service_port,
                        kube_endpoint_t *ep, char *err, size_t errlen);

#define KUBE_MC_PATH "/apis/operator.openshift.io/v1/machineconfigurations"

/* One collection to list and watch. */
typedef struct kube_collection {
    const char *path;           /* "/apis/G/V[/namespaces/NS]/PLURAL", or "/api/v1/nodes" */
    const char *field_selector; /* "metadata.name=cluster"; NULL or "" for every object */
    uint32_t limit;             /* items per list page; 0: the whole list in one answer */
    const char *label_selector; /* "skewgate.openshift.io/pace-line"; NULL or "" for every object */
} kube_collection_t;

/* A page of the list (cont: the previous page's continue token, NULL or
 * "" for the first), and the watch that follows the list from
 * resource_version, ending after timeout_s. The values are
 * percent-encoded. 0, or -1 when the target would not fit in len. */
int kube_list_target(char *buf, size_t len, const kube_collection_t *c, const char *cont);
int kube_watch_target(char *buf, size_t len, const kube_collection_t *c, const char *resource_version,
                      uint64_t timeout_s);

#endif
