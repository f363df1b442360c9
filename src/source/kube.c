/* The Kubernetes source: the one MachineConfiguration, listed and watched
 * by a kube_reflector (source/kube/reflector.h says how it lists, watches,
 * relists and backs off) and reported to the controller. The controller
 * keeps the last good object through FAILING until max_staleness. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "source/kube/reflector.h"
#include "source/source.h"

typedef struct source_kube {
    source_t base;
    /* Its own copy, strings included: a reload that keeps the source
     * frees the configuration it was made from (docs/internals.md, "What
     * outlives a reload"). kube_api_t points into it. */
    config_source_kube_t cfg;
    kube_api_t api;
    kube_reflector_t *reflector;
    json_t *object;             /* the last good one; NULL when absent */
    json_t *listed;             /* ours, as the list under way found it */
} source_kube_t;

static void keep(json_t **slot, json_t *object)
{
    json_t *kept = json_incref(object);
    json_decref(*slot);
    *slot = kept;
}

static bool is_ours(const source_kube_t *k, const json_t *object)
{
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    return name && !strcmp(name, k->cfg.name);
}

static void on_list_begin(void *arg)
{
    source_kube_t *k = arg;
    keep(&k->listed, NULL);
}

static void on_item(void *arg, json_t *item)
{
    source_kube_t *k = arg;
    if (is_ours(k, item))
        keep(&k->listed, item);
}

static void on_listed(void *arg, const char *rv)
{
    source_kube_t *k = arg;
    keep(&k->object, k->listed);
    keep(&k->listed, NULL);
    log_msg(LOG_INFO, "source_listed", "MachineConfiguration %s %s (list resourceVersion %s)",
            k->cfg.name, k->object ? "present" : "absent", rv);
    source_report(&k->base, k->object ? SOURCE_PRESENT : SOURCE_ABSENT, k->object);
}

/* An object event: report it and measure how long it took from the line's
 * arrival to the published verdict (the controller publishes from within
 * source_report). */
static void on_event(void *arg, const kube_event_t *ev, uint64_t arrived_ns)
{
    source_kube_t *k = arg;
    if (!is_ours(k, ev->object))
        return;
    bool deleted = ev->type == KUBE_EVENT_DELETED;
    keep(&k->object, deleted ? NULL : ev->object);
    source_report(&k->base, deleted ? SOURCE_ABSENT : SOURCE_PRESENT, k->object);
    uint64_t took_ns = clock_monotonic_ns() - arrived_ns;
    log_json(LOG_DEBUG, "source_event",
             json_pack("{s:s, s:s, s:f}", "type", kube_event_type_name(ev->type),
                       "resourceVersion", ev->resource_version, "publish_ms", took_ns / 1e6));
}

static void on_synced(void *arg)
{
    source_kube_t *k = arg;
    source_synced(&k->base);
}

static void on_failing(void *arg)
{
    source_kube_t *k = arg;
    source_report(&k->base, SOURCE_FAILING, k->object);
}

static void on_error(void *arg, const char *why)
{
    source_kube_t *k = arg;
    source_error(&k->base, why);
}

static int kube_start(source_t *src)
{
    source_kube_t *k = (source_kube_t *)src;
    char err[512], what[300], selector[300];
    if (kube_api_init(&k->api, &k->cfg, err, sizeof err) < 0) {
        log_msg(LOG_ERROR, "source_error", "%s", err);
        source_error(src, err);
        return -1;
    }
    snprintf(what, sizeof what, "MachineConfiguration %s", k->cfg.name);
    snprintf(selector, sizeof selector, "metadata.name=%s", k->cfg.name);
    kube_reflector_cfg_t rcfg = {
        .what = what,
        .collection = {KUBE_MC_PATH, selector, 0},
        .rbac_hint = "get, list and watch on machineconfigurations.operator.openshift.io",
        .watch_timeout_ms = k->cfg.watch_timeout_ms,
    };
    static const kube_reflector_cbs_t cbs = {on_list_begin, on_item, on_listed,
                                             on_event, on_synced, on_failing, on_error};
    k->reflector = kube_reflector_new(src->base, &k->api, &rcfg, &cbs, k);
    if (!k->reflector) {
        log_msg(LOG_ERROR, "source_error", "kubernetes source: out of memory");
        return -1;
    }
    log_json(LOG_INFO, "source_kubernetes",
             json_pack("{s:s, s:s, s:s, s:s, s:s}", "server", k->api.ep.authority, "scheme",
                       k->api.ep.tls ? "https" : "http", "ca_file", k->api.ep.tls ? k->api.ca_file : "",
                       "token_file", k->cfg.token_file ? k->cfg.token_file : "", "name", k->cfg.name));
    kube_reflector_start(k->reflector);
    return 0;
}

static void kube_destroy(source_t *src)
{
    source_kube_t *k = (source_kube_t *)src;
    kube_reflector_free(k->reflector);
    kube_api_destroy(&k->api);
    json_decref(k->object);
    json_decref(k->listed);
    free(k->cfg.server);
    free(k->cfg.ca_file);
    free(k->cfg.token_file);
    free(k->cfg.name);
    free(k);
}

static uint64_t kube_reconnects(const source_t *src)
{
    const source_kube_t *k = (const source_kube_t *)src;
    return k->reflector ? kube_reflector_reconnects(k->reflector) : 0;
}

/* The CA file, read by kube_api_init and again after a failed connection
 * (kube_api_follow_ca); the token file is read again when it changes. */
static int kube_files_changed(const source_t *src, char *err, size_t errlen)
{
    const source_kube_t *k = (const source_kube_t *)src;
    return kube_api_ca_changed(&k->api, err, errlen);
}

static const source_ops_t kube_ops = {"kubernetes", kube_start, kube_destroy, kube_reconnects,
                                      kube_files_changed};

/* NULL stays NULL (the defaults: in-cluster, the service account's files). */
static bool copy_text(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

source_t *source_kube_new(struct event_base *base, const config_source_kube_t *cfg,
                          source_update_fn update, void *arg)
{
    source_kube_t *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    source_init(&k->base, &kube_ops, base, update, arg);
    k->cfg = *cfg;
    if (!copy_text(&k->cfg.server, cfg->server) || !copy_text(&k->cfg.ca_file, cfg->ca_file) ||
        !copy_text(&k->cfg.token_file, cfg->token_file) ||
        !copy_text(&k->cfg.name, cfg->name ? cfg->name : "cluster")) {
        kube_destroy(&k->base);
        return NULL;
    }
    return &k->base;
}
