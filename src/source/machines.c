#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "conf/reload.h"
#include "core/log.h"
#include "source/kube/addresses.h"
#include "source/kube/table.h"
#include "source/machines.h"

/* One watched collection and what is kept of its objects: name -> record,
 * a binary string (json_stringn_nocheck) of one byte, whether it has a
 * nodeRef, then 16 bytes per address. About 100 bytes an object, where
 * the object itself is 5-20 KiB. */
typedef struct collection {
    struct machines_watch *m;
    const char *kind;           /* for the logs: "Machine", "Node" */
    bool is_node;               /* a Node's addresses are active whatever it says */
    char path[256];
    char what[300];
    char rbac[300];
    kube_table_t table;
} collection_t;

enum { COLL_NODES, COLL_MACHINES, COLL_CAPI_MACHINES, COLL__MAX };

struct machines_watch {
    struct event_base *base;
    config_t *cfg;                  /* a reference of its own */
    machines_publish_fn publish;
    void *arg;
    kube_api_t api;
    bool api_ready;
    collection_t colls[COLL__MAX];
    size_t n_colls;
    struct event *rebuild_ev;   /* many changes in one loop turn: one rebuild */
    bool synced;                /* every collection listed since the start: what ready waits for */
    machines_state_t state;
    double state_since;         /* wall seconds */
    char last_error[1024];      /* "what: why" of the last failure ("" none), kept after it recovers */
    double last_error_at;
};

static double wall_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

/* After each list and failure: the state the admin API and the metrics
 * tell, and since when it holds. */
static void note_state(machines_watch_t *m)
{
    machines_state_t state = m->synced ? MACHINES_SYNCED : MACHINES_SYNCING;
    for (size_t i = 0; i < m->n_colls; i++)
        if (m->colls[i].table.failing)
            state = MACHINES_FAILING;
    if (state != m->state) {
        m->state = state;
        m->state_since = wall_now();
    }
}

static json_t *record_of(const kube_addresses_t *a)
{
    char bytes[1 + KUBE_ADDRESSES_MAX * sizeof(addrset_key_t)];
    bytes[0] = a->has_node_ref ? 1 : 0;
    for (size_t i = 0; i < a->n; i++)
        memcpy(bytes + 1 + i * sizeof(addrset_key_t), a->keys[i].b, sizeof(addrset_key_t));
    return json_stringn_nocheck(bytes, 1 + a->n * sizeof(addrset_key_t));
}

static void schedule_rebuild(machines_watch_t *m)
{
    if (m->synced)
        event_active(m->rebuild_ev, EV_TIMEOUT, 0);
}

/* kube_table_ops_t.keep: the addresses and whether it has a nodeRef. */
static bool keep_object(void *owner, json_t *records, const json_t *object, bool deleted)
{
    collection_t *c = owner;
    kube_addresses_t a;
    char err[256];
    if (kube_addresses_read(object, &a, err, sizeof err) < 0) {
        log_msg(LOG_WARN, "machines_object", "%s: skipped: %s", c->what, err);
        return false;
    }
    if (a.dropped)
        log_msg(LOG_WARN, "machines_object", "%s %.200s: %zu addresses beyond the first %d ignored",
                c->kind, a.name, a.dropped, KUBE_ADDRESSES_MAX);
    if (deleted)
        return json_object_del(records, a.name) == 0;
    json_t *record = record_of(&a);
    if (!record) {
        log_msg(LOG_ERROR, "machines_object", "out of memory");
        return false;
    }
    json_t *old = json_object_get(records, a.name);
    if (old && json_equal(old, record)) {
        json_decref(record);
        return false;
    }
    json_object_set_new(records, a.name, record);
    return true;
}

static void build_and_publish(machines_watch_t *m);

static bool every_collection_listed(const machines_watch_t *m)
{
    for (size_t i = 0; i < m->n_colls; i++)
        if (!m->colls[i].table.listed)
            return false;
    return true;
}

/* The first sync across all collections publishes at once: ready waits
 * for it. */
static void on_listed(void *owner)
{
    collection_t *c = owner;
    machines_watch_t *m = c->m;
    bool first_sync = !m->synced && every_collection_listed(m);
    m->synced = m->synced || first_sync;
    note_state(m);
    if (first_sync)
        build_and_publish(m);
    else
        schedule_rebuild(m);
}

static void on_changed(void *owner)
{
    collection_t *c = owner;
    schedule_rebuild(c->m);
}

static void on_failing(void *owner)
{
    collection_t *c = owner;
    log_msg(LOG_WARN, "machines_failing", "%s: cannot confirm the view; the published addresses stay",
            c->what);
    note_state(c->m);
}

static void on_error(void *owner, const char *what, const char *why)
{
    collection_t *c = owner;
    snprintf(c->m->last_error, sizeof c->m->last_error, "%s: %s", what, why);
    c->m->last_error_at = wall_now();
}

static const kube_table_ops_t collection_ops = {keep_object, on_listed, on_changed, on_failing, on_error};

static void add_records(addrset_builder_t *b, const collection_t *c)
{
    const char *name;
    json_t *record;
    json_object_foreach(c->table.records, name, record) {
        const char *bytes = json_string_value(record);
        size_t n = (json_string_length(record) - 1) / sizeof(addrset_key_t);
        addrset_class_t cls = c->is_node || bytes[0] ? ADDRSET_ACTIVE : ADDRSET_PENDING;
        for (size_t i = 0; i < n; i++) {
            addrset_key_t key;
            memcpy(key.b, bytes + 1 + i * sizeof key, sizeof key);
            addrset_builder_add(b, &key, cls);
        }
    }
}

static void build_and_publish(machines_watch_t *m)
{
    addrset_builder_t b = {0};
    for (size_t i = 0; i < m->n_colls; i++)
        add_records(&b, &m->colls[i]);
    addrset_t *set = addrset_build(&b);
    if (!set) {
        log_msg(LOG_ERROR, "machines_published", "out of memory: the workers keep the previous addresses");
        return;
    }
    size_t machines = 0;
    for (size_t i = 0; i < m->n_colls; i++)
        machines += m->colls[i].is_node ? 0 : json_object_size(m->colls[i].table.records);
    log_json(LOG_INFO, "machines_published",
             json_pack("{s:I, s:I, s:I, s:I, s:I}", "longest_probe", (json_int_t)addrset_longest_probe(set),
                       "pending", (json_int_t)addrset_count(set, ADDRSET_PENDING),
                       "active", (json_int_t)addrset_count(set, ADDRSET_ACTIVE), "machines",
                       (json_int_t)machines, "nodes",
                       (json_int_t)json_object_size(m->colls[COLL_NODES].table.records)));
    m->publish(set, m->arg);
}

static void on_rebuild(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    build_and_publish(arg);
}

static int collection_init(collection_t *c, machines_watch_t *m, const char *kind, const char *group,
                           const char *namespace, bool is_node)
{
    c->m = m;
    c->kind = kind;
    c->is_node = is_node;
    if (is_node) {
        snprintf(c->path, sizeof c->path, "/api/v1/nodes");
        snprintf(c->what, sizeof c->what, "Nodes");
        snprintf(c->rbac, sizeof c->rbac, "get, list and watch on nodes (core, cluster-wide)");
    } else {
        snprintf(c->path, sizeof c->path, "/apis/%s/v1beta1/namespaces/%s/machines", group, namespace);
        snprintf(c->what, sizeof c->what, "Machines (%s) in %s", group, namespace);
        snprintf(c->rbac, sizeof c->rbac, "get, list and watch on machines.%s in namespace %s", group,
                 namespace);
    }
    return kube_table_init(&c->table, c->what, "machines_object", &collection_ops, c);
}

machines_watch_t *machines_watch_new(struct event_base *base, config_t *cfg,
                                     machines_publish_fn publish, void *arg)
{
    machines_watch_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base = base;
    /* Its own reference: a reload frees the configuration it came from
     * (a reload that turns admission.machines off frees the watch; other
     * Machines or a new enforcement.kubernetes get a new watch,
     * machines_watch_outdated). */
    m->cfg = config_ref(cfg);
    m->publish = publish;
    m->arg = arg;
    const config_admission_machines_t *am = &cfg->admission.machines;
    int rc = collection_init(&m->colls[COLL_NODES], m, "Node", "", "", true);
    rc |= collection_init(&m->colls[COLL_MACHINES], m, "Machine", "machine.openshift.io", am->namespace, false);
    m->n_colls = 2;
    if (am->cluster_api)
        rc |= collection_init(&m->colls[m->n_colls++], m, "Machine", "cluster.x-k8s.io",
                              am->cluster_api_namespace, false);
    m->rebuild_ev = event_new(base, -1, 0, on_rebuild, m);
    if (rc < 0 || !m->rebuild_ev) {
        machines_watch_free(m);
        return NULL;
    }
    return m;
}

int machines_watch_start(machines_watch_t *m, char *err, size_t errlen)
{
    if (kube_api_init(&m->api, &m->cfg->enforcement.kubernetes, err, errlen) < 0) {
        log_msg(LOG_ERROR, "machines_error", "admission.machines: %s", err);
        return -1;
    }
    m->api_ready = true;
    m->state_since = wall_now();
    for (size_t i = 0; i < m->n_colls; i++) {
        collection_t *c = &m->colls[i];
        kube_reflector_cfg_t rcfg = {
            .what = c->what,
            .collection = {c->path, NULL, m->cfg->admission.machines.page_size},
            .rbac_hint = c->rbac,
            .watch_timeout_ms = m->cfg->enforcement.kubernetes.watch_timeout_ms,
        };
        if (kube_table_watch(&c->table, m->base, &m->api, &rcfg) < 0) {
            snprintf(err, errlen, "out of memory");
            log_msg(LOG_ERROR, "machines_error", "admission.machines: out of memory");
            return -1;
        }
    }
    log_json(LOG_INFO, "machines_watch",
             json_pack("{s:s, s:s, s:b, s:s, s:i}", "server", m->api.ep.authority, "namespace",
                       m->cfg->admission.machines.namespace, "cluster_api", m->cfg->admission.machines.cluster_api,
                       "cluster_api_namespace", m->cfg->admission.machines.cluster_api_namespace,
                       "page_size", (int)m->cfg->admission.machines.page_size));
    for (size_t i = 0; i < m->n_colls; i++)
        kube_reflector_start(m->colls[i].table.reflector);
    return 0;
}

void machines_watch_free(machines_watch_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < COLL__MAX; i++)
        kube_table_destroy(&m->colls[i].table);
    if (m->rebuild_ev)
        event_free(m->rebuild_ev);
    if (m->api_ready)
        kube_api_destroy(&m->api);
    config_unref(m->cfg);
    free(m);
}

const char *machines_state_name(machines_state_t state)
{
    static const char *const names[] = {
        [MACHINES_SYNCING] = "syncing", [MACHINES_SYNCED] = "synced", [MACHINES_FAILING] = "failing",
    };
    return names[state];
}

void machines_watch_health(const machines_watch_t *m, machines_health_t *out)
{
    *out = (machines_health_t){.state = m->state, .since = m->state_since,
                               .last_error = m->last_error[0] ? m->last_error : NULL,
                               .last_error_at = m->last_error_at};
    if (!m->synced)
        return;
    out->last_list = m->colls[0].table.listed_at;
    for (size_t i = 1; i < m->n_colls; i++)
        if (m->colls[i].table.listed_at < out->last_list)
            out->last_list = m->colls[i].table.listed_at;
}

bool machines_watch_ready(const machines_watch_t *m, const char **why)
{
    if (m->synced)
        return true;
    *why = MACHINES_NOT_READY_PREFIX "the Machines and Nodes watch has not listed them since it (re)started; "
           "every gated client is held (UnknownMachine)";
    return false;
}

int64_t machines_watch_machine_count(const machines_watch_t *m)
{
    if (!m->synced)
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < m->n_colls; i++)
        n += m->colls[i].is_node ? 0 : (int64_t)json_object_size(m->colls[i].table.records);
    return n;
}

int machines_watch_outdated(const machines_watch_t *m, const config_t *cfg, char *why, size_t len)
{
    if (config_kube_same(&m->cfg->enforcement.kubernetes, &cfg->enforcement.kubernetes) &&
        !config_machines_same(&m->cfg->admission.machines, &cfg->admission.machines)) {
        snprintf(why, len, "admission.machines changed");
        return 1;
    }
    return kube_api_outdated(&m->api, m->api_ready, &m->cfg->enforcement.kubernetes, &cfg->enforcement.kubernetes, why,
                             len);
}

__attribute__((format(printf, 4, 5)))
static void append_line(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    *at += n > 0 ? (size_t)n : 0;
}

void machines_watch_rbac(const config_t *cfg, char *buf, size_t len)
{
    const config_admission_machines_t *am = &cfg->admission.machines;
    size_t at = 0;
    buf[0] = '\0';
    if (cfg->enforcement.source == SOURCE_KIND_KUBERNETES)
        append_line(buf, len, &at, "  ClusterRole: apiGroups [operator.openshift.io] resources "
                    "[machineconfigurations] verbs [get list watch] (enforcement.source: kubernetes)\n");
    /* upstream.mcs_release auto (source/mcs_watch.c): the one ClusterOperator;
     * its watch carries fieldSelector=metadata.name=machine-config, so the
     * resourceNames rule authorises list and watch too. */
    if (cfg->upstream.mcs_release == 0 && cfg->enforcement.source == SOURCE_KIND_KUBERNETES)
        append_line(buf, len, &at, "  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] "
                    "resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)\n");
    /* pace's watch (source/pace_watch.c): Nodes Ready, kubelet CSRs pending. */
    if (cfg->pace.enabled && cfg->enforcement.source == SOURCE_KIND_KUBERNETES) {
        append_line(buf, len, &at, "  ClusterRole: apiGroups [\"\"] resources [nodes] verbs [get list watch] (pace)\n");
        append_line(buf, len, &at, "  ClusterRole: apiGroups [certificates.k8s.io] resources [certificatesigningrequests] "
                    "verbs [get list watch] (pace)\n");
    }
    if (!am->enabled)
        return;
    append_line(buf, len, &at, "  ClusterRole: apiGroups [\"\"] resources [nodes] verbs [get list watch] "
                "(admission.machines)\n");
    append_line(buf, len, &at, "  Role in %s: apiGroups [machine.openshift.io] resources [machines] "
                "verbs [get list watch] (admission.machines)\n", am->namespace);
    if (am->cluster_api)
        append_line(buf, len, &at, "  Role in %s: apiGroups [cluster.x-k8s.io] resources [machines] "
                    "verbs [get list watch] (admission.machines.cluster_api)\n", am->cluster_api_namespace);
}
