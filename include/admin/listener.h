/* admin: the loopback admin listener (evhttp on the verdict thread's
 * event_base): GET / (the status page), /healthz, /readyz, /verdict,
 * /held, /metrics, /config and POST /override, on cfg->addr and, if configured, on
 * the unix socket cfg->socket. Reads are open; a change (POST /override)
 * needs the socket or, over TCP, the bearer token of cfg->token_file.
 * Everything it reads lives on that thread, except the
 * workers' counters, which metrics.h makes safe to read from here. */
#ifndef SKEWGATE_ADMIN_H
#define SKEWGATE_ADMIN_H

#include <stddef.h>

#include "conf/config.h"
#include "conf/reload.h"
#include "proxy/metrics.h"
#include "proxy/pace.h"
#include "source/controller.h"
#include "source/machines.h"

struct event_base;
typedef struct admin admin_t;

/* Binds cfg->addr and serves on base; a request must arrive whole within
 * request_timeout_ms (the gate's limits.header_timeout). workers[]
 * (n_workers counters) must outlive the listener; the array itself is
 * copied. NULL with err set. */
admin_t *admin_start(struct event_base *base, const config_admin_t *cfg, uint64_t request_timeout_ms,
                     verdict_ctl_t *ctl,
                     const metrics_worker_t *const *workers, size_t n_workers, char *err, size_t errlen);
/* GET /config and skewgate_config_reloads_total read *reloads (the main
 * thread's, which must outlive the listener). */
void admin_set_reloads(admin_t *a, const config_reloads_t *reloads);
/* admission.machines: /readyz waits for its watch, /verdict shows it as
 * machinesWatch, /metrics renders skewgate_machines_watch_*. *machines
 * (the main thread's slot, which must outlive the listener) is read at
 * each request: the watch running now, NULL when the policy is off. */
void admin_set_machines(admin_t *a, machines_watch_t *const *machines);
/* The gate's pacing line and its configuration slot (both must outlive
 * the listener): /held and /metrics show the line while pace.enabled. */
void admin_set_pace(admin_t *a, pace_room_t *pace, config_t *const *cfg);
/* A reload changed limits.header_timeout: requests from now on, on the
 * TCP listener and the socket. */
void admin_set_request_timeout(admin_t *a, uint64_t request_timeout_ms);
void admin_free(admin_t *a);

#endif
