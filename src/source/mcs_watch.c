/* The machine-config ClusterOperator, listed and watched for the MCS
 * release (source/mcs_watch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/reload.h"
#include "core/log.h"
#include "source/kube/reflector.h"
#include "source/mcs_watch.h"

struct mcs_watch {
    struct event_base *base;
    config_t *cfg;              /* a reference of its own */
    mcs_watch_publish_fn publish;
    void *arg;
    kube_api_t api;
    bool api_ready;
    kube_reflector_t *reflector;
    json_t *listed;             /* the object as the list under way found it */
    bool answered;              /* a list or a failure since the start */
    bool read;                  /* a list came in whole */
    mcs_release_t current;
    char last_error[MCS_RELEASE_WHY_LEN];
};

static bool is_ours(const json_t *object)
{
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    return name && !strcmp(name, MCS_RELEASE_OPERATOR);
}

/* The reading of object (NULL: absent), handed on when it changed. */
static void take(mcs_watch_t *w, const json_t *object)
{
    mcs_release_t r = mcs_release_of_cluster_operator(object);
    w->answered = true;
    if (mcs_release_equal(&r, &w->current))
        return;
    w->current = r;
    w->publish(w, &w->current, w->arg);
}

static void on_list_begin(void *arg)
{
    mcs_watch_t *w = arg;
    json_decref(w->listed);
    w->listed = NULL;
}

static void on_item(void *arg, json_t *item)
{
    mcs_watch_t *w = arg;
    if (!is_ours(item))
        return;
    json_decref(w->listed);
    w->listed = json_incref(item);
}

static void on_listed(void *arg, const char *rv)
{
    mcs_watch_t *w = arg;
    json_t *object = w->listed;
    w->listed = NULL;
    w->read = true;
    log_msg(LOG_INFO, "mcs_release_listed", "ClusterOperator %s %s (list resourceVersion %s)", MCS_RELEASE_OPERATOR,
            object ? "present" : "absent", rv);
    take(w, object);
    json_decref(object);
}

static void on_event(void *arg, const kube_event_t *ev, uint64_t arrived_ns)
{
    (void)arrived_ns;
    mcs_watch_t *w = arg;
    if (!is_ours(ev->object))
        return;
    take(w, ev->type == KUBE_EVENT_DELETED ? NULL : ev->object);
}

static void on_synced(void *arg) { (void)arg; }

static void on_error(void *arg, const char *why)
{
    mcs_watch_t *w = arg;
    snprintf(w->last_error, sizeof w->last_error, "%s", why);
}

/* Before anything was read: the default, saying why; after, the last
 * reading stands until a list confirms or moves it. */
static void on_failing(void *arg)
{
    mcs_watch_t *w = arg;
    w->answered = true;
    if (w->read)
        return;
    mcs_release_t r = mcs_release_default("cannot read the ClusterOperator " MCS_RELEASE_OPERATOR ": %.200s",
                                          w->last_error[0] ? w->last_error : "the API watch is failing");
    if (mcs_release_equal(&r, &w->current))
        return;
    w->current = r;
    w->publish(w, &w->current, w->arg);
}

bool mcs_watch_wanted(const config_t *cfg)
{
    return cfg->upstream.mcs_release == 0 && cfg->enforcement.source == SOURCE_KIND_KUBERNETES;
}

mcs_watch_t *mcs_watch_new(struct event_base *base, config_t *cfg, mcs_watch_publish_fn publish, void *arg)
{
    mcs_watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->base = base;
    /* Its own reference: the kube_api_t borrows the strings of
     * enforcement.kubernetes. */
    w->cfg = config_ref(cfg);
    w->publish = publish;
    w->arg = arg;
    w->current = mcs_release_default("the ClusterOperator " MCS_RELEASE_OPERATOR " has not been read yet");
    return w;
}

int mcs_watch_start(mcs_watch_t *w, char *err, size_t errlen)
{
    if (kube_api_init(&w->api, &w->cfg->enforcement.kubernetes, err, errlen) < 0) {
        log_msg(LOG_ERROR, "mcs_release_error", "mcs_release: %s", err);
        return -1;
    }
    w->api_ready = true;
    kube_reflector_cfg_t rcfg = {
        .what = "ClusterOperator " MCS_RELEASE_OPERATOR,
        .collection = {MCS_WATCH_PATH, "metadata.name=" MCS_RELEASE_OPERATOR, 0},
        .rbac_hint = "get, list and watch on clusteroperators.config.openshift.io, resourceNames [" MCS_RELEASE_OPERATOR
                     "] (upstream.mcs_release: auto)",
        .watch_timeout_ms = w->cfg->enforcement.kubernetes.watch_timeout_ms,
    };
    static const kube_reflector_cbs_t cbs = {on_list_begin, on_item, on_listed, on_event,
                                             on_synced, on_failing, on_error};
    w->reflector = kube_reflector_new(w->base, &w->api, &rcfg, &cbs, w);
    if (!w->reflector) {
        snprintf(err, errlen, "out of memory");
        log_msg(LOG_ERROR, "mcs_release_error", "mcs_release: out of memory");
        return -1;
    }
    log_json(LOG_INFO, "mcs_release_watch",
             json_pack("{s:s, s:s}", "server", w->api.ep.authority, "clusteroperator", MCS_RELEASE_OPERATOR));
    kube_reflector_start(w->reflector);
    return 0;
}

void mcs_watch_free(mcs_watch_t *w)
{
    if (!w)
        return;
    kube_reflector_free(w->reflector);
    if (w->api_ready)
        kube_api_destroy(&w->api);
    json_decref(w->listed);
    config_unref(w->cfg);
    free(w);
}

const mcs_release_t *mcs_watch_current(const mcs_watch_t *w) { return &w->current; }

bool mcs_watch_answered(const mcs_watch_t *w) { return w->answered; }

int mcs_watch_outdated(const mcs_watch_t *w, const config_t *cfg, char *why, size_t len)
{
    return kube_api_outdated(&w->api, w->api_ready, &w->cfg->enforcement.kubernetes, &cfg->enforcement.kubernetes, why,
                             len);
}
