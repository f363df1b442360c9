#include <criterion/criterion.h>
#include <string.h>

#include "source/kube/event.h"

static int parse(const char *line, kube_event_t *ev, char *err)
{
    return kube_event_parse(line, strlen(line), ev, err, 256);
}

Test(kube_event, modified_carries_object_and_resource_version)
{
    kube_event_t ev;
    char err[256];
    cr_assert_eq(parse("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"cluster\","
                       "\"resourceVersion\":\"51235\"}}}", &ev, err), 0);
    cr_assert_eq(ev.type, KUBE_EVENT_MODIFIED);
    cr_assert_str_eq(ev.resource_version, "51235");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ev.object, "metadata"), "name")),
                     "cluster");
    kube_event_clear(&ev);
}

Test(kube_event, every_type_is_classified)
{
    const char *types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    for (size_t i = 0; i < 4; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"type\":\"%s\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}", types[i]);
        kube_event_t ev;
        char err[256];
        cr_assert_eq(parse(line, &ev, err), 0, "%s: %s", types[i], err);
        cr_assert_eq(ev.type, (kube_event_type_t)i);
        cr_assert_str_eq(kube_event_type_name(ev.type), types[i]);
        cr_assert_not(kube_event_is_expired(&ev));
        kube_event_clear(&ev);
    }
}

Test(kube_event, error_410_expired_means_relist)
{
    kube_event_t ev;
    char err[256];
    cr_assert_eq(parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
                       "\"message\":\"too old resource version: 5 (9)\",\"reason\":\"Expired\","
                       "\"code\":410}}", &ev, err), 0);
    cr_assert_eq(ev.type, KUBE_EVENT_ERROR);
    cr_assert_eq(ev.code, 410);
    cr_assert(kube_event_is_expired(&ev));
    cr_assert_str_eq(ev.why, "Expired: too old resource version: 5 (9)");
    kube_event_clear(&ev);
    /* Older servers said Gone, some without the code. */
    cr_assert_eq(parse("{\"type\":\"ERROR\",\"object\":{\"reason\":\"Gone\"}}", &ev, err), 0);
    cr_assert(kube_event_is_expired(&ev));
    kube_event_clear(&ev);
    cr_assert_eq(parse("{\"type\":\"ERROR\",\"object\":{\"reason\":\"Timeout\",\"code\":504}}", &ev, err), 0);
    cr_assert_not(kube_event_is_expired(&ev));
    kube_event_clear(&ev);
}

Test(kube_event, garbage_is_refused)
{
    const char *bad[] = {
        "this is not JSON {{{",
        "{\"type\":\"MODIFIED\"}",
        "{\"object\":{}}",
        "{\"type\":\"MODIFIED\",\"object\":[]}",
        "{\"type\":\"EXPLODED\",\"object\":{}}",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}}}",
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1 2\"}}}",
        "[1,2]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kube_event_t ev;
        char err[256] = "";
        cr_assert_eq(parse(bad[i], &ev, err), -1, "accepted: %s", bad[i]);
        cr_assert_neq(err[0], '\0');
        cr_assert_null(ev.object);
    }
}

Test(kube_event, list_finds_the_named_item_or_none)
{
    const char *list = "{\"kind\":\"MachineConfigurationList\",\"metadata\":{\"resourceVersion\":\"42\"},"
                       "\"items\":[{\"metadata\":{\"name\":\"other\"}},{\"metadata\":{\"name\":\"cluster\"}}]}";
    json_t *obj;
    char rv[KUBE_RV_MAX], err[256];
    cr_assert_eq(kube_list_parse(list, strlen(list), "cluster", &obj, rv, err, sizeof err), 0);
    cr_assert_not_null(obj);
    cr_assert_str_eq(rv, "42");
    json_decref(obj);
    const char *empty = "{\"metadata\":{\"resourceVersion\":\"43\"},\"items\":[]}";
    cr_assert_eq(kube_list_parse(empty, strlen(empty), "cluster", &obj, rv, err, sizeof err), 0);
    cr_assert_null(obj);
    cr_assert_str_eq(rv, "43");
    const char *no_rv = "{\"metadata\":{},\"items\":[]}";
    cr_assert_eq(kube_list_parse(no_rv, strlen(no_rv), "cluster", &obj, rv, err, sizeof err), -1);
    const char *not_json = "<html>";
    cr_assert_eq(kube_list_parse(not_json, strlen(not_json), "cluster", &obj, rv, err, sizeof err), -1);
}

Test(kube_event, status_is_described_for_the_log)
{
    const char *status = "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"message\":\"Unauthorized\",\"code\":401}";
    char out[256];
    kube_status_describe(status, strlen(status), out, sizeof out);
    cr_assert_str_eq(out, "Unauthorized: Unauthorized");
    kube_status_describe("oops\r\nbad", 9, out, sizeof out);
    cr_assert_str_eq(out, "oops..bad");
}
