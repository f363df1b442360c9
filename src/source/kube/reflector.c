#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>

#include "conf/reload.h"
#include "core/backoff.h"
#include "core/clock.h"
#include "core/log.h"
#include "source/kube/client.h"
#include "source/kube/reflector.h"
#include "source/kube/token.h"
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

struct kube_reflector {
    kube_api_t *api;            /* the owner's; its CA followed after a failure */
    char *what, *path, *selector, *labels, *rbac_hint;
    kube_collection_t collection;
    uint64_t watch_timeout_ms;
    kube_reflector_cbs_t cbs;
    void *arg;

    kube_client_t *client;
    kube_token_t token;
    backoff_t backoff;
    unsigned int seed;
    struct event *retry_ev;

    phase_t phase;
    bool relist;                /* the next attempt lists */
    char cont[KUBE_CONTINUE_MAX];   /* the next page's token; "" for the first */
    unsigned pages, items;      /* of the list under way */
    char rv[KUBE_RV_MAX];       /* where the next watch starts */
    uint64_t watch_started_ns;
    bool failing;
    unsigned failures;          /* in a row */
    uint64_t reconnects;
};

/* The SHA-256 of the file at path into out: 0, or -1 with err. */
static int file_sha256(const char *path, unsigned char out[32], char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "tls: kubernetes ca_file %s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    char buf[16384];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = EVP_DigestUpdate(md, buf, n) == 1;
    int read_errno = ferror(f) ? errno : 0;
    unsigned int len = 0;
    ok = ok && !read_errno && EVP_DigestFinal_ex(md, out, &len) == 1 && len == 32;
    EVP_MD_CTX_free(md);
    fclose(f);
    if (!ok)
        snprintf(err, errlen, "tls: kubernetes ca_file %s: cannot read: %s", path,
                 read_errno ? strerror(read_errno) : "out of memory");
    return ok ? 0 : -1;
}

int kube_api_init(kube_api_t *api, const config_source_kube_t *cfg, char *err, size_t errlen)
{
    *api = (kube_api_t){.insecure = cfg->insecure_skip_tls_verify, .token_file = cfg->token_file,
                        .ca_file = cfg->ca_file ? cfg->ca_file : ""};
    if (kube_endpoint_parse(cfg->server ? cfg->server : "", getenv("KUBERNETES_SERVICE_HOST"),
                            getenv("KUBERNETES_SERVICE_PORT"), &api->ep, err, errlen) < 0)
        return -1;
    /* Digested before it is loaded: a file replaced in between leaves a
     * digest older than the CA in use, so the next reload builds anew for
     * nothing; the other order could keep a stale CA past that reload. */
    if (api->ep.tls && *api->ca_file) {
        if (file_sha256(api->ca_file, api->ca_sha256, err, errlen) < 0)
            return -1;
        api->ca_pinned = true;
    }
    if (api->ep.tls && !(api->tls = tls_api_ctx_new(api->ca_file, api->insecure, err, errlen)))
        return -1;
    if (api->insecure && api->ep.tls)
        log_msg(LOG_WARN, "source_tls",
                "enforcement.kubernetes.insecure_skip_tls_verify is set: the API server's "
                "certificate is NOT verified; anyone on the path can forge what the gate sees");
    return 0;
}

void kube_api_destroy(kube_api_t *api)
{
    SSL_CTX_free(api->tls);
    api->tls = NULL;
}

/* 1 and now's digest when ca_file's bytes differ from the pinned ones. */
static int ca_digest_changed(const kube_api_t *api, unsigned char now[32], char *err, size_t errlen)
{
    if (!api->ca_pinned)
        return 0;
    if (file_sha256(api->ca_file, now, err, errlen) < 0)
        return -1;
    return memcmp(now, api->ca_sha256, 32) != 0;
}

int kube_api_ca_changed(const kube_api_t *api, char *err, size_t errlen)
{
    unsigned char now[32];
    return ca_digest_changed(api, now, err, errlen);
}

int kube_api_outdated(const kube_api_t *api, bool ready, const config_source_kube_t *was,
                      const config_source_kube_t *now, char *why, size_t len)
{
    if (!config_kube_same(was, now)) {
        snprintf(why, len, "enforcement.kubernetes changed");
        return 1;
    }
    if (!ready)
        return 0;
    int changed = kube_api_ca_changed(api, why, len);
    if (changed > 0)
        snprintf(why, len, "the CA in %s changed", api->ca_file);
    return changed;
}

int kube_api_follow_ca(kube_api_t *api, char *err, size_t errlen)
{
    unsigned char now[32];
    int changed = ca_digest_changed(api, now, err, errlen);
    if (changed <= 0)
        return changed;
    /* Digested before it is loaded, as at init: a file replaced in
     * between is looked at again after the next failure. */
    SSL_CTX *tls = tls_api_ctx_new(api->ca_file, api->insecure, err, errlen);
    if (!tls)
        return -1;
    SSL_CTX_free(api->tls);     /* connections made with it hold their own reference */
    api->tls = tls;
    memcpy(api->ca_sha256, now, sizeof now);
    return 1;
}

static void begin_list(kube_reflector_t *r);
static void begin_watch(kube_reflector_t *r);

static void retry_in(kube_reflector_t *r, uint64_t ms)
{
    r->phase = PHASE_WAITING;
    struct timeval tv = clock_timeval(ms);
    evtimer_add(r->retry_ev, &tv);
}

/* Something went wrong: say so, stop vouching for the view, try again. */
__attribute__((format(printf, 2, 3)))
static void fail(kube_reflector_t *r, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kube_client_cancel(r->client);
    uint64_t delay = backoff_next(&r->backoff, (uint32_t)rand_r(&r->seed) << 1);
    r->failures++;
    r->reconnects++;
    log_json(LOG_WARN, "source_error",
             json_pack("{s:s, s:s, s:s, s:I, s:I}", "msg", why, "what", r->what, "server",
                       r->api->ep.authority, "retry_ms", (json_int_t)delay, "failures",
                       (json_int_t)r->failures));
    r->relist = true;
    retry_in(r, delay);
    if (r->cbs.on_error)
        r->cbs.on_error(r->arg, why);
    if (!r->failing) {
        r->failing = true;
        r->cbs.on_failing(r->arg);
    }
}

static void succeeded(kube_reflector_t *r)
{
    if (r->failures > 0)
        log_msg(LOG_INFO, "source_recovered", "API server %s answers again for %s after %u failures",
                r->api->ep.authority, r->what, r->failures);
    r->failures = 0;
    r->failing = false;
    backoff_reset(&r->backoff);
}

static void send_request(kube_reflector_t *r, const char *target, kube_body_mode_t mode, uint64_t idle_ms)
{
    char err[512];
    if (kube_client_request(r->client, target, kube_token_current(&r->token), mode, idle_ms, err,
                            sizeof err) < 0)
        fail(r, "%s", err);
}

static void request_page(kube_reflector_t *r)
{
    char target[KUBE_TARGET_MAX];
    if (kube_list_target(target, sizeof target, &r->collection, r->cont) < 0) {
        fail(r, "list: continue token too long");
        return;
    }
    r->phase = PHASE_LISTING;
    send_request(r, target, KUBE_BODY_WHOLE, LIST_IDLE_MS);
}

static void begin_list(kube_reflector_t *r)
{
    r->relist = false;
    r->cont[0] = '\0';
    r->pages = r->items = 0;
    r->cbs.on_list_begin(r->arg);
    request_page(r);
}

static void begin_watch(kube_reflector_t *r)
{
    char target[KUBE_TARGET_MAX];
    uint64_t timeout_s = r->watch_timeout_ms / 1000 ? r->watch_timeout_ms / 1000 : 1;
    if (kube_watch_target(target, sizeof target, &r->collection, r->rv, timeout_s) < 0) {
        fail(r, "watch: resourceVersion too long");
        return;
    }
    r->phase = PHASE_WATCHING;
    r->watch_started_ns = clock_monotonic_ns();
    send_request(r, target, KUBE_BODY_LINES, r->watch_timeout_ms + WATCH_IDLE_SLACK_MS);
}

static void on_retry(evutil_socket_t fd, short what, void *arg);

void kube_reflector_retry_now(kube_reflector_t *r)
{
    if (r->phase != PHASE_WAITING || !r->failing || !evtimer_pending(r->retry_ev, NULL))
        return;
    evtimer_del(r->retry_ev);
    on_retry(-1, EV_TIMEOUT, r);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kube_reflector_t *r = arg;
    /* A failure may be the API server's certificate from a rotated CA:
     * a CA file rewritten since is trusted from this attempt on, with no
     * reload (in a cluster the kubelet rewrites the service account's
     * ca.crt itself). One read of a few KiB per retry, at the backoff's
     * pace. */
    char err[512];
    int followed = kube_api_follow_ca(r->api, err, sizeof err);
    if (followed > 0)
        log_msg(LOG_INFO, "source_tls", "%s: the CA file changed; trusting its new contents from now on (for %s)",
                r->api->ca_file, r->what);
    else if (followed < 0)
        log_msg(LOG_WARN, "source_tls", "%s; the CA trusted so far stays (for %s)", err, r->what);
    if (r->relist)
        begin_list(r);
    else
        begin_watch(r);
}

/* A non-2xx answer, described for the log; 401/403 get a hint. */
static void fail_status(kube_reflector_t *r, const char *what, const kube_response_t *resp)
{
    char why[KUBE_WHY_MAX];
    kube_status_describe(resp->body, resp->body_len, why, sizeof why);
    char hint[512] = "";
    if (resp->status == 401)
        snprintf(hint, sizeof hint, " (check the token in the token file)");
    else if (resp->status == 403)
        snprintf(hint, sizeof hint, " (RBAC: the service account needs %s)", r->rbac_hint);
    fail(r, "%s: HTTP %d: %s%s", what, resp->status, why, hint);
}

static void listed_page(kube_reflector_t *r, const kube_response_t *resp)
{
    if (!resp->complete && resp->too_large && r->collection.limit > 1) {
        /* Pages are bounded by bytes as well as by count: 1,000 Nodes of
         * ~20 KiB are 20 MiB, past KUBE_BODY_MAX. The same page again
         * (the continue token is unchanged) with half the items, kept for
         * the pages and lists after it; it costs one request per halving. */
        r->collection.limit /= 2;
        log_msg(LOG_INFO, "source_list_page", "%s: list page %u is larger than %u MiB: asking for %u items a page",
                r->what, r->pages + 1, KUBE_BODY_MAX >> 20, r->collection.limit);
        request_page(r);
        return;
    }
    if (!resp->complete) {
        fail(r, "list: %s%s%s", resp->error, *resp->detail ? ": " : "", resp->detail);
        return;
    }
    if (resp->status == 410 && r->cont[0]) {
        /* The continue token outlived the server's compaction window: a
         * failure like another (logged, the view not vouched for, counted
         * as a reconnect), listed again after the backoff, so a server
         * that expires every token cannot spin the loop. */
        fail(r, "list page %u: HTTP 410: the continue token expired; listing again from the first page",
             r->pages + 1);
        return;
    }
    if (resp->status != 200) {
        fail_status(r, "list", resp);
        return;
    }
    json_t *items;
    char rv[KUBE_RV_MAX], err[256];
    if (kube_list_page_parse(resp->body, resp->body_len, &items, rv, r->cont, err, sizeof err) < 0) {
        fail(r, "list: %s", err);
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
        r->cbs.on_item(r->arg, item);
    r->pages++;
    r->items += (unsigned)json_array_size(items);
    json_decref(items);
    if (r->cont[0]) {
        request_page(r);
        return;
    }
    succeeded(r);
    memcpy(r->rv, rv, sizeof rv);
    log_msg(LOG_INFO, "source_listed", "%s: %u objects in %u pages (list resourceVersion %s)", r->what,
            r->items, r->pages, rv);
    r->cbs.on_listed(r->arg, rv);
    begin_watch(r);
}

/* The watch's resourceVersion expired (410): list again, at once unless
 * the watch had only just begun. A server answering every watch with 410
 * made the gate list and watch again about 30 times a second (0.46 s of
 * CPU in 3 s, t_fault_kube); now it is once a second, as for a watch that
 * ends at once. */
static void relist_expired(kube_reflector_t *r)
{
    uint64_t lasted_ms = (clock_monotonic_ns() - r->watch_started_ns) / 1000000;
    if (lasted_ms >= WATCH_MIN_MS) {
        begin_list(r);
        return;
    }
    r->relist = true;
    retry_in(r, WATCH_MIN_MS);
}

static void watch_ended(kube_reflector_t *r, const kube_response_t *resp)
{
    if (resp->complete && resp->status == 200) {
        uint64_t lasted_ms = (clock_monotonic_ns() - r->watch_started_ns) / 1000000;
        log_msg(LOG_DEBUG, "source_watch", "%s: watch ended after %llu ms; resuming from %s", r->what,
                (unsigned long long)lasted_ms, r->rv);
        if (lasted_ms < WATCH_MIN_MS)
            retry_in(r, WATCH_MIN_MS);
        else
            begin_watch(r);
        return;
    }
    if (resp->complete && resp->status == 410) {
        log_msg(LOG_INFO, "source_watch", "%s: watch from %s: 410 Gone: listing again", r->what, r->rv);
        relist_expired(r);
        return;
    }
    if (resp->complete)
        fail_status(r, "watch", resp);
    else
        fail(r, "watch: %s%s%s", resp->error, *resp->detail ? ": " : "", resp->detail);
}

static void on_done(void *arg, const kube_response_t *resp)
{
    kube_reflector_t *r = arg;
    if (r->phase == PHASE_LISTING)
        listed_page(r, resp);
    else if (r->phase == PHASE_WATCHING)
        watch_ended(r, resp);
}

static void on_line(void *arg, const char *line, size_t len, uint64_t arrived_ns)
{
    kube_reflector_t *r = arg;
    kube_event_t ev;
    char err[256];
    if (kube_event_parse(line, len, &ev, err, sizeof err) < 0) {
        fail(r, "watch: %s: reconnecting", err);
        return;
    }
    if (r->failures > 0 || r->failing)
        succeeded(r);
    switch (ev.type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
    case KUBE_EVENT_DELETED:
        memcpy(r->rv, ev.resource_version, sizeof r->rv);
        r->cbs.on_event(r->arg, &ev, arrived_ns);
        break;
    case KUBE_EVENT_BOOKMARK:
        memcpy(r->rv, ev.resource_version, sizeof r->rv);
        r->cbs.on_synced(r->arg);
        break;
    case KUBE_EVENT_ERROR:
        if (kube_event_is_expired(&ev)) {
            log_msg(LOG_INFO, "source_watch", "%s: watch from %s expired (%s): listing again", r->what,
                    r->rv, ev.why);
            kube_client_cancel(r->client);
            relist_expired(r);
        } else {
            fail(r, "watch: ERROR event %d: %s", ev.code, ev.why);
        }
        break;
    }
    kube_event_clear(&ev);
}

kube_reflector_t *kube_reflector_new(struct event_base *base, kube_api_t *api,
                                     const kube_reflector_cfg_t *cfg, const kube_reflector_cbs_t *cbs,
                                     void *arg)
{
    kube_reflector_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->api = api;
    r->cbs = *cbs;
    r->arg = arg;
    r->watch_timeout_ms = cfg->watch_timeout_ms;
    r->what = strdup(cfg->what);
    r->path = strdup(cfg->collection.path);
    r->selector = strdup(cfg->collection.field_selector ? cfg->collection.field_selector : "");
    r->labels = strdup(cfg->collection.label_selector ? cfg->collection.label_selector : "");
    r->rbac_hint = strdup(cfg->rbac_hint);
    r->collection = (kube_collection_t){r->path, r->selector, cfg->collection.limit, r->labels};
    static const kube_client_cbs_t client_cbs = {on_line, on_done};
    r->client = kube_client_new(base, &api->ep, &api->tls, api->insecure, &client_cbs, r);
    r->retry_ev = evtimer_new(base, on_retry, r);
    int token_rc = kube_token_init(&r->token, api->token_file);
    if (!r->what || !r->path || !r->selector || !r->labels || !r->rbac_hint || !r->client || !r->retry_ev ||
        token_rc < 0) {
        kube_reflector_free(r);
        return NULL;
    }
    backoff_init(&r->backoff, BACKOFF_INITIAL_MS, cfg->max_backoff_ms ? cfg->max_backoff_ms : BACKOFF_MAX_MS);
    r->seed = (unsigned int)time(NULL) ^ (unsigned int)getpid() ^ (unsigned int)(uintptr_t)r;
    return r;
}

void kube_reflector_start(kube_reflector_t *r)
{
    begin_list(r);
}

uint64_t kube_reflector_reconnects(const kube_reflector_t *r)
{
    return r->reconnects;
}

void kube_reflector_free(kube_reflector_t *r)
{
    if (!r)
        return;
    kube_client_free(r->client);
    if (r->retry_ev)
        event_free(r->retry_ev);
    kube_token_free(&r->token);
    free(r->what);
    free(r->path);
    free(r->selector);
    free(r->labels);
    free(r->rbac_hint);
    free(r);
}
