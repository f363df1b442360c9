/* What the pace watch (source/pace_watch.h) keeps of a Node and a CSR:
 * Ready, the addresses and creation of a Node; whether a CSR is a kubelet
 * client CSR still pending, as cluster-machine-approver judges it. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "source/pace_watch.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    return j;
}

Test(pace_watch, a_node_is_ready_only_with_its_ready_condition_true)
{
    const char *cases[][2] = {
        {"{\"metadata\":{\"name\":\"n1\",\"creationTimestamp\":\"2026-12-03T11:00:00Z\"},\"status\":{\"conditions\":"
         "[{\"type\":\"MemoryPressure\",\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"True\"}],"
         "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.5\"},{\"type\":\"Hostname\",\"address\":\"n1\"}]}}",
         "1"},
        {"{\"metadata\":{\"name\":\"n2\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}", "0"},
        {"{\"metadata\":{\"name\":\"n3\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}", "0"},
        {"{\"metadata\":{\"name\":\"n4\"},\"status\":{}}", "0"},
        {"{\"metadata\":{\"name\":\"n5\"}}", "0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = parse(cases[i][0]);
        pace_node_record_t n;
        char err[128];
        cr_assert_eq(pace_watch_read_node(j, &n, err, sizeof err), 0, "%s", err);
        cr_expect_eq(n.ready, cases[i][1][0] == '1', "case %zu", i);
        json_decref(j);
    }
    json_t *j = parse(cases[0][0]);
    pace_node_record_t n;
    char err[128];
    cr_assert_eq(pace_watch_read_node(j, &n, err, sizeof err), 0);
    cr_assert_eq(n.addresses.n, 1u);
    cr_assert_eq(n.created_ms, 1796295600000ll);
    json_decref(j);
    j = parse("{\"metadata\":{}}");
    cr_assert_eq(pace_watch_read_node(j, &n, err, sizeof err), -1);
    json_decref(j);
}

Test(pace_watch, a_csr_counts_when_a_kubelet_client_csr_no_condition_ended)
{
    const char *k = "\"spec\":{\"signerName\":\"kubernetes.io/kube-apiserver-client-kubelet\"}";
    char text[6][512];
    snprintf(text[0], sizeof text[0], "{\"metadata\":{\"name\":\"c0\",\"creationTimestamp\":\"2026-12-03T11:00:00Z\"},%s}", k);
    snprintf(text[1], sizeof text[1], "{\"metadata\":{\"name\":\"c1\"},%s,\"status\":{\"conditions\":[{\"type\":\"Approved\",\"status\":\"True\"}]}}", k);
    snprintf(text[2], sizeof text[2], "{\"metadata\":{\"name\":\"c2\"},%s,\"status\":{\"conditions\":[{\"type\":\"Denied\",\"status\":\"True\"}]}}", k);
    snprintf(text[3], sizeof text[3], "{\"metadata\":{\"name\":\"c3\"},%s,\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}}", k);
    snprintf(text[4], sizeof text[4], "{\"metadata\":{\"name\":\"c4\"},\"spec\":{\"signerName\":\"kubernetes.io/kubelet-serving\"}}");
    snprintf(text[5], sizeof text[5], "{\"metadata\":{\"name\":\"c5\"},%s,\"status\":{}}", k);
    const bool want[6] = {true, false, false, false, false, true};
    for (size_t i = 0; i < 6; i++) {
        json_t *j = parse(text[i]);
        pace_csr_record_t r;
        char err[128];
        cr_assert_eq(pace_watch_read_csr(j, &r, err, sizeof err), 0, "%s", err);
        cr_expect_eq(r.pending_kubelet, want[i], "case %zu: %s", i, text[i]);
        if (i == 0)
            cr_expect_eq(r.created_ms, 1796295600000ll);
        json_decref(j);
    }
}
