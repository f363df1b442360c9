#include <criterion/criterion.h>
#include <string.h>

#include "source/kube/endpoint.h"

Test(kube_endpoint, in_cluster_from_the_environment)
{
    kube_endpoint_t ep;
    char err[256];
    cr_assert_eq(kube_endpoint_parse("", "172.30.0.1", "443", &ep, err, sizeof err), 0);
    cr_assert(ep.tls);
    cr_assert_str_eq(ep.host, "172.30.0.1");
    cr_assert_str_eq(ep.authority, "172.30.0.1:443");
    cr_assert_eq(kube_endpoint_parse("", "fd02::1", "443", &ep, err, sizeof err), 0);
    cr_assert_str_eq(ep.host, "fd02::1");
    cr_assert_str_eq(ep.authority, "[fd02::1]:443");
    cr_assert_eq(kube_endpoint_parse("", NULL, NULL, &ep, err, sizeof err), -1);
    cr_assert(strstr(err, "KUBERNETES_SERVICE_HOST"), "%s", err);
    cr_assert_eq(kube_endpoint_parse("", "a b", "443", &ep, err, sizeof err), -1);
    cr_assert_eq(kube_endpoint_parse("", "10.0.0.1", "99999", &ep, err, sizeof err), -1);
}

Test(kube_endpoint, explicit_servers)
{
    kube_endpoint_t ep;
    char err[256];
    cr_assert_eq(kube_endpoint_parse("https://api.example.com:6443", NULL, NULL, &ep, err, sizeof err), 0);
    cr_assert(ep.tls);
    cr_assert_str_eq(ep.host, "api.example.com");
    cr_assert_str_eq(ep.port, "6443");
    cr_assert_eq(kube_endpoint_parse("https://[::1]:6443/", NULL, NULL, &ep, err, sizeof err), 0);
    cr_assert_str_eq(ep.host, "::1");
    cr_assert_str_eq(ep.authority, "[::1]:6443");
    cr_assert_eq(kube_endpoint_parse("http://127.0.0.1:8001", NULL, NULL, &ep, err, sizeof err), 0);
    cr_assert_not(ep.tls);
    cr_assert_eq(kube_endpoint_parse("https://api.example.com", NULL, NULL, &ep, err, sizeof err), 0);
    cr_assert_str_eq(ep.port, "443");
    const char *bad[] = {"ftp://x", "https://", "https://[::1", "https://h:0", "https://h:x",
                         "https://h:443/api", "https://h\r\n:443", "https://user@h:443"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(kube_endpoint_parse(bad[i], NULL, NULL, &ep, err, sizeof err), -1, "%s", bad[i]);
}

Test(kube_endpoint, list_and_watch_targets_escape_the_selector)
{
    char t[KUBE_TARGET_MAX];
    kube_collection_t mc = {KUBE_MC_PATH, "metadata.name=cluster", 0, NULL};
    cr_assert_eq(kube_list_target(t, sizeof t, &mc, NULL), 0);
    cr_assert_str_eq(t, "/apis/operator.openshift.io/v1/machineconfigurations"
                        "?fieldSelector=metadata.name%3Dcluster");
    cr_assert_eq(kube_watch_target(t, sizeof t, &mc, "51234", 300), 0);
    cr_assert_str_eq(t, "/apis/operator.openshift.io/v1/machineconfigurations"
                        "?fieldSelector=metadata.name%3Dcluster&watch=1&resourceVersion=51234"
                        "&allowWatchBookmarks=true&timeoutSeconds=300");
    kube_collection_t odd = {KUBE_MC_PATH, "metadata.name=a.b-c", 0, NULL};
    cr_assert_eq(kube_watch_target(t, sizeof t, &odd, "x/y&z", 1), 0);
    cr_assert(strstr(t, "metadata.name%3Da.b-c&"), "%s", t);
    cr_assert(strstr(t, "resourceVersion=x%2Fy%26z&"), "%s", t);
    char small[40];
    cr_assert_eq(kube_list_target(small, sizeof small, &mc, NULL), -1);
}

Test(kube_endpoint, pages_carry_limit_and_continue)
{
    char t[KUBE_TARGET_MAX];
    kube_collection_t nodes = {"/api/v1/nodes", NULL, 500, NULL};
    cr_assert_eq(kube_list_target(t, sizeof t, &nodes, NULL), 0);
    cr_assert_str_eq(t, "/api/v1/nodes?limit=500");
    cr_assert_eq(kube_list_target(t, sizeof t, &nodes, "eyJ2IjoxfQ=="), 0);
    cr_assert_str_eq(t, "/api/v1/nodes?limit=500&continue=eyJ2IjoxfQ%3D%3D");
    kube_collection_t whole = {"/api/v1/nodes", "", 0, NULL};
    cr_assert_eq(kube_list_target(t, sizeof t, &whole, ""), 0);
    cr_assert_str_eq(t, "/api/v1/nodes");
    cr_assert_eq(kube_watch_target(t, sizeof t, &nodes, "7", 60), 0);
    cr_assert_str_eq(t, "/api/v1/nodes?watch=1&resourceVersion=7&allowWatchBookmarks=true&timeoutSeconds=60");
}

Test(kube_endpoint, label_selector_escaped)
{
    char t[KUBE_TARGET_MAX];
    kube_collection_t leases = {"/apis/coordination.k8s.io/v1/namespaces/skewgate/leases", NULL, 100,
                                "skewgate.openshift.io/pace-line"};
    cr_assert_eq(kube_list_target(t, sizeof t, &leases, NULL), 0);
    cr_assert_str_eq(t, "/apis/coordination.k8s.io/v1/namespaces/skewgate/leases?"
                        "labelSelector=skewgate.openshift.io%2Fpace-line&limit=100");
    cr_assert_eq(kube_watch_target(t, sizeof t, &leases, "7", 60), 0);
    cr_assert_str_eq(t, "/apis/coordination.k8s.io/v1/namespaces/skewgate/leases?"
                        "labelSelector=skewgate.openshift.io%2Fpace-line&watch=1&resourceVersion=7"
                        "&allowWatchBookmarks=true&timeoutSeconds=60");
}
