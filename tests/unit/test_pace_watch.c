/* What the pace watch (source/pace_watch.h) keeps of a Node and a CSR:
 * Ready, the addresses and creation of a Node; of a CSR, what
 * cluster-machine-approver's count needs (its kind, its approval) and
 * whether it is a client CSR still pending; and the approver's count
 * and limit over a view (core/pace_view.h). */
#include <criterion/criterion.h>
#include <jansson.h>

#include "core/pace_view.h"
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

#define BOOTSTRAPPER "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
#define CMA_MESSAGE "This CSR was approved by the Node CSR Approver (cluster-machine-approver)"

/* A CSR of that signer, user, groups (a JSON array) and conditions (a
 * JSON array), created at 2026-12-03T11:00:00Z, read. */
static pace_csr_record_t csr(const char *signer, const char *user, const char *groups, const char *conditions)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"2026-12-03T11:00:00Z\"},"
             "\"spec\":{\"signerName\":\"%s\",\"username\":\"%s\",\"groups\":%s},\"status\":{\"conditions\":%s}}",
             signer, user, groups, conditions);
    json_t *j = parse(text);
    pace_csr_record_t r;
    char err[128];
    cr_assert_eq(pace_watch_read_csr(j, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r.created_ms, 1796295600000ll);
    r.name = NULL;              /* borrowed from j */
    json_decref(j);
    return r;
}

#define CLIENT "kubernetes.io/kube-apiserver-client-kubelet"
#define SERVING "kubernetes.io/kubelet-serving"

Test(pace_watch, a_csr_is_a_node_csr_by_signer_and_user_or_group_as_the_approver_tells)
{
    /* A bootstrapper's client CSR, pending: the approver's and V's. */
    pace_csr_record_t r = csr(CLIENT, BOOTSTRAPPER, "[\"system:serviceaccounts\"]", "[]");
    cr_expect(r.node_csr && !r.approved && r.pending_client);
    /* Denied or Failed: still the approver's (no Approved condition),
     * no longer pending (not V). */
    r = csr(CLIENT, BOOTSTRAPPER, "[]", "[{\"type\":\"Denied\",\"status\":\"True\"}]");
    cr_expect(r.node_csr && !r.approved && !r.pending_client, "a Denied client CSR");
    r = csr(CLIENT, BOOTSTRAPPER, "[]", "[{\"type\":\"Failed\",\"status\":\"True\"}]");
    cr_expect(r.node_csr && !r.approved && !r.pending_client, "a Failed client CSR");
    /* A client CSR from another user is none of its business. */
    r = csr(CLIENT, "system:node:worker-1", "[\"system:nodes\"]", "[]");
    cr_expect(!r.node_csr && !r.pending_client, "a client CSR of another user");
    /* A serving CSR counts with group system:nodes, never in V. */
    r = csr(SERVING, "system:node:worker-1", "[\"system:authenticated\",\"system:nodes\"]", "[]");
    cr_expect(r.node_csr && !r.approved && !r.pending_client, "a serving CSR of system:nodes");
    r = csr(SERVING, "system:node:worker-1", "[\"system:authenticated\"]", "[]");
    cr_expect(!r.node_csr, "a serving CSR without system:nodes");
    r = csr(SERVING, "system:node:worker-1", "null", "[]");
    cr_expect(!r.node_csr, "a serving CSR without groups");
    r = csr("example.com/other", BOOTSTRAPPER, "[\"system:nodes\"]", "[]");
    cr_expect(!r.node_csr, "another signer");
    /* Approved: when, and by whom. Any status counts as approved, as
     * isApproved reads it. */
    r = csr(CLIENT, BOOTSTRAPPER, "[]",
            "[{\"type\":\"Approved\",\"status\":\"True\",\"lastTransitionTime\":\"2026-12-03T11:00:05Z\","
            "\"message\":\"" CMA_MESSAGE "\"}]");
    cr_expect(r.node_csr && r.approved && r.by_approver && !r.pending_client);
    cr_expect_eq(r.approved_ms, 1796295605000ll);
    r = csr(SERVING, "system:node:worker-1", "[\"system:nodes\"]",
            "[{\"type\":\"Approved\",\"status\":\"True\",\"lastTransitionTime\":\"2026-12-03T11:00:07Z\","
            "\"message\":\"approved by an operator\"}]");
    cr_expect(r.node_csr && r.approved && !r.by_approver);
    cr_expect_eq(r.approved_ms, 1796295607000ll);
    r = csr(CLIENT, BOOTSTRAPPER, "[]", "[{\"type\":\"Approved\",\"status\":\"False\"}]");
    cr_expect(r.approved && !r.by_approver && r.approved_ms == 0 && !r.pending_client, "an Approved of no time");
    /* No spec, no status: nothing. No name: an error. */
    json_t *j = parse("{\"metadata\":{\"name\":\"bare\"}}");
    char err[128];
    cr_assert_eq(pace_watch_read_csr(j, &r, err, sizeof err), 0);
    cr_expect(!r.node_csr && !r.approved && !r.pending_client && r.created_ms == 0);
    json_decref(j);
    j = parse("{\"metadata\":{}}");
    cr_assert_eq(pace_watch_read_csr(j, &r, err, sizeof err), -1);
    json_decref(j);
}

/* A view holding unapproved node CSRs created at the times u[0..nu)
 * (ascending), and ones approved by another controller (created, at). */
static pace_view_t view_of(const int64_t *u, size_t nu, const pace_view_approved_t *a, size_t na)
{
    return (pace_view_t){.trusted = true, .approver_created = (int64_t *)u, .n_approver = nu,
                         .approved_other = (pace_view_approved_t *)a, .n_approved_other = na, .n_machines = -1};
}

Test(pace_watch, the_approver_counts_within_the_hour_and_10_s_ahead)
{
    const int64_t now = 5 * 3600 * 1000;
    /* 2 h ago, just at and just within an hour, now, 5 s and 9.999 s
     * ahead, at 10 s and 20 s ahead. */
    const int64_t u[] = {now - 2 * 3600000, now - 3600000, now - 3600000 + 1, now, now + 5000,
                         now + 9999, now + 10000, now + 20000};
    pace_view_t v = view_of(u, 8, NULL, 0);
    cr_assert_eq(pace_view_approver_count(&v, now), 4u);
    /* Each alone. */
    const struct { int64_t t; size_t want; } one[] = {
        {now - 2 * 3600000, 0}, {now - 3600000, 0}, {now - 30 * 60000, 1}, {now + 5000, 1}, {now + 20000, 0}};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        v = view_of(&one[i].t, 1, NULL, 0);
        cr_expect_eq(pace_view_approver_count(&v, now), one[i].want, "created at now%+lld ms",
                     (long long)(one[i].t - now));
    }
    /* Time passing moves the window: 20 s ahead counts 15 s later, and
     * the one of 30 min ago leaves it half an hour later. */
    int64_t t = now + 20000;
    v = view_of(&t, 1, NULL, 0);
    cr_expect_eq(pace_view_approver_count(&v, now + 15000), 1u);
    t = now - 30 * 60000;
    v = view_of(&t, 1, NULL, 0);
    cr_expect_eq(pace_view_approver_count(&v, now + 30 * 60000), 0u);
    v = view_of(NULL, 0, NULL, 0);
    cr_expect_eq(pace_view_approver_count(&v, now), 0u);
}

Test(pace_watch, one_another_controller_approved_counts_for_30_s)
{
    const int64_t now = 5 * 3600 * 1000;
    /* Created a minute ago, approved 25 s ago: counted; 40 s ago: not;
     * approved 5 s ahead (the clocks differ): counted; 20 s ahead: not. */
    const pace_view_approved_t a[] = {
        {now - 60000, now - 25000}, {now - 60000, now - 40000}, {now - 60000, now + 5000}, {now - 60000, now + 20000}};
    pace_view_t v = view_of(NULL, 0, a, 4);
    cr_assert_eq(pace_view_approver_count(&v, now), 2u);
    /* Counts for 30 s from its approval then not. */
    v = view_of(NULL, 0, a, 1);
    cr_expect_eq(pace_view_approver_count(&v, now - 25000 + 29999), 1u);
    cr_expect_eq(pace_view_approver_count(&v, now - 25000 + 30000), 0u);
    /* Recently approved but created over an hour ago: not counted. */
    const pace_view_approved_t old = {now - 3600000 - 1, now - 1000};
    v = view_of(NULL, 0, &old, 1);
    cr_expect_eq(pace_view_approver_count(&v, now), 0u);
    /* With unapproved ones, both add up. */
    const int64_t u[] = {now - 1000, now};
    v = view_of(u, 2, a, 4);
    cr_expect_eq(pace_view_approver_count(&v, now), 4u);
}

Test(pace_watch, the_approver_limit_is_the_most_of_machines_and_nodes_plus_100)
{
    pace_view_t v = {.n_nodes = 0, .n_machines = -1};
    cr_expect_eq(pace_view_approver_limit(&v), 100u);
    v.n_nodes = 30;
    cr_expect_eq(pace_view_approver_limit(&v), 130u, "Machines not watched: Nodes alone");
    v.n_machines = 50;
    cr_expect_eq(pace_view_approver_limit(&v), 150u);
    v.n_machines = 10;
    cr_expect_eq(pace_view_approver_limit(&v), 130u);
    v.n_machines = 0;
    v.n_nodes = 0;
    cr_expect_eq(pace_view_approver_limit(&v), 100u);
}
