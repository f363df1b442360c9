/* gate: what both the start (cmd_run.c) and a reload (gate_reload.c)
 * build or log the same way, so that neither calls into the other:
 * cmd_run -> gate_reload -> gate, cmd_run -> gate. */
#include <stdio.h>
#include <jansson.h>

#include "core/addr.h"
#include "core/clock.h"
#include "core/log.h"
#include "gate.h"

void gate_log_listening(const config_listener_t *lc, const struct sockaddr_storage *ss)
{
    char host[ADDR_IP_TEXT_LEN];
    addr_ip_text(ss, host, sizeof host);
    unsigned port = addr_port(ss);
    json_t *f = json_pack("{s:s, s:i, s:b}", "host", host, "port", (int)port, "tls", lc->tls.enabled);
    log_json(LOG_INFO, "listening", f);
}

source_t *gate_new_source(gate_t *g, const config_t *cfg)
{
    const config_enforcement_t *e = &cfg->enforcement;
    if (e->source == SOURCE_KIND_KUBERNETES)
        return source_kube_new(g->base, &e->kubernetes, verdict_ctl_on_source, g->ctl);
    return source_file_new(g->base, &e->file, verdict_ctl_on_source, g->ctl);
}

void gate_publish_addrset(addrset_t *set, void *arg)
{
    gate_t *g = arg;
    for (unsigned i = 0; i < g->n_workers; i++)
        worker_publish_addrset(&g->workers[i], addrset_ref(set));
    addrset_unref(set);
    /* The Machines may have changed: the pace view counts them. */
    if (g->pace_watch)
        pace_watch_refresh(g->pace_watch);
}

machines_watch_t *gate_new_machines(gate_t *g, config_t *cfg, char *err, size_t errlen)
{
    machines_watch_t *m = machines_watch_new(g->base, cfg, gate_publish_addrset, g);
    if (!m) {
        snprintf(err, errlen, "admission.machines: out of memory");
        return NULL;
    }
    char why[512];
    if (machines_watch_start(m, why, sizeof why) < 0) {
        machines_watch_free(m);
        snprintf(err, errlen, "admission.machines: the Machines and Nodes watch failed to start: %s", why);
        return NULL;
    }
    return m;
}

/* pace_publish_fn of the gate (arg): the room takes the view over. */
static void gate_publish_pace_view(pace_view_t *view, void *arg)
{
    gate_t *g = arg;
    /* The approver's limit counts the Machines: admission.machines'
     * watch has them (none without it: not counted). */
    view->n_machines = g->machines ? machines_watch_machine_count(g->machines) : -1;
    pace_room_set_view(&g->pace, view, clock_coarse_ms());
}

pace_watch_t *gate_new_pace_watch(gate_t *g, config_t *cfg, char *err, size_t errlen)
{
    pace_watch_t *w = pace_watch_new(g->base, cfg, gate_publish_pace_view, g);
    if (!w) {
        snprintf(err, errlen, "pace: out of memory");
        return NULL;
    }
    char why[512];
    if (pace_watch_start(w, why, sizeof why) < 0) {
        pace_watch_free(w);
        snprintf(err, errlen, "pace: the Nodes and CSRs watch failed to start: %s", why);
        return NULL;
    }
    return w;
}

/* mcs_watch_publish_fn of the gate (arg): only the running watch's
 * readings count; a reload's new watch is asked at the commit. */
static void gate_publish_mcs_release(mcs_watch_t *w, const mcs_release_t *release, void *arg)
{
    gate_t *g = arg;
    if (w == g->mcs_watch)
        verdict_ctl_set_mcs_release(g->ctl, release);
}

mcs_watch_t *gate_new_mcs_watch(gate_t *g, config_t *cfg, char *err, size_t errlen)
{
    mcs_watch_t *w = mcs_watch_new(g->base, cfg, gate_publish_mcs_release, g);
    if (!w) {
        snprintf(err, errlen, "upstream.mcs_release: out of memory");
        return NULL;
    }
    char why[512];
    if (mcs_watch_start(w, why, sizeof why) < 0) {
        mcs_watch_free(w);
        snprintf(err, errlen, "upstream.mcs_release: the ClusterOperator watch failed to start: %s", why);
        return NULL;
    }
    return w;
}

void gate_set_mcs_release(gate_t *g, const config_t *cfg, bool keep_cluster)
{
    if (!g->mcs_watch) {
        mcs_release_t release = mcs_release_configured(cfg->upstream.mcs_release);
        verdict_ctl_set_mcs_release(g->ctl, &release);
        return;
    }
    if (keep_cluster && !mcs_watch_answered(g->mcs_watch) &&
        verdict_ctl_mcs_release(g->ctl)->from == MCS_RELEASE_FROM_CLUSTER)
        return;
    verdict_ctl_set_mcs_release(g->ctl, mcs_watch_current(g->mcs_watch));
}

void gate_log_warning(const char *msg, void *arg)
{
    (void)arg;
    log_msg(LOG_WARN, "token_file_mode", "%s", msg);
}

void gate_log_pace_warning(const char *msg, void *arg)
{
    (void)arg;
    /* One line in the log: check_pace_protection's second line joined. */
    char line[CONFIG_ERR_LEN];
    size_t n = 0;
    for (const char *c = msg; *c && n + 1 < sizeof line; c++) {
        if (*c == '\n') {
            while (c[1] == ' ')
                c++;
            line[n++] = ' ';
        } else {
            line[n++] = *c;
        }
    }
    line[n] = '\0';
    log_msg(LOG_WARN, "pace_unprotected", "%s", line);
}
