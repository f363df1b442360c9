#include <stdio.h>
#include <stdlib.h>
#include <event2/http.h>

#include "admin/metrics_listener.h"
#include "scrape.h"
#include "serve.h"

struct metrics_listener {
    serve_t *serve;
    scrape_t scrape;
};

/* Handlers get the scrape_t; /healthz needs nothing. No route mutates. */
static const serve_route_t metrics_route_table[] = {
    {"/metrics", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", scrape_metrics},
    {"/healthz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", serve_healthz},
};
static const serve_routes_t metrics_routes = {
    metrics_route_table, sizeof metrics_route_table / sizeof metrics_route_table[0],
    "not found: /metrics /healthz",
};

metrics_listener_t *metrics_listener_start(struct event_base *base, const config_metrics_t *cfg,
                                           uint64_t request_timeout_ms, verdict_ctl_t *ctl, const metrics_worker_t *const *workers,
                                           size_t n_workers, char *err, size_t errlen)
{
    metrics_listener_t *m = calloc(1, sizeof *m);
    if (!m || scrape_init(&m->scrape, ctl, workers, n_workers) < 0) {
        snprintf(err, errlen, "metrics listener: out of memory");
        metrics_listener_free(m);
        return NULL;
    }
    m->serve = serve_start(base, &cfg->addr, "metrics", request_timeout_ms, &metrics_routes, &m->scrape, err, errlen);
    if (!m->serve) {
        metrics_listener_free(m);
        return NULL;
    }
    return m;
}

void metrics_listener_set_reloads(metrics_listener_t *m, const config_reloads_t *reloads)
{
    m->scrape.reloads = reloads;
}

void metrics_listener_set_machines(metrics_listener_t *m, machines_watch_t *const *machines)
{
    m->scrape.machines = machines;
}

void metrics_listener_set_pace(metrics_listener_t *m, pace_room_t *pace, config_t *const *cfg)
{
    m->scrape.pace = pace;
    m->scrape.cfg = cfg;
}

void metrics_listener_set_request_timeout(metrics_listener_t *m, uint64_t request_timeout_ms)
{
    serve_set_request_timeout(m->serve, request_timeout_ms);
}

void metrics_listener_free(metrics_listener_t *m)
{
    if (!m)
        return;
    serve_free(m->serve);
    scrape_release(&m->scrape);
    free(m);
}
