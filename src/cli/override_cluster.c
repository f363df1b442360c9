#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include <jansson.h>

#include "cli/kubeconfig.h"
#include "cli/override_cluster.h"
#include "core/time.h"
#include "source/kube/client.h"
#include "source/kube/endpoint.h"
#include "source/kube/event.h"
#include "source/kube/token.h"
#include "tls/tls.h"
#include "verdict/verdict.h"

#define OVERRIDE_PATCH_TYPE "application/merge-patch+json"
#define OVERRIDE_RESOURCE "/apis/operator.openshift.io/v1/machineconfigurations/"
#define OVERRIDE_IDLE_MS 15000

typedef struct patch_answer {
    struct event_base *base;
    int status;                 /* 0: no answer */
    char why[512];              /* when no answer, or the Status of an error */
    json_t *object;             /* a 2xx answer's object */
} patch_answer_t;

static void patch_done(void *arg, const kube_response_t *resp)
{
    patch_answer_t *a = arg;
    a->status = resp->complete ? resp->status : 0;
    if (!resp->complete)
        snprintf(a->why, sizeof a->why, "%s%s%s", resp->error ? resp->error : "the answer was cut",
                 resp->detail[0] ? ": " : "", resp->detail);
    else if (resp->status / 100 == 2)
        a->object = json_loadb(resp->body, resp->body_len, 0, NULL);
    else
        kube_status_describe(resp->body, resp->body_len, a->why, sizeof a->why);
    event_base_loopbreak(a->base);
}

/* The annotation's new value (NULL: clear), as DESIGN 3 writes it. */
static json_t *override_value(const char *action, uint64_t for_ms)
{
    if (!strcmp(action, "clear"))
        return json_null();
    if (!for_ms)
        return json_string(action);
    char until[TIME_RFC3339_LEN], text[64];
    /* Whole seconds, rounded up: the override lasts at least as asked. */
    time_format_rfc3339(time(NULL) + (time_t)((for_ms + 999) / 1000), until, sizeof until);
    snprintf(text, sizeof text, "%s;until=%s", action, until);
    return json_string(text);
}

/* The API server's answer in words, with what to do about it. */
static void override_explain(const patch_answer_t *a, const char *server, const char *name)
{
    const char *hint = a->status == 401   ? "the credentials were refused: log in again (oc login) or check the token"
                       : a->status == 403 ? "not allowed to patch it: bind the ClusterRole skewgate-override "
                                            "(deploy/kubernetes/override-rbac) to this user"
                       : a->status == 404 ? "no such MachineConfiguration: is this an OpenShift cluster?"
                       : a->status == 409 ? "a conflicting write: run it again"
                                          : NULL;
    if (!a->status)
        fprintf(stderr, "skewgate override: %s: %s\n", server, a->why);
    else
        fprintf(stderr, "skewgate override: %s answered %d for machineconfiguration %s: %s%s%s\n", server, a->status,
                name, a->why, hint ? "; " : "", hint ? hint : "");
}

/* The request's pieces: the endpoint, the TLS context, the token. 0, or
 * -1 after printing why. */
static int override_connect(const kube_credentials_t *cr, kube_endpoint_t *ep, SSL_CTX **tls, kube_token_t *token,
                            const char **bearer)
{
    char err[512];
    if (kube_endpoint_parse(cr->server, getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT"), ep,
                            err, sizeof err) < 0) {
        fprintf(stderr, "skewgate override: server: %s\n", err);
        return -1;
    }
    *tls = NULL;
    if (ep->tls) {
        *tls = cr->ca_data ? tls_api_ctx_new_pem(cr->ca_data, cr->ca_data_len, cr->insecure, err, sizeof err)
                           : tls_api_ctx_new(cr->ca_file, cr->insecure, err, sizeof err);
        if (!*tls) {
            fprintf(stderr, "skewgate override: %s\n", err);
            return -1;
        }
    }
    *bearer = cr->token;
    if (!cr->token && cr->token_file) {
        if (kube_token_init(token, cr->token_file) < 0 || kube_token_refresh(token, err, sizeof err) < 0) {
            fprintf(stderr, "skewgate override: %s\n", err);
            SSL_CTX_free(*tls);
            return -1;
        }
        *bearer = token->value;
    }
    return 0;
}

static int override_patch(const kube_credentials_t *cr, const char *action, uint64_t for_ms)
{
    kube_endpoint_t ep;
    SSL_CTX *tls;
    kube_token_t token = {0};
    const char *bearer;
    if (strspn(cr->name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(cr->name)) {
        fprintf(stderr, "skewgate override: \"%s\" is not a Kubernetes object name\n", cr->name);
        return 2;
    }
    if (override_connect(cr, &ep, &tls, &token, &bearer) < 0) {
        kube_token_free(&token);
        return 2;
    }
    json_t *value = override_value(action, for_ms);
    json_t *patch = json_pack("{s:{s:{s:o}}}", "metadata", "annotations", VERDICT_OVERRIDE_ANNOTATION, value);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    char target[KUBE_TARGET_MAX];
    snprintf(target, sizeof target, OVERRIDE_RESOURCE "%s", cr->name);
    patch_answer_t answer = {.base = event_base_new()};
    static const kube_client_cbs_t cbs = {.on_done = patch_done};
    kube_client_t *client = answer.base && body ? kube_client_new(answer.base, &ep, &tls, cr->insecure, &cbs, &answer) : NULL;
    const kube_request_t req = {.method = "PATCH", .target = target, .token = bearer,
                                .content_type = OVERRIDE_PATCH_TYPE, .body = body, .body_len = body ? strlen(body) : 0};
    int rc = 1;
    if (!client)
        snprintf(answer.why, sizeof answer.why, "out of memory");
    else if (kube_client_send(client, &req, KUBE_BODY_WHOLE, OVERRIDE_IDLE_MS, answer.why, sizeof answer.why) == 0)
        event_base_dispatch(answer.base);   /* bounded: the client's request and idle timeouts */
    if (answer.status / 100 == 2) {
        const char *rv = json_string_value(json_object_get(json_object_get(answer.object, "metadata"), "resourceVersion"));
        if (json_is_null(value))
            printf("machineconfiguration %s: override cleared", cr->name);
        else
            printf("machineconfiguration %s: " VERDICT_OVERRIDE_ANNOTATION "=%s", cr->name, json_string_value(value));
        printf(" (resourceVersion %s); every gate follows it\n", rv ? rv : "?");
        rc = 0;
    } else {
        override_explain(&answer, ep.authority, cr->name);
    }
    json_decref(answer.object);
    kube_client_free(client);
    if (answer.base) {
        event_base_loop(answer.base, EVLOOP_NONBLOCK);  /* the client's memory, a turn after its free */
        event_base_free(answer.base);
    }
    free(body);
    json_decref(patch);
    SSL_CTX_free(tls);
    kube_token_free(&token);
    return rc;
}

int override_cluster(const char *action, uint64_t for_ms, const char *kubeconfig, const char *config_path)
{
    char err[512], path[4096];
    kube_credentials_t cr = {0};
    int got;
    if (!kubeconfig && config_path) {
        got = kube_credentials_from_config(config_path, &cr, err, sizeof err);
    } else {
        const char *p = kubeconfig_path(kubeconfig, path, sizeof path, err, sizeof err);
        got = p ? kube_credentials_from_kubeconfig(p, &cr, err, sizeof err) : -1;
    }
    int rc = 2;
    if (got < 0)
        fprintf(stderr, "skewgate override: %s\n", err);
    else
        rc = override_patch(&cr, action, for_ms);
    kube_credentials_free(&cr);
    return rc;
}
