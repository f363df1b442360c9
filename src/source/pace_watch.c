#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "conf/reload.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/time.h"
#include "source/kube/table.h"
#include "source/pace_watch.h"

/* The node CSRs cluster-machine-approver counts: a new node's kubelet
 * asks first for its client certificate, as the node-bootstrapper, then
 * (that one approved, its Node registered) for its serving certificate,
 * as the node. The approver's own approvals carry its message. */
#define KUBELET_CLIENT_SIGNER "kubernetes.io/kube-apiserver-client-kubelet"
#define KUBELET_SERVING_SIGNER "kubernetes.io/kubelet-serving"
#define NODE_BOOTSTRAPPER "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
#define NODES_GROUP "system:nodes"
#define APPROVER_MESSAGE "This CSR was approved by the Node CSR Approver (cluster-machine-approver)"

/* A Node's record: one byte (Ready), its creation (int64 wall ms), then
 * 16 bytes an address. A CSR's: one byte of CSR_* flags, its creation,
 * and with CSR_APPROVED_OTHER its approval (int64 wall ms). Both as
 * binary jansson strings under the object's name. */
#define NODE_HEAD (1 + sizeof(int64_t))
#define CSR_HEAD (1 + sizeof(int64_t))
enum {
    CSR_UNAPPROVED = 1,         /* a node CSR without an Approved condition: the approver counts it */
    CSR_PENDING_CLIENT = 2,     /* and a bootstrapper client CSR no condition has ended: in V */
    CSR_APPROVED_OTHER = 4,     /* a node CSR another controller approved: counted 30 s after */
};

enum { COLL_NODES, COLL_CSRS, COLL__MAX };

/* While the view cannot be trusted pacing counts blind (each replica
 * floor(M/R), slots free at join_timeout only), so the watch retries at
 * least every 2 s (1-2 s with the backoff's jitter): back within 5 s of
 * the API server with room for a slow list, where the 30 s cap of a
 * backoff doubled through a 20 s outage kept gates blind 13-24 s longer
 * (issue 34; a 4 s cap came back in up to 4.0 s, too close). Two lists
 * of a few hundred objects each 2 s, at most, while the server fails. */
#define PACE_WATCH_MAX_BACKOFF_MS 2000

struct pace_watch {
    struct event_base *base;
    config_t *cfg;              /* a reference of its own */
    pace_publish_fn publish;
    void *arg;
    kube_api_t api;
    bool api_ready;
    kube_table_t colls[COLL__MAX];  /* what: "Nodes", "CSRs" */
    struct event *rebuild_ev;   /* many changes in one loop turn: one view */
    bool trusted;               /* of the last view published, for the log */
    char last_error[PACE_VIEW_WHY_LEN];
};

/* ---- reading the objects (pure) ---------------------------------------- */

static int64_t created_ms(const json_t *object)
{
    const char *ts = json_string_value(json_object_get(json_object_get(object, "metadata"), "creationTimestamp"));
    time_t t;
    if (!ts || time_parse_rfc3339(ts, &t) < 0)
        return 0;
    return (int64_t)t * 1000;
}

/* The condition of that type in status.conditions; NULL: none. */
static const json_t *condition(const json_t *object, const char *type)
{
    const json_t *list = json_object_get(json_object_get(object, "status"), "conditions");
    size_t i;
    const json_t *c;
    json_array_foreach(list, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

int pace_watch_read_node(const json_t *object, pace_node_record_t *out, char *err, size_t errlen)
{
    if (kube_addresses_read(object, &out->addresses, err, errlen) < 0)
        return -1;
    const char *status = json_string_value(json_object_get(condition(object, "Ready"), "status"));
    out->ready = status && !strcmp(status, "True");
    out->created_ms = created_ms(object);
    return 0;
}

static bool has_string(const json_t *list, const char *want)
{
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e) {
        const char *s = json_string_value(e);
        if (s && !strcmp(s, want))
            return true;
    }
    return false;
}

static bool is(const char *s, const char *want)
{
    return s && !strcmp(s, want);
}

int pace_watch_read_csr(const json_t *object, pace_csr_record_t *out, char *err, size_t errlen)
{
    *out = (pace_csr_record_t){0};
    out->name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    if (!out->name || !*out->name) {
        snprintf(err, errlen, "object without metadata.name");
        return -1;
    }
    out->created_ms = created_ms(object);
    const json_t *spec = json_object_get(object, "spec");
    const char *signer = json_string_value(json_object_get(spec, "signerName"));
    bool client = is(signer, KUBELET_CLIENT_SIGNER) && is(json_string_value(json_object_get(spec, "username")),
                                                          NODE_BOOTSTRAPPER);
    out->node_csr = client || (is(signer, KUBELET_SERVING_SIGNER) &&
                               has_string(json_object_get(spec, "groups"), NODES_GROUP));
    /* As the approver: the first condition of type Approved, whatever
     * its status; its time and message. */
    const json_t *approved = condition(object, "Approved");
    out->approved = approved != NULL;
    if (approved) {
        const char *ts = json_string_value(json_object_get(approved, "lastTransitionTime"));
        time_t t;
        if (ts && time_parse_rfc3339(ts, &t) == 0)
            out->approved_ms = (int64_t)t * 1000;
        out->by_approver = is(json_string_value(json_object_get(approved, "message")), APPROVER_MESSAGE);
    }
    /* Pending as kubectl's column says it: none of these conditions. */
    out->pending_client = client && !approved && !condition(object, "Denied") && !condition(object, "Failed");
    return 0;
}

/* ---- the records -------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The creation kept for name (at byte off of its record) when it was
 * first seen without a creationTimestamp; now when it is new. Such an
 * object (never from a real API server) is taken as created when first
 * seen: young, so counted. */
static int64_t first_seen(const json_t *records, const char *name, size_t off)
{
    const json_t *old = json_object_get(records, name);
    int64_t t;
    if (!old || json_string_length(old) < off + sizeof t)
        return wall_ms();
    memcpy(&t, json_string_value(old) + off, sizeof t);
    return t;
}

/* Keeps len bytes as name's record (drops it when !keep); true when
 * that changed records. */
static bool keep_bytes(json_t *records, const char *name, bool keep, const char *bytes, size_t len)
{
    json_t *old = json_object_get(records, name);
    if (!keep)
        return old && json_object_del(records, name) == 0;
    if (old && json_string_length(old) == len && !memcmp(json_string_value(old), bytes, len))
        return false;
    json_t *record = json_stringn_nocheck(bytes, len);
    if (!record || json_object_set_new(records, name, record) < 0) {
        log_msg(LOG_ERROR, "pace_object", "out of memory");
        return false;
    }
    return true;
}

static bool keep_node(void *owner, json_t *records, const json_t *object, bool deleted)
{
    (void)owner;
    pace_node_record_t n;
    char err[256];
    if (pace_watch_read_node(object, &n, err, sizeof err) < 0) {
        log_msg(LOG_WARN, "pace_object", "Nodes: skipped: %s", err);
        return false;
    }
    const char *name = n.addresses.name;
    int64_t created = n.created_ms ? n.created_ms : first_seen(records, name, 1);
    char bytes[NODE_HEAD + KUBE_ADDRESSES_MAX * sizeof(addrset_key_t)];
    bytes[0] = n.ready;
    memcpy(bytes + 1, &created, sizeof created);
    for (size_t i = 0; i < n.addresses.n; i++)
        memcpy(bytes + NODE_HEAD + i * sizeof(addrset_key_t), n.addresses.keys[i].b, sizeof(addrset_key_t));
    return keep_bytes(records, name, !deleted, bytes, NODE_HEAD + n.addresses.n * sizeof(addrset_key_t));
}

static bool keep_csr(void *owner, json_t *records, const json_t *object, bool deleted)
{
    (void)owner;
    pace_csr_record_t r;
    char err[256];
    if (pace_watch_read_csr(object, &r, err, sizeof err) < 0) {
        log_msg(LOG_WARN, "pace_object", "CSRs: skipped: %s", err);
        return false;
    }
    /* Kept: what the approver may count (not its own approvals, nor
     * another's of unknown time: never within its 30 s) and V's. */
    char bytes[CSR_HEAD + sizeof(int64_t)];
    bytes[0] = (char)((r.node_csr && !r.approved ? CSR_UNAPPROVED : 0) | (r.pending_client ? CSR_PENDING_CLIENT : 0) |
                      (r.node_csr && r.approved && !r.by_approver && r.approved_ms ? CSR_APPROVED_OTHER : 0));
    int64_t created = r.created_ms ? r.created_ms : first_seen(records, r.name, 1);
    memcpy(bytes + 1, &created, sizeof created);
    memcpy(bytes + CSR_HEAD, &r.approved_ms, sizeof r.approved_ms);
    size_t len = bytes[0] & CSR_APPROVED_OTHER ? sizeof bytes : CSR_HEAD;
    return keep_bytes(records, r.name, !deleted && bytes[0], bytes, len);
}

/* ---- the view ----------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static bool every_listed(const pace_watch_t *w)
{
    for (size_t i = 0; i < COLL__MAX; i++)
        if (!w->colls[i].listed)
            return false;
    return true;
}

static const kube_table_t *first_failing(const pace_watch_t *w)
{
    for (size_t i = 0; i < COLL__MAX; i++)
        if (w->colls[i].failing)
            return &w->colls[i];
    return NULL;
}

static pace_view_t *build_view(pace_watch_t *w)
{
    pace_view_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    const kube_table_t *failing = first_failing(w);
    v->trusted = every_listed(w) && !failing;
    if (failing)
        snprintf(v->why, sizeof v->why, "the API watch is failing: %.200s", w->last_error[0] ? w->last_error : failing->what);
    else if (!v->trusted)
        snprintf(v->why, sizeof v->why, "the Nodes and CSRs watch has not listed them yet since it started");
    /* Creation times move to the room's clock once, here. */
    int64_t mono = (int64_t)clock_coarse_ms(), to_mono = mono - wall_ms();
    const json_t *nodes = w->colls[COLL_NODES].records, *csrs = w->colls[COLL_CSRS].records;
    v->not_ready_created = malloc((json_object_size(nodes) + 1) * sizeof *v->not_ready_created);
    size_t n_csrs = json_object_size(csrs) + 1;
    v->csr_created = malloc(n_csrs * sizeof *v->csr_created);
    v->approver_created = malloc(n_csrs * sizeof *v->approver_created);
    v->approved_other = malloc(n_csrs * sizeof *v->approved_other);
    v->n_nodes = json_object_size(nodes);
    v->n_machines = -1;
    size_t n_addrs = 0;
    const char *name;
    json_t *record;
    json_object_foreach((json_t *)nodes, name, record)
        n_addrs += (json_string_length(record) - NODE_HEAD) / sizeof(addrset_key_t);
    v->addrs = malloc((n_addrs + 1) * sizeof *v->addrs);
    uint32_t node = 0;
    json_object_foreach((json_t *)nodes, name, record) {
        const char *bytes = json_string_value(record);
        size_t n = (json_string_length(record) - NODE_HEAD) / sizeof(addrset_key_t);
        bool ready = bytes[0];
        int64_t t;
        memcpy(&t, bytes + 1, sizeof t);
        for (size_t i = 0; v->addrs && i < n; i++) {
            pace_view_addr_t *a = &v->addrs[v->n_addrs++];
            memcpy(a->key.b, bytes + NODE_HEAD + i * sizeof a->key, sizeof a->key);
            a->created = t + to_mono;
            a->ready = ready;
            a->node = node;
            a->primary = i == 0;
        }
        node++;
        if (!ready && v->not_ready_created)
            v->not_ready_created[v->n_not_ready++] = t + to_mono;
    }
    json_object_foreach((json_t *)csrs, name, record) {
        if (!v->csr_created || !v->approver_created || !v->approved_other)
            break;
        const char *bytes = json_string_value(record);
        int64_t t;
        memcpy(&t, bytes + 1, sizeof t);
        t += to_mono;
        if (bytes[0] & CSR_PENDING_CLIENT)
            v->csr_created[v->n_csrs++] = t;
        if (bytes[0] & CSR_UNAPPROVED)
            v->approver_created[v->n_approver++] = t;
        if (bytes[0] & CSR_APPROVED_OTHER) {
            int64_t at;
            memcpy(&at, bytes + CSR_HEAD, sizeof at);
            /* Approved 30 s ago or more: never counted again (the room
             * reads these one by one, on every paced request). */
            if (at + to_mono > mono - PACE_APPROVER_APPROVED_MS)
                v->approved_other[v->n_approved_other++] = (pace_view_approved_t){t, at + to_mono};
        }
    }
    if (!v->addrs || !v->not_ready_created || !v->csr_created || !v->approver_created || !v->approved_other) {
        pace_view_free(v);
        return NULL;
    }
    pace_view_sort_addrs(v);
    qsort(v->not_ready_created, v->n_not_ready, sizeof *v->not_ready_created, cmp_i64);
    qsort(v->csr_created, v->n_csrs, sizeof *v->csr_created, cmp_i64);
    qsort(v->approver_created, v->n_approver, sizeof *v->approver_created, cmp_i64);
    return v;
}

static void publish(pace_watch_t *w)
{
    pace_view_t *v = build_view(w);
    if (!v) {
        log_msg(LOG_ERROR, "pace_view", "out of memory: the room keeps the previous view");
        return;
    }
    if (v->trusted != w->trusted)
        log_msg(v->trusted ? LOG_INFO : LOG_WARN, "pace_view", "%s",
                v->trusted ? "pacing counts by the API: every Nodes and CSRs list is in, none failing"
                           : v->why);
    w->trusted = v->trusted;
    log_json(LOG_DEBUG, "pace_view",
             json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I}", "trusted", v->trusted, "nodes",
                       (json_int_t)json_object_size(w->colls[COLL_NODES].records), "addresses",
                       (json_int_t)v->n_addrs, "not_ready",
                       (json_int_t)v->n_not_ready, "pending_csrs", (json_int_t)v->n_csrs, "unapproved_csrs",
                       (json_int_t)v->n_approver, "approved_by_others", (json_int_t)v->n_approved_other));
    w->publish(v, w->arg);
}

static void schedule(pace_watch_t *w)
{
    event_active(w->rebuild_ev, EV_TIMEOUT, 0);
}

static void on_rebuild(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    publish(arg);
}

/* ---- the tables' callbacks ---------------------------------------------- */

/* listed, changed and failing alike: a new view a loop turn later. */
static void on_change(void *owner)
{
    schedule(owner);
}

/* One collection listed: the API server answers. The others, if they
 * wait out a backoff after failing, try now: the view is trusted only
 * once every one has listed, and after a 20 s outage a backoff doubled
 * to 30 s kept two of three gates blind 13-24 s longer (issue 34). */
static void on_listed(void *owner)
{
    pace_watch_t *w = owner;
    for (size_t i = 0; i < COLL__MAX; i++)
        if (w->colls[i].reflector)
            kube_reflector_retry_now(w->colls[i].reflector);
    schedule(w);
}

static void on_error(void *owner, const char *what, const char *why)
{
    pace_watch_t *w = owner;
    snprintf(w->last_error, sizeof w->last_error, "%s: %s", what, why);
}

static const kube_table_ops_t node_ops = {keep_node, on_listed, on_change, on_change, on_error};
static const kube_table_ops_t csr_ops = {keep_csr, on_listed, on_change, on_change, on_error};

/* ---- life --------------------------------------------------------------- */

bool pace_watch_wanted(const config_t *cfg)
{
    return cfg->pace.enabled && cfg->enforcement.source == SOURCE_KIND_KUBERNETES;
}

pace_watch_t *pace_watch_new(struct event_base *base, config_t *cfg, pace_publish_fn publish_fn, void *arg)
{
    pace_watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->base = base;
    /* Its own reference: the kube_api_t borrows the strings of
     * enforcement.kubernetes, and a reload frees the configuration it
     * came from. */
    w->cfg = config_ref(cfg);
    w->publish = publish_fn;
    w->arg = arg;
    int rc = kube_table_init(&w->colls[COLL_NODES], "Nodes", "pace_object", &node_ops, w);
    rc |= kube_table_init(&w->colls[COLL_CSRS], "CSRs", "pace_object", &csr_ops, w);
    w->rebuild_ev = event_new(base, -1, 0, on_rebuild, w);
    if (rc < 0 || !w->rebuild_ev) {
        pace_watch_free(w);
        return NULL;
    }
    return w;
}

int pace_watch_start(pace_watch_t *w, char *err, size_t errlen)
{
    if (kube_api_init(&w->api, &w->cfg->enforcement.kubernetes, err, errlen) < 0) {
        log_msg(LOG_ERROR, "pace_error", "pace: %s", err);
        return -1;
    }
    w->api_ready = true;
    static const char *const paths[COLL__MAX] = {
        "/api/v1/nodes", "/apis/certificates.k8s.io/v1/certificatesigningrequests"};
    static const char *const rbac[COLL__MAX] = {
        "get, list and watch on nodes (core, cluster-wide)",
        "get, list and watch on certificatesigningrequests.certificates.k8s.io (cluster-wide)"};
    static const char *const what[COLL__MAX] = {"Nodes (pace)", "CSRs (pace)"};
    for (size_t i = 0; i < COLL__MAX; i++) {
        /* Pages of 500: a real Node is about 10 KiB, a CSR 1-2 KiB, far
         * below the client's 8 MiB answer limit. */
        kube_reflector_cfg_t rcfg = {
            .what = what[i],
            .collection = {paths[i], NULL, 500},
            .rbac_hint = rbac[i],
            .watch_timeout_ms = w->cfg->enforcement.kubernetes.watch_timeout_ms,
            .max_backoff_ms = PACE_WATCH_MAX_BACKOFF_MS,
        };
        if (kube_table_watch(&w->colls[i], w->base, &w->api, &rcfg) < 0) {
            snprintf(err, errlen, "out of memory");
            log_msg(LOG_ERROR, "pace_error", "pace: out of memory");
            return -1;
        }
    }
    log_json(LOG_INFO, "pace_watch", json_pack("{s:s}", "server", w->api.ep.authority));
    for (size_t i = 0; i < COLL__MAX; i++)
        kube_reflector_start(w->colls[i].reflector);
    /* The first view (nothing listed: not trusted) a loop turn later. */
    schedule(w);
    return 0;
}

void pace_watch_refresh(pace_watch_t *w)
{
    schedule(w);
}

void pace_watch_free(pace_watch_t *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < COLL__MAX; i++)
        kube_table_destroy(&w->colls[i]);
    if (w->rebuild_ev)
        event_free(w->rebuild_ev);
    if (w->api_ready)
        kube_api_destroy(&w->api);
    config_unref(w->cfg);
    free(w);
}

int pace_watch_outdated(const pace_watch_t *w, const config_t *cfg, char *why, size_t len)
{
    return kube_api_outdated(&w->api, w->api_ready, &w->cfg->enforcement.kubernetes, &cfg->enforcement.kubernetes, why,
                             len);
}
