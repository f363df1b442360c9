#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/ssl.h>

#include "cli/cmd.h"
#include "conf/config.h"
#include "conf/grammar.h"

static char err[CONFIG_ERR_LEN];

/* The smallest valid configuration; tests append to it. */
#define MINIMAL "listeners:\n  - address: \"127.0.0.1:0\"\n"

static config_t *parse(const char *text)
{
    err[0] = '\0';
    return config_parse(text, strlen(text), "t.yaml", err, sizeof err);
}

static void expect_error(const char *text, const char *expected)
{
    config_t *cfg = parse(text);
    cr_expect_null(cfg, "accepted:\n%s", text);
    config_free(cfg);
    cr_expect_str_eq(err, expected);
}

static void redirect_both(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

static config_t *parse_ok(const char *text)
{
    config_t *cfg = parse(text);
    cr_assert_not_null(cfg, "%s", err);
    return cfg;
}

/* --- Defaults and the shipped files. */

Test(config, defaults_when_keys_absent)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_eq(cfg->workers, 0, "auto, resolved at start");
    cr_expect_geq(config_worker_threads(cfg), 1);
    cr_expect_eq(cfg->n_listeners, 1);
    cr_expect_not(cfg->listeners[0].tls.enabled);
    cr_expect_str_eq(cfg->upstream.addr.text, "127.0.0.1:22624");
    cr_expect_not(cfg->upstream.tls);
    cr_expect_null(cfg->upstream.ca_file);
    cr_expect_str_eq(cfg->upstream.server_name, "127.0.0.1");
    cr_expect_eq(cfg->upstream.connect_timeout_ms, 5000);
    cr_expect_eq(cfg->upstream.response_timeout_ms, 60000);
    cr_expect_eq(cfg->upstream.idle_timeout_ms, 60000);
    cr_expect_eq(cfg->upstream.max_idle, 16);
    cr_expect_eq(cfg->upstream.max_concurrent, 64);
    cr_expect_eq(cfg->upstream.max_queue, 256);
    cr_expect_eq(cfg->upstream.queue_timeout_ms, 10000);
    cr_expect_eq(cfg->gate.n_prefixes, 1);
    cr_expect_str_eq(cfg->gate.prefixes[0], "/config/");
    cr_expect_eq(cfg->gate.reject_mode, REJECT_HOLD);
    const config_enforcement_t *e = &cfg->enforcement;
    cr_expect_eq(e->source, SOURCE_KIND_KUBERNETES);
    cr_expect_str_eq(e->kubernetes.server, "");
    cr_expect_str_eq(e->kubernetes.ca_file, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
    cr_expect_str_eq(e->kubernetes.token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
    cr_expect_str_eq(e->kubernetes.name, "cluster");
    cr_expect_eq(e->kubernetes.watch_timeout_ms, 300000);
    cr_expect_null(e->file.path);
    cr_expect_eq(e->file.poll_interval_ms, 1000);
    cr_expect(e->limits.ocp.major == 4 && e->limits.ocp.minor == 13 && e->limits.ocp.patch == 0);
    cr_expect(e->limits.rhel.major == 9 && e->limits.rhel.minor == 2);
    cr_expect_eq(e->policy.when_unknown, DECISION_ADMIT);
    cr_expect_eq(e->policy.when_unparseable, DECISION_ADMIT);
    cr_expect_eq(e->max_staleness_ms, 300000);
    cr_expect_eq(cfg->limits.max_connections, 10000);
    cr_expect_eq(cfg->limits.max_header_bytes, 16384);
    cr_expect_eq(cfg->limits.max_headers, 100);
    cr_expect_eq(cfg->limits.max_uri_bytes, 8192);
    cr_expect_eq(cfg->limits.header_timeout_ms, 10000);
    cr_expect_eq(cfg->limits.idle_timeout_ms, 120000);
    cr_expect_eq(cfg->limits.send_timeout_ms, 60000);
    cr_expect_eq(cfg->limits.drain_timeout_ms, 30000);
    cr_expect(cfg->admin.enabled);
    cr_expect_str_eq(cfg->admin.addr.text, "127.0.0.1:22625");
    cr_expect_not(cfg->metrics.enabled);
    cr_expect_str_eq(cfg->metrics.addr.text, "127.0.0.1:22646");
    cr_expect_eq(cfg->log.level, LOG_INFO);
    cr_expect(cfg->log.access);
    cr_expect(cfg->coalesce.enabled);
    cr_expect_eq(cfg->coalesce.max_body, 16u << 20);
    cr_expect_eq(cfg->coalesce.max_followers, 1000);
    cr_expect_eq(cfg->coalesce.ttl_ms, 0);
    cr_expect_eq(cfg->coalesce.min_read_rate, 32u << 10);
    config_free(cfg);
}

/* The gate, `skewgate verdict` and the verdict's tests share one source of
 * the skew defaults. */
Test(config, skew_defaults_are_the_cores)
{
    verdict_limits_t limits;
    verdict_policy_t policy;
    memset(&limits, 0xa5, sizeof limits);
    memset(&policy, 0xa5, sizeof policy);
    verdict_limits_default(&limits);
    verdict_policy_default(&policy);
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_eq(memcmp(&cfg->enforcement.limits, &limits, sizeof limits), 0);
    cr_expect_eq(memcmp(&cfg->enforcement.policy, &policy, sizeof policy), 0);
    config_free(cfg);
}

Test(config, reference_config_loads_with_documented_values)
{
    config_t *cfg = config_load(SRCDIR "/conf/skewgate.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    cr_expect_eq(cfg->n_listeners, 2);
    const config_tls_server_t *tls = &cfg->listeners[0].tls;
    cr_expect(tls->enabled);
    cr_expect_str_eq(tls->certificate, "/etc/ssl/mcs/tls.crt");
    cr_expect_str_eq(tls->key, "/etc/ssl/mcs/tls.key");
    cr_expect_eq(tls->min_version, TLS1_2_VERSION);
    cr_expect(tls->session_tickets);
    cr_expect_not(cfg->listeners[1].tls.enabled);
    cr_expect_str_eq(cfg->listeners[0].addr.text, "0.0.0.0:22643");
    cr_expect_str_eq(cfg->listeners[1].addr.text, "0.0.0.0:22644");
    cr_expect_eq(cfg->gate.reject_mode, REJECT_HOLD);
    cr_expect_eq(cfg->enforcement.source, SOURCE_KIND_KUBERNETES);
    config_free(cfg);
}

/* The reference file states the defaults: it must say what a config that
 * leaves the key out gets. */
Test(config, reference_config_matches_defaults)
{
    config_t *ref = config_load(SRCDIR "/conf/skewgate.yaml", err, sizeof err);
    cr_assert_not_null(ref, "%s", err);
    config_t *tls_listener = parse_ok(
        "listeners:\n  - address: \"0.0.0.0:22623\"\n    tls: {certificate: c, key: k}\n");
    config_t *def = parse_ok(MINIMAL);
    const config_tls_server_t *a = &ref->listeners[0].tls, *b = &tls_listener->listeners[0].tls;
    cr_expect_str_eq(a->ciphers, b->ciphers);
    cr_expect_str_eq(a->ciphersuites, b->ciphersuites);
    cr_expect_str_eq(a->groups, b->groups);
    cr_expect_eq(a->min_version, b->min_version);
    cr_expect_eq(memcmp(&ref->upstream.addr, &def->upstream.addr, sizeof def->upstream.addr), 0);
    cr_expect_eq(ref->upstream.response_timeout_ms, def->upstream.response_timeout_ms);
    cr_expect_eq(ref->upstream.max_queue, def->upstream.max_queue);
    cr_expect_eq(memcmp(&ref->enforcement.limits, &def->enforcement.limits, sizeof def->enforcement.limits), 0);
    cr_expect_eq(ref->enforcement.kubernetes.watch_timeout_ms, def->enforcement.kubernetes.watch_timeout_ms);
    cr_expect_eq(memcmp(&ref->limits, &def->limits, sizeof def->limits), 0);
    cr_expect_eq(memcmp(&ref->admin.addr, &def->admin.addr, sizeof def->admin.addr), 0);
    cr_expect_eq(ref->metrics.enabled, def->metrics.enabled);
    cr_expect_eq(memcmp(&ref->metrics.addr, &def->metrics.addr, sizeof def->metrics.addr), 0);
    cr_expect_eq(ref->workers, def->workers);
    cr_expect_eq(memcmp(&ref->coalesce, &def->coalesce, sizeof def->coalesce), 0);
    cr_expect_eq(memcmp(&ref->held, &def->held, sizeof def->held), 0);
    config_free(ref);
    config_free(tls_listener);
    config_free(def);
}

Test(config, examples_load_and_resolve_paths_against_their_directory)
{
    config_t *cfg = config_load(SRCDIR "/conf/examples/file-source.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    cr_expect_eq(cfg->enforcement.source, SOURCE_KIND_FILE);
    cr_expect_str_eq(cfg->enforcement.file.path, SRCDIR "/conf/examples/objects/machineconfiguration.yaml");
    cr_expect_eq(cfg->enforcement.file.poll_interval_ms, 250);
    cr_expect_eq(cfg->gate.reject_mode, REJECT_EXPLAIN);
    config_free(cfg);

    cfg = config_load(SRCDIR "/conf/examples/out-of-cluster.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    cr_expect_str_eq(cfg->listeners[0].tls.certificate, SRCDIR "/conf/examples/tls/gate.crt");
    cr_expect_eq(cfg->listeners[0].tls.min_version, TLS1_3_VERSION);
    cr_expect_str_eq(cfg->upstream.ca_file, SRCDIR "/conf/examples/tls/mcs-ca.crt");
    cr_expect_str_eq(cfg->upstream.server_name, "api-int.example.com");
    cr_expect_str_eq(cfg->enforcement.kubernetes.server, "https://api.example.com:6443");
    cr_expect_str_eq(cfg->enforcement.kubernetes.token_file, SRCDIR "/conf/examples/kube/token");
    config_free(cfg);
}

Test(config, absolute_paths_and_bare_file_names_are_kept)
{
    config_t *cfg = parse_ok(MINIMAL "enforcement: {source: file, file: {path: /srv/mc.yaml}}\n"
                                     "upstream: {tls: true, ca_file: ca.pem}\n");
    cr_expect_str_eq(cfg->enforcement.file.path, "/srv/mc.yaml");
    cr_expect_str_eq(cfg->upstream.ca_file, "ca.pem");   /* "t.yaml" has no directory */
    config_free(cfg);
}

/* --- Each class of error names file:line:col of the offending node. */

Test(config, misspelt_key_names_its_line_with_a_suggestion)
{
    expect_error(MINIMAL "uptream:\n  address: \"127.0.0.1:1\"\n",
                 "t.yaml:3:1: uptream: unknown key; did you mean \"upstream\"?");
    expect_error(MINIMAL "upstream:\n  connectTimeout: 1s\n",
                 "t.yaml:4:3: upstream.connectTimeout: unknown key; did you mean \"connect_timeout\"?");
}

Test(config, swapped_letters_in_a_short_key_are_one_edit)
{
    expect_error("listeners:\n  - address: \"0.0.0.0:1\"\n    tsl: {certificate: c, key: k}\n",
                 "t.yaml:3:5: listeners[0].tsl: unknown key; did you mean \"tls\"?");
}

Test(config, unknown_key_without_a_near_match_lists_the_known_keys)
{
    expect_error(MINIMAL "log:\n  colour: red\n",
                 "t.yaml:4:3: log.colour: unknown key (known keys here: level, access)");
}

/* The top level lists each of its keys once (a merge had left "admission"
 * twice in the table, so the list ended "log, admission"). */
Test(config, unknown_top_level_key_lists_each_known_key_once)
{
    expect_error(MINIMAL "frobnicate: 1\n",
                 "t.yaml:3:1: frobnicate: unknown key (known keys here: workers, listeners, upstream, gate, "
                 "reject, enforcement, evidence, limits, admin, redirect, metrics, held, admission, coalesce, pace, "
                 "log)");
}

Test(config, bad_duration_points_at_the_value)
{
    expect_error(MINIMAL "upstream:\n  connect_timeout: 10x\n",
                 "t.yaml:4:20: upstream.connect_timeout: invalid duration \"10x\": expected a whole "
                 "number and a unit (d, h, m, s, ms), e.g. 250ms, 10s, 5m, 1h30m, 7d");
}

Test(config, zero_duration_is_refused_where_it_makes_no_sense)
{
    expect_error(MINIMAL "limits: {header_timeout: 0s}\n",
                 "t.yaml:3:26: limits.header_timeout: must be greater than 0");
    expect_error(MINIMAL "enforcement: {kubernetes: {watch_timeout: 500ms}}\n",
                 "t.yaml:3:43: enforcement.kubernetes.watch_timeout: must be from 1s to 8760h");
    config_t *cfg = parse_ok(MINIMAL "limits: {drain_timeout: 0s}\n");
    cr_expect_eq(cfg->limits.drain_timeout_ms, 0);
    config_free(cfg);
}

Test(config, bad_listener_address_points_at_the_value)
{
    expect_error("listeners:\n  - address: \"localhost:22623\"\n",
                 "t.yaml:2:14: listeners[0].address: invalid address \"localhost:22623\": not an IP "
                 "address (hostnames are not accepted)");
}

Test(config, unbracketed_ipv6_is_explained)
{
    expect_error("listeners:\n  - address: \"::1:8443\"\n",
                 "t.yaml:2:14: listeners[0].address: invalid address \"::1:8443\": an IPv6 address must "
                 "be in brackets, e.g. [::1]:8443");
}

Test(config, bad_enum_lists_the_choices)
{
    expect_error(MINIMAL "reject:\n  mode: drop\n",
                 "t.yaml:4:9: reject.mode: invalid value \"drop\": expected one of hold, deny, explain");
    expect_error(MINIMAL "enforcement:\n  when_unknown: allow\n",
                 "t.yaml:4:17: enforcement.when_unknown: invalid value \"allow\": expected one of admit, reject");
}

/* --- evidence. */

static void expect_min_spec(config_t *cfg, const char *want)
{
    char buf[32];
    cr_expect_str_eq(ignition_version_format(&cfg->evidence.min_spec, buf, sizeof buf), want);
    config_free(cfg);
}

Test(config, evidence_is_off_and_auto_by_default)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_not(cfg->evidence.enabled);
    cr_expect(cfg->evidence.min_spec_auto);
    expect_min_spec(cfg, "3.3.0");   /* OCP 4.13 boot images: the 4.12 row, Ignition 2.14 */
}

Test(config, evidence_min_spec_auto_follows_the_ocp_limit_or_is_given)
{
    expect_min_spec(parse_ok(MINIMAL "enforcement:\n  limits:\n    ocp_version: \"4.14.0\"\n"
                                     "evidence:\n  enabled: true\n"), "3.4.0");
    expect_min_spec(parse_ok(MINIMAL "evidence:\n  enabled: true\n  min_spec: \"3.1.0\"\n"), "3.1.0");
    config_t *cfg = parse_ok(MINIMAL "evidence:\n  min_spec: 2.2.0\n");
    cr_expect_not(cfg->evidence.min_spec_auto);
    expect_min_spec(cfg, "2.2.0");
}

Test(config, evidence_bad_values_point_at_them)
{
    expect_error(MINIMAL "evidence:\n  min_spec: \"3.x\"\n",
                 "t.yaml:4:13: evidence.min_spec: invalid Ignition spec \"3.x\": expected auto or "
                 "MAJOR.MINOR.PATCH with major 2 or 3, e.g. 3.2.0");
    expect_error(MINIMAL "evidence:\n  enabled: yes\n",
                 "t.yaml:4:12: evidence.enabled: expected true or false, got a string");
    expect_error(MINIMAL "evidence:\n  min_sepc: auto\n",
                 "t.yaml:4:3: evidence.min_sepc: unknown key; did you mean \"min_spec\"?");
    expect_error(MINIMAL "enforcement:\n  limits:\n    ocp_version: \"4.7.0\"\nevidence:\n  enabled: true\n",
                 "t.yaml:7:3: evidence: min_spec auto: no Ignition is known for OCP 4.7 "
                 "(enforcement.limits.ocp_version; the table starts at 4.8): set evidence.min_spec to a spec "
                 "such as \"3.2.0\"");
    /* off, auto below the table is harmless */
    config_free(parse_ok(MINIMAL "enforcement:\n  limits:\n    ocp_version: \"4.7.0\"\n"));
}

Test(config, mapping_where_a_scalar_belongs_is_a_type_error)
{
    expect_error(MINIMAL "upstream:\n  address:\n    ip: 127.0.0.1\n",
                 "t.yaml:5:5: upstream.address: expected an address IP:PORT, got a mapping");
}

Test(config, scalar_where_a_mapping_belongs_is_a_type_error)
{
    expect_error(MINIMAL "upstream: 127.0.0.1:22633\n",
                 "t.yaml:3:11: upstream: expected a mapping, got a string");
    expect_error("listeners:\n  address: \"0.0.0.0:1\"\n",
                 "t.yaml:2:3: listeners: expected a list of listeners, got a mapping");
}

Test(config, tls_listener_without_key_points_at_the_tls_mapping)
{
    expect_error("listeners:\n  - address: \"0.0.0.0:22623\"\n    tls:\n      certificate: c.pem\n",
                 "t.yaml:4:7: listeners[0].tls: missing required key \"key\"");
    expect_error("listeners:\n  - address: \"0.0.0.0:22623\"\n    tls: {key: k.pem}\n",
                 "t.yaml:3:10: listeners[0].tls: missing required key \"certificate\"");
}

Test(config, admin_address_must_be_loopback)
{
    expect_error(MINIMAL "admin:\n  address: \"0.0.0.0:22625\"\n",
                 "t.yaml:4:12: admin.address: address \"0.0.0.0:22625\" is not loopback: the admin API "
                 "can override the verdict, so it listens on 127.0.0.0/8 or [::1] only");
    config_t *cfg = parse_ok(MINIMAL "admin: {address: \"[::1]:9000\"}\n");
    cr_expect_eq(cfg->admin.addr.ss.ss_family, AF_INET6);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "admin: {address: \"127.0.0.2:9000\"}\n");
    config_free(cfg);
}

/* The credentials for changes: neither by default; both are paths,
 * resolved against the file's directory. */
Test(config, admin_socket_and_token_file)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_null(cfg->admin.socket);
    cr_expect_null(cfg->admin.token_file);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "admin: {socket: /run/skewgate/admin.sock, token_file: /etc/skewgate/admin.token}\n");
    cr_expect_str_eq(cfg->admin.socket, "/run/skewgate/admin.sock");
    cr_expect_str_eq(cfg->admin.token_file, "/etc/skewgate/admin.token");
    config_free(cfg);
    expect_error(MINIMAL "admin:\n  socket: \"\"\n",
                 "t.yaml:4:11: admin.socket: must name a file (remove the key to use the default)");
    char text[512];
    snprintf(text, sizeof text, MINIMAL "admin:\n  socket: /%0120d\n", 0);
    expect_error(text, "t.yaml:4:11: admin.socket: a unix socket path is at most 107 bytes (after resolving it "
                       "against the configuration's directory)");
}

/* held.pools: the pools skewgate_held_clients names (issue 26). */
Test(config, held_pools_default_override_and_bad_values)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_assert_eq(cfg->held.n_pools, 2);
    cr_expect_str_eq(cfg->held.pools[0], "master");
    cr_expect_str_eq(cfg->held.pools[1], "worker");
    config_free(cfg);
    cfg = parse_ok(MINIMAL "held:\n  pools: [infra, worker-gpu.a]\n");
    cr_assert_eq(cfg->held.n_pools, 2);
    cr_expect_str_eq(cfg->held.pools[0], "infra");
    cr_expect_str_eq(cfg->held.pools[1], "worker-gpu.a");
    config_free(cfg);
    cfg = parse_ok(MINIMAL "held:\n  pools: []\n");
    cr_expect_eq(cfg->held.n_pools, 0);
    config_free(cfg);
    expect_error(MINIMAL "held:\n  pools: [worker, Worker]\n",
                 "t.yaml:4:19: held.pools[1]: invalid pool name \"Worker\": expected a MachineConfigPool's name "
                 "(lowercase letters, digits, '-' and '.'), at most 63 bytes");
    expect_error(MINIMAL "held:\n  pools: [worker, worker]\n",
                 "t.yaml:4:19: held.pools[1]: \"worker\" is already held.pools[0]");
    char text[512];
    snprintf(text, sizeof text, MINIMAL "held:\n  pools: [p%063d]\n", 0);
    config_t *long_name = parse(text);
    cr_expect_null(long_name, "a 64-byte pool name taken");
    config_free(long_name);
    expect_error(MINIMAL "held:\n  pools: worker\n", "t.yaml:4:10: held.pools: expected a list of pool names, got a string");
}

/* Read-only, so unlike the admin API it may bind a node address. */
Test(config, metrics_address_may_be_any_ip)
{
    config_t *cfg = parse_ok(MINIMAL "metrics:\n  enabled: true\n  address: \"0.0.0.0:22646\"\n");
    cr_expect(cfg->metrics.enabled);
    cr_expect_str_eq(cfg->metrics.addr.text, "0.0.0.0:22646");
    config_free(cfg);
    cfg = parse_ok(MINIMAL "metrics: {enabled: true, address: \"10.0.0.5:22646\"}\n");
    config_free(cfg);
    cfg = parse_ok(MINIMAL "metrics: {enabled: true, address: \"[::]:22646\"}\n");
    cr_expect_eq(cfg->metrics.addr.ss.ss_family, AF_INET6);
    config_free(cfg);
    expect_error(MINIMAL "metrics:\n  enabled: true\n  adress: \"0.0.0.0:1\"\n",
                 "t.yaml:5:3: metrics.adress: unknown key; did you mean \"address\"?");
    expect_error(MINIMAL "metrics:\n  address: \"node:22646\"\n",
                 "t.yaml:4:12: metrics.address: invalid address \"node:22646\": not an IP address "
                 "(hostnames are not accepted)");
    expect_error(MINIMAL "metrics: {enabled: yes}\n",
                 "t.yaml:3:20: metrics.enabled: expected true or false, got a string");
}

/* It is bound beside the listeners and the admin API: no shared port. */
Test(config, metrics_address_must_not_collide)
{
    expect_error(MINIMAL "metrics: {enabled: true, address: \"0.0.0.0:22625\"}\n",
                 "t.yaml:3:35: metrics.address \"0.0.0.0:22625\" and admin.address \"127.0.0.1:22625\" overlap");
    expect_error(MINIMAL "admin: {address: \"127.0.0.1:9100\"}\nmetrics: {enabled: true, address: \"127.0.0.1:9100\"}\n",
                 "t.yaml:4:35: metrics.address \"127.0.0.1:9100\" and admin.address \"127.0.0.1:9100\" overlap");
    expect_error("listeners:\n  - address: \"0.0.0.0:9100\"\nmetrics: {enabled: true, address: \"127.0.0.1:9100\"}\n",
                 "t.yaml:3:35: metrics.address \"127.0.0.1:9100\" and listeners[0].address \"0.0.0.0:9100\" "
                 "overlap: they cannot share a port");
    expect_error(MINIMAL "upstream: {address: \"127.0.0.1:22646\"}\nmetrics: {enabled: true}\n",
                 "t.yaml:3:21: upstream.address \"127.0.0.1:22646\" and metrics.address \"127.0.0.1:22646\" overlap");
    /* Disabled, its address is not bound, so nothing collides. */
    config_t *cfg = parse_ok(MINIMAL "metrics: {enabled: false, address: \"127.0.0.1:22625\"}\n");
    config_free(cfg);
    /* Another family, or port 0 (the kernel picks), is no collision. */
    cfg = parse_ok(MINIMAL "metrics: {enabled: true, address: \"[::]:22625\"}\n");
    config_free(cfg);
    cfg = parse_ok(MINIMAL "admin: {address: \"127.0.0.1:0\"}\nmetrics: {enabled: true, address: \"127.0.0.1:0\"}\n");
    config_free(cfg);
}

Test(config, duplicate_key_is_reported_with_the_file_name)
{
    expect_error(MINIMAL "log: {level: info}\nlog: {level: debug}\n",
                 "t.yaml:4:1: duplicate key \"log\"");
}

Test(config, yaml_syntax_error_is_reported_with_the_file_name)
{
    config_t *cfg = parse(MINIMAL "gate: {prefixes: [\"/config/\"\n");
    cr_expect_null(cfg);
    cr_expect(strncmp(err, "t.yaml:", 7) == 0, "got %s", err);
}

/* --- Cross-field rules. */

Test(config, listeners_are_required)
{
    expect_error("log: {level: info}\n", "t.yaml:1:1: missing required key \"listeners\"");
    expect_error("listeners: []\n", "t.yaml:1:12: listeners: at least one listener is required");
    expect_error("listeners:\n  - tls: {certificate: c, key: k}\n",
                 "t.yaml:2:5: listeners[0]: missing required key \"address\"");
}

Test(config, too_many_listeners_points_at_the_first_extra)
{
    expect_error("listeners:\n"
                 "  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n"
                 "  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n"
                 "  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n  - address: \"127.0.0.1:0\"\n",
                 "t.yaml:10:5: listeners: at most 8 listeners");
}

Test(config, overlapping_listeners_are_refused)
{
    expect_error("listeners:\n  - address: \"0.0.0.0:22623\"\n  - address: \"127.0.0.1:22623\"\n",
                 "t.yaml:3:14: listeners[1].address \"127.0.0.1:22623\" and listeners[0].address "
                 "\"0.0.0.0:22623\" overlap");
    config_t *cfg = parse_ok("listeners:\n  - address: \"0.0.0.0:22623\"\n  - address: \"[::]:22623\"\n");
    config_free(cfg);
}

Test(config, upstream_or_admin_that_is_a_listener_is_refused)
{
    /* The default upstream is blamed on the listener, the only node written. */
    expect_error("listeners:\n  - address: \"0.0.0.0:22624\"\n",
                 "t.yaml:2:14: upstream.address \"127.0.0.1:22624\" and listeners[0].address "
                 "\"0.0.0.0:22624\" overlap: requests would loop");
    expect_error("listeners:\n  - address: \"127.0.0.1:9000\"\nadmin: {address: \"127.0.0.1:9000\"}\n",
                 "t.yaml:3:18: admin.address \"127.0.0.1:9000\" and listeners[0].address "
                 "\"127.0.0.1:9000\" overlap: they cannot share a port");
    expect_error(MINIMAL "upstream: {address: \"127.0.0.1:22625\"}\n",
                 "t.yaml:3:21: upstream.address \"127.0.0.1:22625\" and admin.address \"127.0.0.1:22625\" overlap");
    config_t *cfg = parse_ok(MINIMAL "upstream: {address: \"127.0.0.1:22625\"}\nadmin: {enabled: false}\n");
    config_free(cfg);
}

Test(config, upstream_tls_needs_a_ca_and_tls_only_keys_need_tls)
{
    expect_error(MINIMAL "upstream:\n  tls: true\n",
                 "t.yaml:4:3: upstream: missing required key \"ca_file\": the MCS certificate is issued "
                 "by the cluster's own CA (or set insecure_skip_verify: true)");
    expect_error(MINIMAL "upstream:\n  ca_file: ca.pem\n",
                 "t.yaml:4:12: upstream.ca_file: only applies with upstream.tls: true");
    expect_error(MINIMAL "upstream: {tls: true, ca_file: ca.pem, insecure_skip_verify: true}\n",
                 "t.yaml:3:62: upstream.insecure_skip_verify: contradicts upstream.ca_file; set one of them");
}

Test(config, file_source_needs_a_path)
{
    expect_error(MINIMAL "enforcement:\n  source: file\n",
                 "t.yaml:4:3: enforcement: missing required key \"file.path\" (enforcement.source is file)");
    expect_error(MINIMAL "enforcement:\n  source: file\n  file:\n    poll_interval: 2s\n",
                 "t.yaml:6:5: enforcement.file: missing required key \"path\" (enforcement.source is file)");
}

Test(config, uri_limit_cannot_exceed_the_header_limit)
{
    expect_error(MINIMAL "limits: {max_header_bytes: 4KiB, max_uri_bytes: 8KiB}\n",
                 "t.yaml:3:49: limits.max_uri_bytes: must not exceed limits.max_header_bytes (the "
                 "request line is part of the header)");
}

Test(config, upstream_server_name_defaults_to_the_ip)
{
    config_t *cfg = parse_ok(MINIMAL "upstream: {address: \"[::1]:8443\", tls: true, insecure_skip_verify: true}\n");
    cr_expect_str_eq(cfg->upstream.server_name, "::1");
    cr_expect(cfg->upstream.insecure_skip_verify);
    config_free(cfg);
}

/* --- Scalar types. */

Test(config, booleans_are_true_or_false_only)
{
    expect_error(MINIMAL "log: {access: yes}\n",
                 "t.yaml:3:15: log.access: expected true or false, got a string");
    expect_error(MINIMAL "log: {access: \"true\"}\n",
                 "t.yaml:3:15: log.access: expected true or false, got a string");
    config_t *cfg = parse_ok(MINIMAL "log: {access: false}\n");
    cr_expect_not(cfg->log.access);
    config_free(cfg);
}

Test(config, null_values_are_refused)
{
    expect_error(MINIMAL "upstream:\n  connect_timeout:\n",
                 "t.yaml:4:19: upstream.connect_timeout: expected a duration such as 10s, got null "
                 "(remove the key to use the default)");
}

Test(config, strings_refuse_plain_booleans_and_numbers)
{
    expect_error(MINIMAL "enforcement: {kubernetes: {name: true}}\n",
                 "t.yaml:3:34: enforcement.kubernetes.name: expected a string, got a boolean (quote it "
                 "if a string is meant)");
}

Test(config, workers_auto_or_a_bounded_count)
{
    config_t *cfg = parse_ok(MINIMAL "workers: 4\n");
    cr_expect_eq(cfg->workers, 4);
    cr_expect_eq(config_worker_threads(cfg), 4);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "workers: auto\n");
    cr_expect_eq(cfg->workers, 0, "kept as written, auto");
    cr_expect_geq(config_worker_threads(cfg), 1);
    config_free(cfg);
    expect_error(MINIMAL "workers: 0\n", "t.yaml:3:10: workers: must be greater than 0");
    expect_error(MINIMAL "workers: 257\n", "t.yaml:3:10: workers: must be from 1 to 256");
    expect_error(MINIMAL "workers: many\n",
                 "t.yaml:3:10: workers: expected auto or a whole number from 1 to 256, got a string");
}

Test(config, counts_are_plain_whole_numbers_in_range)
{
    expect_error(MINIMAL "upstream: {max_concurrent: -1}\n",
                 "t.yaml:3:28: upstream.max_concurrent: expected a whole number from 1 to 100000, got a number");
    expect_error(MINIMAL "limits: {max_connections: 1000001}\n",
                 "t.yaml:3:27: limits.max_connections: must be from 1 to 1000000");
    config_t *cfg = parse_ok(MINIMAL "upstream: {max_idle: 0, max_queue: 0}\n");
    cr_expect_eq(cfg->upstream.max_idle, 0);
    cr_expect_eq(cfg->upstream.max_queue, 0);
    config_free(cfg);
}

Test(config, header_size_limits)
{
    config_t *cfg = parse_ok(MINIMAL "limits: {max_header_bytes: 1MiB, max_uri_bytes: 65536}\n");
    cr_expect_eq(cfg->limits.max_header_bytes, 1048576);
    cr_expect_eq(cfg->limits.max_uri_bytes, 65536);
    config_free(cfg);
    expect_error(MINIMAL "limits: {max_header_bytes: 512}\n",
                 "t.yaml:3:28: limits.max_header_bytes: must be from 1KiB to 1MiB");
    expect_error(MINIMAL "limits: {max_header_bytes: 2MiB}\n",
                 "t.yaml:3:28: limits.max_header_bytes: must be from 1KiB to 1MiB");
    expect_error(MINIMAL "limits: {max_header_bytes: 16kb}\n",
                 "t.yaml:3:28: limits.max_header_bytes: invalid size \"16kb\": expected bytes or a number "
                 "with KiB, MiB or GiB, e.g. 16384, 16KiB, 1MiB");
}

Test(config, skew_limits_are_strict_versions)
{
    config_t *cfg = parse_ok(MINIMAL "enforcement: {limits: {ocp_version: \"4.18.2\", rhel_version: 9.10}}\n");
    cr_expect(cfg->enforcement.limits.ocp.major == 4 && cfg->enforcement.limits.ocp.minor == 18 &&
              cfg->enforcement.limits.ocp.patch == 2);
    cr_expect(cfg->enforcement.limits.rhel.major == 9 && cfg->enforcement.limits.rhel.minor == 10);
    config_free(cfg);
    expect_error(MINIMAL "enforcement: {limits: {ocp_version: \"4.13\"}}\n",
                 "t.yaml:3:37: enforcement.limits.ocp_version: invalid OCP version \"4.13\": expected "
                 "MAJOR.MINOR.PATCH, e.g. 4.13.0");
    expect_error(MINIMAL "enforcement: {limits: {rhel_version: \"9.2.0\"}}\n",
                 "t.yaml:3:38: enforcement.limits.rhel_version: invalid RHEL version \"9.2.0\": expected "
                 "MAJOR.MINOR, e.g. 9.2");
}

/* --- The skew limits: enforcement.limits and `skewgate verdict --ocp-limit
 * / --rhel-limit` accept exactly the same strings, the API's formats. */

/* s as a YAML double-quoted scalar that YAML reads back as s itself: the
 * quote, the backslash and every byte outside printable ASCII as \xHH. */
static void yaml_quoted(const char *s, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\';
        used += (size_t)snprintf(out + used, len - used, plain ? "%c" : "\\x%02x", *p);
    }
    snprintf(out + used, len - used, "\"");
}

/* config_parse of the smallest file setting enforcement.limits.KEY. */
static bool config_takes_limit(const char *key, const char *value, verdict_limits_t *limits)
{
    char quoted[256], text[512];
    yaml_quoted(value, quoted, sizeof quoted);
    snprintf(text, sizeof text, MINIMAL "enforcement: {limits: {%s: %s}}\n", key, quoted);
    config_t *cfg = parse(text);
    if (cfg)
        *limits = cfg->enforcement.limits;
    config_free(cfg);
    return cfg != NULL;
}

/* cmd_verdict's exit status with --OPTION=VALUE on an object whose verdict
 * no limit changes (mode None): 0 when it takes the value, 2 when not. */
static int verdict_exit_with_limit(const char *option, const char *value)
{
    char arg[256];
    snprintf(arg, sizeof arg, "--%s=%s", option, value);
    char *argv[] = {"verdict", arg, SRCDIR "/tests/fixtures/machineconfiguration/none.yaml", NULL};
    optind = 0;     /* getopt_long starts over for each run */
    return cmd_verdict(3, argv);
}

typedef struct limit_case {
    const char *text;
    bool valid;
    uint32_t major, minor, patch;
} limit_case_t;

/* Leading zeros, signs, spaces, other digits, overflow and length. */
static const limit_case_t ocp_limit_cases[] = {
    {"4.13.0", true, 4, 13, 0},        {"1.2.3", true, 1, 2, 3},
    {"04.13.0", true, 4, 13, 0},       {"00.00.00", true, 0, 0, 0},
    {"0.0.123456", true, 0, 0, 123456}, {"4.18.22", true, 4, 18, 22},
    {"4.13.0000000", false, 0, 0, 0},  {"1234.567.89", false, 0, 0, 0},
    {"4294967295.0.0", false, 0, 0, 0}, {"4294967296.0.0", false, 0, 0, 0},
    {"99999999999999999999.0.0", false, 0, 0, 0},
    {"+4.13.0", false, 0, 0, 0},       {"-4.13.0", false, 0, 0, 0},
    {"4.+13.0", false, 0, 0, 0},       {"4.-1.00", false, 0, 0, 0},
    {" 4.13.0", false, 0, 0, 0},       {"4.13.0 ", false, 0, 0, 0},
    {"4. 13.0", false, 0, 0, 0},       {"4.13.0\n", false, 0, 0, 0},
    {"4.13.0\t", false, 0, 0, 0},      {"4.13", false, 0, 0, 0},
    {"4.13.0.1", false, 0, 0, 0},      {"v4.13.0", false, 0, 0, 0},
    {"4..13.0", false, 0, 0, 0},       {"", false, 0, 0, 0},
    {"4.13.0-rc.1", false, 0, 0, 0},   {"\xef\xbc\x94.13.0", false, 0, 0, 0},
    {"4.1e1.0", false, 0, 0, 0},       {"0x4.13.0", false, 0, 0, 0},
};

static const limit_case_t rhel_limit_cases[] = {
    {"9.2", true, 9, 2, 0},            {"9.10", true, 9, 10, 0},
    {"09.02", true, 9, 2, 0},          {"0.0", true, 0, 0, 0},
    {"8.10", true, 8, 10, 0},          {"12345678.0", true, 12345678, 0, 0},
    {"1.23456789", true, 1, 23456789, 0},
    {"1.234567890", false, 0, 0, 0},   {"123456789.0", false, 0, 0, 0},
    {"4294967295.0", false, 0, 0, 0},  {"4294967296.0", false, 0, 0, 0},
    {"9", false, 0, 0, 0},             {"9.", false, 0, 0, 0},
    {".2", false, 0, 0, 0},            {"9.2.0", false, 0, 0, 0},
    {"+9.2", false, 0, 0, 0},          {"-9.2", false, 0, 0, 0},
    {" 9.2", false, 0, 0, 0},          {"9.2 ", false, 0, 0, 0},
    {"9,2", false, 0, 0, 0},           {"", false, 0, 0, 0},
    {"9.2a", false, 0, 0, 0},          {"0x9.2", false, 0, 0, 0},
    {"9.2e0", false, 0, 0, 0},         {"\xef\xbc\x99.2", false, 0, 0, 0},
};

Test(skew_limits, config_and_verdict_cli_take_the_same_ocp_limits, .init = redirect_both)
{
    for (size_t i = 0; i < sizeof ocp_limit_cases / sizeof ocp_limit_cases[0]; i++) {
        const limit_case_t *c = &ocp_limit_cases[i];
        verdict_limits_t from_config;
        ocp_version_t parsed;
        bool config = config_takes_limit("ocp_version", c->text, &from_config);
        bool core = version_parse_ocp(c->text, &parsed) == 0;
        int cli = verdict_exit_with_limit("ocp-limit", c->text);
        cr_expect_eq(config, c->valid, "config, \"%s\": %s", c->text, config ? "taken" : err);
        cr_expect_eq(core, c->valid, "version_parse_ocp, \"%s\"", c->text);
        cr_expect_eq(cli, c->valid ? 0 : 2, "--ocp-limit=\"%s\": exit %d", c->text, cli);
        if (config && core && c->valid) {
            ocp_version_t want = {c->major, c->minor, c->patch};
            cr_expect_eq(version_cmp_ocp(&from_config.ocp, &want), 0, "config, \"%s\"", c->text);
            cr_expect_eq(version_cmp_ocp(&parsed, &want), 0, "version_parse_ocp, \"%s\"", c->text);
        }
    }
}

Test(skew_limits, config_and_verdict_cli_take_the_same_rhel_limits, .init = redirect_both)
{
    for (size_t i = 0; i < sizeof rhel_limit_cases / sizeof rhel_limit_cases[0]; i++) {
        const limit_case_t *c = &rhel_limit_cases[i];
        verdict_limits_t from_config;
        rhel_version_t parsed;
        bool config = config_takes_limit("rhel_version", c->text, &from_config);
        bool core = version_parse_rhel(c->text, &parsed) == 0;
        int cli = verdict_exit_with_limit("rhel-limit", c->text);
        cr_expect_eq(config, c->valid, "config, \"%s\": %s", c->text, config ? "taken" : err);
        cr_expect_eq(core, c->valid, "version_parse_rhel, \"%s\"", c->text);
        cr_expect_eq(cli, c->valid ? 0 : 2, "--rhel-limit=\"%s\": exit %d", c->text, cli);
        if (config && core && c->valid) {
            rhel_version_t want = {c->major, c->minor};
            cr_expect_eq(version_cmp_rhel(&from_config.rhel, &want), 0, "config, \"%s\"", c->text);
            cr_expect_eq(version_cmp_rhel(&parsed, &want), 0, "version_parse_rhel, \"%s\"", c->text);
        }
    }
}

Test(config, tls_lists_are_checked_name_by_name)
{
    expect_error("listeners:\n  - address: \"0.0.0.0:1\"\n    tls: {certificate: c, key: k,\n"
                 "      ciphers: \"ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA265\"}\n",
                 "t.yaml:4:16: listeners[0].tls.ciphers: unknown TLS 1.2 cipher \"ECDHE-RSA-AES128-GCM-SHA265\"");
    expect_error("listeners:\n  - address: \"0.0.0.0:1\"\n    tls: {certificate: c, key: k, groups: \"X25519:P-999\"}\n",
                 "t.yaml:3:43: listeners[0].tls.groups: unknown key exchange group \"P-999\"");
    expect_error("listeners:\n  - address: \"0.0.0.0:1\"\n    tls: {certificate: c, key: k, ciphersuites: \"\"}\n",
                 "t.yaml:3:49: listeners[0].tls.ciphersuites: \"\" selects no TLS 1.3 ciphersuite");
    config_t *cfg = parse_ok("listeners:\n  - address: \"0.0.0.0:1\"\n"
                             "    tls: {certificate: c, key: k, ciphers: \"HIGH:!aNULL:!MD5\"}\n");
    cr_expect_str_eq(cfg->listeners[0].tls.ciphers, "HIGH:!aNULL:!MD5");
    config_free(cfg);
}

Test(config, gate_prefixes_must_be_clean_paths)
{
    config_t *cfg = parse_ok(MINIMAL "gate: {prefixes: [\"/config/\", \"/ignition/\"]}\n");
    cr_expect_eq(cfg->gate.n_prefixes, 2);
    cr_expect_str_eq(cfg->gate.prefixes[1], "/ignition/");
    config_free(cfg);
    expect_error(MINIMAL "gate:\n  prefixes:\n    - /config/\n    - /a/../config/\n",
                 "t.yaml:6:7: gate.prefixes[1]: prefix \"/a/../config/\" must be a clean absolute path "
                 "(no //, /./, /../, %, ? or #): requests are matched after decoding and cleaning");
    expect_error(MINIMAL "gate: {prefixes: []}\n", "t.yaml:3:18: gate.prefixes: at least one prefix is required");
}

Test(config, kubernetes_name_and_server_are_checked)
{
    expect_error(MINIMAL "enforcement: {kubernetes: {name: \"../secrets\"}}\n",
                 "t.yaml:3:34: enforcement.kubernetes.name: invalid object name \"../secrets\": expected "
                 "lowercase letters, digits, '-' and '.'");
    expect_error(MINIMAL "enforcement: {kubernetes: {server: \"api.example.com:6443\"}}\n",
                 "t.yaml:3:36: enforcement.kubernetes.server: invalid server \"api.example.com:6443\": "
                 "expected https://HOST[:PORT], or \"\" for in-cluster");
}

Test(config, the_document_must_be_a_mapping)
{
    expect_error("- listeners\n", "t.yaml:1:1: expected a mapping of settings, got a list");
}

/* --- Scalar grammars, as tables. */

Test(config, duration_table)
{
    static const struct { const char *text; int rc; uint64_t ms; } cases[] = {
        {"1h30m", 0, 5400000}, {"250ms", 0, 250},   {"10s", 0, 10000},      {"5m", 0, 300000},
        {"1h", 0, 3600000},    {"0s", 0, 0},        {"1m30s500ms", 0, 90500}, {"90m", 0, 5400000},
        {"10x", -1, 0},        {"10", -1, 0},       {"", -1, 0},            {"-5s", -1, 0},
        {"1.5s", -1, 0},       {"30m1h", -1, 0},    {"1s1s", -1, 0},        {"s", -1, 0},
        {" 10s", -1, 0},       {"10s ", -1, 0},     {"5124095576030431h", -1, 0},
        {"18446744073709551616ms", -1, 0},          {"18446744073709551615ms", 0, UINT64_MAX},
        {"7d", 0, 604800000},  {"1d12h", 0, 129600000}, {"12h1d", -1, 0},   {"1.5h", -1, 0},
        {"213503982335d", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t ms = 0;
        int rc = config_parse_duration(cases[i].text, &ms);
        cr_expect_eq(rc, cases[i].rc, "\"%s\": rc %d", cases[i].text, rc);
        if (rc == 0 && cases[i].rc == 0)
            cr_expect_eq(ms, cases[i].ms, "\"%s\": %llu ms", cases[i].text, (unsigned long long)ms);
    }
}

/* What is wrong, named: a missing unit and a fraction each their own rule. */
Test(config, duration_mistakes_named)
{
    static const struct { const char *text, *why; } cases[] = {
        {"90", "a number needs a unit (d, h, m, s, ms), e.g. 90s"},
        {"1.5h", "whole numbers of each unit: 1h30m, not 1.5h"},
        {"-1m", "a duration cannot be negative"},
        {"5 minutes", "expected a whole number and a unit (d, h, m, s, ms), e.g. 250ms, 10s, 5m, 1h30m, 7d"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t ms;
        const char *why = NULL;
        cr_expect_eq(grammar_duration(cases[i].text, &ms, &why), -1, "%s", cases[i].text);
        cr_expect_str_eq(why, cases[i].why, "%s", cases[i].text);
    }
    char text[32];
    grammar_format_duration(604800000, text, sizeof text);
    cr_expect_str_eq(text, "168h");
}

Test(config, size_table)
{
    static const struct { const char *text; int rc; uint64_t bytes; } cases[] = {
        {"16384", 0, 16384}, {"16KiB", 0, 16384},   {"1MiB", 0, 1048576}, {"2GiB", 0, 2147483648u},
        {"0", 0, 0},         {"16K", -1, 0},        {"16kib", -1, 0},     {"16 KiB", -1, 0},
        {"KiB", -1, 0},      {"-1", -1, 0},         {"1.5MiB", -1, 0},    {"", -1, 0},
        {"17179869184GiB", -1, 0}, {"99999999999999999999", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = 0;
        int rc = config_parse_size(cases[i].text, &bytes);
        cr_expect_eq(rc, cases[i].rc, "\"%s\": rc %d", cases[i].text, rc);
        if (rc == 0 && cases[i].rc == 0)
            cr_expect_eq(bytes, cases[i].bytes, "\"%s\"", cases[i].text);
    }
}

Test(config, address_table)
{
    static const struct { const char *text; int rc; int family; const char *ip; int port; } cases[] = {
        {"0.0.0.0:22623", 0, AF_INET, "0.0.0.0", 22623},
        {"127.0.0.1:0", 0, AF_INET, "127.0.0.1", 0},
        {":22623", 0, AF_INET, "0.0.0.0", 22623},
        {"[::]:22623", 0, AF_INET6, "::", 22623},
        {"[::1]:8443", 0, AF_INET6, "::1", 8443},
        {"[2001:db8::7]:65535", 0, AF_INET6, "2001:db8::7", 65535},
        {"127.0.0.1", -1, 0, NULL, 0},
        {"127.0.0.1:", -1, 0, NULL, 0},
        {"127.0.0.1:65536", -1, 0, NULL, 0},
        {"127.0.0.1:-1", -1, 0, NULL, 0},
        {"127.0.0.1:80x", -1, 0, NULL, 0},
        {"localhost:22623", -1, 0, NULL, 0},
        {"mcs.example.com:22623", -1, 0, NULL, 0},
        {"::1:8443", -1, 0, NULL, 0},
        {"[::1]", -1, 0, NULL, 0},
        {"[::1:8443", -1, 0, NULL, 0},
        {"[127.0.0.1]:80", -1, 0, NULL, 0},
        {"256.0.0.1:80", -1, 0, NULL, 0},
        {"", -1, 0, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        config_addr_t a;
        int rc = config_parse_addr(cases[i].text, &a);
        cr_expect_eq(rc, cases[i].rc, "\"%s\": rc %d", cases[i].text, rc);
        if (rc != 0 || cases[i].rc != 0)
            continue;
        char ip[INET6_ADDRSTRLEN];
        int port;
        if (a.ss.ss_family == AF_INET) {
            const struct sockaddr_in *sin = (const struct sockaddr_in *)&a.ss;
            inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip);
            port = ntohs(sin->sin_port);
            cr_expect_eq(a.len, sizeof *sin);
        } else {
            const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&a.ss;
            inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof ip);
            port = ntohs(sin6->sin6_port);
            cr_expect_eq(a.len, sizeof *sin6);
        }
        cr_expect_eq(a.ss.ss_family, cases[i].family, "\"%s\"", cases[i].text);
        cr_expect_str_eq(ip, cases[i].ip, "\"%s\"", cases[i].text);
        cr_expect_eq(port, cases[i].port, "\"%s\"", cases[i].text);
        cr_expect_str_eq(a.text, cases[i].text);
    }
}

Test(config, upstream_address_must_be_a_connectable_ip)
{
    expect_error(MINIMAL "upstream: {address: \"0.0.0.0:22633\"}\n",
                 "t.yaml:3:21: upstream.address: invalid address \"0.0.0.0:22633\": name a specific IP, not a wildcard");
    expect_error(MINIMAL "upstream: {address: \"127.0.0.1:0\"}\n",
                 "t.yaml:3:21: upstream.address: invalid address \"127.0.0.1:0\": port 0 cannot be connected to");
}

/* --- Files. */

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/skewgate-config-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(config_file, unreadable_empty_and_directory_fail_cleanly)
{
    make_tmpdir();
    char path[128], expected[256];

    snprintf(path, sizeof path, "%s/missing.yaml", tmpdir);
    cr_expect_null(config_load(path, err, sizeof err));
    snprintf(expected, sizeof expected, "%s: cannot open: No such file or directory", path);
    cr_expect_str_eq(err, expected);

    snprintf(path, sizeof path, "%s/empty.yaml", tmpdir);
    write_file(path, "");
    cr_expect_null(config_load(path, err, sizeof err));
    snprintf(expected, sizeof expected, "%s:1:1: empty document", path);
    cr_expect_str_eq(err, expected);
    unlink(path);

    cr_expect_null(config_load(tmpdir, err, sizeof err));
    snprintf(expected, sizeof expected, "%s: cannot read: Is a directory", tmpdir);
    cr_expect_str_eq(err, expected);
    rmdir(tmpdir);
}

Test(config_file, relative_paths_follow_the_config_file)
{
    make_tmpdir();
    char path[128], expected[128];
    snprintf(path, sizeof path, "%s/gate.yaml", tmpdir);
    write_file(path, "listeners:\n  - address: \"127.0.0.1:0\"\n    tls: {certificate: certs/tls.crt, key: /k.pem}\n");
    config_t *cfg = config_load(path, err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    snprintf(expected, sizeof expected, "%s/certs/tls.crt", tmpdir);
    cr_expect_str_eq(cfg->listeners[0].tls.certificate, expected);
    cr_expect_str_eq(cfg->listeners[0].tls.key, "/k.pem");
    cr_expect_str_eq(cfg->path, path);
    config_free(cfg);
    unlink(path);
    rmdir(tmpdir);
}

/* --- skewgate check. */

Test(cmd_check, valid_file_prints_ok, .init = redirect_both)
{
    char *argv[] = {"check", "-c", SRCDIR "/conf/skewgate.yaml", NULL};
    cr_expect_eq(cmd_check(3, argv), 0);
    fflush(stdout);
    /* The kubernetes source with upstream.mcs_release auto: the rules it
     * needs, the ClusterOperator's among them. */
    cr_expect_stdout_eq_str(SRCDIR "/conf/skewgate.yaml: ok\n"
                                   "rbac: the service account needs get, list and watch on:\n"
                                   "  ClusterRole: apiGroups [operator.openshift.io] resources "
                                   "[machineconfigurations] verbs [get list watch] (enforcement.source: kubernetes)\n"
                                   "  ClusterRole: apiGroups [config.openshift.io] resources [clusteroperators] "
                                   "resourceNames [machine-config] verbs [get list watch] (upstream.mcs_release: auto)\n");
}

Test(cmd_check, invalid_file_prints_the_error_and_exits_2, .init = redirect_both)
{
    make_tmpdir();
    char path[128], expected[512];
    snprintf(path, sizeof path, "%s/bad.yaml", tmpdir);
    write_file(path, MINIMAL "reject: {mode: drop}\n");
    char *argv[] = {"check", "--config", path, NULL};
    cr_expect_eq(cmd_check(3, argv), 2);
    unlink(path);
    rmdir(tmpdir);
    fflush(stderr);
    snprintf(expected, sizeof expected,
             "%s:3:16: reject.mode: invalid value \"drop\": expected one of hold, deny, explain\n"
             "note: %s: the checks across keys (addresses that overlap, keys that need or exclude others) run "
             "once this error is fixed\n", path, path);
    cr_expect_stderr_eq_str(expected);
}

Test(cmd_check, usage, .init = redirect_both)
{
    char *help[] = {"check", "--help", NULL};
    char *missing[] = {"check", NULL};
    char *dangling[] = {"check", "-c", NULL};
    cr_expect_eq(cmd_check(2, help), 0);
    cr_expect_eq(cmd_check(1, missing), 2);
    cr_expect_eq(cmd_check(2, dangling), 2);
}

/* --- redirect: the node-local redirect's table and ports. */

#define GATE_PORTS                                                     \
    "listeners:\n"                                                     \
    "  - address: \"0.0.0.0:22643\"\n"                                 \
    "    tls: {certificate: c, key: k}\n"                              \
    "  - address: \"0.0.0.0:22644\"\n"

static size_t redirect_ports(const config_t *cfg, config_redirect_port_t *out)
{
    size_t n = 99;
    err[0] = '\0';
    cr_assert_eq(config_redirect_ports(cfg, out, &n, err, sizeof err), 0, "%s", err);
    return n;
}

static void expect_redirect_error(const char *text, const char *expected)
{
    config_t *cfg = parse_ok(text);
    config_redirect_port_t out[CONFIG_MAX_REDIRECT_PORTS];
    size_t n = 99;
    err[0] = '\0';
    cr_expect_eq(config_redirect_ports(cfg, out, &n, err, sizeof err), -1, "accepted:\n%s", text);
    cr_expect_str_eq(err, expected);
    config_free(cfg);
}

Test(config_redirect, defaults_take_the_first_tls_and_plain_listener)
{
    config_t *cfg = parse_ok(GATE_PORTS);
    cr_expect_str_eq(cfg->redirect.table, "skewgate");
    cr_expect_eq(cfg->redirect.n_ports, 0);
    config_redirect_port_t p[CONFIG_MAX_REDIRECT_PORTS];
    cr_assert_eq(redirect_ports(cfg, p), 2);
    cr_expect(p[0].from == 22623 && p[0].to == 22643);
    cr_expect(p[1].from == 22624 && p[1].to == 22644);
    config_free(cfg);
    /* Plain first in the file: still 22623 -> TLS, 22624 -> plain; the
     * first of each kind counts. */
    cfg = parse_ok("listeners:\n  - address: \"0.0.0.0:8080\"\n  - address: \"[::]:8081\"\n"
                   "  - address: \"10.0.0.1:8443\"\n    tls: {certificate: c, key: k}\n");
    cr_assert_eq(redirect_ports(cfg, p), 2);
    cr_expect(p[0].from == 22623 && p[0].to == 8443);
    cr_expect(p[1].from == 22624 && p[1].to == 8080);
    config_free(cfg);
    /* Only a plain listener: only 22624. */
    cfg = parse_ok("listeners:\n  - address: \"0.0.0.0:22644\"\n");
    cr_assert_eq(redirect_ports(cfg, p), 1);
    cr_expect(p[0].from == 22624 && p[0].to == 22644);
    config_free(cfg);
}

Test(config_redirect, default_targets_must_be_fixed_non_loopback_ports_of_their_own)
{
    /* Port 0 and loopback listeners load (the gate runs fine); only the
     * redirect refuses them, naming the listener. */
    expect_redirect_error(MINIMAL,
                          "t.yaml: redirect: 22624 goes by default to the first plain listener, and "
                          "listeners[0].address \"127.0.0.1:0\" has port 0, which cannot be a redirect target: the "
                          "gate listens on ports of its own (such as 22644 on 0.0.0.0) while the MCS keeps 22624; "
                          "change the listener or set redirect.ports");
    expect_redirect_error("listeners:\n  - address: \"0.0.0.0:22643\"\n    tls: {certificate: c, key: k}\n"
                          "  - address: \"127.0.0.1:22644\"\n",
                          "t.yaml: redirect: 22624 goes by default to the first plain listener, and "
                          "listeners[1].address \"127.0.0.1:22644\" listens on loopback only, where redirected "
                          "connections do not arrive: the gate listens on ports of its own (such as 22644 on "
                          "0.0.0.0) while the MCS keeps 22624; change the listener or set redirect.ports");
    expect_redirect_error("listeners:\n  - address: \"0.0.0.0:22623\"\n    tls: {certificate: c, key: k}\n",
                          "t.yaml: redirect: 22623 goes by default to the first TLS listener, and "
                          "listeners[0].address \"0.0.0.0:22623\" is on the MCS port itself: the gate listens on "
                          "ports of its own (such as 22643 on 0.0.0.0) while the MCS keeps 22623; change the "
                          "listener or set redirect.ports");
    /* The default 22624 -> the plain listener on 22623, which 22623 -> TLS takes away. */
    expect_redirect_error("listeners:\n  - address: \"0.0.0.0:22643\"\n    tls: {certificate: c, key: k}\n"
                          "  - address: \"0.0.0.0:22623\"\n",
                          "t.yaml: redirect: by default 22623 goes to 22643, and 22623 is the port of "
                          "listeners[1].address \"0.0.0.0:22623\": redirecting it would send every connection other "
                          "hosts make to that listener to 22643 instead; change the listener or set redirect.ports");
}

Test(config_redirect, explicit_table_and_ports)
{
    config_t *cfg = parse_ok(GATE_PORTS "redirect:\n  table: sg_1\n  ports:\n"
                                        "    - {from: 22624, to: 22644}\n    - from: 443\n      to: 22643\n"
                                        "    - {from: 80, to: 22644}\n");
    cr_expect_str_eq(cfg->redirect.table, "sg_1");
    cr_assert_eq(cfg->redirect.n_ports, 3);
    config_redirect_port_t p[CONFIG_MAX_REDIRECT_PORTS];
    cr_assert_eq(redirect_ports(cfg, p), 3);
    cr_expect(p[0].from == 22624 && p[0].to == 22644);
    cr_expect(p[1].from == 443 && p[1].to == 22643);
    cr_expect(p[2].from == 80 && p[2].to == 22644);   /* two ports to one listener: fine */
    config_free(cfg);
    /* Written ports need no default: a port-0 listener beside them is fine. */
    cfg = parse_ok("listeners:\n  - address: \"0.0.0.0:22643\"\n  - address: \"127.0.0.1:0\"\n    tls: {certificate: c, key: k}\n"
                   "redirect: {ports: [{from: 22624, to: 22643}]}\n");
    cr_expect_eq(redirect_ports(cfg, p), 1);
    config_free(cfg);
}

Test(config_redirect, bad_tables_and_ports_are_refused_where_written)
{
    expect_error(GATE_PORTS "redirect: {table: \"a b\"}\n",
                 "t.yaml:5:19: redirect.table: invalid nftables table name \"a b\": expected a letter or '_', then "
                 "letters, digits and '_', at most 255");
    expect_error(GATE_PORTS "redirect: {table: 9x}\n",
                 "t.yaml:5:19: redirect.table: invalid nftables table name \"9x\": expected a letter or '_', then "
                 "letters, digits and '_', at most 255");
    expect_error(GATE_PORTS "redirect: {table: \"\"}\n",
                 "t.yaml:5:19: redirect.table: invalid nftables table name \"\": expected a letter or '_', then "
                 "letters, digits and '_', at most 255");
    /* Names others write: the gate replaces and deletes its table whole. */
    expect_error(GATE_PORTS "redirect: {table: nat}\n",
                 "t.yaml:5:19: redirect.table: \"nat\" is a well-known table name (hand-written rulesets add table "
                 "inet nat for their NAT rules; iptables-nft names its ip and ip6 tables so too): skewgate redirect "
                 "replaces and deletes its table whole, so it needs a name nothing else writes (the default is "
                 "\"skewgate\")");
    static const char *const taken[] = {"filter", "mangle", "raw", "security", "firewalld", "netavark"};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, GATE_PORTS "redirect: {table: %s}\n", taken[i]);
        config_t *cfg = parse(text);
        cr_expect_null(cfg, "accepted table %s", taken[i]);
        config_free(cfg);
        cr_expect(strstr(err, "is a well-known table name ("), "%s: %s", taken[i], err);
    }
    config_free(parse_ok(GATE_PORTS "redirect: {table: nat_gate}\n"));
    expect_error(GATE_PORTS "redirect: {tabel: x}\n", "t.yaml:5:12: redirect.tabel: unknown key; did you mean \"table\"?");
    expect_error(GATE_PORTS "redirect: {ports: []}\n",
                 "t.yaml:5:19: redirect.ports: at least one {from, to} pair (omit the key for the default ports)");
    expect_error(GATE_PORTS "redirect: {ports: 22623}\n",
                 "t.yaml:5:19: redirect.ports: expected a list of {from: PORT, to: PORT}, got a number");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {to: 22643}\n",
                 "t.yaml:7:7: redirect.ports[0]: missing required key \"from\"");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623}\n",
                 "t.yaml:7:7: redirect.ports[0]: missing required key \"to\"");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 0, to: 22643}\n",
                 "t.yaml:7:14: redirect.ports[0].from: must be greater than 0");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 65536, to: 22643}\n",
                 "t.yaml:7:14: redirect.ports[0].from: must be from 1 to 65535");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 1, to: 22643, too: 2}\n",
                 "t.yaml:7:28: redirect.ports[0].too: unknown key; did you mean \"to\"?");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623, to: 22643}\n    - {from: 22623, to: 22644}\n",
                 "t.yaml:8:14: redirect.ports[1].from: 22623 is already redirected by redirect.ports[0]");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22643, to: 22643}\n",
                 "t.yaml:7:7: redirect.ports[0]: from and to are both 22643: a port redirected to itself");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623, to: 22645}\n",
                 "t.yaml:7:25: redirect.ports[0].to: 22645 is not the port of a listener (\"0.0.0.0:22643\", "
                 "\"0.0.0.0:22644\")");
    expect_error("listeners:\n  - address: \"0.0.0.0:0\"\nredirect: {ports: [{from: 22623, to: 22643}]}\n",
                 "t.yaml:3:38: redirect.ports[0].to: 22643 is not the port of a listener (\"0.0.0.0:0\"; a "
                 "listener on port 0 cannot be a redirect target)");
    expect_error("listeners:\n  - address: \"127.0.0.1:22643\"\nredirect: {ports: [{from: 22623, to: 22643}]}\n",
                 "t.yaml:3:38: redirect.ports[0].to: 22643 is the port of listeners[0].address \"127.0.0.1:22643\", "
                 "which listens on loopback only: redirected connections arrive on the node's own address, so "
                 "listen on 0.0.0.0 (or [::], or the node's address)");
    /* The MCS's 22623 is TLS and 22624 plain: each goes to a listener of its kind. */
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623, to: 22644}\n    - {from: 22624, to: 22643}\n",
                 "t.yaml:7:25: redirect.ports[0].to: 22623 is the MCS's TLS port, and listeners[1].address "
                 "\"0.0.0.0:22644\" is plain: nodes dialling 22623 speak TLS, so send it to a TLS listener");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623, to: 22643}\n    - {from: 22624, to: 22643}\n",
                 "t.yaml:8:25: redirect.ports[1].to: 22624 is the MCS's plain port, and listeners[0].address "
                 "\"0.0.0.0:22643\" is TLS: nodes dialling 22624 speak plain HTTP, so send it to a plain listener");
    /* A from on the gate's own listener, or on another pair's target. */
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22644, to: 22643}\n",
                 "t.yaml:7:14: redirect.ports[0].from: 22644 is the port of listeners[1].address \"0.0.0.0:22644\": "
                 "redirecting it would send every connection other hosts make to that listener to 22643 instead");
    expect_error("listeners:\n  - address: \"0.0.0.0:22643\"\n    tls: {certificate: c, key: k}\n"
                 "  - address: \"127.0.0.1:8080\"\n  - address: \"0.0.0.0:22644\"\n"
                 "redirect:\n  ports:\n    - {from: 8080, to: 22644}\n",
                 "t.yaml:8:14: redirect.ports[0].from: 8080 is the port of listeners[1].address \"127.0.0.1:8080\": "
                 "redirecting it would send every connection other hosts make to that listener to 22644 instead");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22623, to: 22643}\n    - {from: 22643, to: 22644}\n",
                 "t.yaml:8:14: redirect.ports[1].from: 22643 is where redirect.ports[0] sends 22623: a port cannot "
                 "be both a target and redirected (to 22644)");
    expect_error(GATE_PORTS "redirect:\n  ports:\n    - {from: 22644, to: 22643}\n    - {from: 22624, to: 22644}\n",
                 "t.yaml:7:14: redirect.ports[0].from: 22644 is where redirect.ports[1] sends 22624: a port cannot "
                 "be both a target and redirected (to 22643)");
    char many[2048] = GATE_PORTS "redirect:\n  ports:\n";
    for (int i = 0; i < CONFIG_MAX_REDIRECT_PORTS + 1; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "    - {from: %d, to: 22643}\n", 1000 + i);
    expect_error(many, "t.yaml:23:7: redirect.ports: at most 16 pairs");
}

/* The reference file writes the ports out; they must be what its
 * listeners give by default, as its comment says. */
Test(config_redirect, reference_config_states_the_default_ports)
{
    config_t *ref = config_load(SRCDIR "/conf/skewgate.yaml", err, sizeof err);
    cr_assert_not_null(ref, "%s", err);
    config_t *def = parse_ok(MINIMAL);
    cr_expect_str_eq(ref->redirect.table, def->redirect.table);
    config_redirect_port_t written[CONFIG_MAX_REDIRECT_PORTS], derived[CONFIG_MAX_REDIRECT_PORTS];
    size_t n = redirect_ports(ref, written);
    cr_assert_eq(n, 2);
    ref->redirect.n_ports = 0;
    cr_assert_eq(redirect_ports(ref, derived), n);
    cr_expect_eq(memcmp(written, derived, n * sizeof *written), 0);
    cr_expect(written[0].from == 22623 && written[0].to == 22643);
    cr_expect(written[1].from == 22624 && written[1].to == 22644);
    config_free(ref);
    config_free(def);
}

/* --- Admission policies and PROXY protocol listeners. */

Test(config, admission_token_files_resolve_and_are_off_by_default)
{
    config_t *def = parse_ok(MINIMAL);
    cr_expect_eq(def->admission.token.n_files, 0);
    cr_expect_not(def->listeners[0].proxy_protocol);
    config_free(def);
    err[0] = '\0';
    const char *text = MINIMAL "admission:\n  token:\n    files: [tokens/current, /etc/t/previous]\n";
    config_t *cfg = config_parse(text, strlen(text), "/etc/skewgate/g.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    cr_expect_eq(cfg->admission.token.n_files, 2);
    cr_expect_str_eq(cfg->admission.token.files[0], "/etc/skewgate/tokens/current");
    cr_expect_str_eq(cfg->admission.token.files[1], "/etc/t/previous");
    config_free(cfg);
    expect_error(MINIMAL "admission:\n  token: {}\n", "t.yaml:4:10: admission.token: missing required key \"files\"");
    expect_error(MINIMAL "admission:\n  token:\n    files: []\n",
                 "t.yaml:5:12: admission.token.files: at least one token file is required (remove admission.token "
                 "to turn the policy off)");
    expect_error(MINIMAL "admission:\n  token:\n    files: [a, a]\n",
                 "t.yaml:5:16: admission.token.files[1]: \"a\" is already admission.token.files[0]");
    expect_error(MINIMAL "admission:\n  tokens: {files: [a]}\n",
                 "t.yaml:4:3: admission.tokens: unknown key; did you mean \"token\"?");
}

Test(config, proxy_protocol_needs_trusted_proxies_as_cidrs)
{
    config_t *cfg = parse_ok("listeners:\n  - address: \"127.0.0.1:0\"\n    proxy_protocol: true\n"
                             "    trusted_proxies: [\"10.0.0.0/16\", \"127.0.0.1/32\", \"::1/128\"]\n");
    const config_listener_t *l = &cfg->listeners[0];
    cr_expect(l->proxy_protocol);
    cr_expect_eq(l->n_trusted_proxies, 3);
    cr_expect_eq(l->trusted_proxies[0].prefix, 16);
    cr_expect_eq(l->trusted_proxies[2].family, AF_INET6);
    config_free(cfg);
    expect_error("listeners:\n  - address: \"127.0.0.1:0\"\n    proxy_protocol: true\n",
                 "t.yaml:2:5: listeners[0]: missing required key \"trusted_proxies\" (proxy_protocol is true): the "
                 "CIDRs of the load balancers allowed to send PROXY headers");
    expect_error("listeners:\n  - address: \"127.0.0.1:0\"\n    trusted_proxies: [\"10.0.0.0/8\"]\n",
                 "t.yaml:2:5: listeners[0]: trusted_proxies only applies with proxy_protocol: true");
    expect_error("listeners:\n  - address: \"127.0.0.1:0\"\n    proxy_protocol: true\n"
                 "    trusted_proxies: [\"10.0.0.1/16\"]\n",
                 "t.yaml:4:23: listeners[0].trusted_proxies[0]: \"10.0.0.1/16\": host bits are set past the prefix "
                 "length (write the network address, such as 10.0.0.0/16)");
}

/* --- admission.machines */

Test(config, admission_machines_is_off_by_default)
{
    config_t *cfg = parse_ok(MINIMAL);
    const config_admission_machines_t *m = &cfg->admission.machines;
    cr_expect_not(m->enabled);
    cr_expect_str_eq(m->namespace, "openshift-machine-api");
    cr_expect_not(m->cluster_api);
    cr_expect_str_eq(m->cluster_api_namespace, "openshift-cluster-api");
    cr_expect_eq(m->page_size, 100);
    config_free(cfg);
    config_t *ref = config_load(SRCDIR "/conf/skewgate.yaml", err, sizeof err);
    cr_assert_not_null(ref, "%s", err);
    cr_expect_not(ref->admission.machines.enabled);
    cr_expect_str_eq(ref->admission.machines.namespace, "openshift-machine-api");
    cr_expect_eq(ref->admission.machines.page_size, 100);
    config_free(ref);
}

Test(config, admission_machines_reads_its_keys)
{
    config_t *cfg = parse_ok(MINIMAL "enforcement: {source: file, file: {path: /srv/mc.yaml}}\n"
                             "admission:\n  machines:\n    enabled: true\n    namespace: machines\n"
                             "    page_size: 500\n    cluster_api: {enabled: true, namespace: capi}\n");
    const config_admission_machines_t *m = &cfg->admission.machines;
    cr_expect(m->enabled);
    cr_expect_str_eq(m->namespace, "machines");
    cr_expect(m->cluster_api);
    cr_expect_str_eq(m->cluster_api_namespace, "capi");
    cr_expect_eq(m->page_size, 500);
    config_free(cfg);
}

Test(config, admission_machines_bad_values_name_their_place)
{
    expect_error(MINIMAL "admission:\n  machines:\n    page_size: 0\n",
                 "t.yaml:5:16: admission.machines.page_size: must be greater than 0");
    expect_error(MINIMAL "admission:\n  machines:\n    page_size: 5000\n",
                 "t.yaml:5:16: admission.machines.page_size: must be from 1 to 1000");
    expect_error(MINIMAL "admission:\n  machines:\n    namespace: Not_A_Name\n",
                 "t.yaml:5:16: admission.machines.namespace: invalid object name \"Not_A_Name\": "
                 "expected lowercase letters, digits, '-' and '.'");
    expect_error(MINIMAL "admission:\n  machines:\n    enable: true\n",
                 "t.yaml:5:5: admission.machines.enable: unknown key; did you mean \"enabled\"?");
}

/* --- coalesce */

Test(config, coalesce_keys_are_read)
{
    config_t *cfg =
        parse_ok(MINIMAL "coalesce: {enabled: true, max_body: 4MiB, max_followers: 50, ttl: 5s, min_read_rate: 1MiB}\n");
    cr_expect_eq(cfg->coalesce.min_read_rate, 1u << 20);
    cr_expect(cfg->coalesce.enabled);
    cr_expect_eq(cfg->coalesce.max_body, 4u << 20);
    cr_expect_eq(cfg->coalesce.max_followers, 50);
    cr_expect_eq(cfg->coalesce.ttl_ms, 5000);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "coalesce:\n  enabled: false\n");
    cr_expect_not(cfg->coalesce.enabled);
    config_free(cfg);
}

Test(config, coalesce_bad_values_name_their_place)
{
    expect_error(MINIMAL "coalesce:\n  max_body: 100\n",
                 "t.yaml:4:13: coalesce.max_body: must be from 1KiB to 1024MiB");
    expect_error(MINIMAL "coalesce:\n  max_followers: 0\n",
                 "t.yaml:4:18: coalesce.max_followers: must be greater than 0");
    expect_error(MINIMAL "coalesce:\n  ttl: 2m\n", "t.yaml:4:8: coalesce.ttl: must be from 0s to 1m");
    expect_error(MINIMAL "coalesce:\n  min_read_rate: 100\n",
                 "t.yaml:4:18: coalesce.min_read_rate: must be from 1KiB to 1024MiB");
    expect_error(MINIMAL "coalesce:\n  enabled: yes\n", "t.yaml:4:12: coalesce.enabled: expected true or false, got a string");
    expect_error(MINIMAL "coalesce:\n  enabled: false\n  ttl: 5s\n",
                 "t.yaml:5:8: coalesce.ttl: only applies with coalesce.enabled: true");
}

/* pace.max_pending_csrs and pace.replicas (issue 26): defaults, bounds,
 * and fewer slots than gates refused where replicas is written. */
Test(config, pace_csr_ceiling_and_replicas)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_eq(cfg->pace.max_pending_csrs, 90u);
    cr_expect_eq(cfg->pace.replicas, 1u);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "pace:\n  enabled: true\n  max_joining: 12\n  replicas: 3\n  max_pending_csrs: 50\n");
    cr_expect_eq(cfg->pace.replicas, 3u);
    cr_expect_eq(cfg->pace.max_pending_csrs, 50u);
    config_free(cfg);
    expect_error(MINIMAL "pace:\n  replicas: 65\n", "t.yaml:4:13: pace.replicas: must be from 1 to 64");
    expect_error(MINIMAL "pace:\n  max_pending_csrs: 0\n",
                 "t.yaml:4:21: pace.max_pending_csrs: must be greater than 0");
    expect_error(MINIMAL "pace:\n  max_joining: 4\n  replicas: 5\n",
                 "t.yaml:5:13: pace.replicas: 5 gates sharing pace.max_joining 4: each needs at least one slot "
                 "(raise max_joining to 5 or more)");
}

/* upstream.mcs_release: auto (0, the default) or a quoted "4.N", N >= 13. */
Test(config, mcs_release_is_auto_or_a_quoted_release)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_eq(cfg->upstream.mcs_release, 0u);
    config_free(cfg);
    cfg = parse_ok(MINIMAL "upstream: {mcs_release: auto}\n");
    cr_expect_eq(cfg->upstream.mcs_release, 0u);
    config_free(cfg);
    static const struct {
        const char *value;
        unsigned minor;
    } ok[] = {{"\"4.13\"", 13}, {"\"4.20\"", 20}, {"'4.22'", 22}, {"\"4.99\"", 99}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, MINIMAL "upstream:\n  mcs_release: %s\n", ok[i].value);
        cfg = parse_ok(text);
        cr_expect_eq(cfg->upstream.mcs_release, ok[i].minor, "%s", ok[i].value);
        config_free(cfg);
    }
    expect_error(MINIMAL "upstream:\n  mcs_release: 4.20\n",
                 "t.yaml:4:16: upstream.mcs_release: invalid MCS release 4.20: expected auto or a quoted release "
                 "such as \"4.22\" (a plain 4.20 is the number 4.2)");
    static const char *const bad[] = {"\"4.12\"", "\"4.013\"", "\"5.1\"", "\"4.\"", "\"4.22.1\"", "\"v4.22\"",
                                      "\"4.1000\"", "\"\"", "\"Auto\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256], want[512];
        snprintf(text, sizeof text, MINIMAL "upstream:\n  mcs_release: %s\n", bad[i]);
        char unquoted[32];
        snprintf(unquoted, sizeof unquoted, "%.*s", (int)strlen(bad[i]) - 2, bad[i] + 1);
        snprintf(want, sizeof want,
                 "t.yaml:4:16: upstream.mcs_release: invalid MCS release \"%s\": expected auto or \"4.N\" with N "
                 "from 13, e.g. \"4.22\"", unquoted);
        expect_error(text, want);
    }
}

/* --- Every error in one load (issue 33): `check` lists them all. */

typedef struct collected {
    char lines[8][CONFIG_ERR_LEN];
    size_t n;
} collected_t;

static void collect(const char *msg, void *arg)
{
    collected_t *c = arg;
    if (c->n < 8)
        snprintf(c->lines[c->n], sizeof c->lines[0], "%s", msg);
    c->n++;
}

static config_t *load_text(const char *text, config_report_t *report)
{
    char path[] = "/tmp/skewgate-test-config-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    config_t *cfg = config_load_report(path, report);
    unlink(path);
    return cfg;
}

Test(config, every_error_of_the_keys_is_told_in_order)
{
    collected_t c = {0};
    config_report_t report = {.each = collect, .arg = &c};
    config_t *cfg = load_text("listeners:\n  - address: \"0.0.0.0:22623\"\n    proxy_protocl: true\n"
                              "limits:\n  header_timeout: 10x\n  idle_timeout: 5s\nreject:\n  mode: hodl\n",
                              &report);
    cr_expect_null(cfg);
    config_free(cfg);
    cr_assert_eq(report.n_errors, 3);
    cr_expect_eq(c.n, 3);
    cr_expect(report.rules_skipped);
    cr_expect(strstr(c.lines[0], ":3:5: listeners[0].proxy_protocl: unknown key; did you mean \"proxy_protocol\"?"),
              "%s", c.lines[0]);
    cr_expect(strstr(c.lines[1], ":5:19: limits.header_timeout: invalid duration \"10x\""), "%s", c.lines[1]);
    cr_expect(strstr(c.lines[2], ":8:9: reject.mode: invalid value \"hodl\": expected one of hold, deny, explain"),
              "%s", c.lines[2]);
}

Test(config, first_error_says_how_many_more)
{
    expect_error("listeners:\n  - address: \"0.0.0.0:22623\"\n    proxy_protocl: true\nlimits:\n"
                 "  header_timeout: 10x\nreject:\n  mode: hodl\n",
                 "t.yaml:3:5: listeners[0].proxy_protocl: unknown key; did you mean \"proxy_protocol\"? "
                 "(and 2 more: skewgate check -c t.yaml)");
    /* One error: no count. */
    expect_error(MINIMAL "reject:\n  mode: hodl\n",
                 "t.yaml:4:9: reject.mode: invalid value \"hodl\": expected one of hold, deny, explain");
}

Test(config, the_count_survives_a_long_first_error)
{
    char text[2048];
    snprintf(text, sizeof text, MINIMAL "gate:\n  prefixes: [\"/%0400d/..\"]\nreject:\n  mode: hodl\n", 0);
    config_t *cfg = parse(text);
    cr_expect_null(cfg);
    config_free(cfg);
    cr_expect(strlen(err) < sizeof err);
    size_t len = strlen(err), tail = strlen(" (and 1 more: skewgate check -c t.yaml)");
    cr_assert_gt(len, tail);
    cr_expect_str_eq(err + len - tail, " (and 1 more: skewgate check -c t.yaml)", "%s", err);
    cr_expect(!strncmp(err, "t.yaml:4:14: gate.prefixes[0]: ", 31), "%s", err);
}

Test(config, a_bad_listener_does_not_hide_the_next)
{
    collected_t c = {0};
    config_report_t report = {.each = collect, .arg = &c};
    config_t *cfg = load_text("listeners:\n  - address: \"0.0.0.0:99999\"\n  - adress: \"0.0.0.0:1\"\n"
                              "  - address: \"0.0.0.0:2\"\n    trusted_proxies: [\"10.0.0.0/33\", \"x\"]\n"
                              "redirect:\n  ports:\n    - {from: 0, to: 1}\n    - {form: 1}\n", &report);
    cr_expect_null(cfg);
    config_free(cfg);
    cr_assert_eq(report.n_errors, 6, "got %zu", report.n_errors);
    cr_expect(strstr(c.lines[0], ":2:14: listeners[0].address: invalid address"), "%s", c.lines[0]);
    cr_expect(strstr(c.lines[1], ":3:5: listeners[1].adress: unknown key"), "%s", c.lines[1]);
    cr_expect(strstr(c.lines[2], ":5:23: listeners[2].trusted_proxies[0]: "), "%s", c.lines[2]);
    cr_expect(strstr(c.lines[3], ":5:38: listeners[2].trusted_proxies[1]: "), "%s", c.lines[3]);
    cr_expect(strstr(c.lines[4], ":8:14: redirect.ports[0].from: "), "%s", c.lines[4]);
    cr_expect(strstr(c.lines[5], ":9:8: redirect.ports[1].form: unknown key"), "%s", c.lines[5]);
}

Test(config, the_rules_across_keys_wait_for_the_keys)
{
    /* Two listeners on one address, and a typo: only the typo, as the
     * overlap rule is not run on a file whose keys have errors. */
    const char *both = "listeners:\n  - address: \"127.0.0.1:1\"\n  - address: \"127.0.0.1:1\"\nlog:\n  levle: info\n";
    collected_t c = {0};
    config_report_t report = {.each = collect, .arg = &c};
    config_t *cfg = load_text(both, &report);
    cr_expect_null(cfg);
    config_free(cfg);
    cr_expect_eq(report.n_errors, 1);
    cr_expect(report.rules_skipped);
    cr_expect(strstr(c.lines[0], ":5:3: log.levle: unknown key"), "%s", c.lines[0]);
    collected_t c2 = {0};
    config_report_t fixed = {.each = collect, .arg = &c2};
    cfg = load_text("listeners:\n  - address: \"127.0.0.1:1\"\n  - address: \"127.0.0.1:1\"\n", &fixed);
    cr_expect_null(cfg);
    config_free(cfg);
    cr_expect_eq(fixed.n_errors, 1);
    cr_expect_not(fixed.rules_skipped);
    cr_expect(strstr(c2.lines[0], ":3:14: listeners[1].address \"127.0.0.1:1\" and listeners[0].address"), "%s",
              c2.lines[0]);
}

Test(config, syntax_and_file_errors_are_one_each)
{
    collected_t c = {0};
    config_report_t report = {.each = collect, .arg = &c};
    config_t *cfg = load_text("listeners:\n\t- address: \"0.0.0.0:22623\"\n", &report);
    cr_expect_null(cfg);
    cr_expect_eq(report.n_errors, 1);
    cr_expect_not(report.rules_skipped);
    cr_expect(strstr(c.lines[0], ":2:1: a tab character: YAML indents with spaces only"), "%s", c.lines[0]);
    collected_t c2 = {0};
    config_report_t missing = {.each = collect, .arg = &c2};
    cr_expect_null(config_load_report("/nonexistent/skewgate.yaml", &missing));
    cr_expect_eq(missing.n_errors, 1);
    cr_expect_str_eq(c2.lines[0], "/nonexistent/skewgate.yaml: cannot open: No such file or directory");
}

/* pace.line and pace.namespace (issue 34): auto by default, the shared
 * line refuses max_joining over 2000 (its joining Lease's annotation),
 * api needs the kubernetes source. */
Test(config, pace_line_and_namespace)
{
    config_t *cfg = parse_ok(MINIMAL);
    cr_expect_eq(cfg->pace.line, PACE_LINE_AUTO);
    cr_expect_str_eq(cfg->pace.namespace, "skewgate");   /* no service account here */
    config_free(cfg);
    cfg = parse_ok(MINIMAL "pace:\n  line: local\n  namespace: gates\n  max_joining: 3000\n  replicas: 3\n");
    cr_expect_eq(cfg->pace.line, PACE_LINE_LOCAL);
    cr_expect_str_eq(cfg->pace.namespace, "gates");
    config_free(cfg);
    /* replicas 1: auto is local, any max_joining */
    cfg = parse_ok(MINIMAL "pace:\n  max_joining: 3000\n");
    config_free(cfg);
    expect_error(MINIMAL "pace:\n  max_joining: 2001\n  replicas: 3\n",
                 "t.yaml:4:16: pace.max_joining: 2001 nodes joining at once on the shared line (pace.line): at most 2000 "
                 "fit in its joining Lease (or pace.line local)");
    expect_error(MINIMAL "pace:\n  line: shared\n", "t.yaml:4:9: pace.line: invalid value \"shared\": expected one of auto, api, local");
    expect_error(MINIMAL "enforcement: {source: file, file: {path: /srv/mc.yaml}}\npace:\n  line: api\n",
                 "t.yaml:5:9: pace.line: the shared line lives in the API: it needs enforcement.source kubernetes (or "
                 "pace.line local)");
}
