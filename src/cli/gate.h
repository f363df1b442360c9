/* gate: the running gate as the composition root holds it (private to
 * src/cli/): cmd_run.c starts and stops it, gate_reload.c reloads it on
 * SIGHUP. Everything here is the main thread's. */
#ifndef SKEWGATE_CLI_GATE_H
#define SKEWGATE_CLI_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "admin/listener.h"
#include "admin/metrics_listener.h"
#include "conf/config.h"
#include "conf/reload.h"
#include "proxy/token_watch.h"
#include "proxy/pace.h"
#include "proxy/worker.h"
#include "source/controller.h"
#include "source/machines.h"
#include "source/mcs_watch.h"
#include "source/pace_line.h"
#include "source/pace_watch.h"
#include "source/source.h"

typedef struct gate {
    config_t *cfg;              /* the configuration serving now (the main thread's reference) */
    struct event_base *base;
    worker_t *workers;
    unsigned n_workers;
    /* Per cfg->listeners[i]: its id (stable across reloads) and context. */
    uint32_t listener_ids[CONFIG_MAX_LISTENERS];
    uint32_t next_listener_id;
    SSL_CTX *listener_tls[CONFIG_MAX_LISTENERS];
    SSL_CTX *upstream_tls;
    /* The name of cfg's upstream peer, the same in every worker's pool:
     * 0 at start, one more with each reload that changes the peer
     * (config_upstream_same_peer). A per-worker count would not do: a
     * worker that misses a reload (out of memory) would give another
     * peer the same number, and shared fetches are keyed by it. */
    uint32_t upstream_epoch;
    int *listen_fds;            /* n_workers x n_listeners, until the workers take them */
    const held_table_t **held_tables;   /* every worker's, for each worker to read */
    pace_room_t pace;                   /* the scale-up's line, shared by the workers */
    source_t *source;           /* until verdict_ctl_start takes it */
    verdict_ctl_t *ctl;
    admin_t *admin;
    metrics_listener_t *metrics;
    token_watch_t *tokens;      /* admission.token; NULL: the policy is off */
    machines_watch_t *machines; /* admission.machines; NULL when off */
    pace_watch_t *pace_watch;   /* Nodes and CSRs for pace (pace_watch_wanted); NULL when not */
    pace_line_t *pace_line;     /* the shared line (pace_line_wanted, at start only); NULL when not */
    mcs_watch_t *mcs_watch;     /* the machine-config ClusterOperator (mcs_watch_wanted); NULL when not */
    struct event *sig_term, *sig_int, *sig_hup;

    /* Reloads: one at a time; each worker acknowledges on ack_fd. */
    config_reloads_t reloads;
    int ack_fd;
    struct event *ack_ev;
    unsigned acks_pending;
    bool reload_again;          /* a SIGHUP came while one was under way */
} gate_t;

/* gate.c: what the start and a reload share. */

/* The verdict source cfg names, reporting to the gate's controller. NULL
 * when out of memory. */
source_t *gate_new_source(gate_t *g, const config_t *cfg);
/* The admission.machines watch of cfg (which it references), started,
 * publishing its address sets to the workers. NULL with err when out of
 * memory or its API server settings are unusable (logged). */
machines_watch_t *gate_new_machines(gate_t *g, config_t *cfg, char *err, size_t errlen);
/* The pace watch of cfg (which it references), started, handing its views
 * to the gate's room. NULL with err when out of memory or its API server
 * settings are unusable (logged). */
pace_watch_t *gate_new_pace_watch(gate_t *g, config_t *cfg, char *err, size_t errlen);
/* The shared line's Leases watch and writer, the room in shared mode. */
pace_line_t *gate_new_pace_line(gate_t *g, config_t *cfg, char *err, size_t errlen);
/* The machine-config ClusterOperator watch of cfg (which it references),
 * started; its readings move the controller's MCS release while it is
 * g->mcs_watch. NULL with err when out of memory or its API server
 * settings are unusable (logged). */
mcs_watch_t *gate_new_mcs_watch(gate_t *g, config_t *cfg, char *err, size_t errlen);
/* The controller's MCS release for cfg, the configuration serving (or
 * about to): upstream.mcs_release; with g->mcs_watch, what it reads, but
 * until a new watch has answered, a cluster reading the controller already
 * has stays when keep_cluster (a reload against the same API server). */
void gate_set_mcs_release(gate_t *g, const config_t *cfg, bool keep_cluster);
/* machines_publish_fn of the gate (arg): hands set to every worker, the
 * reference taken over. */
void gate_publish_addrset(addrset_t *set, void *arg);
/* Logs a listener the gate now serves, with the port the kernel gave. */
void gate_log_listening(const config_listener_t *lc, const struct sockaddr_storage *ss);
/* check_config_warnings's warn for the gate: a token_file_mode warning in the log. */
void gate_log_warning(const char *msg, void *arg);
/* check_pace_protection's warn for the gate: a pace_unprotected warning in the log. */
void gate_log_pace_warning(const char *msg, void *arg);

/* gate_reload.c, called by cmd_run.c only. */

/* Sets up what reloads need (the acknowledgement eventfd). 0 or -1. */
int gate_reload_init(gate_t *g, char *err, size_t errlen);
void gate_reload_free(gate_t *g);
/* SIGHUP: loads g->cfg->path again and, if it passes `check --files` and
 * changes nothing that needs a restart, serves it (see docs/internals.md,
 * "A reload, through the files"); else logs why and changes nothing. */
void gate_reload(gate_t *g);

#endif
