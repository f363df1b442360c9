/* libFuzzer target: what the API server sends, as the kube source reads it:
 * each line of a watch stream (kube_event_parse, then is_expired and
 * clear), the whole input as a list page (kube_list_page_parse) and as a
 * Status body for the log (kube_status_describe). Checks that a parsed
 * event is well formed, that every text written is NUL-terminated within
 * its buffer, and that a failure says why. */
// sources: src/source/kube/event.c
// pkgs: jansson
// dict: json.dict
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/kube/event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *s, size_t cap)
{
    if (!memchr(s, '\0', cap))
        abort();
}

static void one_line(const char *line, size_t len)
{
    kube_event_t ev;
    char err[256];
    memset(err, 'x', sizeof err);
    /* An exact-size copy, so that ASan sees a read past the line. */
    char *copy = malloc(len ? len : 1);
    memcpy(copy, line, len);
    int rc = kube_event_parse(copy, len, &ev, err, sizeof err);
    if (rc == 0) {
        if ((unsigned)ev.type > KUBE_EVENT_ERROR || !ev.object || !kube_event_type_name(ev.type))
            abort();
        terminated(ev.resource_version, sizeof ev.resource_version);
        if (ev.type == KUBE_EVENT_ERROR) {
            terminated(ev.why, sizeof ev.why);
            if (ev.resource_version[0])
                abort();
        } else if (kube_event_is_expired(&ev)) {
            abort();                    /* only an ERROR means relist */
        }
        kube_event_is_expired(&ev);
        kube_event_clear(&ev);
        kube_event_clear(&ev);          /* clearing twice must be harmless */
    } else if (rc == -1) {
        terminated(err, sizeof err);
        if (!err[0])
            abort();
    } else {
        abort();
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    const char *buf = (const char *)data;

    /* The watch stream: one event per line. */
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i == size || buf[i] == '\n') {
            if (i > start || i < size)
                one_line(buf + start, i - start);
            start = i + 1;
        }
    }

    char *copy = malloc(size ? size : 1);
    memcpy(copy, buf, size);

    json_t *items = (json_t *)1;
    char rv[KUBE_RV_MAX], cont[KUBE_CONTINUE_MAX], err[256];
    memset(rv, 'x', sizeof rv);
    memset(cont, 'x', sizeof cont);
    memset(err, 'x', sizeof err);
    int rc = kube_list_page_parse(copy, size, &items, rv, cont, err, sizeof err);
    if (rc == 0) {
        terminated(rv, sizeof rv);
        terminated(cont, sizeof cont);
        if (!json_is_array(items))
            abort();
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item) {
            if (!json_is_object(item))
                abort();
        }
        json_decref(items);
    } else if (rc == -1) {
        if (items)
            abort();
        terminated(err, sizeof err);
        if (!err[0])
            abort();
    } else {
        abort();
    }

    char out[KUBE_WHY_MAX];
    memset(out, 'x', sizeof out);
    kube_status_describe(copy, size, out, sizeof out);
    terminated(out, sizeof out);
    char tiny[4];
    kube_status_describe(copy, size, tiny, sizeof tiny);
    terminated(tiny, sizeof tiny);
    free(copy);
    return 0;
}
