#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "proxy/metrics.h"

const double metrics_bucket_bounds[METRICS_N_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

/* The bounds in nanoseconds, for a comparison without floating point. */
static const uint64_t metrics_bucket_ns[METRICS_N_BUCKETS] = {
    500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

/* Slot i of the code dimension: metrics_codes[i] for the exact statuses,
 * then the classes, then "other"; metrics_code_slot is its inverse. */
static const int metrics_codes[] = {
    200, 201, 204, 206, 301, 302, 304, 307, 308, 400, 401, 403, 404,
    405, 408, 413, 414, 429, 431, 500, 501, 502, 503, 504, 505,
};
#define METRICS_N_EXACT (sizeof metrics_codes / sizeof metrics_codes[0])
_Static_assert(METRICS_N_EXACT + 6 == METRICS_N_CODES, "code slots: exact statuses, 5 classes, other");
static const char *const metrics_code_other[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};

static unsigned metrics_code_slot(int status)
{
    /* A switch, so the compiler makes it a jump table. */
    switch (status) {
    case 200: return 0;
    case 201: return 1;
    case 204: return 2;
    case 206: return 3;
    case 301: return 4;
    case 302: return 5;
    case 304: return 6;
    case 307: return 7;
    case 308: return 8;
    case 400: return 9;
    case 401: return 10;
    case 403: return 11;
    case 404: return 12;
    case 405: return 13;
    case 408: return 14;
    case 413: return 15;
    case 414: return 16;
    case 429: return 17;
    case 431: return 18;
    case 500: return 19;
    case 501: return 20;
    case 502: return 21;
    case 503: return 22;
    case 504: return 23;
    case 505: return 24;
    }
    if (status >= 100 && status <= 599)
        return (unsigned)(METRICS_N_EXACT + (unsigned)(status / 100 - 1));
    return METRICS_N_CODES - 1;
}

static uint32_t metrics_pool_slot(metrics_worker_t *m, const char *pool)
{
    uint32_t n = atomic_load_explicit(&m->n_pools, memory_order_relaxed);
    /* Most requests name the pool the previous one named. */
    if (m->last_pool < n && !strcmp(m->pool_names[m->last_pool], pool))
        return m->last_pool;
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(m->pool_names[i], pool))
            return m->last_pool = i;
    if (n == METRICS_POOLS)
        return METRICS_POOL_OTHER;
    size_t len = strnlen(pool, METRICS_POOL_LEN - 1);
    memcpy(m->pool_names[n], pool, len);
    m->pool_names[n][len] = '\0';
    atomic_store_explicit(&m->n_pools, n + 1, memory_order_release);
    return m->last_pool = n;
}

void metrics_request(metrics_worker_t *m, const char *pool, request_decision_t decision, int status,
                     uint64_t duration_ns)
{
    uint32_t p = metrics_pool_slot(m, pool);
    metrics_add(&m->requests[p][(unsigned)decision < REQUEST__DECISIONS ? decision : REQUEST_ERROR]
                         [metrics_code_slot(status)], 1);
    unsigned b = 0;
    while (b < METRICS_N_BUCKETS && duration_ns > metrics_bucket_ns[b])
        b++;
    metrics_add(&m->duration_buckets[b], 1);
    metrics_add(&m->duration_sum_ns, duration_ns);
}

static uint64_t metrics_load(const metrics_counter_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* A label value: Prometheus escapes backslash, quote and newline; other
 * control bytes and bytes outside ASCII (a client's pool name need not be
 * UTF-8, the exposition must be) are written as the text \xHH. */
static void metrics_put_label(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", f);
        else if (*p == '"')
            fputs("\\\"", f);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

static void metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A series of one sample: its head, then its value. */
static void metrics_render_value(FILE *f, const char *name, const char *type, const char *help, uint64_t value)
{
    metrics_head(f, name, type, help);
    fprintf(f, "%s %" PRIu64 "\n", name, value);
}

typedef struct pool_sum {
    const char *name;
    uint64_t n[REQUEST__DECISIONS][METRICS_N_CODES];
} pool_sum_t;

typedef struct pool_sums {
    pool_sum_t *v;
    size_t n, cap;
} pool_sums_t;

/* Workers meet the same pools in different orders: sum them by name. A
 * client's pool literally named "other" shares the overflow's series. */
static int pool_sums_add(pool_sums_t *s, const char *name, const metrics_counter_t (*c)[METRICS_N_CODES])
{
    size_t i = 0;
    while (i < s->n && strcmp(s->v[i].name, name))
        i++;
    if (i == s->n) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 8;
            pool_sum_t *v = realloc(s->v, cap * sizeof *v);
            if (!v)
                return -1;
            s->v = v;
            s->cap = cap;
        }
        memset(&s->v[i], 0, sizeof s->v[i]);
        s->v[i].name = name;
        s->n++;
    }
    for (size_t d = 0; d < REQUEST__DECISIONS; d++)
        for (size_t k = 0; k < METRICS_N_CODES; k++)
            s->v[i].n[d][k] += metrics_load(&c[d][k]);
    return 0;
}

static void metrics_put_code(FILE *f, size_t k)
{
    if (k < METRICS_N_EXACT)
        fprintf(f, "%d", metrics_codes[k]);
    else
        fputs(metrics_code_other[k - METRICS_N_EXACT], f);
}

static int metrics_render_requests(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    /* The order the series have always come in. */
    static const request_decision_t order[] = {REQUEST_ADMIT, REQUEST_REJECT, REQUEST_PASS, REQUEST_ERROR};
    pool_sums_t sums = {0};
    for (size_t w = 0; w < n_workers; w++) {
        const metrics_worker_t *m = workers[w];
        uint32_t np = atomic_load_explicit(&m->n_pools, memory_order_acquire);
        for (uint32_t p = 0; p < np; p++)
            if (pool_sums_add(&sums, m->pool_names[p], m->requests[p]) < 0)
                goto oom;
        if (pool_sums_add(&sums, "other", m->requests[METRICS_POOL_OTHER]) < 0)
            goto oom;
    }
    metrics_head(f, "skewgate_requests_total", "counter",
                 "Requests answered, by pool (the first 16 distinct names per worker, then \"other\"; "
                 "\"\" for ungated paths), decision and status code.");
    for (size_t i = 0; i < sums.n; i++)
        for (size_t o = 0; o < REQUEST__DECISIONS; o++)
            for (size_t k = 0; k < METRICS_N_CODES; k++) {
                request_decision_t d = order[o];
                if (!sums.v[i].n[d][k])
                    continue;
                fputs("skewgate_requests_total{pool=\"", f);
                metrics_put_label(f, sums.v[i].name);
                fprintf(f, "\",decision=\"%s\",code=\"", request_decision_name(d));
                metrics_put_code(f, k);
                fprintf(f, "\"} %" PRIu64 "\n", sums.v[i].n[d][k]);
            }
    free(sums.v);
    return 0;
oom:
    free(sums.v);
    return -1;
}

static void metrics_render_duration(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    uint64_t buckets[METRICS_N_BUCKETS + 1] = {0}, sum_ns = 0;
    for (size_t w = 0; w < n_workers; w++) {
        for (size_t b = 0; b <= METRICS_N_BUCKETS; b++)
            buckets[b] += metrics_load(&workers[w]->duration_buckets[b]);
        sum_ns += metrics_load(&workers[w]->duration_sum_ns);
    }
    metrics_head(f, "skewgate_request_duration_seconds", "histogram",
                 "Time from a complete request head to the end of its response.");
    uint64_t cumulative = 0;
    for (size_t b = 0; b < METRICS_N_BUCKETS; b++) {
        cumulative += buckets[b];
        fprintf(f, "skewgate_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                metrics_bucket_bounds[b], cumulative);
    }
    cumulative += buckets[METRICS_N_BUCKETS];
    fprintf(f, "skewgate_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cumulative);
    fprintf(f, "skewgate_request_duration_seconds_sum %.9f\n", (double)sum_ns / 1e9);
    fprintf(f, "skewgate_request_duration_seconds_count %" PRIu64 "\n", cumulative);
}

/* The sum over workers of the counter at byte offset `off` of metrics_worker_t. */
static uint64_t metrics_sum(const metrics_worker_t *const *workers, size_t n_workers, size_t off)
{
    uint64_t sum = 0;
    for (size_t w = 0; w < n_workers; w++)
        sum += metrics_load((const metrics_counter_t *)((const char *)workers[w] + off));
    return sum;
}

static void metrics_render_upstream(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    static const char *const kinds[METRICS_N_UPSTREAM_ERRORS] = {
        "connect", "timeout", "closed", "bad_response", "queue_full", "queue_timeout", "other",
    };
    metrics_head(f, "skewgate_upstream_errors_total", "counter",
                 "Admitted or passed requests the MCS could not answer, by kind.");
    for (size_t k = 0; k < METRICS_N_UPSTREAM_ERRORS; k++)
        fprintf(f, "skewgate_upstream_errors_total{kind=\"%s\"} %" PRIu64 "\n", kinds[k],
                metrics_sum(workers, n_workers, offsetof(metrics_worker_t, upstream_errors) +
                                                    k * sizeof(metrics_counter_t)));
}

static void metrics_render_evidence(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    metrics_render_value(f, "skewgate_evidence_held_total", "counter",
                         "Gated requests answered as reject.mode says because the node's Ignition asked for a spec "
                         "older than evidence.min_spec (reason ClientBootImageTooOld).",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, evidence_held)));
}

static void metrics_render_connections(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    metrics_head(f, "skewgate_connections", "gauge", "Open client connections, by transport.");
    fprintf(f, "skewgate_connections{state=\"tls\"} %" PRIu64 "\n",
            metrics_sum(workers, n_workers, offsetof(metrics_worker_t, open_tls)));
    fprintf(f, "skewgate_connections{state=\"plain\"} %" PRIu64 "\n",
            metrics_sum(workers, n_workers, offsetof(metrics_worker_t, open_plain)));
    metrics_render_value(f, "skewgate_connections_accepted_total", "counter", "Client connections accepted.",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, accepted)));
    metrics_render_value(f, "skewgate_connections_refused_total", "counter",
                         "Client connections closed at once because limits.max_connections were open.",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, refused_over_limit)));
}

static void metrics_render_admission(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    metrics_head(f, "skewgate_admission_rejects_total", "counter",
                 "Requests or connections an admission policy refused, by reason.");
    for (size_t r = ADMISSION_PASS + 1; r < ADMISSION__RESULTS; r++)
        fprintf(f, "skewgate_admission_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
                admission_reason_name((admission_result_t)r),
                metrics_sum(workers, n_workers, offsetof(metrics_worker_t, admission_rejects) +
                                                    r * sizeof(metrics_counter_t)));
}

static void metrics_render_coalesce(FILE *f, const metrics_worker_t *const *workers, size_t n_workers)
{
    metrics_render_value(f, "skewgate_coalesce_followers_total", "counter",
                         "Requests answered from another request's upstream fetch (coalesce).",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, coalesce_followers)));
    metrics_render_value(f, "skewgate_coalesce_renders_saved_total", "counter",
                         "Upstream requests (MCS renders) not made because a request joined a shared fetch.",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, coalesce_renders_saved)));
    metrics_render_value(f, "skewgate_buffered_bytes", "gauge",
                         "Response bytes kept now for clients that read slower than the MCS sends "
                         "(limits.max_buffered).",
                         metrics_sum(workers, n_workers, offsetof(metrics_worker_t, buffered_bytes)));
}

static void metrics_render_gate(FILE *f, const metrics_gate_t *g)
{
    const verdict_t *v = g->verdict;
    metrics_head(f, "skewgate_verdict_admit", "gauge", "1 when the gate admits new nodes, 0 when it rejects them.");
    fprintf(f, "skewgate_verdict_admit %d\n", v->decision == DECISION_ADMIT);
    metrics_head(f, "skewgate_verdict_info", "gauge", "The current verdict's reason and enforcement mode.");
    fprintf(f, "skewgate_verdict_info{reason=\"%s\",mode=\"", verdict_reason_name(v->reason));
    metrics_put_label(f, v->mode);
    fputs("\"} 1\n", f);
    metrics_head(f, "skewgate_skew_enforcement_none", "gauge",
                 "1 when boot image skew enforcement is off (mode None): new nodes may boot too old an image.");
    fprintf(f, "skewgate_skew_enforcement_none %d\n", !strcmp(v->mode, "None"));
    if (g->mcs_release) {
        const mcs_release_t *m = g->mcs_release;
        metrics_head(f, "skewgate_mcs_release_info", "gauge",
                     "The MCS release the gate reads Accept as, its family of readings, and where it came from "
                     "(config, default, cluster).");
        fprintf(f, "skewgate_mcs_release_info{release=\"4.%u\",family=\"%s\",from=\"%s\"} 1\n", m->minor,
                mcs_family_name(m->family), mcs_release_from_name(m->from));
    }
    metrics_head(f, "skewgate_source_last_sync_timestamp_seconds", "gauge",
                 "When the verdict source last confirmed its view (Unix time; 0: never).");
    fprintf(f, "skewgate_source_last_sync_timestamp_seconds %.3f\n", g->source_last_sync);
    metrics_render_value(f, "skewgate_source_reconnects_total", "counter",
                         "Times the verdict source reconnected after an error.", g->source_reconnects);
    metrics_head(f, "skewgate_config_reloads_total", "counter",
                 "Configuration reloads (SIGHUP): taken by every worker, or refused (the running one kept).");
    fprintf(f, "skewgate_config_reloads_total{result=\"success\"} %" PRIu64 "\n", g->reloads_success);
    fprintf(f, "skewgate_config_reloads_total{result=\"failure\"} %" PRIu64 "\n", g->reloads_failure);
}

/* A watch that never lists (its RBAC rule missing) holds every node as
 * UnknownMachine: alert on _synced. The last list dates the view's base;
 * a healthy watch lists only at start and after a 410. */
static void metrics_render_machines(FILE *f, const metrics_gate_t *g)
{
    metrics_head(f, "skewgate_machines_watch_synced", "gauge",
                 "1 when the admission.machines watch has listed every collection since it started and none is failing.");
    fprintf(f, "skewgate_machines_watch_synced %d\n", g->machines_synced);
    metrics_head(f, "skewgate_machines_watch_last_list_timestamp_seconds", "gauge",
                 "When the oldest list the admission.machines view stands on came in (Unix time; 0: not every "
                 "collection listed since the watch started).");
    fprintf(f, "skewgate_machines_watch_last_list_timestamp_seconds %.3f\n", g->machines_last_list);
}

uint64_t metrics_held_steps;

/* One skewgate_held_clients series: a pool of held.pools (its index; the
 * count of them for "other") and a reason. */
typedef struct metrics_held_series {
    uint32_t pool;
    const char *reason;         /* in the view's entry; NULL: a free slot */
    uint64_t n;
} metrics_held_series_t;

/* A held entry's pool as a label: its index in held.pools, or n_pools
 * ("other"): a request's pool is the client's word, so only pools that
 * exist are named. At most CONFIG_MAX_HELD_POOLS compares. */
static uint32_t metrics_held_pool(const config_held_t *c, const char *pool)
{
    size_t n = c ? c->n_pools : 0;
    for (size_t k = 0; k < n; k++) {
        metrics_held_steps++;
        if (!strncmp(c->pools[k], pool, CONFIG_HELD_POOL_LEN))
            return (uint32_t)k;
    }
    return (uint32_t)n;
}

static uint64_t metrics_held_hash(uint32_t pool, const char *reason)
{
    uint64_t h = 14695981039346656037ull ^ pool;
    for (const unsigned char *p = (const unsigned char *)reason; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return hash_mix64(h);
}

static int metrics_held_series_cmp(const void *a, const void *b)
{
    const metrics_held_series_t *x = a, *y = b;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    return strcmp(x->reason, y->reason);
}

/* The held clients, counted by pool and reason in one pass: each entry
 * costs its pool's lookup among held.pools and a probe of a hash table
 * of the series at most half full (linear in the entries; it compared
 * each with every series found so far, quadratic with made-up pools:
 * 2.9 s at 32,768 entries). The series are then sorted, pools in
 * held.pools's order, "other" last. */
/* One client of pool and reason into the series table (cap slots, a
 * power of two, at most half full). */
static void metrics_held_count(metrics_held_series_t *table, size_t cap, size_t *n_series, uint32_t pool,
                               const char *reason)
{
    for (size_t k = (size_t)metrics_held_hash(pool, reason) & (cap - 1);; k = (k + 1) & (cap - 1)) {
        metrics_held_steps++;
        metrics_held_series_t *s = &table[k];
        if (!s->reason) {
            *s = (metrics_held_series_t){pool, reason, 0};
            (*n_series)++;
        } else if (s->pool != pool || strcmp(s->reason, reason)) {
            continue;
        }
        s->n++;
        return;
    }
}

/* The held table's clients, and the pace room's waiting nodes as reason
 * Paced (the room keeps them, each with its pool: the held table does
 * not record them). */
static int metrics_render_held(FILE *f, const held_view_t *h, const config_held_t *pools, const pace_report_t *pace)
{
    size_t n_line = pace ? pace->n_line : 0;
    size_t cap = 2;
    while (cap < 2 * (h->n + n_line) + 2)
        cap *= 2;
    metrics_held_series_t *table = calloc(cap, sizeof *table);
    if (!table)
        return -1;
    metrics_held_steps = 0;
    size_t n_series = 0;
    for (size_t i = 0; i < h->n; i++) {
        const held_entry_t *e = &h->entries[i];
        if (held_now(e))
            metrics_held_count(table, cap, &n_series, metrics_held_pool(pools, e->pool), e->reason);
    }
    for (size_t i = 0; i < n_line; i++)
        metrics_held_count(table, cap, &n_series, metrics_held_pool(pools, pace->line[i].pool), "Paced");
    size_t kept = 0;
    for (size_t k = 0; k < cap; k++)
        if (table[k].reason)
            table[kept++] = table[k];
    qsort(table, kept, sizeof *table, metrics_held_series_cmp);
    metrics_head(f, "skewgate_held_clients", "gauge",
                 "Clients the gate holds now (answered 503, retrying; not admitted since nor forgotten), by pool "
                 "(held.pools, the rest as \"other\") and reason.");
    for (size_t k = 0; k < n_series; k++) {
        fputs("skewgate_held_clients{pool=\"", f);
        metrics_put_label(f, pools && table[k].pool < pools->n_pools ? pools->pools[table[k].pool] : "other");
        fputs("\",reason=\"", f);
        metrics_put_label(f, table[k].reason);
        fprintf(f, "\"} %" PRIu64 "\n", table[k].n);
    }
    free(table);
    metrics_render_value(f, "skewgate_admitted_after_hold_total", "counter",
                         "Held clients that later got their config, whole.", h->admitted_after_hold);
    metrics_render_value(f, "skewgate_held_overflow_total", "counter",
                         "Held requests not recorded because the held table (held.max_clients) had no room.",
                         h->overflow);
    return 0;
}

static void metrics_render_pace(FILE *f, const pace_stats_t *p)
{
    metrics_render_value(f, "skewgate_pace_line_full", "gauge",
                         "1 when the pacing line holds held.max_clients nodes: a newcomer takes the place of one "
                         "absent longer than head_hold, or is paced without one.",
                         p->waiting >= p->max_line);
    metrics_render_value(f, "skewgate_pace_unrecorded_total", "counter",
                         "Newcomers paced without a place: the line was full of present nodes.", p->unrecorded_total);
    metrics_render_value(f, "skewgate_pace_evicted_total", "counter",
                         "Absent nodes of a full line that made way for a newcomer.", p->evicted_total);
    metrics_render_value(f, "skewgate_pace_forgotten_total", "counter",
                         "Waiting nodes forgotten after join_timeout unseen.", p->forgotten_total);
    metrics_render_value(f, "skewgate_pace_free_slots", "gauge",
                         "Slots free now (max_joining less the budget used, and per_minute).", p->free);
    metrics_render_value(f, "skewgate_pace_shared_line", "gauge",
                         "1 when pacing decides on the shared line (the pace-line Leases), 0 on the gate's own "
                         "(pace.line local, or its fallback).",
                         p->line_shared);
    metrics_head(f, "skewgate_pace_paced_total", "counter",
                 "Paced requests by cause: ceiling, budget, rate, turn, room, claim, sync.");
    for (int k = PACE_ADMITTED + 1; k < PACE_CAUSES; k++)
        fprintf(f, "skewgate_pace_paced_total{cause=\"%s\"} %" PRIu64 "\n", pace_cause_name((pace_cause_t)k),
                p->paced_total[k]);
    metrics_render_value(f, "skewgate_pace_joining", "gauge",
                         "Nodes admitted and not yet joined (pace.max_joining at most).", p->joining);
    metrics_render_value(f, "skewgate_pace_waiting", "gauge",
                         "Nodes in the pacing line: paced (503 Paced), waiting for a slot.", p->waiting);
    metrics_render_value(f, "skewgate_pace_admitted_total", "counter",
                         "Nodes admitted by pacing (each once: its retries within its slot are not counted).",
                         p->admitted_total);
    metrics_render_value(f, "skewgate_pace_join_timeouts_total", "counter",
                         "Joining nodes whose slot freed at pace.join_timeout.", p->timed_out_total);
    metrics_render_value(f, "skewgate_pace_longest_wait_seconds", "gauge",
                         "How long the first node of the pacing line (of those still asking) has waited.",
                         p->longest_wait_ms / 1000);
    metrics_render_value(f, "skewgate_pace_api_view", "gauge",
                         "1 when pacing counts by the API's Nodes and CSRs, 0 when by join_timeout alone.", p->api);
    metrics_render_value(f, "skewgate_pace_pending_csrs", "gauge",
                         "The node CSRs cluster-machine-approver counts (pace.max_pending_csrs: nobody is "
                         "admitted at it); 0 without the API view.",
                         p->pending_csrs);
    if (p->api) {
        metrics_render_value(f, "skewgate_pace_approver_pending_csrs", "gauge",
                             "Node CSRs cluster-machine-approver counts: client and serving, created within the "
                             "hour, unapproved (Denied and Failed included) or approved by another within 30 s.",
                             p->pending_csrs);
        metrics_render_value(f, "skewgate_pace_approver_limit", "gauge",
                             "max(Machines, Nodes) + 100: past this many counted node CSRs "
                             "cluster-machine-approver approves none.",
                             p->approver_limit);
    }
    metrics_head(f, "skewgate_pace_join_seconds", "histogram",
                 "Seconds from a node's admission to its Node being Ready (only with the API view).");
    uint64_t cumulative = 0;
    for (size_t b = 0; b < PACE_JOIN_BUCKETS; b++) {
        cumulative += p->join_buckets[b];
        fprintf(f, "skewgate_pace_join_seconds_bucket{le=\"%u\"} %" PRIu64 "\n", PACE_JOIN_BUCKETS_S[b], cumulative);
    }
    cumulative += p->join_buckets[PACE_JOIN_BUCKETS];
    fprintf(f, "skewgate_pace_join_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cumulative);
    fprintf(f, "skewgate_pace_join_seconds_sum %.3f\n", (double)p->join_sum_ms / 1e3);
    fprintf(f, "skewgate_pace_join_seconds_count %" PRIu64 "\n", cumulative);
}

char *metrics_render(const metrics_worker_t *const *workers, size_t n_workers, const metrics_gate_t *g,
                     size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    int rc = metrics_render_requests(f, workers, n_workers);
    metrics_render_duration(f, workers, n_workers);
    metrics_render_upstream(f, workers, n_workers);
    metrics_render_evidence(f, workers, n_workers);
    metrics_render_connections(f, workers, n_workers);
    metrics_render_admission(f, workers, n_workers);
    metrics_render_coalesce(f, workers, n_workers);
    metrics_render_gate(f, g);
    if (g->machines_on)
        metrics_render_machines(f, g);
    if (g->pace)
        metrics_render_pace(f, &g->pace->stats);
    if (g->held && metrics_render_held(f, g->held, g->held_config, g->pace) < 0)
        rc = -1;
    if (ferror(f))
        rc = -1;
    if (fclose(f) != 0 || rc < 0) {
        free(text);
        return NULL;
    }
    return text;
}
