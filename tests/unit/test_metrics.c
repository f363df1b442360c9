#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/metrics.h"

#define MS 1000000ull

static metrics_worker_t workers[2];
static verdict_t verdict;

static void reset(void)
{
    memset(workers, 0, sizeof workers);
    memset(&verdict, 0, sizeof verdict);
    verdict.decision = DECISION_REJECT;
    verdict.reason = REASON_OUT_OF_SKEW;
    strcpy(verdict.mode, "Automatic");
}

TestSuite(metrics, .init = reset);

static char *render(size_t n_workers)
{
    const metrics_worker_t *w[2] = {&workers[0], &workers[1]};
    metrics_gate_t g = {.verdict = &verdict, .source_last_sync = 1700000000.5, .source_reconnects = 4};
    size_t len;
    char *text = metrics_render(w, n_workers, &g, &len);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), len);
    return text;
}

static void assert_has(const char *text, const char *line)
{
    cr_assert_not_null(strstr(text, line), "missing \"%s\" in:\n%s", line, text);
}

Test(metrics, label_values_are_escaped)
{
    metrics_request(&workers[0], "a\"b\\c\nd", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[0], "caf\xc3\xa9", REQUEST_REJECT, 503, MS);
    char *text = render(1);
    assert_has(text, "skewgate_requests_total{pool=\"a\\\"b\\\\c\\nd\",decision=\"admit\",code=\"200\"} 1\n");
    /* Bytes outside ASCII become the text \xHH: the exposition stays ASCII. */
    assert_has(text, "skewgate_requests_total{pool=\"caf\\\\xc3\\\\xa9\",decision=\"reject\",code=\"503\"} 1\n");
    free(text);
}

Test(metrics, histogram_buckets_are_cumulative_and_inf_is_the_count)
{
    metrics_request(&workers[0], "worker", REQUEST_ADMIT, 200, MS / 10);      /* 0.1 ms */
    metrics_request(&workers[0], "worker", REQUEST_ADMIT, 200, 3 * MS);       /* 3 ms */
    metrics_request(&workers[0], "worker", REQUEST_ADMIT, 200, 500 * MS / 1000);  /* exactly 0.0005 s: le */
    metrics_request(&workers[0], "worker", REQUEST_ADMIT, 200, 20000 * MS);   /* 20 s */
    char *text = render(1);
    assert_has(text, "skewgate_request_duration_seconds_bucket{le=\"0.0005\"} 2\n");
    assert_has(text, "skewgate_request_duration_seconds_bucket{le=\"0.0025\"} 2\n");
    assert_has(text, "skewgate_request_duration_seconds_bucket{le=\"0.005\"} 3\n");
    assert_has(text, "skewgate_request_duration_seconds_bucket{le=\"10\"} 3\n");
    assert_has(text, "skewgate_request_duration_seconds_bucket{le=\"+Inf\"} 4\n");
    assert_has(text, "skewgate_request_duration_seconds_count 4\n");
    assert_has(text, "skewgate_request_duration_seconds_sum 20.003600000\n");
    free(text);
}

Test(metrics, sums_across_workers_by_pool_name)
{
    /* The workers meet the pools in different orders. */
    metrics_request(&workers[0], "worker", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[0], "master", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[1], "master", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[1], "worker", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[1], "worker", REQUEST_ADMIT, 200, MS);
    metrics_request(&workers[1], "", REQUEST_ERROR, 400, 0);
    metrics_upstream_error(&workers[0], METRICS_UP_TIMEOUT);
    metrics_upstream_error(&workers[1], METRICS_UP_TIMEOUT);
    metrics_conn_opened(&workers[0], true);
    metrics_conn_opened(&workers[1], true);
    metrics_conn_opened(&workers[1], false);
    metrics_conn_closed(&workers[1], true);
    char *text = render(2);
    assert_has(text, "skewgate_requests_total{pool=\"worker\",decision=\"admit\",code=\"200\"} 3\n");
    assert_has(text, "skewgate_requests_total{pool=\"master\",decision=\"admit\",code=\"200\"} 2\n");
    assert_has(text, "skewgate_requests_total{pool=\"\",decision=\"error\",code=\"400\"} 1\n");
    assert_has(text, "skewgate_request_duration_seconds_count 6\n");
    assert_has(text, "skewgate_upstream_errors_total{kind=\"timeout\"} 2\n");
    assert_has(text, "skewgate_upstream_errors_total{kind=\"connect\"} 0\n");
    assert_has(text, "skewgate_connections{state=\"tls\"} 1\n");
    assert_has(text, "skewgate_connections{state=\"plain\"} 1\n");
    assert_has(text, "skewgate_connections_accepted_total 3\n");
    cr_assert_null(strstr(text + (strstr(text, "pool=\"worker\"") - text) + 1, "pool=\"worker\""),
                   "one series per pool:\n%s", text);
    free(text);
}

Test(metrics, pools_past_the_table_count_as_other)
{
    char name[16];
    for (int i = 0; i < METRICS_POOLS + 3; i++) {
        snprintf(name, sizeof name, "pool%d", i);
        metrics_request(&workers[0], name, REQUEST_ADMIT, 200, MS);
    }
    metrics_request(&workers[0], "pool0", REQUEST_ADMIT, 200, MS);
    /* A client's pool named "other" shares the overflow's series. */
    metrics_request(&workers[1], "other", REQUEST_ADMIT, 200, MS);
    char *text = render(2);
    assert_has(text, "skewgate_requests_total{pool=\"pool0\",decision=\"admit\",code=\"200\"} 2\n");
    assert_has(text, "skewgate_requests_total{pool=\"pool15\",decision=\"admit\",code=\"200\"} 1\n");
    cr_assert_null(strstr(text, "pool=\"pool16\""), "%s", text);
    assert_has(text, "skewgate_requests_total{pool=\"other\",decision=\"admit\",code=\"200\"} 4\n");
    free(text);
}

Test(metrics, codes_outside_the_table_count_by_class)
{
    metrics_request(&workers[0], "w", REQUEST_PASS, 418, MS);
    metrics_request(&workers[0], "w", REQUEST_PASS, 299, MS);
    metrics_request(&workers[0], "w", REQUEST_PASS, 0, MS);
    char *text = render(1);
    assert_has(text, "skewgate_requests_total{pool=\"w\",decision=\"pass\",code=\"4xx\"} 1\n");
    assert_has(text, "skewgate_requests_total{pool=\"w\",decision=\"pass\",code=\"2xx\"} 1\n");
    assert_has(text, "skewgate_requests_total{pool=\"w\",decision=\"pass\",code=\"other\"} 1\n");
    free(text);
}

Test(metrics, verdict_and_source)
{
    char *text = render(1);
    assert_has(text, "# TYPE skewgate_verdict_admit gauge\nskewgate_verdict_admit 0\n");
    assert_has(text, "skewgate_verdict_info{reason=\"OutOfSkew\",mode=\"Automatic\"} 1\n");
    assert_has(text, "skewgate_skew_enforcement_none 0\n");
    assert_has(text, "skewgate_source_last_sync_timestamp_seconds 1700000000.500\n");
    assert_has(text, "# TYPE skewgate_source_reconnects_total counter\nskewgate_source_reconnects_total 4\n");
    free(text);
}

Test(metrics, upstream_failures_by_kind)
{
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_UPSTREAM_CONNECT_TIMEOUT), METRICS_UP_TIMEOUT);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_UPSTREAM_TIMEOUT), METRICS_UP_TIMEOUT);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_UPSTREAM_CONNECT), METRICS_UP_CONNECT);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_UPSTREAM_TLS_HANDSHAKE), METRICS_UP_CONNECT);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_UPSTREAM_CLOSED), METRICS_UP_CLOSED);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_BAD_UPSTREAM_RESPONSE), METRICS_UP_BAD_RESPONSE);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_QUEUE_FULL), METRICS_UP_QUEUE_FULL);
    cr_assert_eq(gate_reason_upstream_kind(GATE_REASON_REQUEST_TOO_LARGE), METRICS_UP_OTHER);
}

Test(metrics, every_reason_has_a_name)
{
    cr_assert_null(gate_reason_name(GATE_REASON_NONE));
    for (int r = GATE_REASON_NONE + 1; r < GATE_REASON__COUNT; r++) {
        const char *name = gate_reason_name((gate_reason_t)r);
        cr_assert_not_null(name, "reason %d has no name", r);
        for (int q = GATE_REASON_NONE + 1; q < r; q++)
            cr_assert_str_neq(name, gate_reason_name((gate_reason_t)q), "two reasons named %s", name);
    }
    cr_assert_str_eq(request_decision_name(REQUEST_ERROR), "error");
    cr_assert_str_eq(request_decision_name(REQUEST_PASS), "pass");
}

Test(metrics, held_clients_by_pool_and_reason)
{
    held_entry_t entries[6] = {0};
    strcpy(entries[0].pool, "worker");
    strcpy(entries[0].reason, "OutOfSkew");
    entries[0].status = HELD_STATUS;
    entries[1] = entries[0];
    entries[2] = entries[0];
    entries[2].admitted_ms = 1;     /* admitted: no longer held */
    strcpy(entries[3].pool, "in\"fra");
    strcpy(entries[3].reason, "UnknownMachine");
    entries[3].status = HELD_STATUS;
    entries[4] = entries[0];
    entries[4].status = 403;        /* reject.mode deny: turned away, not held */
    entries[5] = entries[0];
    entries[5].status = 200;        /* reject.mode explain: the same */
    strcpy(entries[1].reason, "Un\"known");     /* reasons are escaped too */
    held_view_t held = {.entries = entries, .n = 6, .n_held = 3, .admitted_after_hold = 5, .overflow = 2};
    const metrics_worker_t *w[1] = {&workers[0]};
    /* A pool not in held.pools (the client's word) is "other" (issue 26). */
    config_held_t pools = {.pools = {"worker"}, .n_pools = 1};
    metrics_gate_t g = {.verdict = &verdict, .held = &held, .held_config = &pools};
    size_t len;
    char *text = metrics_render(w, 1, &g, &len);
    cr_assert_not_null(text);
    assert_has(text, "# TYPE skewgate_held_clients gauge\n");
    assert_has(text, "skewgate_held_clients{pool=\"worker\",reason=\"OutOfSkew\"} 1\n");
    assert_has(text, "skewgate_held_clients{pool=\"worker\",reason=\"Un\\\"known\"} 1\n");
    assert_has(text, "skewgate_held_clients{pool=\"other\",reason=\"UnknownMachine\"} 1\n");
    cr_expect_null(strstr(text, "fra"), "%s", text);
    assert_has(text, "# TYPE skewgate_admitted_after_hold_total counter\nskewgate_admitted_after_hold_total 5\n");
    assert_has(text, "skewgate_held_overflow_total 2\n");
    free(text);
}

/* Issue 26: a request's pool is the last segment of a path any client
 * chooses; each made-up one was a series of its own. Only the pools of
 * held.pools are named, in its order, the rest counted as "other". */
static held_entry_t *held_entries(size_t n, const char *reason_b)
{
    held_entry_t *e = calloc(n, sizeof *e);
    cr_assert_not_null(e);
    for (size_t i = 0; i < n; i++) {
        if (i % 4 == 0)
            strcpy(e[i].pool, "worker");
        else if (i % 4 == 1)
            strcpy(e[i].pool, "master");
        else
            snprintf(e[i].pool, sizeof e[i].pool, "made-up-%zu", i);
        strcpy(e[i].reason, i % 3 ? "OutOfSkew" : reason_b);
        e[i].status = HELD_STATUS;
    }
    return e;
}

static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, prefix)); p++)
        n += p == text || p[-1] == '\n';
    return n;
}

Test(metrics, held_clients_name_only_the_configured_pools)
{
    enum { N = 800 };
    held_entry_t *entries = held_entries(N, "UnknownMachine");
    held_view_t held = {.entries = entries, .n = N, .n_held = N};
    const metrics_worker_t *w[1] = {&workers[0]};
    config_held_t pools = {.pools = {"master", "worker"}, .n_pools = 2};
    metrics_gate_t g = {.verdict = &verdict, .held = &held, .held_config = &pools};
    size_t len;
    char *text = metrics_render(w, 1, &g, &len);
    cr_assert_not_null(text);
    cr_expect_null(strstr(text, "made-up"), "a made-up pool is a series");
    cr_expect_eq(count_lines(text, "skewgate_held_clients{"), 6, "%s", strstr(text, "skewgate_held_clients{"));
    /* i % 4 picks the pool, i % 3 the reason: of 800, 200 each pool, 400 other. */
    assert_has(text, "skewgate_held_clients{pool=\"master\",reason=\"OutOfSkew\"} 134\n"
                     "skewgate_held_clients{pool=\"master\",reason=\"UnknownMachine\"} 66\n"
                     "skewgate_held_clients{pool=\"worker\",reason=\"OutOfSkew\"} 133\n"
                     "skewgate_held_clients{pool=\"worker\",reason=\"UnknownMachine\"} 67\n"
                     "skewgate_held_clients{pool=\"other\",reason=\"OutOfSkew\"} 266\n"
                     "skewgate_held_clients{pool=\"other\",reason=\"UnknownMachine\"} 134\n");
    free(text);
    /* No held.pools at all: every held node is "other". */
    g.held_config = NULL;
    text = metrics_render(w, 1, &g, &len);
    cr_assert_not_null(text);
    cr_expect_eq(count_lines(text, "skewgate_held_clients{"), 2);
    assert_has(text, "skewgate_held_clients{pool=\"other\",reason=\"OutOfSkew\"} 533\n");
    free(text);
    free(entries);
}

/* Issue 26: the rendering compared each entry with every series found so
 * far, quadratic with made-up pools (2.9 s at 32,768 entries). Counted,
 * not timed: the pool compares and series probes per entry stay bounded
 * by held.pools and a few probes, whatever the number of entries. */
Test(metrics, held_clients_render_in_linear_time)
{
    static const size_t sizes[] = {4096, 32768};
    uint64_t steps[2];
    const metrics_worker_t *w[1] = {&workers[0]};
    config_held_t pools = {.pools = {"master", "worker"}, .n_pools = 2};
    for (size_t k = 0; k < 2; k++) {
        held_entry_t *entries = held_entries(sizes[k], "UnknownMachine");
        held_view_t held = {.entries = entries, .n = sizes[k], .n_held = sizes[k]};
        metrics_gate_t g = {.verdict = &verdict, .held = &held, .held_config = &pools};
        size_t len;
        char *text = metrics_render(w, 1, &g, &len);
        cr_assert_not_null(text);
        steps[k] = metrics_held_steps;
        cr_log_info("%zu entries: %llu steps", sizes[k], (unsigned long long)steps[k]);
        cr_expect_leq(steps[k], sizes[k] * (pools.n_pools + 4), "%zu entries: %llu steps", sizes[k],
                      (unsigned long long)steps[k]);
        free(text);
        free(entries);
    }
    cr_expect_leq(steps[1], steps[0] * 9, "8x the entries, %llu then %llu steps", (unsigned long long)steps[0],
                  (unsigned long long)steps[1]);
}

/* The admission.machines watch: rendered only with the policy on (off,
 * the exposition is as before). */
Test(metrics, machines_watch_only_when_on)
{
    char *off = render(1);
    cr_assert_null(strstr(off, "skewgate_machines_watch"), "%s", off);
    free(off);
    const metrics_worker_t *w[1] = {&workers[0]};
    metrics_gate_t g = {.verdict = &verdict, .machines_on = true};
    size_t len;
    char *never = metrics_render(w, 1, &g, &len);
    cr_assert_not_null(never);
    assert_has(never, "# TYPE skewgate_machines_watch_synced gauge\nskewgate_machines_watch_synced 0\n");
    assert_has(never, "# TYPE skewgate_machines_watch_last_list_timestamp_seconds gauge\n"
                      "skewgate_machines_watch_last_list_timestamp_seconds 0.000\n");
    free(never);
    g.machines_synced = true;
    g.machines_last_list = 1700000000.25;
    char *synced = metrics_render(w, 1, &g, &len);
    cr_assert_not_null(synced);
    assert_has(synced, "skewgate_machines_watch_synced 1\n");
    assert_has(synced, "skewgate_machines_watch_last_list_timestamp_seconds 1700000000.250\n");
    free(synced);
}
