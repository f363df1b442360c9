#include <stdio.h>
#include <string.h>

#include "source/kube/event.h"

static const char *const event_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *kube_event_type_name(kube_event_type_t type) { return event_names[type]; }

static int event_fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

/* A resourceVersion or a continue token is opaque but must fit and be
 * printable: it goes back into the next request's query. 0 with out set
 * (to "" for NULL), -1 when it does not fit or has unprintable bytes. */
static int copy_token(const char *token, char *out, size_t cap)
{
    out[0] = '\0';
    if (!token)
        return 0;
    size_t n = strlen(token);
    if (n >= cap)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] <= ' ' || (unsigned char)token[i] >= 0x7f)
            return -1;
    memcpy(out, token, n + 1);
    return 0;
}

static int copy_resource_version(const json_t *object, char out[KUBE_RV_MAX])
{
    const char *rv = json_string_value(json_object_get(json_object_get(object, "metadata"),
                                                       "resourceVersion"));
    if (!rv || !*rv) {
        out[0] = '\0';
        return -1;
    }
    return copy_token(rv, out, KUBE_RV_MAX);
}

static void describe_status(const json_t *status, char *out, size_t outlen)
{
    const char *reason = json_string_value(json_object_get(status, "reason"));
    const char *message = json_string_value(json_object_get(status, "message"));
    snprintf(out, outlen, "%s: %s", reason ? reason : "(no reason)", message ? message : "(no message)");
}

int kube_event_parse(const char *line, size_t len, kube_event_t *ev, char *err, size_t errlen)
{
    *ev = (kube_event_t){0};
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return event_fail(err, errlen, "watch event is not JSON");
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *object = json_object_get(root, "object");
    int rc = -1;
    if (!type || !json_is_object(object)) {
        event_fail(err, errlen, "watch event without type or object");
        goto done;
    }
    size_t i;
    for (i = 0; i < sizeof event_names / sizeof *event_names; i++)
        if (!strcmp(type, event_names[i]))
            break;
    if (i == sizeof event_names / sizeof *event_names) {
        snprintf(err, errlen, "watch event of unknown type \"%.32s\"", type);
        goto done;
    }
    ev->type = (kube_event_type_t)i;
    if (ev->type == KUBE_EVENT_ERROR) {
        ev->code = (int)json_integer_value(json_object_get(object, "code"));
        describe_status(object, ev->why, sizeof ev->why);
    } else if (copy_resource_version(object, ev->resource_version) < 0) {
        event_fail(err, errlen, "watch event without a usable metadata.resourceVersion");
        goto done;
    }
    ev->object = json_incref(object);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

void kube_event_clear(kube_event_t *ev)
{
    json_decref(ev->object);
    ev->object = NULL;
}

bool kube_event_is_expired(const kube_event_t *ev)
{
    if (ev->type != KUBE_EVENT_ERROR)
        return 0;
    const char *reason = json_string_value(json_object_get(ev->object, "reason"));
    return ev->code == 410 || (reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone")));
}

static int copy_continue(const json_t *list, char out[KUBE_CONTINUE_MAX])
{
    return copy_token(json_string_value(json_object_get(json_object_get(list, "metadata"), "continue")),
                      out, KUBE_CONTINUE_MAX);
}

int kube_list_page_parse(const char *body, size_t len, json_t **items,
                         char resource_version[KUBE_RV_MAX], char cont[KUBE_CONTINUE_MAX], char *err,
                         size_t errlen)
{
    *items = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return event_fail(err, errlen, "list answer is not JSON");
    int rc = -1;
    json_t *list = json_object_get(root, "items");
    /* An empty list may come as "items": null. */
    if (list && !json_is_array(list) && !json_is_null(list)) {
        event_fail(err, errlen, "list answer without items");
        goto done;
    }
    if (copy_resource_version(root, resource_version) < 0) {
        event_fail(err, errlen, "list answer without a usable metadata.resourceVersion");
        goto done;
    }
    if (copy_continue(root, cont) < 0) {
        event_fail(err, errlen, "list answer with an unusable metadata.continue");
        goto done;
    }
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (!json_is_object(item)) {
            event_fail(err, errlen, "list answer with an item that is not an object");
            goto done;
        }
    }
    *items = json_is_array(list) ? json_incref(list) : json_array();
    rc = *items ? 0 : event_fail(err, errlen, "out of memory");
done:
    json_decref(root);
    return rc;
}

void kube_status_describe(const char *body, size_t len, char *out, size_t outlen)
{
    json_error_t jerr;
    json_t *status = json_loadb(body, len, 0, &jerr);
    if (json_is_object(status) && json_object_get(status, "reason")) {
        describe_status(status, out, outlen);
        json_decref(status);
        return;
    }
    json_decref(status);
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < outlen && n < 200; i++)
        out[n++] = (body[i] >= ' ' && body[i] < 0x7f) ? body[i] : '.';
    if (outlen)
        out[n] = '\0';
}
