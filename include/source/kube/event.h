/* kube_event: what the API server says, as skewgate needs it: one watch
 * event line, a list answer, a Status error. Pure JSON work, no I/O. */
#ifndef SKEWGATE_KUBE_EVENT_H
#define SKEWGATE_KUBE_EVENT_H

#include <stdbool.h>

#include <stddef.h>
#include <jansson.h>

#define KUBE_RV_MAX 128
#define KUBE_WHY_MAX 512
/* Continue tokens are base64 of a small JSON (an rv and a key): well
 * below this. */
#define KUBE_CONTINUE_MAX 2048

typedef enum {
    KUBE_EVENT_ADDED,
    KUBE_EVENT_MODIFIED,
    KUBE_EVENT_DELETED,
    KUBE_EVENT_BOOKMARK,
    KUBE_EVENT_ERROR,
} kube_event_type_t;

typedef struct kube_event {
    kube_event_type_t type;
    json_t *object;                 /* owned; the Status for ERROR */
    char resource_version[KUBE_RV_MAX]; /* the object's; "" for ERROR */
    int code;                       /* ERROR: the Status code, 0 if none */
    char why[KUBE_WHY_MAX];         /* ERROR: "reason: message" */
} kube_event_t;

const char *kube_event_type_name(kube_event_type_t type);

/* One line of a watch stream. 0, or -1 with err when the line is not a
 * JSON object with a known type and an object (garbage: the stream cannot
 * be trusted any more). kube_event_clear() frees what a 0 left. */
int kube_event_parse(const char *line, size_t len, kube_event_t *ev, char *err, size_t errlen);
void kube_event_clear(kube_event_t *ev);

/* An ERROR event that means "relist": 410 Gone, reason Expired or Gone. */
bool kube_event_is_expired(const kube_event_t *ev);

/* One page of a list answer: *items is a new reference to its array of
 * objects (empty when the page holds none); resource_version is the
 * list's, cont its continue token ("" on the last page). 0, or -1 with
 * err. */
int kube_list_page_parse(const char *body, size_t len, json_t **items,
                         char resource_version[KUBE_RV_MAX], char cont[KUBE_CONTINUE_MAX], char *err,
                         size_t errlen);

/* "reason: message" of a Status body for the log, else a prefix of the
 * body with anything unprintable replaced. */
void kube_status_describe(const char *body, size_t len, char *out, size_t outlen);

#endif
