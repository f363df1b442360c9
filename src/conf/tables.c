/* tables: the gate's configuration as tables for the schema engine
 * (schema.h): every key, its reader and its bounds, and the few readers of
 * composite values (a listener, its tls mapping, the redirect's pairs, the
 * token policy). The defaults are in defaults.c, the rules across fields
 * in validate.c, the entry points in config.c. */
#include <stddef.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "schema.h"
#include "loading.h"
#include "conf/grammar.h"
#include "readers.h"

/* Enum-typed fields are written through int *. */
_Static_assert(sizeof(reject_mode_t) == sizeof(int), "enum size");
_Static_assert(sizeof(source_kind_t) == sizeof(int), "enum size");
_Static_assert(sizeof(log_level_t) == sizeof(int), "enum size");
_Static_assert(sizeof(decision_t) == sizeof(int), "enum size");

/* A year: longer timeouts are typos, and the cap keeps "now + timeout"
 * arithmetic in the other modules far from overflow. */
#define DURATION_MAX_MS (365ull * 24 * 3600 * 1000)

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
static const range_t joining_count = {1, 100000};
/* Durations of a scale-up: up to a day. */
static const range_t join_duration = {1000, 24ull * 3600 * 1000};
static const range_t head_hold_duration = {1000, 3600 * 1000};
static const range_t per_minute_count = {0, 100000};
static const range_t pending_csrs_count = {1, 100000};
/* Gates in front of one cluster's MCS: one per control-plane node, and a
 * few more behind a load balancer. */
static const range_t replicas_count = {1, 64};

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
static const enum_value_t pace_lines[] = {
    {"auto", PACE_LINE_AUTO}, {"api", PACE_LINE_API}, {"local", PACE_LINE_LOCAL}, {NULL, 0}};
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
    /* A listener with an error does not stop the next one being read. */
    size_t before = ld->n_errors;
    for (size_t i = 0; i < node->n && !ld->stop; i++) {
        size_t saved = schema_path_push_index(ld, i);
        ld->cfg->n_listeners = i + 1;   /* from here on config_free owns its strings */
        if (schema_place(ld, node->items[i]) == 0)
            read_listener(ld, node->items[i], &listeners[i]);
        schema_path_pop(ld, saved);
    }
    return ld->n_errors > before ? -1 : 0;
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
    {"mcs_release", conf_read_mcs_release, UPSTREAM_FIELD(mcs_release), NULL},
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
    {"pools", conf_read_held_pools, 0, NULL},
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
    size_t before = ld->n_errors;
    for (size_t i = 0; i < node->n && !ld->stop; i++) {
        size_t saved = schema_path_push_index(ld, i);
        config_redirect_port_t *p = &r->ports[i];
        *p = (config_redirect_port_t){0};
        if (schema_place(ld, node->items[i]) == 0 &&
            schema_read_map(ld, node->items[i], &redirect_port_schema, p) == 0 && (!p->from || !p->to))
            schema_fail(ld, node->items[i], ld->path, "missing required key \"%s\"", p->from ? "to" : "from");
        schema_path_pop(ld, saved);
    }
    if (ld->n_errors > before)
        return -1;
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

#define PACE_FIELD(name) offsetof(config_pace_t, name)
static const field_t pace_fields[] = {
    {"enabled", schema_read_bool, PACE_FIELD(enabled), NULL},
    {"max_joining", schema_read_count, PACE_FIELD(max_joining), &joining_count},
    {"join_timeout", schema_read_duration, PACE_FIELD(join_timeout_ms), &join_duration},
    {"head_hold", schema_read_duration, PACE_FIELD(head_hold_ms), &head_hold_duration},
    {"per_minute", schema_read_count, PACE_FIELD(per_minute), &per_minute_count},
    {"max_pending_csrs", schema_read_count, PACE_FIELD(max_pending_csrs), &pending_csrs_count},
    {"replicas", schema_read_count, PACE_FIELD(replicas), &replicas_count},
    {"line", schema_read_enum, PACE_FIELD(line), pace_lines},
    {"namespace", conf_read_kube_name, PACE_FIELD(namespace), NULL},
};
static const schema_t pace_schema = SCHEMA(pace_fields);

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
    {"pace", schema_read_submap, CONFIG_FIELD(pace), &pace_schema},
    {"log", schema_read_submap, CONFIG_FIELD(log), &log_schema},
};
const schema_t config_root_schema = SCHEMA(root_fields);
