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

Test(kube_event, list_page_gives_items_rv_and_continue)
{
    const char *list = "{\"kind\":\"MachineConfigurationList\",\"metadata\":{\"resourceVersion\":\"42\","
                       "\"continue\":\"abc=\"},"
                       "\"items\":[{\"metadata\":{\"name\":\"other\"}},{\"metadata\":{\"name\":\"cluster\"}}]}";
    json_t *items;
    char rv[KUBE_RV_MAX], cont[KUBE_CONTINUE_MAX], err[256];
    cr_assert_eq(kube_list_page_parse(list, strlen(list), &items, rv, cont, err, sizeof err), 0);
    cr_assert_eq(json_array_size(items), 2);
    cr_assert_str_eq(rv, "42");
    cr_assert_str_eq(cont, "abc=");
    json_decref(items);
    const char *empty = "{\"metadata\":{\"resourceVersion\":\"43\"},\"items\":null}";
    cr_assert_eq(kube_list_page_parse(empty, strlen(empty), &items, rv, cont, err, sizeof err), 0);
    cr_assert_eq(json_array_size(items), 0);
    cr_assert_str_eq(rv, "43");
    cr_assert_str_eq(cont, "");
    json_decref(items);
    const char *bad[] = {
        "{\"metadata\":{},\"items\":[]}",
        "<html>",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[1]}",
        "{\"metadata\":{\"resourceVersion\":\"1\",\"continue\":\"a b\"},\"items\":[]}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(kube_list_page_parse(bad[i], strlen(bad[i]), &items, rv, cont, err, sizeof err), -1,
                     "%s", bad[i]);
        cr_assert_null(items);
        cr_assert_neq(err[0], '\0');
    }
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
