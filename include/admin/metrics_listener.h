/* admin: the metrics listener, a second, read-only HTTP listener on the
 * main thread's loop beside the admin API: GET/HEAD /metrics (the same
 * exposition as the admin API's /metrics) and /healthz, 404 for any other
 * path, 405 for any other method. It can change nothing, so unlike the
 * admin API it may bind a node address for the cluster's monitoring. */
#ifndef SKEWGATE_ADMIN_METRICS_LISTENER_H
#define SKEWGATE_ADMIN_METRICS_LISTENER_H

#include <stddef.h>

#include "conf/config.h"
#include "conf/reload.h"
#include "proxy/metrics.h"
#include "proxy/pace.h"
#include "source/controller.h"
#include "source/machines.h"

struct event_base;
typedef struct metrics_listener metrics_listener_t;

/* Binds cfg->addr and serves on base; a request must arrive whole within
 * request_timeout_ms (the gate's limits.header_timeout). workers[]
 * (n_workers counters) must outlive the listener; the array itself is
 * copied. NULL with err set. */
metrics_listener_t *metrics_listener_start(struct event_base *base, const config_metrics_t *cfg,
                                           uint64_t request_timeout_ms, verdict_ctl_t *ctl, const metrics_worker_t *const *workers,
                                           size_t n_workers, char *err, size_t errlen);
/* skewgate_config_reloads_total reads *reloads (must outlive m). */
void metrics_listener_set_reloads(metrics_listener_t *m, const config_reloads_t *reloads);
/* skewgate_machines_watch_* read **machines (as admin_set_machines). */
void metrics_listener_set_machines(metrics_listener_t *m, machines_watch_t *const *machines);
/* As admin_set_pace, for /metrics. */
void metrics_listener_set_pace(metrics_listener_t *m, pace_room_t *pace, config_t *const *cfg);
/* A reload changed limits.header_timeout: requests from now on. */
void metrics_listener_set_request_timeout(metrics_listener_t *m, uint64_t request_timeout_ms);
void metrics_listener_free(metrics_listener_t *m);

#endif
