/* config: the gate's configuration as tables for the schema engine
 * (schema.h), its defaults, the rules across fields, what is derived once
 * the file is read, and the entry points. Every key is optional except
 * listeners (and the few a chosen feature needs); defaults are set first and
 * the file overlays them. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "schema.h"
#include "conf/grammar.h"
#include "readers.h"
#include "core/addr.h"
#include "core/refcount.h"
#include "core/ydoc.h"

/* A configuration is a page of YAML; anything far larger is a wrong path. */
#define CONFIG_MAX_FILE_BYTES (1u << 20)
/* A year: longer timeouts are typos, and the cap keeps "now + timeout"
 * arithmetic in the other modules far from overflow. */
#define DURATION_MAX_MS (365ull * 24 * 3600 * 1000)
#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Enum-typed fields are written through int *. */
_Static_assert(sizeof(reject_mode_t) == sizeof(int), "enum size");
_Static_assert(sizeof(source_kind_t) == sizeof(int), "enum size");
_Static_assert(sizeof(log_level_t) == sizeof(int), "enum size");
_Static_assert(sizeof(decision_t) == sizeof(int), "enum size");

/* --- The tables. */

static const range_t positive_duration = {1, DURATION_MAX_MS};
static const range_t any_duration = {0, DURATION_MAX_MS};
/* A watch's timeoutSeconds is whole seconds; 0 would mean the server's own. */
static const range_t watch_duration = {1000, DURATION_MAX_MS};
static const range_t header_size = {1024, 1u << 20};
static const range_t uri_size = {256, 1u << 20};
static const range_t connections_count = {1, 1000000};
static const range_t headers_count = {1, 10000};
static const range_t idle_count = {0, 10000};
static const range_t concurrent_count = {1, 100000};
static const range_t per_client_count = {1, 100000};
/* Bytes kept for readers slower than the MCS: at least a config or two. */
static const range_t buffered_size = {1u << 20, 1ull << 31};
static const range_t queue_count = {0, 1000000};
static const range_t port_number = {1, 65535};
static const range_t held_count = {1, 1000000};
/* A page of real Nodes is about 10 KiB an object: 1000 stay well below
 * the client's 8 MiB answer limit. */
static const range_t page_count = {1, 1000};
/* Configs are 0.3 to 4.5 MiB (DESIGN 1.3); a body is held whole, once. */
static const range_t coalesce_body_size = {1024, 1ull << 30};
static const range_t followers_count = {1, 1000000};
/* A kept body is a config of a moment ago: seconds, not minutes. */
static const range_t coalesce_ttl = {0, 60000};
/* Bytes a second; 1 KiB/s lets a 4.5 MiB config take 77 minutes. */
static const range_t coalesce_read_rate = {1024, 1ull << 30};

static const addr_rules_t listen_rules = {.port_zero = true, .wildcard = true};
static const addr_rules_t upstream_rules = {0};
static const addr_rules_t admin_rules = {.port_zero = true, .loopback_only = true};
/* Read-only, so a node address or a wildcard is fine (the cluster's
 * monitoring scrapes it, or a proxy in front of it on loopback does). */
static const addr_rules_t metrics_rules = {.port_zero = true, .wildcard = true};

static const enum_value_t tls_versions[] = {
    {"TLSv1.2", TLS1_2_VERSION}, {"TLSv1.3", TLS1_3_VERSION}, {NULL, 0}};
static const enum_value_t reject_modes[] = {
    {"hold", REJECT_HOLD}, {"deny", REJECT_DENY}, {"explain", REJECT_EXPLAIN}, {NULL, 0}};
static const enum_value_t source_kinds[] = {
    {"kubernetes", SOURCE_KIND_KUBERNETES}, {"file", SOURCE_KIND_FILE}, {NULL, 0}};
static const enum_value_t decisions[] = {
    {"admit", DECISION_ADMIT}, {"reject", DECISION_REJECT}, {NULL, 0}};
static const enum_value_t log_levels[] = {
    {"debug", LOG_DEBUG}, {"info", LOG_INFO}, {"warn", LOG_WARN}, {"error", LOG_ERROR}, {NULL, 0}};

#define TLS_FIELD(name) offsetof(config_tls_server_t, name)
static const field_t tls_server_fields[] = {
    {"certificate", schema_read_path, TLS_FIELD(certificate), NULL},
    {"key", schema_read_path, TLS_FIELD(key), NULL},
    {"min_version", schema_read_enum, TLS_FIELD(min_version), tls_versions},
    {"ciphers", conf_read_ciphers, TLS_FIELD(ciphers), NULL},
    {"ciphersuites", conf_read_ciphersuites, TLS_FIELD(ciphersuites), NULL},
    {"groups", conf_read_groups, TLS_FIELD(groups), NULL},
    {"session_tickets", schema_read_bool, TLS_FIELD(session_tickets), NULL},
};
static const schema_t tls_server_schema = SCHEMA(tls_server_fields);

/* A tls mapping turns TLS on; its absence means a plain listener. */
static int read_tls_server(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_tls_server_t *tls = dst;
    if (node->kind != YNODE_MAP)
        return schema_fail_expected(ld, node, "a mapping of TLS settings (omit tls for a plain listener)");
    tls->enabled = true;
    tls->min_version = TLS1_2_VERSION;
    tls->session_tickets = true;
    if (schema_set_string(ld, node, &tls->ciphers, CONFIG_TLS_INTERMEDIATE_CIPHERS) < 0 ||
        schema_set_string(ld, node, &tls->ciphersuites, CONFIG_TLS_INTERMEDIATE_CIPHERSUITES) < 0 ||
        schema_set_string(ld, node, &tls->groups, CONFIG_TLS_INTERMEDIATE_GROUPS) < 0)
        return -1;
    if (schema_read_map(ld, node, &tls_server_schema, tls) < 0)
        return -1;
    if (!tls->certificate)
        return schema_fail(ld, node, ld->path, "missing required key \"certificate\"");
    if (!tls->key)
        return schema_fail(ld, node, ld->path, "missing required key \"key\"");
    return 0;
}

static const field_t listener_fields[] = {
    {"address", schema_read_addr, offsetof(config_listener_t, addr), &listen_rules},
    {"tls", read_tls_server, offsetof(config_listener_t, tls), NULL},
    {"proxy_protocol", schema_read_bool, offsetof(config_listener_t, proxy_protocol), NULL},
    {"trusted_proxies", conf_read_trusted_proxies, 0, NULL},
};
static const schema_t listener_schema = SCHEMA(listener_fields);

static int read_listener(loader_t *ld, const ynode_t *node, config_listener_t *l)
{
    if (schema_read_map(ld, node, &listener_schema, l) < 0)
        return -1;
    if (l->addr.len == 0)
        return schema_fail(ld, node, ld->path, "missing required key \"address\"");
    if (l->proxy_protocol && l->n_trusted_proxies == 0)
        return schema_fail(ld, node, ld->path,
                           "missing required key \"trusted_proxies\" (proxy_protocol is true): the CIDRs of the "
                           "load balancers allowed to send PROXY headers");
    if (!l->proxy_protocol && l->n_trusted_proxies)
        return schema_fail(ld, node, ld->path, "trusted_proxies only applies with proxy_protocol: true");
    return 0;
}

static int read_listeners(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_listener_t *listeners = dst;
    if (node->kind != YNODE_SEQ)
        return schema_fail_expected(ld, node, "a list of listeners");
    if (node->n == 0)
        return schema_fail(ld, node, ld->path, "at least one listener is required");
    if (node->n > CONFIG_MAX_LISTENERS)
        return schema_fail(ld, node->items[CONFIG_MAX_LISTENERS], ld->path, "at most %d listeners", CONFIG_MAX_LISTENERS);
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = schema_path_push_index(ld, i);
        ld->cfg->n_listeners = i + 1;   /* from here on config_free owns its strings */
        if (schema_place(ld, node->items[i]) < 0 || read_listener(ld, node->items[i], &listeners[i]) < 0)
            return -1;
        schema_path_pop(ld, saved);
    }
    return 0;
}

#define UPSTREAM_FIELD(name) offsetof(config_upstream_t, name)
static const field_t upstream_fields[] = {
    {"address", schema_read_addr, UPSTREAM_FIELD(addr), &upstream_rules},
    {"tls", schema_read_bool, UPSTREAM_FIELD(tls), NULL},
    {"ca_file", schema_read_path, UPSTREAM_FIELD(ca_file), NULL},
    {"server_name", schema_read_string, UPSTREAM_FIELD(server_name), NULL},
    {"insecure_skip_verify", schema_read_bool, UPSTREAM_FIELD(insecure_skip_verify), NULL},
    {"connect_timeout", schema_read_duration, UPSTREAM_FIELD(connect_timeout_ms), &positive_duration},
    {"response_timeout", schema_read_duration, UPSTREAM_FIELD(response_timeout_ms), &positive_duration},
    {"idle_timeout", schema_read_duration, UPSTREAM_FIELD(idle_timeout_ms), &positive_duration},
    {"max_idle", schema_read_count, UPSTREAM_FIELD(max_idle), &idle_count},
    {"max_concurrent", schema_read_count, UPSTREAM_FIELD(max_concurrent), &concurrent_count},
    {"max_per_client", schema_read_count, UPSTREAM_FIELD(max_per_client), &per_client_count},
    {"max_queue", schema_read_count, UPSTREAM_FIELD(max_queue), &queue_count},
    {"queue_timeout", schema_read_duration, UPSTREAM_FIELD(queue_timeout_ms), &positive_duration},
};
static const schema_t upstream_schema = SCHEMA(upstream_fields);

static const field_t gate_fields[] = {
    {"prefixes", conf_read_prefixes, 0, NULL},
};
static const schema_t gate_schema = SCHEMA(gate_fields);

static const field_t reject_fields[] = {
    {"mode", schema_read_enum, 0, reject_modes},
};
static const schema_t reject_schema = SCHEMA(reject_fields);

#define KUBE_FIELD(name) offsetof(config_source_kube_t, name)
static const field_t kube_fields[] = {
    {"server", conf_read_kube_server, KUBE_FIELD(server), NULL},
    {"ca_file", schema_read_path, KUBE_FIELD(ca_file), NULL},
    {"token_file", schema_read_path, KUBE_FIELD(token_file), NULL},
    {"insecure_skip_tls_verify", schema_read_bool, KUBE_FIELD(insecure_skip_tls_verify), NULL},
    {"name", conf_read_kube_name, KUBE_FIELD(name), NULL},
    {"watch_timeout", schema_read_duration, KUBE_FIELD(watch_timeout_ms), &watch_duration},
};
static const schema_t kube_schema = SCHEMA(kube_fields);

static const field_t file_source_fields[] = {
    {"path", schema_read_path, offsetof(config_source_file_t, path), NULL},
    {"poll_interval", schema_read_duration, offsetof(config_source_file_t, poll_interval_ms), &positive_duration},
};
static const schema_t file_source_schema = SCHEMA(file_source_fields);

static const field_t skew_limit_fields[] = {
    {"ocp_version", conf_read_ocp_version, offsetof(verdict_limits_t, ocp), NULL},
    {"rhel_version", conf_read_rhel_version, offsetof(verdict_limits_t, rhel), NULL},
};
static const schema_t skew_limit_schema = SCHEMA(skew_limit_fields);

#define ENFORCEMENT_FIELD(name) offsetof(config_enforcement_t, name)
static const field_t enforcement_fields[] = {
    {"source", schema_read_enum, ENFORCEMENT_FIELD(source), source_kinds},
    {"kubernetes", schema_read_submap, ENFORCEMENT_FIELD(kubernetes), &kube_schema},
    {"file", schema_read_submap, ENFORCEMENT_FIELD(file), &file_source_schema},
    {"limits", schema_read_submap, ENFORCEMENT_FIELD(limits), &skew_limit_schema},
    {"when_unknown", schema_read_enum, ENFORCEMENT_FIELD(policy.when_unknown), decisions},
    {"when_unparseable", schema_read_enum, ENFORCEMENT_FIELD(policy.when_unparseable), decisions},
    {"max_staleness", schema_read_duration, ENFORCEMENT_FIELD(max_staleness_ms), &positive_duration},
};
static const schema_t enforcement_schema = SCHEMA(enforcement_fields);

#define LIMITS_FIELD(name) offsetof(config_limits_t, name)
static const field_t limits_fields[] = {
    {"max_connections", schema_read_count, LIMITS_FIELD(max_connections), &connections_count},
    {"max_header_bytes", schema_read_size, LIMITS_FIELD(max_header_bytes), &header_size},
    {"max_headers", schema_read_count, LIMITS_FIELD(max_headers), &headers_count},
    {"max_uri_bytes", schema_read_size, LIMITS_FIELD(max_uri_bytes), &uri_size},
    {"header_timeout", schema_read_duration, LIMITS_FIELD(header_timeout_ms), &positive_duration},
    {"idle_timeout", schema_read_duration, LIMITS_FIELD(idle_timeout_ms), &positive_duration},
    {"send_timeout", schema_read_duration, LIMITS_FIELD(send_timeout_ms), &positive_duration},
    {"max_buffered", schema_read_size, LIMITS_FIELD(max_buffered), &buffered_size},
    {"max_buffered_per_client", schema_read_size, LIMITS_FIELD(max_buffered_per_client), &buffered_size},
    {"drain_timeout", schema_read_duration, LIMITS_FIELD(drain_timeout_ms), &any_duration},
};
static const schema_t limits_schema = SCHEMA(limits_fields);

static const field_t admin_fields[] = {
    {"enabled", schema_read_bool, offsetof(config_admin_t, enabled), NULL},
    {"address", schema_read_addr, offsetof(config_admin_t, addr), &admin_rules},
    {"socket", schema_read_path, offsetof(config_admin_t, socket), NULL},
    {"token_file", schema_read_path, offsetof(config_admin_t, token_file), NULL},
};
static const schema_t admin_schema = SCHEMA(admin_fields);

static const field_t metrics_fields[] = {
    {"enabled", schema_read_bool, offsetof(config_metrics_t, enabled), NULL},
    {"address", schema_read_addr, offsetof(config_metrics_t, addr), &metrics_rules},
};
static const schema_t metrics_schema = SCHEMA(metrics_fields);

static const field_t held_fields[] = {
    {"max_clients", schema_read_count, offsetof(config_held_t, max_clients), &held_count},
    {"forget_after", schema_read_duration, offsetof(config_held_t, forget_after_ms), &positive_duration},
};
static const schema_t held_schema = SCHEMA(held_fields);

#define REDIRECT_PORT_FIELD(name) offsetof(config_redirect_port_t, name)
static const field_t redirect_port_fields[] = {
    {"from", schema_read_count, REDIRECT_PORT_FIELD(from), &port_number},
    {"to", schema_read_count, REDIRECT_PORT_FIELD(to), &port_number},
};
static const schema_t redirect_port_schema = SCHEMA(redirect_port_fields);

/* redirect.ports into a config_redirect_t: a list of {from, to}, both
 * required; what the pairs mean together is validate_redirect's. */
static int read_redirect_ports(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_redirect_t *r = dst;
    if (node->kind != YNODE_SEQ)
        return schema_fail_expected(ld, node, "a list of {from: PORT, to: PORT}");
    if (node->n == 0)
        return schema_fail(ld, node, ld->path, "at least one {from, to} pair (omit the key for the default ports)");
    if (node->n > CONFIG_MAX_REDIRECT_PORTS)
        return schema_fail(ld, node->items[CONFIG_MAX_REDIRECT_PORTS], ld->path, "at most %d pairs",
                           CONFIG_MAX_REDIRECT_PORTS);
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = schema_path_push_index(ld, i);
        config_redirect_port_t *p = &r->ports[i];
        *p = (config_redirect_port_t){0};
        if (schema_place(ld, node->items[i]) < 0 || schema_read_map(ld, node->items[i], &redirect_port_schema, p) < 0)
            return -1;
        if (!p->from || !p->to)
            return schema_fail(ld, node->items[i], ld->path, "missing required key \"%s\"", p->from ? "to" : "from");
        schema_path_pop(ld, saved);
    }
    r->n_ports = node->n;
    return 0;
}

static const field_t redirect_fields[] = {
    {"table", conf_read_nft_table, offsetof(config_redirect_t, table), NULL},
    {"ports", read_redirect_ports, 0, NULL},
};
static const schema_t redirect_schema = SCHEMA(redirect_fields);

static const field_t admission_token_fields[] = {
    {"files", conf_read_token_files, 0, NULL},
};
static const schema_t admission_token_schema = SCHEMA(admission_token_fields);

/* admission.token turns the token policy on: its files are required. */
static int read_admission_token(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_admission_token_t *t = dst;
    if (node->kind != YNODE_MAP)
        return schema_fail_expected(ld, node, "a mapping with files: [...] (omit token to turn the policy off)");
    if (schema_read_map(ld, node, &admission_token_schema, t) < 0)
        return -1;
    if (t->n_files == 0)
        return schema_fail(ld, node, ld->path, "missing required key \"files\"");
    return 0;
}

#define COALESCE_FIELD(name) offsetof(config_coalesce_t, name)
static const field_t coalesce_fields[] = {
    {"enabled", schema_read_bool, COALESCE_FIELD(enabled), NULL},
    {"max_body", schema_read_size, COALESCE_FIELD(max_body), &coalesce_body_size},
    {"max_followers", schema_read_count, COALESCE_FIELD(max_followers), &followers_count},
    {"ttl", schema_read_duration, COALESCE_FIELD(ttl_ms), &coalesce_ttl},
    {"min_read_rate", schema_read_size, COALESCE_FIELD(min_read_rate), &coalesce_read_rate},
};
static const schema_t coalesce_schema = SCHEMA(coalesce_fields);

static const field_t log_fields[] = {
    {"level", schema_read_enum, offsetof(config_log_t, level), log_levels},
    {"access", schema_read_bool, offsetof(config_log_t, access), NULL},
};
static const schema_t log_schema = SCHEMA(log_fields);

#define MACHINES_FIELD(name) offsetof(config_admission_machines_t, name)
static const field_t cluster_api_fields[] = {
    {"enabled", schema_read_bool, MACHINES_FIELD(cluster_api), NULL},
    {"namespace", conf_read_kube_name, MACHINES_FIELD(cluster_api_namespace), NULL},
};
/* Its offsets are config_admission_machines_t's: the submap reads into it. */
static const schema_t cluster_api_schema = SCHEMA(cluster_api_fields);

static const field_t machines_fields[] = {
    {"enabled", schema_read_bool, MACHINES_FIELD(enabled), NULL},
    {"namespace", conf_read_kube_name, MACHINES_FIELD(namespace), NULL},
    {"cluster_api", schema_read_submap, 0, &cluster_api_schema},
    {"page_size", schema_read_count, MACHINES_FIELD(page_size), &page_count},
};
static const schema_t machines_schema = SCHEMA(machines_fields);

static const field_t admission_fields[] = {
    {"token", read_admission_token, offsetof(config_admission_t, token), NULL},
    {"machines", schema_read_submap, offsetof(config_admission_t, machines), &machines_schema},
};
static const schema_t admission_schema = SCHEMA(admission_fields);

static const field_t evidence_fields[] = {
    {"enabled", schema_read_bool, offsetof(config_evidence_t, enabled), NULL},
    {"min_spec", conf_read_min_spec, 0, NULL},
};
static const schema_t evidence_schema = SCHEMA(evidence_fields);

#define CONFIG_FIELD(name) offsetof(config_t, name)
static const field_t root_fields[] = {
    {"workers", conf_read_workers, CONFIG_FIELD(workers), NULL},
    {"listeners", read_listeners, CONFIG_FIELD(listeners), NULL},
    {"upstream", schema_read_submap, CONFIG_FIELD(upstream), &upstream_schema},
    {"gate", schema_read_submap, CONFIG_FIELD(gate), &gate_schema},
    {"reject", schema_read_submap, CONFIG_FIELD(gate.reject_mode), &reject_schema},
    {"enforcement", schema_read_submap, CONFIG_FIELD(enforcement), &enforcement_schema},
    {"evidence", schema_read_submap, CONFIG_FIELD(evidence), &evidence_schema},
    {"limits", schema_read_submap, CONFIG_FIELD(limits), &limits_schema},
    {"admin", schema_read_submap, CONFIG_FIELD(admin), &admin_schema},
    {"redirect", schema_read_submap, CONFIG_FIELD(redirect), &redirect_schema},
    {"metrics", schema_read_submap, CONFIG_FIELD(metrics), &metrics_schema},
    {"held", schema_read_submap, CONFIG_FIELD(held), &held_schema},
    {"admission", schema_read_submap, CONFIG_FIELD(admission), &admission_schema},
    {"coalesce", schema_read_submap, CONFIG_FIELD(coalesce), &coalesce_schema},
    {"log", schema_read_submap, CONFIG_FIELD(log), &log_schema},
};
static const schema_t root_schema = SCHEMA(root_fields);

/* ---------------------------------------------------------------------------
 * Defaults, cross-field rules, and what is derived once the file is read.
 * ------------------------------------------------------------------------- */

static int set_defaults(loader_t *ld, config_t *cfg)
{
    config_parse_addr("127.0.0.1:22624", &cfg->upstream.addr);   /* the MCS's plain port, on loopback */
    cfg->upstream.connect_timeout_ms = 5000;
    cfg->upstream.response_timeout_ms = 60000;
    cfg->upstream.idle_timeout_ms = 60000;
    cfg->upstream.max_idle = 16;
    cfg->upstream.max_concurrent = 64;
    cfg->upstream.max_per_client = 8;
    cfg->upstream.max_queue = 256;
    cfg->upstream.queue_timeout_ms = 10000;

    cfg->gate.reject_mode = REJECT_HOLD;
    cfg->evidence = (config_evidence_t){.enabled = false, .min_spec_auto = true};

    config_enforcement_t *e = &cfg->enforcement;
    e->source = SOURCE_KIND_KUBERNETES;
    e->kubernetes.watch_timeout_ms = 5 * 60000;
    e->file.poll_interval_ms = 1000;
    verdict_limits_default(&e->limits);
    verdict_policy_default(&e->policy);
    e->max_staleness_ms = 5 * 60000;

    cfg->limits = (config_limits_t){
        .max_connections = 10000,
        .max_header_bytes = 16 * 1024,
        .max_headers = 100,
        .max_uri_bytes = 8 * 1024,
        .header_timeout_ms = 10000,
        .idle_timeout_ms = 120000,
        .send_timeout_ms = 60000,
        .max_buffered = 256u << 20,
        .max_buffered_per_client = 32u << 20,
        .drain_timeout_ms = 30000,
    };

    cfg->admin.enabled = true;
    config_parse_addr("127.0.0.1:22625", &cfg->admin.addr);
    cfg->metrics.enabled = false;
    config_parse_addr("127.0.0.1:22646", &cfg->metrics.addr);
    cfg->held = (config_held_t){.max_clients = 4096, .forget_after_ms = 15 * 60000};
    cfg->log = (config_log_t){.level = LOG_INFO, .access = true};
    cfg->admission.machines.page_size = 100;
    cfg->coalesce = (config_coalesce_t){.enabled = true, .max_body = 16u << 20, .max_followers = 1000,
                                        .min_read_rate = 32u << 10};

    cfg->gate.n_prefixes = 1;
    if (schema_set_string(ld, ld->root, &cfg->gate.prefixes[0], "/config/") < 0 ||
        schema_set_string(ld, ld->root, &e->kubernetes.server, "") < 0 ||
        schema_set_string(ld, ld->root, &e->kubernetes.ca_file, SERVICE_ACCOUNT_DIR "/ca.crt") < 0 ||
        schema_set_string(ld, ld->root, &e->kubernetes.token_file, SERVICE_ACCOUNT_DIR "/token") < 0 ||
        schema_set_string(ld, ld->root, &e->kubernetes.name, "cluster") < 0 ||
        schema_set_string(ld, ld->root, &cfg->redirect.table, "skewgate") < 0 ||
        schema_set_string(ld, ld->root, &cfg->admission.machines.namespace, "openshift-machine-api") < 0 ||
        schema_set_string(ld, ld->root, &cfg->admission.machines.cluster_api_namespace,
                          "openshift-cluster-api") < 0)
        return -1;
    return 0;
}

static int validate_listeners(loader_t *ld)
{
    const config_t *cfg = ld->cfg;
    if (cfg->n_listeners == 0)
        return schema_fail(ld, ld->root, "", "missing required key \"listeners\"");
    for (size_t j = 1; j < cfg->n_listeners; j++) {
        for (size_t i = 0; i < j; i++) {
            if (!grammar_addrs_overlap(&cfg->listeners[i].addr, &cfg->listeners[j].addr))
                continue;
            char path[64];
            snprintf(path, sizeof path, "listeners[%zu].address", j);
            return schema_fail(ld, schema_nearest_node(ld, path), "",
                               "%s \"%s\" and listeners[%zu].address \"%s\" overlap",
                               path, cfg->listeners[j].addr.text, i, cfg->listeners[i].addr.text);
        }
    }
    return 0;
}

/* An address the gate connects to or serves the admin API on must not be
 * one of its listeners: for the upstream a proxy loop, for the admin API a
 * port clash. Blames the address if written, else the listener. */
static int validate_not_a_listener(loader_t *ld, const config_addr_t *addr, const char *path, const char *why)
{
    const config_t *cfg = ld->cfg;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        if (!grammar_addrs_overlap(addr, &cfg->listeners[i].addr))
            continue;
        char listener_path[64];
        snprintf(listener_path, sizeof listener_path, "listeners[%zu].address", i);
        return schema_fail(ld, schema_nearest_node(ld, schema_node_at(ld, path) ? path : listener_path), "",
                           "%s \"%s\" and listeners[%zu].address \"%s\" overlap: %s", path, addr->text, i,
                           cfg->listeners[i].addr.text, why);
    }
    return 0;
}

/* Settings that only mean something over TLS are refused without it, so
 * that nobody believes the upstream is verified when it is not. */
static int validate_upstream_tls(loader_t *ld)
{
    const config_upstream_t *u = &ld->cfg->upstream;
    if (!u->tls) {
        if (u->ca_file)
            return schema_fail_at_path(ld, "upstream.ca_file", "only applies with upstream.tls: true");
        if (u->server_name)
            return schema_fail_at_path(ld, "upstream.server_name", "only applies with upstream.tls: true");
        if (u->insecure_skip_verify)
            return schema_fail_at_path(ld, "upstream.insecure_skip_verify", "only applies with upstream.tls: true");
        return 0;
    }
    if (!u->ca_file && !u->insecure_skip_verify)
        return schema_fail_at_path(ld, "upstream",
                                   "missing required key \"ca_file\": the MCS certificate is issued by the "
                                   "cluster's own CA (or set insecure_skip_verify: true)");
    if (u->ca_file && u->insecure_skip_verify)
        return schema_fail_at_path(ld, "upstream.insecure_skip_verify", "contradicts upstream.ca_file; set one of them");
    return 0;
}

/* Two addresses of the gate's own (a is at path_a, b at path_b) must not
 * overlap. Blames a if it was written, else b (a default is nowhere). */
static int validate_apart(loader_t *ld, const config_addr_t *a, const char *path_a, const config_addr_t *b,
                          const char *path_b)
{
    if (!grammar_addrs_overlap(a, b))
        return 0;
    const char *blamed = schema_node_at(ld, path_a) ? path_a : path_b;
    return schema_fail(ld, schema_nearest_node(ld, blamed), "", "%s \"%s\" and %s \"%s\" overlap", path_a,
                       a->text, path_b, b->text);
}

static int validate_upstream(loader_t *ld)
{
    const config_t *cfg = ld->cfg;
    if (validate_upstream_tls(ld) < 0 ||
        validate_not_a_listener(ld, &cfg->upstream.addr, "upstream.address", "requests would loop") < 0)
        return -1;
    if (cfg->admin.enabled &&
        validate_apart(ld, &cfg->upstream.addr, "upstream.address", &cfg->admin.addr, "admin.address") < 0)
        return -1;
    if (cfg->metrics.enabled &&
        validate_apart(ld, &cfg->upstream.addr, "upstream.address", &cfg->metrics.addr, "metrics.address") < 0)
        return -1;
    return 0;
}

static int validate_admin(loader_t *ld)
{
    if (!ld->cfg->admin.enabled)
        return 0;
    if (ld->cfg->admin.socket && strlen(ld->cfg->admin.socket) > CONFIG_SOCKET_PATH_MAX)
        return schema_fail_at_path(ld, "admin.socket", "a unix socket path is at most %d bytes (after resolving "
                                   "it against the configuration's directory)", CONFIG_SOCKET_PATH_MAX);
    return validate_not_a_listener(ld, &ld->cfg->admin.addr, "admin.address", "they cannot share a port");
}

/* The metrics listener is bound beside the admin API and the listeners:
 * it shares a port with none of them. */
static int validate_metrics(loader_t *ld)
{
    const config_t *cfg = ld->cfg;
    if (!cfg->metrics.enabled)
        return 0;
    if (validate_not_a_listener(ld, &cfg->metrics.addr, "metrics.address", "they cannot share a port") < 0)
        return -1;
    if (cfg->admin.enabled &&
        validate_apart(ld, &cfg->metrics.addr, "metrics.address", &cfg->admin.addr, "admin.address") < 0)
        return -1;
    return 0;
}

static int validate_enforcement(loader_t *ld)
{
    const config_enforcement_t *e = &ld->cfg->enforcement;
    if (e->source != SOURCE_KIND_FILE || e->file.path)
        return 0;
    if (schema_node_at(ld, "enforcement.file"))
        return schema_fail_at_path(ld, "enforcement.file", "missing required key \"path\" (enforcement.source is file)");
    return schema_fail_at_path(ld, "enforcement", "missing required key \"file.path\" (enforcement.source is file)");
}

static int validate_limits(loader_t *ld)
{
    const config_limits_t *l = &ld->cfg->limits;
    if (l->max_uri_bytes > l->max_header_bytes)
        return schema_fail_at_path(ld, "limits.max_uri_bytes",
                                   "must not exceed limits.max_header_bytes (the request line is part of the header)");
    if (l->max_buffered_per_client > l->max_buffered)
        return schema_fail_at_path(ld, "limits.max_buffered_per_client", "must not exceed limits.max_buffered");
    return 0;
}

/* A kept body with coalescing off would be a cache nobody reads. */
static int validate_coalesce(loader_t *ld)
{
    const config_coalesce_t *c = &ld->cfg->coalesce;
    if (!c->enabled && c->ttl_ms)
        return schema_fail_at_path(ld, "coalesce.ttl", "only applies with coalesce.enabled: true");
    return 0;
}

/* The listener that takes connections redirected to `port`: the first on
 * that port listening beyond loopback; SIZE_MAX when there is none. The
 * redirect rewrites the destination to the node's address on the
 * interface the connection came in by, so a loopback listener never sees
 * them. */
static size_t redirect_target(const config_t *cfg, uint32_t port)
{
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const config_addr_t *a = &cfg->listeners[i].addr;
        if (addr_port(&a->ss) == port && !grammar_addr_is_loopback(a))
            return i;
    }
    return SIZE_MAX;
}

/* The first listener on `port`, loopback or not; SIZE_MAX when none. */
static size_t listener_on_port(const config_t *cfg, uint32_t port)
{
    for (size_t i = 0; i < cfg->n_listeners; i++)
        if (addr_port(&cfg->listeners[i].addr.ss) == port)
            return i;
    return SIZE_MAX;
}

/* Why no listener on `port` can take redirected connections ("" when one
 * can). */
static void redirect_target_problem(const config_t *cfg, uint32_t port, char *why, size_t len)
{
    why[0] = '\0';
    if (redirect_target(cfg, port) != SIZE_MAX)
        return;
    size_t loopback = listener_on_port(cfg, port);
    if (loopback != SIZE_MAX) {
        snprintf(why, len,
                 "%u is the port of listeners[%zu].address \"%s\", which listens on loopback only: redirected "
                 "connections arrive on the node's own address, so listen on 0.0.0.0 (or [::], or the node's address)",
                 (unsigned)port, loopback, cfg->listeners[loopback].addr.text);
        return;
    }
    bool port_zero = false;
    size_t at = (size_t)snprintf(why, len, "%u is not the port of a listener (", (unsigned)port);
    for (size_t i = 0; i < cfg->n_listeners && at < len; i++) {
        port_zero |= addr_port(&cfg->listeners[i].addr.ss) == 0;
        at += (size_t)snprintf(why + at, len - at, "%s\"%s\"", i ? ", " : "", cfg->listeners[i].addr.text);
    }
    if (at < len)
        snprintf(why + at, len - at, "%s", port_zero ? "; a listener on port 0 cannot be a redirect target)" : ")");
}

/* Why the pair from -> listeners[target] mixes TLS and plain ("" when it
 * does not): the MCS's 22623 is TLS and its 22624 plain, so a node
 * dialling one speaks that to whatever it is sent to, and a listener of
 * the other kind answers it with a handshake failure or garbage. Other
 * `from` ports say nothing of their kind. */
static void redirect_kind_problem(const config_t *cfg, uint32_t from, size_t target, char *why, size_t len)
{
    why[0] = '\0';
    const config_listener_t *l = &cfg->listeners[target];
    bool want_tls = from == CONFIG_MCS_TLS_PORT;
    if ((from != CONFIG_MCS_TLS_PORT && from != CONFIG_MCS_PLAIN_PORT) || l->tls.enabled == want_tls)
        return;
    snprintf(why, len,
             "%u is the MCS's %s port, and listeners[%zu].address \"%s\" is %s: nodes dialling %u speak %s, "
             "so send it to a %s listener",
             (unsigned)from, want_tls ? "TLS" : "plain", target, l->addr.text, l->tls.enabled ? "TLS" : "plain",
             (unsigned)from, want_tls ? "TLS" : "plain HTTP", want_tls ? "TLS" : "plain");
}

/* Why pair i's `from` cannot be redirected as another pair's target (""
 * when it is none): connections redirected to it would be taken for a
 * `from` and sent on, away from the listener. */
static void redirect_from_pair_problem(const config_redirect_port_t *pairs, size_t n, size_t i, char *why, size_t len)
{
    why[0] = '\0';
    for (size_t j = 0; j < n; j++) {
        if (j != i && pairs[j].to == pairs[i].from) {
            snprintf(why, len, "%u is where redirect.ports[%zu] sends %u: a port cannot be both a target and "
                     "redirected (to %u)", (unsigned)pairs[i].from, j, (unsigned)pairs[j].from,
                     (unsigned)pairs[i].to);
            return;
        }
    }
}

/* Why `from` cannot be redirected because the gate listens there (""
 * when it does not): every connection other hosts make to that listener
 * would be sent to `to` instead, so it would never see one. */
static void redirect_from_listener_problem(const config_t *cfg, uint32_t from, uint32_t to, char *why, size_t len)
{
    why[0] = '\0';
    size_t l = listener_on_port(cfg, from);
    if (l != SIZE_MAX)
        snprintf(why, len, "%u is the port of listeners[%zu].address \"%s\": redirecting it would send every "
                 "connection other hosts make to that listener to %u instead", (unsigned)from, l,
                 cfg->listeners[l].addr.text, (unsigned)to);
}

/* redirect.ports as written: distinct from ports that no listener and no
 * other pair uses, each to the port of a listener that can take
 * redirected connections, of the kind (TLS or plain) its MCS port is. */
static int validate_redirect(loader_t *ld)
{
    const config_redirect_t *r = &ld->cfg->redirect;
    char path[64], why[CONFIG_ERR_LEN / 2];
    for (size_t i = 0; i < r->n_ports; i++) {
        const config_redirect_port_t *p = &r->ports[i];
        for (size_t j = 0; j < i; j++) {
            if (r->ports[j].from != p->from)
                continue;
            snprintf(path, sizeof path, "redirect.ports[%zu].from", i);
            return schema_fail_at_path(ld, path, "%u is already redirected by redirect.ports[%zu]", (unsigned)p->from, j);
        }
        if (p->from == p->to) {
            snprintf(path, sizeof path, "redirect.ports[%zu]", i);
            return schema_fail_at_path(ld, path, "from and to are both %u: a port redirected to itself", (unsigned)p->from);
        }
        redirect_from_pair_problem(r->ports, r->n_ports, i, why, sizeof why);
        if (!why[0])
            redirect_from_listener_problem(ld->cfg, p->from, p->to, why, sizeof why);
        if (why[0]) {
            snprintf(path, sizeof path, "redirect.ports[%zu].from", i);
            return schema_fail_at_path(ld, path, "%s", why);
        }
        redirect_target_problem(ld->cfg, p->to, why, sizeof why);
        if (!why[0])
            redirect_kind_problem(ld->cfg, p->from, redirect_target(ld->cfg, p->to), why, sizeof why);
        if (why[0]) {
            snprintf(path, sizeof path, "redirect.ports[%zu].to", i);
            return schema_fail_at_path(ld, path, "%s", why);
        }
    }
    return 0;
}

static int (*const validators[])(loader_t *) = {
    validate_listeners, validate_upstream, validate_admin, validate_metrics, validate_enforcement, validate_limits,
    validate_redirect, validate_coalesce,
};

/* min_spec: auto takes the spec of the table's row for the OCP limit: the
 * oldest boot image the release supports reads at least that spec. */
static int derive_evidence(loader_t *ld)
{
    config_evidence_t *e = &ld->cfg->evidence;
    if (!e->min_spec_auto)
        return 0;
    const ocp_version_t *limit = &ld->cfg->enforcement.limits.ocp;
    const ignition_release_t *row = ignition_release_for(limit);
    if (row) {
        e->min_spec = row->spec;
        return 0;
    }
    if (!e->enabled)
        return 0;
    size_t n;
    const ignition_release_t *first = ignition_releases(&n);
    return schema_fail_at_path(ld, schema_node_at(ld, "evidence.min_spec") ? "evidence.min_spec" : "evidence",
                               "min_spec auto: no Ignition is known for OCP %u.%u (enforcement.limits.ocp_version; "
                               "the table starts at %u.%u): set evidence.min_spec to a spec such as \"3.2.0\"",
                               (unsigned)limit->major, (unsigned)limit->minor, (unsigned)first->ocp_major,
                               (unsigned)first->ocp_minor);
}

static int derive(loader_t *ld)
{
    config_t *cfg = ld->cfg;
    if (derive_evidence(ld) < 0)
        return -1;
    if (!cfg->upstream.server_name) {
        char ip[ADDR_IP_TEXT_LEN];
        addr_ip_text(&cfg->upstream.addr.ss, ip, sizeof ip);
        return schema_set_string(ld, ld->root, &cfg->upstream.server_name, ip);
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The redirect's ports.
 * ------------------------------------------------------------------------- */

/* The default pair for the first listener of one kind: 0 with *n grown,
 * 0 when there is none of that kind, or -1 with err. */
static int default_redirect_port(const config_t *cfg, bool tls, uint32_t from, config_redirect_port_t *out,
                                 size_t *n, char *err, size_t errlen)
{
    const char *kind = tls ? "TLS" : "plain";
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const config_listener_t *l = &cfg->listeners[i];
        if (l->tls.enabled != tls)
            continue;
        uint32_t port = addr_port(&l->addr.ss);
        const char *problem = port == 0                            ? "has port 0, which cannot be a redirect target"
                              : port == from                       ? "is on the MCS port itself"
                              : grammar_addr_is_loopback(&l->addr) ? "listens on loopback only, where redirected "
                                                                     "connections do not arrive"
                                                                   : NULL;
        if (problem) {
            snprintf(err, errlen,
                     "%s: redirect: %u goes by default to the first %s listener, and listeners[%zu].address \"%s\" "
                     "%s: the gate listens on ports of its own (such as %u on 0.0.0.0) while the MCS keeps %u; "
                     "change the listener or set redirect.ports",
                     cfg->path, (unsigned)from, kind, i, l->addr.text, problem, (unsigned)(from + 20), (unsigned)from);
            return -1;
        }
        out[(*n)++] = (config_redirect_port_t){.from = from, .to = port};
        return 0;
    }
    return 0;
}

int config_redirect_ports(const config_t *cfg, config_redirect_port_t out[CONFIG_MAX_REDIRECT_PORTS], size_t *n,
                          char *err, size_t errlen)
{
    *n = 0;
    if (cfg->redirect.n_ports) {
        memcpy(out, cfg->redirect.ports, cfg->redirect.n_ports * sizeof *out);
        *n = cfg->redirect.n_ports;
        return 0;
    }
    if (default_redirect_port(cfg, true, CONFIG_MCS_TLS_PORT, out, n, err, errlen) < 0 ||
        default_redirect_port(cfg, false, CONFIG_MCS_PLAIN_PORT, out, n, err, errlen) < 0)
        return -1;
    /* The written pairs were checked at load; the derived ones are checked
     * here, where the redirect is asked for (a gate behind a load balancer
     * may listen on an MCS port). Their targets are listeners' ports, so a
     * `from` that is another's target is on a listener's port too. */
    for (size_t i = 0; i < *n; i++) {
        char why[CONFIG_ERR_LEN / 2];
        redirect_from_listener_problem(cfg, out[i].from, out[i].to, why, sizeof why);
        if (why[0]) {
            snprintf(err, errlen, "%s: redirect: by default %u goes to %u, and %s; change the listener or set "
                     "redirect.ports", cfg->path, (unsigned)out[i].from, (unsigned)out[i].to, why);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Entry points.
 * ------------------------------------------------------------------------- */

/* The directory part of name, or NULL when it has none (paths stay as written). */
static int config_dir(const char *name, char **dir)
{
    const char *slash = strrchr(name, '/');
    *dir = NULL;
    if (!slash)
        return 0;
    *dir = slash == name ? strdup("/") : strndup(name, (size_t)(slash - name));
    return *dir ? 0 : -1;
}

static int load_document(loader_t *ld, const char *text, size_t len)
{
    char yerr[CONFIG_ERR_LEN];
    ydoc_t *doc = ydoc_parse(text, len, yerr, sizeof yerr);
    if (!doc) {
        if (ld->err && ld->errlen)
            snprintf(ld->err, ld->errlen, "%s:%s", ld->name, yerr);
        return -1;
    }
    ld->root = ydoc_root(doc);
    int rc = set_defaults(ld, ld->cfg);
    if (rc == 0 && ld->root->kind != YNODE_MAP)
        rc = schema_fail_expected(ld, ld->root, "a mapping of settings");
    if (rc == 0)
        rc = schema_read_map(ld, ld->root, &root_schema, ld->cfg);
    for (size_t i = 0; rc == 0 && i < ARRAY_LEN(validators); i++)
        rc = validators[i](ld);
    if (rc == 0)
        rc = derive(ld);
    ydoc_free(doc);
    return rc;
}

config_t *config_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    loader_t ld = {.name = name, .err = err, .errlen = errlen};
    config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->path = strdup(name)) || config_dir(name, &ld.dir) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name);
        config_free(cfg);
        return NULL;
    }
    ld.cfg = cfg;
    atomic_init(&cfg->refs, 1);
    int rc = load_document(&ld, text, len);
    schema_loader_free(&ld);
    if (rc < 0) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* Reads a whole file, refusing one too large to be a configuration. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_MAX_FILE_BYTES + 1);
    size_t used = 0;
    ssize_t n = 0;
    while (buf && used <= CONFIG_MAX_FILE_BYTES &&
           (n = read(fd, buf + used, CONFIG_MAX_FILE_BYTES + 1 - used)) > 0)
        used += (size_t)n;
    int read_errno = errno;
    close(fd);
    const char *problem = !buf                          ? "out of memory"
                          : n < 0                       ? strerror(read_errno)
                          : used > CONFIG_MAX_FILE_BYTES ? "too large to be a configuration file"
                                                        : NULL;
    if (problem) {
        snprintf(err, errlen, "%s: cannot read: %s", path, problem);
        free(buf);
        return NULL;
    }
    *len = used;
    return buf;
}

char *config_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    return read_file(path, len, err, errlen);
}

config_t *config_load(const char *path, char *err, size_t errlen)
{
    char scratch[1];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    size_t len;
    char *text = read_file(path, &len, err, errlen);
    if (!text)
        return NULL;
    config_t *cfg = config_parse(text, len, path, err, errlen);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (cfg && EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) == 1)
        for (unsigned i = 0; i < mdlen && 2 * i + 2 < sizeof cfg->sha256; i++)
            snprintf(cfg->sha256 + 2 * i, 3, "%02x", md[i]);
    free(text);
    return cfg;
}

void config_key_where(const config_t *cfg, const char *key, char *buf, size_t len)
{
    for (size_t i = 0; i < cfg->n_origins; i++)
        if (!strcmp(cfg->origins[i].key, key)) {
            snprintf(buf, len, "%s:%d:%d: %s", cfg->path, cfg->origins[i].line, cfg->origins[i].col, key);
            return;
        }
    snprintf(buf, len, "%s: %s (default)", cfg->path, key);
}

config_t *config_ref(config_t *cfg)
{
    refcount_hold(&cfg->refs);
    return cfg;
}

void config_unref(config_t *cfg)
{
    if (cfg && refcount_drop(&cfg->refs))
        config_free(cfg);
}

void config_free(config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        config_tls_server_t *tls = &cfg->listeners[i].tls;
        free(tls->certificate);
        free(tls->key);
        free(tls->ciphers);
        free(tls->ciphersuites);
        free(tls->groups);
    }
    free(cfg->upstream.ca_file);
    free(cfg->upstream.server_name);
    config_source_kube_t *k = &cfg->enforcement.kubernetes;
    free(k->server);
    free(k->ca_file);
    free(k->token_file);
    free(k->name);
    free(cfg->enforcement.file.path);
    free(cfg->redirect.table);
    free(cfg->admin.socket);
    free(cfg->admin.token_file);
    for (size_t i = 0; i < cfg->admission.token.n_files; i++)
        free(cfg->admission.token.files[i]);
    free(cfg->admission.machines.namespace);
    free(cfg->admission.machines.cluster_api_namespace);
    for (size_t i = 0; i < cfg->gate.n_prefixes; i++)
        free(cfg->gate.prefixes[i]);
    for (size_t i = 0; i < cfg->n_origins; i++)
        free(cfg->origins[i].key);
    free(cfg->origins);
    free(cfg->path);
    free(cfg);
}

/* auto: the CPUs this process may run on (cpusets, taskset), not all
 * online ones. */
uint32_t config_worker_threads(const config_t *cfg)
{
    if (cfg->workers)
        return cfg->workers;
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > CONFIG_MAX_WORKERS ? CONFIG_MAX_WORKERS : (uint32_t)n;
}
