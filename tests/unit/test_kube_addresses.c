#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "source/kube/addresses.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    return j;
}

static bool has(const kube_addresses_t *a, const char *ip)
{
    addrset_key_t k;
    cr_assert_eq(addrset_key_parse(ip, &k), 0);
    for (size_t i = 0; i < a->n; i++)
        if (!memcmp(a->keys[i].b, k.b, 16))
            return true;
    return false;
}

Test(kube_addresses, machine_ips_of_counted_types_and_node_ref)
{
    json_t *m = parse("{\"metadata\":{\"name\":\"worker-a\"},\"status\":{\"addresses\":["
                      "{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"},"
                      "{\"type\":\"ExternalIP\",\"address\":\"2001:db8::5\"},"
                      "{\"type\":\"InternalDNS\",\"address\":\"worker-a.example\"},"
                      "{\"type\":\"Hostname\",\"address\":\"10.9.9.9\"},"
                      "{\"type\":\"InternalIP\",\"address\":\"not-an-ip\"},"
                      "{\"type\":\"InternalIP\"},"
                      "{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"}],"
                      "\"nodeRef\":{\"kind\":\"Node\",\"name\":\"worker-a\"}}}");
    kube_addresses_t a;
    char err[256];
    cr_assert_eq(kube_addresses_read(m, &a, err, sizeof err), 0);
    cr_assert_str_eq(a.name, "worker-a");
    cr_assert(a.has_node_ref);
    cr_assert_eq(a.n, 2);
    cr_assert(has(&a, "10.0.0.5"));
    cr_assert(has(&a, "2001:db8::5"));
    cr_assert_not(has(&a, "10.9.9.9"));
    json_decref(m);
}

Test(kube_addresses, pending_machine_without_status_or_node_ref)
{
    json_t *m = parse("{\"metadata\":{\"name\":\"new\"}}");
    kube_addresses_t a;
    char err[256];
    cr_assert_eq(kube_addresses_read(m, &a, err, sizeof err), 0);
    cr_assert_not(a.has_node_ref);
    cr_assert_eq(a.n, 0);
    json_decref(m);
    m = parse("{\"metadata\":{\"name\":\"new\"},\"status\":{\"nodeRef\":null,\"addresses\":null}}");
    cr_assert_eq(kube_addresses_read(m, &a, err, sizeof err), 0);
    cr_assert_not(a.has_node_ref);
    json_decref(m);
}

Test(kube_addresses, too_many_addresses_are_counted_not_kept)
{
    char text[4096] = "{\"metadata\":{\"name\":\"big\"},\"status\":{\"addresses\":[";
    for (int i = 0; i < KUBE_ADDRESSES_MAX + 4; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s{\"type\":\"InternalIP\",\"address\":\"10.0.1.%d\"}",
                 i ? "," : "", i);
    strcat(text, "]}}");
    json_t *m = parse(text);
    kube_addresses_t a;
    char err[256];
    cr_assert_eq(kube_addresses_read(m, &a, err, sizeof err), 0);
    cr_assert_eq(a.n, KUBE_ADDRESSES_MAX);
    cr_assert_eq(a.dropped, 4);
    json_decref(m);
}

Test(kube_addresses, refuses_objects_it_cannot_key_or_read)
{
    const char *bad[] = {
        "{}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":7}}",
        "{\"metadata\":{\"name\":\"x\"},\"status\":{\"addresses\":{}}}",
        "{\"metadata\":{\"name\":\"x\"},\"status\":{\"addresses\":\"10.0.0.1\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *m = parse(bad[i]);
        kube_addresses_t a;
        char err[256] = "";
        cr_assert_eq(kube_addresses_read(m, &a, err, sizeof err), -1, "%s", bad[i]);
        cr_assert_neq(err[0], '\0');
        json_decref(m);
    }
}
