/* gate: what both the start (cmd_run.c) and a reload (gate_reload.c)
 * build or log the same way, so that neither calls into the other:
 * cmd_run -> gate_reload -> gate, cmd_run -> gate. */
#include <stdio.h>
#include <stdlib.h>
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

/* The shared line's ops: the room, on the main thread. */
static void gate_line_publish(void *arg, pace_shared_t *s)
{
    gate_t *g = arg;
    pace_room_set_shared(&g->pace, s, clock_coarse_ms());
}

static size_t gate_line_plan(void *arg, const char *gate, const pace_line_entry_t *in, size_t n_in, int64_t now_wall,
                             pace_line_entry_t *out, size_t out_cap, size_t *added)
{
    gate_t *g = arg;
    return pace_shared_plan(&g->pace, &g->cfg->pace, gate, in, n_in, now_wall, clock_coarse_ms(), out, out_cap,
                            added);
}

static void gate_line_written(void *arg, bool ok)
{
    gate_t *g = arg;
    pace_shared_written(&g->pace, ok, clock_coarse_ms());
}

static void gate_line_failing(void *arg, const char *why)
{
    gate_t *g = arg;
    pace_room_write_failing(&g->pace, why);
}

static size_t gate_line_take_waiters(void *arg, pace_line_entry_t **out)
{
    gate_t *g = arg;
    pace_claim_t *w = NULL;
    uint32_t n = pace_shared_take_waiters(&g->pace, &w);
    *out = n ? calloc(n, sizeof **out) : NULL;
    if (!*out)
        n = 0;
    for (uint32_t i = 0; i < n; i++)
        (*out)[i] = (pace_line_entry_t){.key = w[i].key, .admitted_wall = w[i].wall};
    free(w);
    return n;
}

static bool gate_line_pending(void *arg)
{
    gate_t *g = arg;
    return pace_shared_pending(&g->pace, &g->cfg->pace, clock_coarse_ms());
}

pace_line_t *gate_new_pace_line(gate_t *g, config_t *cfg, char *err, size_t errlen)
{
    static const pace_line_ops_t ops = {gate_line_publish, gate_line_plan,         gate_line_written,
                                        gate_line_failing, gate_line_take_waiters, gate_line_pending};
    pace_line_t *l = pace_line_new(g->base, cfg, &ops, g);
    if (!l) {
        snprintf(err, errlen, "pace.line: out of memory");
        return NULL;
    }
    char why[512];
    if (pace_line_start(l, why, sizeof why) < 0) {
        pace_line_free(l);
        snprintf(err, errlen, "pace.line: the shared line failed to start: %s", why);
        return NULL;
    }
    pace_room_use_shared(&g->pace, pace_line_bell(l));
    return l;
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
