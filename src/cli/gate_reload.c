/* gate_reload: SIGHUP. The new file is loaded beside the running
 * configuration and everything that can fail is built first (checked
 * files, TLS contexts, the sockets of added listeners, one message per
 * worker, a new admission.machines watch, the new verdict source, started
 * but not yet heard); only then is it committed, which cannot fail: the
 * controller takes the new source, limits and reject mode together and
 * judges them once, each worker gets its message and switches between two
 * events, and the reload counts as done when every worker has
 * acknowledged it. A refused reload leaves nothing changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <event2/event.h>

#include "cli/cmd.h"
#include "core/clock.h"
#include "core/log.h"
#include "gate.h"
#include "os/socket.h"
#include "proxy/exchange.h"
#include "tls/tls.h"

/* What a reload builds before it commits; all of it is undone on refusal. */
typedef struct reload_plan {
    config_t *cfg;
    SSL_CTX *listener_tls[CONFIG_MAX_LISTENERS];
    SSL_CTX *upstream_tls;
    uint32_t upstream_epoch;                    /* g->upstream_epoch once committed */
    uint32_t ids[CONFIG_MAX_LISTENERS];
    bool opened[CONFIG_MAX_LISTENERS];          /* a new listener: its sockets are in msgs */
    struct sockaddr_storage bound[CONFIG_MAX_LISTENERS];
    worker_reload_t **msgs;                     /* one per worker */
    unsigned n_msgs;
    const char *new_source_kind;                /* a new verdict source waits for the commit */
    bool source_ca_changed;                     /* ... with the same settings: its CA file changed */
    source_cluster_t source_cluster;            /* ... reading the same cluster or another */
    /* admission.machines turned on, or against a new connection or other
     * Machines (plan_machines), or turned off; the empty set that holds
     * every client until the new watch has listed (or, turned off,
     * replaces the last set in the workers), and why. */
    machines_watch_t *machines;
    bool machines_stop;                         /* the policy turned off: the running watch goes */
    addrset_t *no_addresses;
    char machines_why[CONFIG_ERR_LEN];
    /* pace's Nodes and CSRs watch: a new one (started, or replacing one
     * against another connection), or the running one stopped. */
    pace_watch_t *pace_watch;
    bool pace_watch_stop;
    char pace_why[CONFIG_ERR_LEN];
    /* The machine-config ClusterOperator watch (upstream.mcs_release:
     * auto with the kubernetes source): a new one, or the running one
     * stopped, as pace's. */
    mcs_watch_t *mcs_watch;
    bool mcs_watch_stop;
    char mcs_why[CONFIG_ERR_LEN];
} reload_plan_t;

static void plan_discard(reload_plan_t *p)
{
    for (unsigned w = 0; p->msgs && w < p->n_msgs; w++)
        worker_reload_free(p->msgs[w]);
    free(p->msgs);
    for (size_t l = 0; l < CONFIG_MAX_LISTENERS; l++)
        SSL_CTX_free(p->listener_tls[l]);
    SSL_CTX_free(p->upstream_tls);
    machines_watch_free(p->machines);
    pace_watch_free(p->pace_watch);
    mcs_watch_free(p->mcs_watch);
    addrset_unref(p->no_addresses);
    config_unref(p->cfg);
}

static int plan_tls(reload_plan_t *p, char *err, size_t errlen)
{
    const config_t *cfg = p->cfg;
    for (size_t l = 0; l < cfg->n_listeners; l++)
        if (cfg->listeners[l].tls.enabled &&
            !(p->listener_tls[l] = tls_server_ctx_new(&cfg->listeners[l].tls, err, errlen)))
            return -1;
    if (cfg->upstream.tls && !(p->upstream_tls = tls_client_ctx_new(&cfg->upstream, err, errlen)))
        return -1;
    return 0;
}

/* One message per worker, its sockets -1 (kept) until a new listener's
 * are opened into them, with everything the worker's switch allocates:
 * made here, a failure refuses the reload before any worker has changed,
 * where one in a worker left it serving the old configuration while it
 * acknowledged the new one. */
static int plan_messages(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    p->msgs = calloc(g->n_workers, sizeof *p->msgs);
    if (!p->msgs) {
        snprintf(err, errlen, "out of memory for the workers' reload messages");
        return -1;
    }
    p->upstream_epoch = g->upstream_epoch + !config_upstream_same_peer(&g->cfg->upstream, &p->cfg->upstream);
    for (unsigned w = 0; w < g->n_workers; w++) {
        worker_reload_t *r = calloc(1, sizeof *r);
        if (r)
            p->msgs[p->n_msgs++] = r;
        if (!r || !(r->gen = exchange_gen_new(p->cfg))) {
            snprintf(err, errlen, "worker %u: out of memory for its reload message", w);
            return -1;
        }
        r->cfg = config_ref(p->cfg);
        r->ack_fd = g->ack_fd;
        r->upstream_epoch = p->upstream_epoch;
        if (p->upstream_tls && SSL_CTX_up_ref(p->upstream_tls))
            r->upstream_tls = p->upstream_tls;
        for (size_t l = 0; l < p->cfg->n_listeners; l++) {
            r->listeners[l].fd = -1;
            if (p->listener_tls[l] && SSL_CTX_up_ref(p->listener_tls[l]))
                r->listeners[l].tls = p->listener_tls[l];
        }
    }
    return 0;
}

/* A listener with the address and TLS-ness of a running one keeps that
 * one's id (the workers keep its sockets); any other is opened now, one
 * SO_REUSEPORT socket per worker, once its address has passed the probe
 * that refuses to share it with another process (socket_probe_unshared,
 * as at start: a reload must not join a port some other listener holds).
 * An address that overlaps a running listener's (the same address with
 * TLS turned on or off, or the wildcard of a running one's port) is not
 * probed: the gate's own sockets hold it, and the probe could not tell
 * them from another's. */
static int plan_listeners(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    bool taken[CONFIG_MAX_LISTENERS] = {false};
    for (size_t l = 0; l < p->cfg->n_listeners; l++) {
        const config_listener_t *lc = &p->cfg->listeners[l];
        size_t k = 0;
        while (k < g->cfg->n_listeners && (taken[k] || !config_listener_same(&g->cfg->listeners[k], lc)))
            k++;
        if (k < g->cfg->n_listeners) {
            taken[k] = true;
            p->ids[l] = g->listener_ids[k];
            continue;
        }
        p->ids[l] = g->next_listener_id++;
        p->opened[l] = true;
        p->bound[l] = lc->addr.ss;
        char why[256];
        bool ours = socket_addr_port_zero(&p->bound[l]);
        for (size_t r = 0; !ours && r < g->cfg->n_listeners; r++)
            ours = socket_addr_overlap(&g->cfg->listeners[r].addr.ss, &p->bound[l]);
        if (!ours && socket_probe_unshared(&p->bound[l], lc->addr.len, why, sizeof why) < 0) {
            snprintf(err, errlen, "listeners[%zu] %s: %s", l, lc->addr.text, why);
            return -1;
        }
        for (unsigned w = 0; w < g->n_workers; w++) {
            int fd = socket_listen(&p->bound[l], lc->addr.len, why, sizeof why);
            if (fd < 0) {
                snprintf(err, errlen, "listeners[%zu] %s: %s", l, lc->addr.text, why);
                return -1;
            }
            p->msgs[w]->listeners[l].fd = fd;
        }
    }
    for (unsigned w = 0; w < g->n_workers; w++)
        for (size_t l = 0; l < p->cfg->n_listeners; l++)
            p->msgs[w]->listeners[l].id = p->ids[l];
    return 0;
}

/* admission.machines is live: a reload that turns it on starts its watch
 * now (against the new configuration, which the watch references), one
 * that turns it off frees the running watch at the commit. A running
 * watch follows the Kubernetes connection as the source does: another
 * server, CA or token path, verification or watch timeout, new bytes in
 * the CA file, or other Machines (namespace, cluster_api, page_size:
 * machines_watch_outdated), and a new watch is started now against the
 * new configuration (the old one goes at the commit); otherwise the
 * running watch stays. The policy turned on, another server (another
 * cluster, whose machines the old addresses do not vouch for) or other
 * Machines watched: an empty set goes out with the commit, and every
 * client is held (UnknownMachine) until the new watch has listed, as at
 * start; the workers may still hold the set of a watch a reload freed
 * long ago. The same server and Machines (a rotated CA, a new token path,
 * timeout or page size) keep the published addresses until the new
 * watch's first list replaces them, as a failing watch keeps them: a CA
 * rotation must not hold every node for a relist. A CA file that cannot
 * be read refuses the reload (check_config_files has just read it, so a
 * race): it is the file the next start needs. */
static int plan_machines(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    const config_admission_machines_t *next = &p->cfg->admission.machines;
    if (!next->enabled) {
        if (!g->machines)
            return 0;
        addrset_builder_t none = {0};
        if (!(p->no_addresses = addrset_build(&none))) {
            snprintf(err, errlen, "admission.machines: out of memory");
            return -1;
        }
        p->machines_stop = true;
        snprintf(p->machines_why, sizeof p->machines_why, "admission.machines.enabled is false");
        return 0;
    }
    bool hold_all;
    if (!g->machines) {
        snprintf(p->machines_why, sizeof p->machines_why, "admission.machines.enabled is true");
        hold_all = true;
    } else {
        int outdated = machines_watch_outdated(g->machines, p->cfg, p->machines_why, sizeof p->machines_why);
        if (outdated < 0) {
            snprintf(err, errlen, "admission.machines: %.400s", p->machines_why);
            return -1;
        }
        if (!outdated)
            return 0;
        hold_all = !config_kube_same_server(&g->cfg->enforcement.kubernetes, &p->cfg->enforcement.kubernetes) ||
                   !config_machines_same_objects(&g->cfg->admission.machines, next);
    }
    addrset_builder_t none = {0};
    if (hold_all && !(p->no_addresses = addrset_build(&none))) {
        snprintf(err, errlen, "admission.machines: out of memory");
        return -1;
    }
    p->machines = gate_new_machines(g, p->cfg, err, errlen);
    return p->machines ? 0 : -1;
}

/* The new watch's first publish comes a loop turn later at the earliest;
 * an empty set (the policy turned on, another server or other Machines)
 * goes before the workers' reload messages, so no request judged after
 * the reload's acknowledgement sees addresses the new watch has not
 * listed. A stopped watch's set is released after them
 * (commit_machines_release). */
static void commit_machines(gate_t *g, reload_plan_t *p)
{
    if (!p->machines && !p->machines_stop)
        return;
    machines_watch_free(g->machines);
    g->machines = p->machines;
    p->machines = NULL;
    if (p->machines_stop) {
        log_msg(LOG_INFO, "reload", "admission.machines: %s: the Machines and Nodes watch stops", p->machines_why);
        return;
    }
    bool hold_all = p->no_addresses != NULL;
    if (hold_all)
        gate_publish_addrset(p->no_addresses, g);
    p->no_addresses = NULL;
    log_msg(LOG_INFO, "reload", "admission.machines: %s: the Machines and Nodes watch starts%s; %s",
            p->machines_why, g->cfg->admission.machines.enabled ? " again" : "",
            hold_all ? "every client is held (UnknownMachine) until it has listed"
                     : "the same server: its addresses stay until it has listed");
}

/* The policy is off in every worker's next message, which each takes
 * before this (worker_on_notify reads a reload before an address set):
 * the last set, which no request reads any more, is freed. */
static void commit_machines_release(gate_t *g, reload_plan_t *p)
{
    if (!p->machines_stop)
        return;
    gate_publish_addrset(p->no_addresses, g);
    p->no_addresses = NULL;
}

/* pace.enabled and enforcement.source are live: the watch starts, stops,
 * or, when its connection changed (pace_watch_outdated, as for the
 * machines watch), is replaced by one against the new configuration. The
 * same connection keeps it, and its view, across the reload. */
static int plan_pace_watch(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    if (!pace_watch_wanted(p->cfg)) {
        p->pace_watch_stop = g->pace_watch != NULL;
        snprintf(p->pace_why, sizeof p->pace_why, "%s",
                 p->cfg->pace.enabled ? "enforcement.source is not kubernetes" : "pace.enabled is false");
        return 0;
    }
    snprintf(p->pace_why, sizeof p->pace_why, "pace.enabled with enforcement.source kubernetes");
    if (g->pace_watch) {
        int outdated = pace_watch_outdated(g->pace_watch, p->cfg, p->pace_why, sizeof p->pace_why);
        if (outdated < 0) {
            snprintf(err, errlen, "pace: %.400s", p->pace_why);
            return -1;
        }
        if (!outdated)
            return 0;
    }
    p->pace_watch = gate_new_pace_watch(g, p->cfg, err, errlen);
    return p->pace_watch ? 0 : -1;
}

/* The old view is dropped with its watch: until the new one has listed,
 * or with none, the room counts by join_timeout alone (it never admits
 * on another connection's, maybe another cluster's, counts). */
static void commit_pace_watch(gate_t *g, reload_plan_t *p)
{
    if (!p->pace_watch && !p->pace_watch_stop)
        return;
    pace_watch_free(g->pace_watch);
    g->pace_watch = p->pace_watch;
    p->pace_watch = NULL;
    pace_room_set_view(&g->pace, NULL, clock_coarse_ms());
    log_msg(LOG_INFO, "reload", "pace: %s: the Nodes and CSRs watch %s", p->pace_why,
            g->pace_watch ? "starts; the room counts by join_timeout until it has listed" : "stops");
}

/* upstream.mcs_release and enforcement.source are live: the
 * ClusterOperator watch starts, stops, or is replaced when its connection
 * changed (mcs_watch_outdated); the same connection keeps it, and its
 * reading, across the reload. */
static int plan_mcs_watch(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    if (!mcs_watch_wanted(p->cfg)) {
        p->mcs_watch_stop = g->mcs_watch != NULL;
        snprintf(p->mcs_why, sizeof p->mcs_why, "%s",
                 p->cfg->upstream.mcs_release ? "upstream.mcs_release names a release"
                                              : "enforcement.source is not kubernetes");
        return 0;
    }
    snprintf(p->mcs_why, sizeof p->mcs_why, "upstream.mcs_release auto with enforcement.source kubernetes");
    if (g->mcs_watch) {
        int outdated = mcs_watch_outdated(g->mcs_watch, p->cfg, p->mcs_why, sizeof p->mcs_why);
        if (outdated < 0) {
            snprintf(err, errlen, "upstream.mcs_release: %.400s", p->mcs_why);
            return -1;
        }
        if (!outdated)
            return 0;
    }
    p->mcs_watch = gate_new_mcs_watch(g, p->cfg, err, errlen);
    return p->mcs_watch ? 0 : -1;
}

/* The new watch, if any, takes over, and the release follows the new
 * configuration (gate_set_mcs_release): until a new watch against the
 * same API server has answered, the old one's cluster reading stays;
 * another server's reading does not. Called before g->cfg moves on. */
static void commit_mcs_watch(gate_t *g, reload_plan_t *p)
{
    bool same_server = g->cfg->enforcement.source == SOURCE_KIND_KUBERNETES &&
                       config_kube_same_server(&g->cfg->enforcement.kubernetes, &p->cfg->enforcement.kubernetes);
    if (p->mcs_watch || p->mcs_watch_stop) {
        mcs_watch_free(g->mcs_watch);
        g->mcs_watch = p->mcs_watch;
        p->mcs_watch = NULL;
        log_msg(LOG_INFO, "reload", "mcs_release: %s: the ClusterOperator watch %s", p->mcs_why,
                g->mcs_watch ? "starts" : "stops");
    }
    gate_set_mcs_release(g, p->cfg, same_server);
}

/* The Kubernetes source moved to another server: another cluster, whose
 * verdict the old view must not decide, as its addresses must not admit
 * in plan_machines. A file names no cluster: a switch between a file and
 * the API keeps the last view until the new source reports. */
static source_cluster_t source_cluster(const config_enforcement_t *running, const config_enforcement_t *next)
{
    bool both_kube = running->source == SOURCE_KIND_KUBERNETES && next->source == SOURCE_KIND_KUBERNETES;
    return both_kube && !config_kube_same_server(&running->kubernetes, &next->kubernetes) ? CLUSTER_OTHER
                                                                                         : CLUSTER_SAME;
}

/* Last of the steps that may fail: a new source starts now and may report
 * at once; the controller keeps that report until the commit, so that it
 * is judged with the new limits and mode, and drops the source if the
 * reload is refused. The same settings keep the source unless a file it
 * read once (its CA) has changed; one that cannot be read refuses the
 * reload, as in plan_machines. */
static int plan_source(gate_t *g, reload_plan_t *p, char *err, size_t errlen)
{
    bool same = config_source_same(&g->cfg->enforcement, &p->cfg->enforcement);
    if (same) {
        int changed = source_files_changed(verdict_ctl_source(g->ctl), err, errlen);
        if (changed <= 0)
            return changed;
    }
    source_t *src = gate_new_source(g, p->cfg);
    p->source_cluster = source_cluster(&g->cfg->enforcement, &p->cfg->enforcement);
    if (verdict_ctl_replace_source(g->ctl, src, p->source_cluster) < 0) {
        snprintf(err, errlen, "enforcement: the new verdict source did not start");
        return -1;
    }
    p->new_source_kind = source_kind(src);
    p->source_ca_changed = same;
    return 0;
}

static void reload_refused(gate_t *g, const char *why)
{
    g->reloads.failure++;
    snprintf(g->reloads.last_error, sizeof g->reloads.last_error, "%s", why);
    g->reloads.failed_at = time(NULL);
    log_msg(LOG_ERROR, "reload", "refused, the running configuration keeps serving: %s", why);
}

/* Cannot fail: from here on the new configuration is the gate's. */
static void reload_commit(gate_t *g, reload_plan_t *p)
{
    if (p->new_source_kind)
        log_msg(LOG_INFO, "reload", "verdict source now %s%s", p->new_source_kind,
                p->source_ca_changed                 ? " (the same settings; its CA file changed)"
                : p->source_cluster == CLUSTER_OTHER ? " (another server: the old cluster's view no longer decides)"
                                                     : "");
    verdict_ctl_reconfigure(g->ctl, &p->cfg->enforcement, p->cfg->gate.reject_mode);
    commit_mcs_watch(g, p);
    log_set_level(p->cfg->log.level);
    if (g->admin)
        admin_set_request_timeout(g->admin, p->cfg->limits.header_timeout_ms);
    if (g->metrics)
        metrics_listener_set_request_timeout(g->metrics, p->cfg->limits.header_timeout_ms);
    commit_machines(g, p);
    commit_pace_watch(g, p);
    g->acks_pending = g->n_workers;
    for (unsigned w = 0; w < g->n_workers; w++) {
        worker_publish_reload(&g->workers[w], p->msgs[w]);
        p->msgs[w] = NULL;
    }
    commit_machines_release(g, p);
    for (size_t l = 0; l < CONFIG_MAX_LISTENERS; l++) {
        SSL_CTX_free(g->listener_tls[l]);
        g->listener_tls[l] = p->listener_tls[l];
        p->listener_tls[l] = NULL;
        g->listener_ids[l] = p->ids[l];
    }
    SSL_CTX_free(g->upstream_tls);
    g->upstream_tls = p->upstream_tls;
    p->upstream_tls = NULL;
    g->upstream_epoch = p->upstream_epoch;
    for (size_t l = 0; l < p->cfg->n_listeners; l++)
        if (p->opened[l])
            gate_log_listening(&p->cfg->listeners[l], &p->bound[l]);
    config_unref(g->cfg);
    g->cfg = p->cfg;
    p->cfg = NULL;
    plan_discard(p);
}

void gate_reload(gate_t *g)
{
    if (g->acks_pending) {
        /* The workers' listener sockets are only known once they took the
         * last reload, so the next one waits for it. */
        g->reload_again = true;
        return;
    }
    char err[CONFIG_ERR_LEN];
    reload_plan_t p = {0};
    p.cfg = config_load(g->reloads.path, err, sizeof err);
    if (!p.cfg || check_config_files(p.cfg, err, sizeof err) < 0 ||
        config_restart_needed(g->cfg, p.cfg, err, sizeof err) < 0 || plan_tls(&p, err, sizeof err) < 0 ||
        plan_messages(g, &p, err, sizeof err) < 0 || plan_listeners(g, &p, err, sizeof err) < 0 ||
        plan_machines(g, &p, err, sizeof err) < 0 || plan_pace_watch(g, &p, err, sizeof err) < 0 ||
        plan_mcs_watch(g, &p, err, sizeof err) < 0 || plan_source(g, &p, err, sizeof err) < 0) {
        /* config_load names the file:line:column itself; the later steps
         * are named after the file too. */
        char named[2 * CONFIG_ERR_LEN];
        bool unnamed = p.cfg && strncmp(err, p.cfg->path, strlen(p.cfg->path));
        snprintf(named, sizeof named, "%s%s%s", unnamed ? p.cfg->path : "", unnamed ? ": " : "", err);
        if (p.new_source_kind)
            verdict_ctl_drop_replacement(g->ctl);
        plan_discard(&p);
        reload_refused(g, named);
        return;
    }
    check_config_warnings(p.cfg, gate_log_warning, NULL);
    check_pace_protection(p.cfg, gate_log_pace_warning, NULL);
    reload_commit(g, &p);
}

/* Every worker serves the new configuration: the reload is done. */
static void reload_on_ack(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    gate_t *g = arg;
    uint64_t n = 0;
    if (read(fd, &n, sizeof n) != (ssize_t)sizeof n)
        return;
    g->acks_pending = n >= g->acks_pending ? 0 : g->acks_pending - (unsigned)n;
    if (g->acks_pending)
        return;
    g->reloads.success++;
    g->reloads.loaded_at = time(NULL);
    g->reloads.last_error[0] = '\0';
    g->reloads.failed_at = 0;
    snprintf(g->reloads.sha256, sizeof g->reloads.sha256, "%s", g->cfg->sha256);
    log_json(LOG_INFO, "reload",
             json_pack("{s:s, s:s, s:s, s:i}", "msg", "configuration reloaded: every worker serves it", "path",
                       g->reloads.path, "sha256", g->reloads.sha256, "listeners", (int)g->cfg->n_listeners));
    if (g->reload_again) {
        g->reload_again = false;
        gate_reload(g);
    }
}

int gate_reload_init(gate_t *g, char *err, size_t errlen)
{
    g->ack_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g->ack_fd < 0 || !(g->ack_ev = event_new(g->base, g->ack_fd, EV_READ | EV_PERSIST, reload_on_ack, g)) ||
        event_add(g->ack_ev, NULL) < 0) {
        snprintf(err, errlen, "reload: cannot make its eventfd");
        return -1;
    }
    return 0;
}

void gate_reload_free(gate_t *g)
{
    if (g->ack_ev)
        event_free(g->ack_ev);
    g->ack_ev = NULL;
    if (g->ack_fd >= 0)
        close(g->ack_fd);
    g->ack_fd = -1;
}
