/* metrics: the gate's counters and their Prometheus text rendering.
 * Each worker owns one metrics_worker_t and is its only writer, so a
 * counter is bumped with a relaxed load and store (no lock prefix, no
 * contended cache line); the admin listener on the main thread sums the
 * workers' counters with relaxed loads. Sums are therefore not a snapshot
 * across counters, which Prometheus does not ask for. */
#ifndef SKEWGATE_METRICS_H
#define SKEWGATE_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config_types.h"
#include "proxy/held.h"
#include "proxy/pace.h"
#include "proxy/reason.h"
#include "verdict/mcs_release.h"
#include "verdict/verdict.h"

/* Pool names come from clients: each worker counts the first
 * METRICS_POOLS distinct ones under their name, the rest as "other". */
#define METRICS_POOLS 16
#define METRICS_POOL_OTHER METRICS_POOLS
#define METRICS_POOL_LEN 64


/* Statuses the gate answers itself or commonly relays have a series each;
 * any other status is counted by class ("2xx", ...), and one out of
 * 100..599 (none should be) as "other". */
enum { METRICS_N_CODES = 31 };

/* Request duration buckets, upper bounds in seconds; one more for +Inf. */
#define METRICS_N_BUCKETS 14
extern const double metrics_bucket_bounds[METRICS_N_BUCKETS];


typedef _Atomic uint64_t metrics_counter_t;

typedef struct metrics_worker {
    /* The pool table: a name is written once, before n_pools is released
     * past it, and never changes; readers acquire n_pools first. */
    _Atomic uint32_t n_pools;
    uint32_t last_pool;     /* the owner's lookup hint; only it reads this */
    char pool_names[METRICS_POOLS][METRICS_POOL_LEN];

    metrics_counter_t requests[METRICS_POOLS + 1][REQUEST__DECISIONS][METRICS_N_CODES];
    metrics_counter_t duration_buckets[METRICS_N_BUCKETS + 1];   /* not cumulative */
    metrics_counter_t duration_sum_ns;
    metrics_counter_t upstream_errors[METRICS_N_UPSTREAM_ERRORS];
    metrics_counter_t evidence_held;    /* answered ClientBootImageTooOld */
    metrics_counter_t open_tls, open_plain;     /* gauges */
    metrics_counter_t accepted, refused_over_limit;
    /* The worker's held table, rendered as skewgate_held_clients and its
     * counters (NULL: none). */
    const held_table_t *held;
    metrics_counter_t admission_rejects[ADMISSION__RESULTS];   /* [ADMISSION_PASS] unused */
    /* coalesce: readers served from a fetch they did not lead, and those
     * that never sent a request of their own */
    metrics_counter_t coalesce_followers, coalesce_renders_saved;
    /* bytes kept for readers slower than the MCS now (a gauge) */
    metrics_counter_t buffered_bytes;
} metrics_worker_t;

/* Owner-only increment: a plain load and store, yet a data race for no one. */
static inline void metrics_add(metrics_counter_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline void metrics_sub(metrics_counter_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - n, memory_order_relaxed);
}

static inline void metrics_conn_opened(metrics_worker_t *m, bool tls)
{
    metrics_add(&m->accepted, 1);
    metrics_add(tls ? &m->open_tls : &m->open_plain, 1);
}

static inline void metrics_conn_closed(metrics_worker_t *m, bool tls)
{
    metrics_sub(tls ? &m->open_tls : &m->open_plain, 1);
}

static inline void metrics_upstream_error(metrics_worker_t *m, metrics_upstream_error_t kind)
{
    metrics_add(&m->upstream_errors[kind], 1);
}

static inline void metrics_admission_reject(metrics_worker_t *m, admission_result_t r)
{
    metrics_add(&m->admission_rejects[r], 1);
}

/* One finished request; pool is "" for ungated paths. */
void metrics_request(metrics_worker_t *m, const char *pool, request_decision_t decision, int status,
                     uint64_t duration_ns);

/* The gate-wide values rendered next to the workers' counters. */
typedef struct metrics_gate {
    const verdict_t *verdict;
    const mcs_release_t *mcs_release;   /* NULL: not rendered */
    double source_last_sync;        /* Unix seconds, 0 = never */
    uint64_t source_reconnects;
    const held_view_t *held;        /* the merged held table; NULL: not rendered */
    /* The configuration's held section, whose pools (held.pools) are the
     * only ones skewgate_held_clients names; NULL: none, all "other". */
    const config_held_t *held_config;
    uint64_t reloads_success, reloads_failure;  /* SIGHUP reloads taken and refused */
    /* The admission.machines watch (machines_health_t); not rendered when
     * the policy is off. */
    bool machines_on;
    bool machines_synced;
    double machines_last_list;      /* Unix seconds, 0 = not every collection listed since it started */
    const pace_report_t *pace;      /* the room, with its lists; NULL: pacing is off, not rendered */
} metrics_gate_t;

/* The work the latest rendering of skewgate_held_clients did: pool
 * compares and series probes (for tests: linear in the entries). Written
 * by the rendering thread only. */
extern uint64_t metrics_held_steps;

/* The Prometheus text exposition (format 0.0.4) of the sum over workers[]
 * and of g; malloc'ed, NUL-terminated, *len without the NUL. NULL when
 * out of memory. */
char *metrics_render(const metrics_worker_t *const *workers, size_t n_workers, const metrics_gate_t *g,
                     size_t *len);

#endif
