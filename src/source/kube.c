/* The Kubernetes source: list, then watch, the one MachineConfiguration,
 * as client-go's reflector does, on the verdict thread's event_base.
 *
 *   list ok ─────────────> watch from the list's resourceVersion
 *   watch ends cleanly ──> watch again from the last resourceVersion
 *   ERROR 410 (Expired) ─> list again at once
 *   anything else fails ─> FAILING, jittered backoff (200 ms doubling to
 *                          30 s), then list again: the list confirms the
 *                          view at once and catches up what was missed
 *
 * The controller keeps the last good object through FAILING until
 * max_staleness. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/backoff.h"
#include "core/clock.h"
#include "source/kube/client.h"
#include "source/kube/endpoint.h"
#include "source/kube/event.h"
#include "source/kube/token.h"
#include "core/log.h"
#include "source/source.h"
#include "tls/tls.h"

#define BACKOFF_INITIAL_MS 200
#define BACKOFF_MAX_MS 30000
#define LIST_IDLE_MS 30000
/* A watch sends at least its end by timeoutSeconds; the API server may be
 * a little late, a dead connection never is. */
#define WATCH_IDLE_SLACK_MS 15000
/* A watch that ends cleanly sooner than this is not resumed at once, so
 * that a server ending every watch immediately cannot spin the loop. */
#define WATCH_MIN_MS 1000

typedef enum { PHASE_WAITING, PHASE_LISTING, PHASE_WATCHING } phase_t;

typedef struct source_kube {
    source_t base;
    char *server, *ca_file, *name;
    bool insecure;
    uint64_t watch_timeout_ms;

    kube_endpoint_t ep;
    SSL_CTX *tls;
    kube_client_t *client;
    kube_token_t token;
    char token_error[256];      /* the token problem last logged, "" if none */
    backoff_t backoff;
    unsigned int seed;
    struct event *retry_ev;

    phase_t phase;
    bool relist;                /* the next attempt lists */
    char rv[KUBE_RV_MAX];       /* where the next watch starts */
    uint64_t watch_started_ns;
    bool failing;
    json_t *object;             /* the last good one; NULL when absent */
    unsigned failures;          /* in a row */
} source_kube_t;

static void begin_list(source_kube_t *k);
static void begin_watch(source_kube_t *k);

static void retry_in(source_kube_t *k, uint64_t ms)
{
    k->phase = PHASE_WAITING;
    struct timeval tv = clock_timeval(ms);
    evtimer_add(k->retry_ev, &tv);
}

/* Something went wrong: say so, stop vouching for the view, try again. */
__attribute__((format(printf, 2, 3)))
static void fail(source_kube_t *k, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kube_client_cancel(k->client);
    uint64_t delay = backoff_next(&k->backoff, (uint32_t)rand_r(&k->seed) << 1);
    k->failures++;
    k->base.reconnects++;
    log_json(LOG_WARN, "source_error",
             json_pack("{s:s, s:s, s:I, s:I}", "msg", why, "server", k->ep.authority,
                       "retry_ms", (json_int_t)delay, "failures", (json_int_t)k->failures));
    k->relist = true;
    retry_in(k, delay);
    if (!k->failing) {
        k->failing = true;
        source_report(&k->base, SOURCE_FAILING, k->object);
    }
}

static void succeeded(source_kube_t *k)
{
    if (k->failures > 0)
        log_msg(LOG_INFO, "source_recovered", "API server %s answers again after %u failures",
                k->ep.authority, k->failures);
    k->failures = 0;
    k->failing = false;
    backoff_reset(&k->backoff);
}

/* The token as of now. A file that cannot be read keeps the last token;
 * with none, the request goes without one and the 401 says the rest. */
static const char *current_token(source_kube_t *k)
{
    char err[256];
    bool had = k->token.loaded;
    int rc = kube_token_refresh(&k->token, err, sizeof err);
    if (rc < 0) {
        if (strcmp(err, k->token_error) != 0)
            log_msg(LOG_WARN, "source_token", "%s%s", err,
                    had ? "; keeping the previous token" : "; sending no token");
        snprintf(k->token_error, sizeof k->token_error, "%s", err);
        return had ? k->token.value : NULL;
    }
    k->token_error[0] = '\0';
    if (rc == 1 && had)
        log_msg(LOG_INFO, "source_token", "token file %s changed: using the new token",
                k->token.path);
    return k->token.value;
}

static void send_request(source_kube_t *k, const char *target, kube_body_mode_t mode,
                         uint64_t idle_ms)
{
    char err[512];
    if (kube_client_request(k->client, target, current_token(k), mode, idle_ms, err,
                            sizeof err) < 0)
        fail(k, "%s", err);
}

static void begin_list(source_kube_t *k)
{
    char target[KUBE_TARGET_MAX];
    kube_list_target(target, sizeof target, k->name);
    k->phase = PHASE_LISTING;
    k->relist = false;
    send_request(k, target, KUBE_BODY_WHOLE, LIST_IDLE_MS);
}

static void begin_watch(source_kube_t *k)
{
    char target[KUBE_TARGET_MAX];
    uint64_t timeout_s = k->watch_timeout_ms / 1000 ? k->watch_timeout_ms / 1000 : 1;
    if (kube_watch_target(target, sizeof target, k->name, k->rv, timeout_s) < 0) {
        fail(k, "watch: resourceVersion too long");
        return;
    }
    k->phase = PHASE_WATCHING;
    k->watch_started_ns = clock_monotonic_ns();
    send_request(k, target, KUBE_BODY_LINES, k->watch_timeout_ms + WATCH_IDLE_SLACK_MS);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    source_kube_t *k = arg;
    if (k->relist)
        begin_list(k);
    else
        begin_watch(k);
}

static void keep_object(source_kube_t *k, json_t *object)
{
    json_t *kept = json_incref(object);
    json_decref(k->object);
    k->object = kept;
}

/* A non-2xx answer, described for the log; 401/403 get a hint. */
static void fail_status(source_kube_t *k, const char *what, const kube_response_t *r)
{
    char why[KUBE_WHY_MAX];
    kube_status_describe(r->body, r->body_len, why, sizeof why);
    const char *hint = r->status == 401 ? " (check the token in the token file)"
                       : r->status == 403 ? " (RBAC: the service account needs get, list and watch "
                                            "on machineconfigurations.operator.openshift.io)"
                                          : "";
    fail(k, "%s: HTTP %d: %s%s", what, r->status, why, hint);
}

static void listed(source_kube_t *k, const kube_response_t *r)
{
    if (!r->complete) {
        fail(k, "list: %s%s%s", r->error, *r->detail ? ": " : "", r->detail);
        return;
    }
    if (r->status != 200) {
        fail_status(k, "list", r);
        return;
    }
    json_t *object;
    char rv[KUBE_RV_MAX], err[256];
    if (kube_list_parse(r->body, r->body_len, k->name, &object, rv, err, sizeof err) < 0) {
        fail(k, "list: %s", err);
        return;
    }
    succeeded(k);
    memcpy(k->rv, rv, sizeof rv);
    keep_object(k, object);
    log_msg(LOG_INFO, "source_listed", "MachineConfiguration %s %s (list resourceVersion %s)",
            k->name, object ? "present" : "absent", rv);
    source_report(&k->base, object ? SOURCE_PRESENT : SOURCE_ABSENT, object);
    json_decref(object);
    begin_watch(k);
}

/* The watch's resourceVersion expired (410): list again, at once unless
 * the watch had only just begun. A server answering every watch with 410
 * made the gate list and watch again about 30 times a second (0.46 s of
 * CPU in 3 s, t_fault_kube); now it is once a second, as for a watch that
 * ends at once. */
static void relist_expired(source_kube_t *k)
{
    uint64_t lasted_ms = (clock_monotonic_ns() - k->watch_started_ns) / 1000000;
    if (lasted_ms >= WATCH_MIN_MS) {
        begin_list(k);
        return;
    }
    k->relist = true;
    retry_in(k, WATCH_MIN_MS);
}

static void watch_ended(source_kube_t *k, const kube_response_t *r)
{
    if (r->complete && r->status == 200) {
        uint64_t lasted_ms = (clock_monotonic_ns() - k->watch_started_ns) / 1000000;
        log_msg(LOG_DEBUG, "source_watch", "watch ended after %llu ms; resuming from %s",
                (unsigned long long)lasted_ms, k->rv);
        if (lasted_ms < WATCH_MIN_MS)
            retry_in(k, WATCH_MIN_MS);
        else
            begin_watch(k);
        return;
    }
    if (r->complete && r->status == 410) {
        log_msg(LOG_INFO, "source_watch", "watch from %s: 410 Gone: listing again", k->rv);
        relist_expired(k);
        return;
    }
    if (r->complete)
        fail_status(k, "watch", r);
    else
        fail(k, "watch: %s%s%s", r->error, *r->detail ? ": " : "", r->detail);
}

static void on_done(void *arg, const kube_response_t *r)
{
    source_kube_t *k = arg;
    if (k->phase == PHASE_LISTING)
        listed(k, r);
    else if (k->phase == PHASE_WATCHING)
        watch_ended(k, r);
}

static bool is_ours(const source_kube_t *k, const json_t *object)
{
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    return name && !strcmp(name, k->name);
}

/* An object event: report it and measure how long it took from the line's
 * arrival to the published verdict (the controller publishes from within
 * source_report). */
static void report_event(source_kube_t *k, const kube_event_t *ev, uint64_t arrived_ns)
{
    bool deleted = ev->type == KUBE_EVENT_DELETED;
    keep_object(k, deleted ? NULL : ev->object);
    source_report(&k->base, deleted ? SOURCE_ABSENT : SOURCE_PRESENT, k->object);
    uint64_t took_ns = clock_monotonic_ns() - arrived_ns;
    log_json(LOG_DEBUG, "source_event",
             json_pack("{s:s, s:s, s:f}", "type", kube_event_type_name(ev->type),
                       "resourceVersion", ev->resource_version, "publish_ms", took_ns / 1e6));
}

static void on_line(void *arg, const char *line, size_t len, uint64_t arrived_ns)
{
    source_kube_t *k = arg;
    kube_event_t ev;
    char err[256];
    if (kube_event_parse(line, len, &ev, err, sizeof err) < 0) {
        fail(k, "watch: %s: reconnecting", err);
        return;
    }
    if (k->failures > 0 || k->failing)
        succeeded(k);
    switch (ev.type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
    case KUBE_EVENT_DELETED:
        memcpy(k->rv, ev.resource_version, sizeof k->rv);
        if (is_ours(k, ev.object))
            report_event(k, &ev, arrived_ns);
        break;
    case KUBE_EVENT_BOOKMARK:
        memcpy(k->rv, ev.resource_version, sizeof k->rv);
        source_synced(&k->base);
        break;
    case KUBE_EVENT_ERROR:
        if (kube_event_is_expired(&ev)) {
            log_msg(LOG_INFO, "source_watch", "watch from %s expired (%s): listing again", k->rv,
                    ev.why);
            kube_client_cancel(k->client);
            relist_expired(k);
        } else {
            fail(k, "watch: ERROR event %d: %s", ev.code, ev.why);
        }
        break;
    }
    kube_event_clear(&ev);
}

static int kube_start(source_t *src)
{
    source_kube_t *k = (source_kube_t *)src;
    char err[512];
    if (kube_endpoint_parse(k->server, getenv("KUBERNETES_SERVICE_HOST"),
                            getenv("KUBERNETES_SERVICE_PORT"), &k->ep, err, sizeof err) < 0)
        goto fail;
    if (k->ep.tls && !(k->tls = tls_api_ctx_new(k->ca_file, k->insecure, err, sizeof err)))
        goto fail;
    static const kube_client_cbs_t cbs = {on_line, on_done};
    k->client = kube_client_new(src->base, &k->ep, k->tls, k->insecure, &cbs, k);
    k->retry_ev = evtimer_new(src->base, on_retry, k);
    if (!k->client || !k->retry_ev) {
        snprintf(err, sizeof err, "kubernetes source: out of memory");
        goto fail;
    }
    if (k->insecure && k->ep.tls)
        log_msg(LOG_WARN, "source_tls",
                "enforcement.kubernetes.insecure_skip_tls_verify is set: the API server's "
                "certificate is NOT verified; anyone on the path can forge the verdict");
    log_json(LOG_INFO, "source_kubernetes",
             json_pack("{s:s, s:s, s:s, s:s, s:s}", "server", k->ep.authority, "scheme",
                       k->ep.tls ? "https" : "http", "ca_file", k->ep.tls ? k->ca_file : "",
                       "token_file", k->token.path, "name", k->name));
    begin_list(k);
    return 0;
fail:
    log_msg(LOG_ERROR, "source_error", "%s", err);
    return -1;
}

static void kube_destroy(source_t *src)
{
    source_kube_t *k = (source_kube_t *)src;
    kube_client_free(k->client);
    if (k->retry_ev)
        event_free(k->retry_ev);
    SSL_CTX_free(k->tls);
    kube_token_free(&k->token);
    json_decref(k->object);
    free(k->server);
    free(k->ca_file);
    free(k->name);
    free(k);
}

static const source_ops_t kube_ops = {"kubernetes", kube_start, kube_destroy};

source_t *source_kube_new(struct event_base *base, const config_source_kube_t *cfg,
                          source_update_fn update, void *arg)
{
    source_kube_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    source_init(&k->base, &kube_ops, base, update, arg);
    k->insecure = cfg->insecure_skip_tls_verify;
    k->watch_timeout_ms = cfg->watch_timeout_ms;
    k->server = strdup(cfg->server ? cfg->server : "");
    k->ca_file = strdup(cfg->ca_file ? cfg->ca_file : "");
    k->name = strdup(cfg->name ? cfg->name : "cluster");
    int token_rc = kube_token_init(&k->token, cfg->token_file);
    if (!k->server || !k->ca_file || !k->name || token_rc < 0) {
        kube_destroy(&k->base);
        return NULL;
    }
    backoff_init(&k->backoff, BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
    k->seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
    return &k->base;
}
