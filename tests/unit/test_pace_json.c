/* pace_json_text (src/admin/held_json.c): the room's rows are written by
 * hand, so every row must still be JSON that a parser reads back exactly:
 * an IPv6 and an IPv4 address, a pool with a quote, a backslash and
 * control bytes, the times, and the extra members. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <string.h>

#include "../../src/admin/held_json.h"

static pace_entry_t entry(const char *addr, const char *pool, uint64_t first, uint64_t admitted)
{
    pace_entry_t e = {.first_ms = first, .seen_ms = first + 1000, .admitted_ms = admitted, .present = true};
    cr_assert_eq(addrset_key_parse(addr, &e.key), 0);
    strncpy(e.pool, pool, sizeof e.pool - 1);
    return e;
}

Test(pace_json, every_row_reads_back_as_written)
{
    pace_entry_t line[3] = {entry("fd00::1:2", "wor\"ker\\x", 10000, 0), entry("10.0.0.255", "master", 11000, 0),
                            entry("127.0.0.1", "a\tb\x01", 11500, 0)};
    pace_entry_t joining[1] = {entry("192.168.1.7", "infra", 2000, 5000)};
    pace_report_t rep = {.line = line, .n_line = 3, .joining = joining, .n_joining = 1};
    rep.stats = (pace_stats_t){.joining = 1, .waiting = 3, .max_line = 16, .join_timeout_ms = 1800000, .api = true,
                               .max_joining = 5, .replicas = 1};
    pace_clocks_t c = {.mono_ms = 20000, .wall_ms = 1764806400000ull};     /* 2025-12-04T00:00:00Z */
    json_t *extra = json_pack("{s:s}", "protection", "machines");
    size_t len;
    char *text = pace_json_text(&rep, &c, extra, &len);
    json_decref(extra);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), len);
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    cr_assert_not_null(j, "%s at %d: %s", err.text, err.position, text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "protection")), "machines");
    const json_t *l = json_object_get(j, "line");
    cr_assert_eq(json_array_size(l), 3u);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "address")), "fd00::1:2");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "pool")), "wor\"ker\\x");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 1), "address")), "10.0.0.255");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(l, 1), "place")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(l, 1), "waitedSeconds")), 9);
    /* control bytes are not JSON strings' to carry raw: sanitized away */
    const char *p2 = json_string_value(json_object_get(json_array_get(l, 2), "pool"));
    cr_assert_not_null(p2);
    for (const char *s = p2; *s; s++)
        cr_assert_geq((unsigned char)*s, 0x20u, "%s", p2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "firstPaced")), "2025-12-03T23:59:50Z");
    const json_t *jn = json_array_get(json_object_get(j, "joiningNodes"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(jn, "address")), "192.168.1.7");
    cr_assert_str_eq(json_string_value(json_object_get(jn, "admittedAt")), "2025-12-03T23:59:45Z");
    cr_assert_str_eq(json_string_value(json_object_get(jn, "freesAt")), "2025-12-04T00:29:45Z");
    cr_assert_str_eq(json_string_value(json_object_get(jn, "freesOn")), "Ready or join_timeout");
    cr_assert_eq(json_integer_value(json_object_get(jn, "joiningSeconds")), 15);
    cr_assert(json_is_null(json_object_get(j, "headEarliestAdmission")));
    json_decref(j);
    free(text);
}
