/* conf/reload: what a SIGHUP may change and how the gate tells what changed. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "conf/reload.h"

static config_t *parse(const char *text)
{
    char err[CONFIG_ERR_LEN];
    config_t *cfg = config_parse(text, strlen(text), "t.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    return cfg;
}

#define BASE "workers: 2\nlisteners:\n  - address: \"127.0.0.1:0\"\n"

static void expect_restart(const char *extra_old, const char *extra_new, const char *why)
{
    char a[512], b[512], got[256] = "";
    snprintf(a, sizeof a, "%s%s", BASE, extra_old);
    snprintf(b, sizeof b, "%s%s", BASE, extra_new);
    config_t *old = parse(a), *new = parse(b);
    int rc = config_restart_needed(old, new, got, sizeof got);
    if (why) {
        cr_expect_eq(rc, -1, "not refused: %s", why);
        cr_expect_str_eq(got, why);
    } else {
        cr_expect_eq(rc, 0, "refused: %s", got);
    }
    config_unref(old);
    config_unref(new);
}

Test(reload, restart_only_keys_are_named_with_both_values)
{
    expect_restart("", "", NULL);
    expect_restart("limits:\n  idle_timeout: 5s\n", "limits:\n  idle_timeout: 9s\n", NULL);
    expect_restart("reject:\n  mode: hold\n", "reject:\n  mode: deny\n", NULL);
    expect_restart("", "limits:\n  max_header_bytes: 32KiB\n",
                   "limits.max_header_bytes needs a restart (16384 -> 32768)");
    expect_restart("", "limits:\n  max_headers: 50\n", "limits.max_headers needs a restart (100 -> 50)");
    expect_restart("", "admin:\n  address: \"127.0.0.1:9999\"\n",
                   "admin needs a restart (127.0.0.1:22625 -> 127.0.0.1:9999)");
    expect_restart("", "admin:\n  socket: /run/skewgate/admin.sock\n",
                   "admin.socket needs a restart (none -> /run/skewgate/admin.sock)");
    expect_restart("", "admin:\n  token_file: /etc/skewgate/admin.token\n",
                   "admin.token_file needs a restart (none -> /etc/skewgate/admin.token)");
    expect_restart("", "held:\n  max_clients: 8\n", "held.max_clients needs a restart (4096 -> 8)");
    expect_restart("", "held:\n  forget_after: 1m\n", "held.forget_after needs a restart (900000ms -> 60000ms)");
    expect_restart("", "admission:\n  token:\n    files: [/t/a, /t/b]\n",
                   "admission.token.files needs a restart (none -> /t/a, /t/b)");
    /* admission.machines is live: the watch starts, stops or is built
     * again (cli/gate_reload.c). */
    expect_restart("", "admission:\n  machines:\n    enabled: true\n", NULL);
    expect_restart("admission:\n  machines:\n    enabled: true\n", "", NULL);
    expect_restart("admission:\n  machines:\n    enabled: true\n",
                   "admission:\n  machines:\n    enabled: true\n    namespace: other\n    page_size: 7\n", NULL);
    expect_restart("", "metrics:\n  enabled: true\n", "metrics needs a restart (disabled -> 127.0.0.1:22646)");
    char two[512];
    snprintf(two, sizeof two, "%s", BASE);
    config_t *old = parse(two);
    two[strlen("workers: ")] = '3';
    config_t *new = parse(two);
    char got[256];
    cr_expect_eq(config_restart_needed(old, new, got, sizeof got), -1);
    cr_expect_str_eq(got, "workers needs a restart (2 -> 3)");
    config_unref(old);
    config_unref(new);
}

/* auto is compared as written: the CPUs this process may run on narrow
 * between two loads (the kubelet's CPU manager shrinking a pod's cpuset)
 * and the file has not changed. A number where auto was, or the reverse,
 * is a change. */
Test(reload, workers_auto_is_compared_as_written_not_as_the_cpus_now)
{
    const char *listener = "listeners:\n  - address: \"127.0.0.1:0\"\n";
    char text[256], got[256] = "";
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    if (CPU_COUNT(&set) < 2)
        cr_skip_test("needs 2 CPUs to narrow the affinity to 1");
    snprintf(text, sizeof text, "workers: auto\n%s", listener);
    config_t *before = parse(text);
    int first = 0;
    while (!CPU_ISSET(first, &set))
        first++;
    CPU_ZERO(&set);
    CPU_SET(first, &set);
    cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0);
    config_t *after = parse(text);
    cr_expect_eq(config_restart_needed(before, after, got, sizeof got), 0, "refused: %s", got);
    snprintf(text, sizeof text, "workers: 3\n%s", listener);
    config_t *three = parse(text);
    cr_expect_eq(config_restart_needed(before, three, got, sizeof got), -1);
    cr_expect_str_eq(got, "workers needs a restart (auto -> 3)");
    cr_expect_eq(config_restart_needed(three, after, got, sizeof got), -1);
    cr_expect_str_eq(got, "workers needs a restart (3 -> auto)");
    config_unref(before);
    config_unref(after);
    config_unref(three);
}

/* The values are compared whole, not as the message's text: two lists of
 * token files that differ only past its 160 bytes are two lists. */
Test(reload, long_values_that_differ_past_the_message_text_still_differ)
{
    char dir[200], a[1024], b[1024], got[512] = "";
    memset(dir, 'd', sizeof dir - 1);
    dir[sizeof dir - 1] = '\0';
    snprintf(a, sizeof a, "%sadmission:\n  token:\n    files: [/%s/a]\n", BASE, dir);
    snprintf(b, sizeof b, "%sadmission:\n  token:\n    files: [/%s/b]\n", BASE, dir);
    config_t *old = parse(a), *new = parse(b);
    cr_expect_eq(config_restart_needed(old, new, got, sizeof got), -1, "a changed token file was not seen");
    cr_expect(strncmp(got, "admission.token.files needs a restart (", 39) == 0, "%s", got);
    config_t *same = parse(a);
    cr_expect_eq(config_restart_needed(old, same, got, sizeof got), 0, "%s", got);
    config_unref(old);
    config_unref(new);
    config_unref(same);
    snprintf(a, sizeof a, "%sadmin:\n  token_file: /%s/a\n", BASE, dir);
    snprintf(b, sizeof b, "%sadmin:\n  token_file: /%s/b\n", BASE, dir);
    old = parse(a);
    new = parse(b);
    cr_expect_eq(config_restart_needed(old, new, got, sizeof got), -1, "a changed admin.token_file was not seen");
    config_unref(old);
    config_unref(new);
}

Test(reload, a_listener_is_the_same_by_address_as_written_and_tls)
{
    config_listener_t a = {0}, b = {0};
    snprintf(a.addr.text, sizeof a.addr.text, "127.0.0.1:0");
    b = a;
    cr_expect(config_listener_same(&a, &b));
    b.tls.enabled = true;
    cr_expect_not(config_listener_same(&a, &b), "plain and TLS on one address are two listeners");
    b = a;
    snprintf(b.addr.text, sizeof b.addr.text, "127.0.0.1:1");
    cr_expect_not(config_listener_same(&a, &b));
}

Test(reload, upstream_peer_ignores_pool_sizes_and_timeouts)
{
    config_t *a = parse(BASE "upstream:\n  address: \"127.0.0.1:7000\"\n  max_idle: 4\n");
    config_t *b = parse(BASE "upstream:\n  address: \"127.0.0.1:7000\"\n  max_idle: 8\n  connect_timeout: 1s\n");
    config_t *c = parse(BASE "upstream:\n  address: \"127.0.0.1:7001\"\n");
    cr_expect(config_upstream_same_peer(&a->upstream, &b->upstream));
    cr_expect_not(config_upstream_same_peer(&a->upstream, &c->upstream));
    config_unref(a);
    config_unref(b);
    config_unref(c);
}

Test(reload, source_changes_by_kind_and_settings_not_by_limits)
{
    config_t *a = parse(BASE "enforcement:\n  source: file\n  file:\n    path: /a.yaml\n");
    config_t *b = parse(BASE "enforcement:\n  source: file\n  file:\n    path: /a.yaml\n"
                             "  max_staleness: 1m\n  when_unknown: reject\n");
    config_t *c = parse(BASE "enforcement:\n  source: file\n  file:\n    path: /b.yaml\n");
    config_t *k = parse(BASE "enforcement:\n  source: kubernetes\n  kubernetes:\n    server: https://127.0.0.1:6443\n");
    cr_expect(config_source_same(&a->enforcement, &b->enforcement));
    cr_expect_not(config_source_same(&a->enforcement, &c->enforcement));
    cr_expect_not(config_source_same(&a->enforcement, &k->enforcement));
    config_unref(a);
    config_unref(b);
    config_unref(c);
    config_unref(k);
}

/* A Kubernetes source: server, CA and token files, then extra lines. */
static config_t *kube_cfg(const char *server, const char *ca, const char *token, const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             BASE "enforcement:\n  source: kubernetes\n  kubernetes:\n    server: %s\n    ca_file: %s\n"
                  "    token_file: %s\n%s",
             server, ca, token, extra);
    return parse(text);
}

/* What the Kubernetes source and the admission.machines watch connect
 * with: every connection setting counts, the MachineConfiguration's name
 * does not (the watch does not read it), and the source sees both. */
Test(reload, kube_connection_by_every_setting_but_the_object_name)
{
    const char *s = "https://127.0.0.1:6443", *ca = "/ca.crt", *tok = "/token";
    config_t *a = kube_cfg(s, ca, tok, "");
    config_t *same[] = {kube_cfg(s, ca, tok, "  max_staleness: 1m\n"), kube_cfg(s, ca, tok, "    name: other\n")};
    config_t *other[] = {
        kube_cfg("https://127.0.0.1:6444", ca, tok, ""),
        kube_cfg(s, "/other-ca.crt", tok, ""),
        kube_cfg(s, ca, "/other-token", ""),
        kube_cfg(s, ca, tok, "    insecure_skip_tls_verify: true\n"),
        kube_cfg(s, ca, tok, "    watch_timeout: 1m\n"),
    };
    for (size_t i = 0; i < 2; i++)
        cr_expect(config_kube_same(&a->enforcement.kubernetes, &same[i]->enforcement.kubernetes), "same %zu", i);
    cr_expect(config_source_same(&a->enforcement, &same[0]->enforcement));
    cr_expect_not(config_source_same(&a->enforcement, &same[1]->enforcement), "another object name");
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        cr_expect_not(config_kube_same(&a->enforcement.kubernetes, &other[i]->enforcement.kubernetes), "other %zu", i);
        cr_expect_not(config_source_same(&a->enforcement, &other[i]->enforcement), "other %zu", i);
        /* Only another server is another cluster (the first). */
        cr_expect_eq(config_kube_same_server(&a->enforcement.kubernetes, &other[i]->enforcement.kubernetes), i > 0,
                     "same server %zu", i);
        config_unref(other[i]);
    }
    config_unref(a);
    config_unref(same[0]);
    config_unref(same[1]);
}

Test(reload, a_configuration_lives_until_its_last_holder_lets_go)
{
    config_t *cfg = parse(BASE);
    cr_expect_eq(config_ref(cfg), cfg);
    config_unref(cfg);
    cr_expect_eq(atomic_load(&cfg->refs), 1u);
    config_unref(cfg);   /* freed: ASan would see a leak or a double free otherwise */
    config_unref(NULL);
}

/* held.pools is live (issue 26): skewgate_held_clients reads it at each
 * scrape; the held tables' size and timing are not. */
Test(reload, held_pools_are_live)
{
    expect_restart("", "held:\n  pools: [infra]\n", NULL);
    expect_restart("held:\n  pools: [master, worker]\n", "held:\n  pools: []\n", NULL);
    expect_restart("held:\n  pools: [infra]\n", "held:\n  pools: [infra]\n  max_clients: 8\n",
                   "held.max_clients needs a restart (4096 -> 8)");
}
