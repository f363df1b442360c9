#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "scrape.h"
#include "serve.h"

int scrape_init(scrape_t *s, verdict_ctl_t *ctl, const metrics_worker_t *const *workers, size_t n_workers)
{
    *s = (scrape_t){.ctl = ctl, .n_workers = n_workers};
    s->workers = malloc((n_workers ? n_workers : 1) * sizeof *s->workers);
    if (!s->workers)
        return -1;
    if (n_workers)
        memcpy(s->workers, workers, n_workers * sizeof *s->workers);
    return 0;
}

void scrape_release(scrape_t *s)
{
    free(s->workers);
    s->workers = NULL;
}

int scrape_held(const scrape_t *s, held_view_t *out)
{
    const held_table_t *tables[CONFIG_MAX_WORKERS];
    size_t n = 0;
    for (size_t i = 0; i < s->n_workers && n < CONFIG_MAX_WORKERS; i++)
        if (s->workers[i]->held)
            tables[n++] = s->workers[i]->held;
    return held_collect(tables, n, clock_wall_coarse_ms(), out);
}

int scrape_pace(const scrape_t *s, bool lists, pace_report_t *out)
{
    if (!s->pace || !s->cfg || !(*s->cfg)->pace.enabled)
        return 0;
    return pace_report(s->pace, &(*s->cfg)->pace, clock_coarse_ms(), lists, out) < 0 ? -1 : 1;
}

void scrape_metrics(void *arg, struct evhttp_request *req)
{
    const scrape_t *s = arg;
    held_view_t held;
    if (scrape_held(s, &held) < 0) {
        serve_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    const machines_watch_t *watch = s->machines ? *s->machines : NULL;
    machines_health_t machines = {0};
    if (watch)
        machines_watch_health(watch, &machines);
    /* The lists too: the waiting nodes are counted by pool. */
    pace_report_t pace;
    int pace_on = scrape_pace(s, true, &pace);
    if (pace_on < 0) {
        held_view_release(&held);
        serve_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    metrics_gate_t g = {
        .verdict = verdict_ctl_current(s->ctl),
        .mcs_release = verdict_ctl_mcs_release(s->ctl),
        .source_last_sync = verdict_ctl_last_sync(s->ctl),
        .source_reconnects = verdict_ctl_reconnects(s->ctl),
        .held = &held,
        .held_config = s->cfg && *s->cfg ? &(*s->cfg)->held : NULL,
        .reloads_success = s->reloads ? s->reloads->success : 0,
        .reloads_failure = s->reloads ? s->reloads->failure : 0,
        .machines_on = watch != NULL,
        .machines_synced = machines.state == MACHINES_SYNCED,
        .machines_last_list = machines.last_list,
        .pace = pace_on ? &pace : NULL,
    };
    size_t len;
    char *text = metrics_render(s->workers, s->n_workers, &g, &len);
    held_view_release(&held);
    if (pace_on)
        pace_report_release(&pace);
    if (!text) {
        serve_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    serve_reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}
