/* kube_reflector: list, then watch, one collection of the API server, as
 * client-go's reflector does, on the verdict thread's event_base. Several
 * run side by side (the MachineConfiguration; Machines and Nodes for the
 * admission policy), each with its own connection and token.
 *
 *   list page ok, continue ──> the next page (limit per page, so that no
 *                              answer grows with the cluster)
 *   page over KUBE_BODY_MAX ─> the same page with half the limit (kept)
 *   last page ok ────────────> watch from the list's resourceVersion
 *   watch ends cleanly ──────> watch again from the last resourceVersion
 *   410 Gone / ERROR Expired ─> list again from the first page at once
 *   410 on a continue token ─> fails, as below
 *   anything else fails ─────> failing, jittered backoff (200 ms doubling
 *                              to 30 s), then list again: the list
 *                              confirms the view and catches up
 *
 * The owner learns of it through callbacks; the items and events it gets
 * are borrowed for the call. */
#ifndef SKEWGATE_KUBE_REFLECTOR_H
#define SKEWGATE_KUBE_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "source/kube/endpoint.h"
#include "source/kube/event.h"

struct event_base;
typedef struct kube_reflector kube_reflector_t;

/* Where the API server is and how to trust it, shared by the reflectors
 * of one owner. */
typedef struct kube_api {
    kube_endpoint_t ep;
    SSL_CTX *tls;               /* NULL for plain HTTP */
    bool insecure;
    const char *token_file;     /* borrowed from the owner's copy or referenced configuration */
    const char *ca_file;
    /* The CA file's SHA-256 as it was read for tls; false for plain http://
     * and for the system trust store (ca_file ""), which nothing follows. */
    bool ca_pinned;
    unsigned char ca_sha256[32];
} kube_api_t;

/* From enforcement.kubernetes (in-cluster when server is ""). 0, or -1 with
 * err (no in-cluster environment, an unreadable CA file). The CA is read
 * here, and again when a connection has failed (kube_api_follow_ca); the
 * token file is read again when it changes (kube_token_t). */
int kube_api_init(kube_api_t *api, const config_source_kube_t *cfg, char *err, size_t errlen);
void kube_api_destroy(kube_api_t *api);
/* Whether api->ca_file holds other bytes now than api was made with: 1
 * when it does, 0 when not (or nothing was pinned), -1 with err when it
 * cannot be read. Reads the whole file (a CA bundle: kilobytes). */
int kube_api_ca_changed(const kube_api_t *api, char *err, size_t errlen);
/* Whether a watch made with the settings was (its api, ready once
 * kube_api_init succeeded) must be made again for now: 1 with why when
 * now talks to the API another way or the CA file changed, 0 when it can
 * stay, -1 with why when the CA file cannot be read. The one test the
 * Machines, pace and ClusterOperator watches make at each reload. */
int kube_api_outdated(const kube_api_t *api, bool ready, const config_source_kube_t *was,
                      const config_source_kube_t *now, char *why, size_t len);
/* A rotated cluster CA, followed without a reload: when ca_file holds
 * other bytes than api->tls was made from, a new context from them
 * replaces it (the reflectors' clients take it at their next connection).
 * 1 when it was replaced, 0 when the bytes are the same (or nothing is
 * pinned), -1 with err when the file cannot be read or loaded: the old
 * context stays. */
int kube_api_follow_ca(kube_api_t *api, char *err, size_t errlen);

typedef struct kube_reflector_cbs {
    /* A list begins (its first page): what follows replaces the view. */
    void (*on_list_begin)(void *arg);
    /* One object of a list page. */
    void (*on_item)(void *arg, json_t *item);
    /* The last page is in: the list is whole, rv is its resourceVersion. */
    void (*on_listed)(void *arg, const char *rv);
    /* ADDED, MODIFIED or DELETED; arrived_ns: when its line was read. */
    void (*on_event)(void *arg, const kube_event_t *ev, uint64_t arrived_ns);
    /* A BOOKMARK: the view is confirmed, unchanged. */
    void (*on_synced)(void *arg);
    /* The first failure after a success (or at the start). */
    void (*on_failing)(void *arg);
    /* Every failure, with why (as logged); NULL: not wanted. Before
     * on_failing when both are called. */
    void (*on_error)(void *arg, const char *why);
} kube_reflector_cbs_t;

typedef struct kube_reflector_cfg {
    const char *what;           /* for the logs: "MachineConfiguration cluster" */
    kube_collection_t collection;   /* its strings are copied */
    const char *rbac_hint;      /* said after a 403: the rule it needs */
    uint64_t watch_timeout_ms;
    /* The longest wait between retries after failures; 0: 30 s. A view
     * that holds back admissions while it cannot be trusted (pacing's)
     * wants to be back within seconds of its API server. */
    uint64_t max_backoff_ms;
} kube_reflector_cfg_t;

/* api is borrowed and must outlive the reflector; after a failure, the
 * reflector has it follow its CA file (kube_api_follow_ca) before it
 * tries again. NULL when out of memory. Nothing happens before
 * kube_reflector_start. */
kube_reflector_t *kube_reflector_new(struct event_base *base, kube_api_t *api,
                                     const kube_reflector_cfg_t *cfg, const kube_reflector_cbs_t *cbs,
                                     void *arg);
/* Sends the first list. */
void kube_reflector_start(kube_reflector_t *r);
/* The server answers again (another collection of it just listed): a
 * reflector waiting out its backoff after a failure tries now instead of
 * at the end of a backoff that may have doubled to its maximum (30 s)
 * during an outage. Its backoff is kept, so one that fails again waits
 * as before. A no-op unless it is waiting after a failure. */
void kube_reflector_retry_now(kube_reflector_t *r);
/* For skewgate_source_reconnects_total. */
uint64_t kube_reflector_reconnects(const kube_reflector_t *r);
void kube_reflector_free(kube_reflector_t *r);

#endif
