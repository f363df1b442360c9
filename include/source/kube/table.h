/* kube_table: a collection as the API shows it, kept from a reflector's
 * lists and events: records by object name, a list under way swapped in
 * only when whole (a failed list leaves the view as it was), and whether
 * it has listed and is failing. What a record is, and what to do when the
 * records change, is the owner's: it hands its table the callbacks
 * (kube_table_ops_t) as the reflector is handed its own, so the table
 * never names the watch that uses it (source/machines.c,
 * source/pace_watch.c). One thread: the reflector's event_base. */
#ifndef SKEWGATE_KUBE_TABLE_H
#define SKEWGATE_KUBE_TABLE_H

#include <stdbool.h>
#include <jansson.h>

#include "source/kube/reflector.h"

typedef struct kube_table_ops {
    /* Keeps what object says in records (the view, or the list under
     * way), or drops it when deleted; true when records changed. */
    bool (*keep)(void *owner, json_t *records, const json_t *object, bool deleted);
    /* A list came in whole and is the view now. */
    void (*listed)(void *owner);
    /* An event changed the view. */
    void (*changed)(void *owner);
    /* The reflector cannot confirm the view (failing is set). */
    void (*failing)(void *owner);
    /* Every failure: what is the table's, why the reflector's. */
    void (*error)(void *owner, const char *what, const char *why);
} kube_table_ops_t;

typedef struct kube_table {
    const kube_table_ops_t *ops;
    void *owner;
    const char *what;           /* for the logs: "Nodes"; borrowed */
    const char *log_event;      /* the event its own log lines carry, the owner's: "pace_object" */
    kube_reflector_t *reflector;
    json_t *records;            /* the view: name -> the owner's record */
    json_t *listing;            /* the list under way */
    bool listed;                /* listed at least once */
    double listed_at;           /* wall seconds its last list came in whole */
    /* Its last request failed: the reflector lists again after a backoff,
     * and only a whole list ends it (it never resumes a watch after a
     * failure). */
    bool failing;
} kube_table_t;

/* An empty view; -1 when out of memory (kube_table_destroy all the same). */
int kube_table_init(kube_table_t *t, const char *what, const char *log_event, const kube_table_ops_t *ops,
                    void *owner);
/* Its reflector, not started yet (kube_reflector_start(t->reflector));
 * -1 when out of memory. */
int kube_table_watch(kube_table_t *t, struct event_base *base, kube_api_t *api, const kube_reflector_cfg_t *cfg);
/* Also of a table zeroed and never initialized. */
void kube_table_destroy(kube_table_t *t);

#endif
