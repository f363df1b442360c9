/* skewgate run: the gate itself. The main thread runs the verdict source
 * and controller and handles signals; N worker threads serve traffic. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>

#include "cli/cmd.h"
#include "gate.h"
#include "conf/config.h"
#include "core/log.h"
#include "verdict/snapshot.h"
#include "source/source.h"
#include "tls/tls.h"
#include "source/controller.h"
#include "proxy/token_watch.h"
#include "source/machines.h"
#include "proxy/worker.h"
#include "os/socket.h"
#include "core/addr.h"


static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate run -c FILE\n"
            "\n"
            "Starts the gate: listeners, upstream pool, verdict source, workers.\n"
            "  -c, --config FILE   configuration (see conf/skewgate.yaml)\n"
            "\n"
            "Refuses to start (exit 1, naming listeners[N] ADDR) when another process\n"
            "listens on one of its listener addresses; its own workers share each port.\n"
            "\n"
            "Signals: SIGHUP reloads the whole configuration and the TLS certificates\n"
            "without dropping connections (one that fails 'check --files', or adds a\n"
            "listener address another process listens on, is refused and the running\n"
            "one keeps serving; GET /config on the admin listener tells);\n"
            "SIGTERM or SIGINT stop accepting (the listeners close at once, so a new\n"
            "gate can start) and drain in-flight responses up to limits.drain_timeout.\n");
}

static void gate_publish(gate_snapshot_t *snap, void *arg)
{
    gate_t *g = arg;
    for (unsigned i = 0; i < g->n_workers; i++)
        worker_publish_snapshot(&g->workers[i], gate_snapshot_ref(snap));
    gate_snapshot_unref(snap);
}

static void gate_publish_tokens(token_set_t *set, void *arg)
{
    gate_t *g = arg;
    for (unsigned i = 0; i < g->n_workers; i++)
        worker_publish_tokens(&g->workers[i], token_set_ref(set));
    token_set_unref(set);
}

/* The admission policies that read files: a token file that cannot be
 * used at start is an error, not a policy silently off. */
static int gate_admission(gate_t *g, char *err, size_t errlen)
{
    if (g->cfg->admission.token.n_files == 0)
        return 0;
    g->tokens = token_watch_start(g->base, &g->cfg->admission.token, gate_publish_tokens, g, err, errlen);
    return g->tokens ? 0 : -1;
}

/* admission.machines: until its first full list the workers have no set
 * and hold every gated request (UnknownMachine); a reload that builds the
 * watch again publishes an empty set, which holds them the same way. */
static int gate_machines(gate_t *g, char *err, size_t errlen)
{
    if (!g->cfg->admission.machines.enabled)
        return 0;
    g->machines = gate_new_machines(g, g->cfg, err, errlen);
    return g->machines ? 0 : -1;
}

/* pace with the kubernetes source: the Nodes and CSRs watch. Until it has
 * listed them the room counts by join_timeout alone. */
static int gate_pace_watch(gate_t *g, char *err, size_t errlen)
{
    if (!pace_watch_wanted(g->cfg))
        return 0;
    g->pace_watch = gate_new_pace_watch(g, g->cfg, err, errlen);
    if (!g->pace_watch)
        return -1;
    /* The shared line (pace.line, at start only: a reload keeps it). */
    if (!pace_line_wanted(g->cfg))
        return 0;
    g->pace_line = gate_new_pace_line(g, g->cfg, err, errlen);
    return g->pace_line ? 0 : -1;
}

/* upstream.mcs_release auto with the kubernetes source: the
 * machine-config ClusterOperator watch. Until it has read the operator
 * version the release is the default, saying so. */
static int gate_mcs_watch(gate_t *g, char *err, size_t errlen)
{
    if (!mcs_watch_wanted(g->cfg))
        return 0;
    g->mcs_watch = gate_new_mcs_watch(g, g->cfg, err, errlen);
    if (!g->mcs_watch)
        return -1;
    gate_set_mcs_release(g, g->cfg, false);
    return 0;
}

static void gate_on_stop(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    gate_t *g = arg;
    log_msg(LOG_INFO, "stopping", "signal %d: draining for up to %llu ms", (int)sig,
            (unsigned long long)g->cfg->limits.drain_timeout_ms);
    for (unsigned i = 0; i < g->n_workers; i++)
        worker_stop(&g->workers[i]);
    event_base_loopexit(g->base, NULL);
}

static void gate_on_reload(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    gate_reload(arg);
}

/* Every listener gets one SO_REUSEPORT socket per worker, so the kernel
 * spreads connections and no thread hands one to another. SO_REUSEPORT
 * would as well let a second gate (or any process of the same uid that
 * sets it) bind beside a running one and take part of its traffic, so
 * each address is first probed without SO_REUSEPORT
 * (socket_probe_unshared): anything listening there, with SO_REUSEPORT or
 * without, refuses the start, naming the listener, before anything else
 * has started (only the TLS contexts were read before, which starts
 * nothing; the source, the admin listener and the workers come after).
 * Port 0 is not probed: the kernel picks a port no one listens on.
 *
 * The window between the probe's close and the first real bind is
 * microseconds. Whatever binds there without SO_REUSEPORT, or under
 * another uid, still makes that bind fail (EADDRINUSE, refused the same
 * way); only a process of the same uid binding with SO_REUSEPORT in that
 * instant would share the port unnoticed, i.e. two gates started at the
 * same moment on one host, which one systemd unit per host does not do.
 * Once the first socket is bound, every later probe (another gate's
 * start) fails. Closing the window would mean binding the first socket
 * without SO_REUSEPORT, and then no worker's socket could join it. */
static int gate_open_listeners(gate_t *g, char *err, size_t errlen)
{
    size_t nl = g->cfg->n_listeners;
    g->listen_fds = malloc(sizeof *g->listen_fds * nl * g->n_workers);
    if (!g->listen_fds)
        return -1;
    for (size_t i = 0; i < nl * g->n_workers; i++)
        g->listen_fds[i] = -1;
    for (size_t l = 0; l < nl; l++) {
        config_listener_t *lc = &g->cfg->listeners[l];
        struct sockaddr_storage ss = lc->addr.ss;
        g->listener_ids[l] = g->next_listener_id++;
        char why[256];
        /* Validation refuses overlapping listeners in one file, so none of
         * the gate's own sockets opened so far can fail this probe. */
        if (!socket_addr_port_zero(&ss) && socket_probe_unshared(&ss, lc->addr.len, why, sizeof why) < 0) {
            snprintf(err, errlen, "listeners[%zu] %s: %s", l, lc->addr.text, why);
            return -1;
        }
        for (unsigned w = 0; w < g->n_workers; w++) {
            int fd = socket_listen(&ss, lc->addr.len, why, sizeof why);
            if (fd < 0) {
                snprintf(err, errlen, "listeners[%zu] %s: %s", l, lc->addr.text, why);
                return -1;
            }
            g->listen_fds[w * nl + l] = fd;
        }
        gate_log_listening(lc, &ss);
    }
    return 0;
}

static int gate_tls(gate_t *g, char *err, size_t errlen)
{
    for (size_t l = 0; l < g->cfg->n_listeners; l++) {
        if (!g->cfg->listeners[l].tls.enabled)
            continue;
        g->listener_tls[l] = tls_server_ctx_new(&g->cfg->listeners[l].tls, err, errlen);
        if (!g->listener_tls[l])
            return -1;
    }
    if (g->cfg->upstream.tls) {
        if (g->cfg->upstream.insecure_skip_verify)
            log_msg(LOG_WARN, "upstream_tls",
                    "upstream.insecure_skip_verify is set: the MCS certificate is NOT verified");
        g->upstream_tls = tls_client_ctx_new(&g->cfg->upstream, err, errlen);
        if (!g->upstream_tls)
            return -1;
    }
    return 0;
}

static int gate_source(gate_t *g, char *err, size_t errlen)
{
    const config_enforcement_t *e = &g->cfg->enforcement;
    g->ctl = verdict_ctl_new(g->base, e, g->cfg->gate.reject_mode, gate_publish, g);
    if (g->ctl) {
        mcs_release_t release = mcs_release_configured(g->cfg->upstream.mcs_release);
        verdict_ctl_set_mcs_release(g->ctl, &release);
    }
    if (g->ctl)
        g->source = gate_new_source(g, g->cfg);
    if (!g->ctl || !g->source) {
        snprintf(err, errlen, "verdict source: out of memory");
        return -1;
    }
    return 0;
}

/* The admin and metrics listeners share the verdict thread's loop: what
 * they report (verdict, source) lives there; the workers' counters are
 * safe to read. Each is started only if enabled. */
static int gate_http(gate_t *g, char *err, size_t errlen)
{
    const config_t *cfg = g->cfg;
    if (!cfg->admin.enabled && !cfg->metrics.enabled)
        return 0;
    const metrics_worker_t **counters = malloc(g->n_workers * sizeof *counters);
    if (!counters) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < g->n_workers; i++)
        counters[i] = &g->workers[i].env.metrics;
    int rc = 0;
    if (cfg->admin.enabled &&
        !(g->admin = admin_start(g->base, &cfg->admin, cfg->limits.header_timeout_ms, g->ctl, counters, g->n_workers, err, errlen)))
        rc = -1;
    if (rc == 0 && cfg->metrics.enabled &&
        !(g->metrics = metrics_listener_start(g->base, &cfg->metrics, cfg->limits.header_timeout_ms, g->ctl, counters, g->n_workers, err, errlen)))
        rc = -1;
    free(counters);
    if (g->admin) {
        admin_set_reloads(g->admin, &g->reloads);
        admin_set_machines(g->admin, &g->machines);
        admin_set_pace(g->admin, &g->pace, &g->cfg);
    }
    if (g->metrics) {
        metrics_listener_set_reloads(g->metrics, &g->reloads);
        metrics_listener_set_machines(g->metrics, &g->machines);
        metrics_listener_set_pace(g->metrics, &g->pace, &g->cfg);
    }
    return rc;
}

static void gate_free(gate_t *g)
{
    admin_free(g->admin);
    metrics_listener_free(g->metrics);
    token_watch_free(g->tokens);
    if (g->workers) {
        for (unsigned i = 0; i < g->n_workers; i++)
            worker_destroy(&g->workers[i]);
        free(g->workers);
    }
    free(g->held_tables);
    pace_watch_free(g->pace_watch);
    pace_line_free(g->pace_line);
    mcs_watch_free(g->mcs_watch);
    pace_room_destroy(&g->pace);
    machines_watch_free(g->machines);
    if (g->ctl)
        verdict_ctl_free(g->ctl);
    if (g->source)
        source_free(g->source);
    if (g->listen_fds) {
        for (size_t i = 0; i < g->cfg->n_listeners * g->n_workers; i++)
            if (g->listen_fds[i] >= 0 && !g->workers)
                close(g->listen_fds[i]);
        free(g->listen_fds);
    }
    gate_reload_free(g);
    for (size_t l = 0; l < CONFIG_MAX_LISTENERS; l++)
        SSL_CTX_free(g->listener_tls[l]);
    SSL_CTX_free(g->upstream_tls);
    if (g->sig_term)
        event_free(g->sig_term);
    if (g->sig_int)
        event_free(g->sig_int);
    if (g->sig_hup)
        event_free(g->sig_hup);
    if (g->base) {
        /* One more turn for what the loop still owes, or its memory goes
         * with the base: a Kubernetes client, its resolver and a cancelled
         * lookup are freed a turn after kube_client_free. Every event is
         * gone by here (the reaping timers aside), so nothing else runs
         * and nothing is waited for. */
        event_base_loop(g->base, EVLOOP_NONBLOCK);
        event_base_free(g->base);
    }
    config_unref(g->cfg);
}

static int gate_run(gate_t *g)
{
    char err[CONFIG_ERR_LEN];
    g->base = event_base_new();
    if (!g->base || gate_reload_init(g, err, sizeof err) < 0 || gate_tls(g, err, sizeof err) < 0 ||
        gate_open_listeners(g, err, sizeof err) < 0)
        goto fail;
    g->workers = calloc(g->n_workers, sizeof *g->workers);
    if (!g->workers) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < g->n_workers; i++) {
        worker_listen_t ls[CONFIG_MAX_LISTENERS];
        for (size_t l = 0; l < g->cfg->n_listeners; l++)
            ls[l] = (worker_listen_t){g->listener_ids[l], g->listen_fds[(size_t)i * g->cfg->n_listeners + l],
                                      g->listener_tls[l]};
        if (worker_init(&g->workers[i], g->n_workers, g->cfg, ls, g->upstream_tls, err, sizeof err) < 0)
            goto fail;
    }
    g->held_tables = malloc(g->n_workers * sizeof *g->held_tables);
    if (!g->held_tables) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < g->n_workers; i++)
        g->held_tables[i] = &g->workers[i].env.held;
    /* The line outlives reloads; it keeps as many waiting nodes as the
     * held table at start (held.max_clients), past which a newcomer takes
     * the place of the one absent longest (proxy/pace.h). */
    if (pace_room_init(&g->pace, g->cfg->held.max_clients) < 0) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < g->n_workers; i++) {
        g->workers[i].env.held_peers = g->held_tables;
        g->workers[i].env.n_held_peers = g->n_workers;
        g->workers[i].env.pace = &g->pace;
    }
    if (gate_admission(g, err, sizeof err) < 0)
        goto fail;
    /* The controller publishes its first verdict as soon as it exists. */
    if (gate_source(g, err, sizeof err) < 0)
        goto fail;
    /* The first verdict (at worst the when_unknown one) is in place before
     * any worker accepts a connection. */
    source_t *source = g->source;
    g->source = NULL;
    if (verdict_ctl_start(g->ctl, source) < 0) {
        snprintf(err, sizeof err, "verdict source failed to start");
        goto fail;
    }
    for (unsigned i = 0; i < g->n_workers; i++) {
        worker_t *w = &g->workers[i];
        w->env.snapshot = atomic_exchange(&w->next_snapshot, NULL);
        if (!w->env.snapshot) {
            snprintf(err, sizeof err, "no initial verdict");
            goto fail;
        }
        w->env.tokens = atomic_exchange(&w->next_tokens, NULL);
    }
    if (gate_machines(g, err, sizeof err) < 0 || gate_pace_watch(g, err, sizeof err) < 0 ||
        gate_mcs_watch(g, err, sizeof err) < 0)
        goto fail;
    g->sig_term = evsignal_new(g->base, SIGTERM, gate_on_stop, g);
    g->sig_int = evsignal_new(g->base, SIGINT, gate_on_stop, g);
    g->sig_hup = evsignal_new(g->base, SIGHUP, gate_on_reload, g);
    evsignal_add(g->sig_term, NULL);
    evsignal_add(g->sig_int, NULL);
    evsignal_add(g->sig_hup, NULL);
    /* Bound before the workers start, so that a taken port fails cleanly. */
    if (gate_http(g, err, sizeof err) < 0)
        goto fail;
    for (unsigned i = 0; i < g->n_workers; i++)
        if (worker_start(&g->workers[i]) < 0) {
            snprintf(err, sizeof err, "cannot start worker thread %u", i);
            goto fail;
        }
    log_msg(LOG_INFO, "started", "%u workers, upstream %s", g->n_workers, g->cfg->upstream.addr.text);
    event_base_dispatch(g->base);
    for (unsigned i = 0; i < g->n_workers; i++)
        worker_join(&g->workers[i]);
    log_msg(LOG_INFO, "stopped", "all workers drained");
    gate_free(g);
    return 0;
fail:
    log_msg(LOG_ERROR, "start", "%s", err);
    fprintf(stderr, "skewgate run: %s\n", err);
    gate_free(g);
    return 1;
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 'h':
            run_usage(stdout);
            return 0;
        default:
            run_usage(stderr);
            return 2;
        }
    }
    if (!path || optind != argc) {
        run_usage(stderr);
        return 2;
    }
    char err[CONFIG_ERR_LEN];
    gate_t g = {0};
    g.cfg = config_load(path, err, sizeof err);
    if (!g.cfg) {
        fprintf(stderr, "skewgate run: %s\n", err);
        return 2;
    }
    log_set_level(g.cfg->log.level);
    if (check_config_start(g.cfg, err, sizeof err) < 0) {
        log_msg(LOG_ERROR, "start", "%s", err);
        fprintf(stderr, "skewgate run: %s\n", err);
        config_unref(g.cfg);
        return 1;
    }
    check_config_warnings(g.cfg, gate_log_warning, NULL);
    check_pace_protection(g.cfg, gate_log_pace_warning, NULL);
    g.reloads.path = path;
    snprintf(g.reloads.sha256, sizeof g.reloads.sha256, "%s", g.cfg->sha256);
    g.reloads.loaded_at = time(NULL);
    g.ack_fd = -1;
    signal(SIGPIPE, SIG_IGN);
    g.n_workers = config_worker_threads(g.cfg);
    return gate_run(&g);
}
