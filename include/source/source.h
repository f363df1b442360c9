/* source: where the MachineConfiguration comes from. A source lives on the
 * verdict thread's event_base and reports its view of the object whenever
 * that view changes or the source starts or stops failing. Implementations
 * (file here; Kubernetes list+watch) embed source_t first and fill in
 * source_ops_t; users only call the functions below. */
#ifndef SKEWGATE_SOURCE_H
#define SKEWGATE_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "conf/config.h"
#include "verdict/verdict.h"

struct event_base;
typedef struct source source_t;

/* state and object:
 *   SOURCE_PRESENT  the object as it is now
 *   SOURCE_ABSENT   NULL: the object does not exist
 *   SOURCE_FAILING  the last good object, or NULL if the last good view was
 *                   ABSENT or there was none; the source cannot confirm it
 * object is borrowed: valid during the call only; json_incref to keep it.
 * Always called from the event loop or from source_start. */
typedef void (*source_update_fn)(source_state_t state, json_t *object, void *arg);

typedef struct source_ops {
    const char *kind;               /* "file", "kubernetes" */
    int (*start)(source_t *src);    /* 0 or -1 */
    void (*destroy)(source_t *src); /* frees everything, src included */
    uint64_t (*reconnects)(const source_t *src);    /* retries after an error; NULL: none */
    /* source_files_changed; NULL: it reads no file only once. */
    int (*files_changed)(const source_t *src, char *err, size_t errlen);
} source_ops_t;

struct source {
    const source_ops_t *ops;
    struct event_base *base;
    source_update_fn update;
    void *arg;
    double last_sync;   /* wall-clock seconds of the last confirmed view, for people; 0 = never */
    uint64_t last_sync_ms;  /* the same moment on the monotonic clock, for durations; 0 = never */
    char last_error[512];   /* why it last failed ("" never), kept after it recovers */
    double last_error_at;   /* wall-clock seconds of that failure */
};

/* Starts watching; may report the first view before it returns. 0 or -1. */
int source_start(source_t *src);
void source_free(source_t *src);
const char *source_kind(const source_t *src);
/* When the source last confirmed its view (Unix seconds, 0 = never): for
 * lastSync and skewgate_source_last_sync_timestamp_seconds. */
double source_last_sync(const source_t *src);
/* The same on the monotonic clock (milliseconds, 0 = never): what
 * staleness counts from, which an NTP step of the wall clock does not
 * move. */
uint64_t source_last_sync_monotonic_ms(const source_t *src);
/* Why the source last failed and when (wall-clock seconds), for GET
 * /verdict and `skewgate status`; NULL when it never failed. */
const char *source_last_error(const source_t *src, double *at);
/* For skewgate_source_reconnects_total. */
uint64_t source_reconnects(const source_t *src);
/* Whether a file the source does not watch (the Kubernetes source's CA,
 * read at start and again only after a failed connection) holds other
 * bytes now than it trusts: 1 when so, 0 when not, -1 with err when the
 * file cannot be read. A reload that keeps the settings asks it, and a
 * new source takes the new bytes at once. */
int source_files_changed(const source_t *src, char *err, size_t errlen);

/* Where the reports go from now on: a controller keeps a reload's new
 * source's reports aside until the reload commits. */
void source_set_update(source_t *src, source_update_fn update, void *arg);

/* For implementations. */
void source_init(source_t *src, const source_ops_t *ops, struct event_base *base,
                 source_update_fn update, void *arg);
/* The current view was confirmed just now, unchanged. */
void source_synced(source_t *src);
/* Records why the source failed just now (source_last_error). */
void source_error(source_t *src, const char *why);
/* Reports a view; PRESENT and ABSENT count as a sync. */
void source_report(source_t *src, source_state_t state, json_t *object);

/* The file source: the object as YAML or JSON in cfg->path (mcobj_load),
 * re-read within a second of a change (inotify on the parent directory, so
 * rename-replace counts) and polled every cfg->poll_interval_ms as a safety
 * net. A broken file keeps the last good object (FAILING); a missing one is
 * ABSENT. cfg is copied. NULL when out of memory. */
source_t *source_file_new(struct event_base *base, const config_source_file_t *cfg,
                          source_update_fn update, void *arg);

/* The Kubernetes source: list+watch of the MachineConfiguration cfg->name
 * on the API server (in-cluster when cfg->server is ""), reconnecting with
 * backoff; FAILING while it cannot confirm its view. cfg is copied, its
 * strings too (the source outlives reloads that keep it);
 * configuration errors (no in-cluster environment, an unreadable CA file)
 * are logged and fail source_start. NULL when out of memory. */
source_t *source_kube_new(struct event_base *base, const config_source_kube_t *cfg,
                          source_update_fn update, void *arg);

#endif
