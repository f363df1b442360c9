/* scrape: the /metrics answer, one renderer for the admin API and the
 * metrics listener (private to src/admin/): the workers' counters, which
 * metrics.h makes safe to read from the main thread, what the verdict
 * controller knows (verdict, source sync and reconnects) and what the
 * admission.machines watch can vouch for, both of the main thread. */
#ifndef SKEWGATE_ADMIN_SCRAPE_H
#define SKEWGATE_ADMIN_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/reload.h"
#include "proxy/metrics.h"
#include "proxy/pace.h"
#include "source/controller.h"
#include "source/machines.h"

struct evhttp_request;

typedef struct scrape {
    verdict_ctl_t *ctl;
    const metrics_worker_t **workers;   /* a copy of the array; the counters are the workers' */
    size_t n_workers;
    const config_reloads_t *reloads;    /* NULL: none counted */
    /* The gate's slot of its admission.machines watch, read at each
     * request (a reload may put another watch there); NULL, or a NULL
     * in it: the policy is off. */
    machines_watch_t *const *machines;
    /* The gate's line and its configuration slot (pace.* is read at each
     * request: a reload turns pacing on or off); NULL: not shown. */
    pace_room_t *pace;
    config_t *const *cfg;
} scrape_t;

/* Copies workers[] (n_workers pointers; the counters must outlive s).
 * 0, or -1 when out of memory. */
int scrape_init(scrape_t *s, verdict_ctl_t *ctl, const metrics_worker_t *const *workers, size_t n_workers);
void scrape_release(scrape_t *s);
/* The workers' held tables merged (held_collect) as of now; 0 or -1
 * when out of memory. The caller releases *out. */
int scrape_held(const scrape_t *s, held_view_t *out);
/* The pacing room as of now into *out (pace_report; with lists, every
 * waiting and joining node: pace_report_release it): 1, 0 when pacing is
 * off (nothing to release), -1 out of memory. */
int scrape_pace(const scrape_t *s, bool lists, pace_report_t *out);
/* GET /metrics: Prometheus text format 0.0.4 (arg: a scrape_t). */
void scrape_metrics(void *arg, struct evhttp_request *req);

#endif
