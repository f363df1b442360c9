/* defaults: every key's default, set before the file is read; the file
 * overlays them (conf/skewgate.yaml documents each one). */
#include "conf/config.h"
#include "schema.h"
#include "loading.h"
#include "conf/grammar.h"

#include <stdio.h>
#include <string.h>

#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* pace.namespace's default: the gate's own namespace (the service
 * account's namespace file) when it is readable, else "skewgate". */
static void pace_default_namespace(char *buf, size_t len)
{
    snprintf(buf, len, "skewgate");
    FILE *f = fopen(SERVICE_ACCOUNT_DIR "/namespace", "r");
    if (!f)
        return;
    char ns[256];
    size_t n = fread(ns, 1, sizeof ns - 1, f);
    fclose(f);
    while (n && (ns[n - 1] == '\n' || ns[n - 1] == ' ' || ns[n - 1] == '\r'))
        n--;
    ns[n] = '\0';
    if (n)
        snprintf(buf, len, "%s", ns);
}

int config_set_defaults(loader_t *ld, config_t *cfg)
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
    cfg->held = (config_held_t){
        .max_clients = 4096, .forget_after_ms = 15 * 60000, .pools = {"master", "worker"}, .n_pools = 2};
    cfg->log = (config_log_t){.level = LOG_INFO, .access = true};
    cfg->admission.machines.page_size = 100;
    cfg->coalesce = (config_coalesce_t){.enabled = true, .max_body = 16u << 20, .max_followers = 1000,
                                        .min_read_rate = 32u << 10};
    cfg->pace = (config_pace_t){.max_joining = 50, .join_timeout_ms = 30 * 60000, .head_hold_ms = 15000,
                                .max_pending_csrs = 90, .replicas = 1};

    char pace_ns[256];
    pace_default_namespace(pace_ns, sizeof pace_ns);
    cfg->gate.n_prefixes = 1;
    if (schema_set_string(ld, ld->root, &cfg->pace.namespace, pace_ns) < 0 ||
        schema_set_string(ld, ld->root, &cfg->gate.prefixes[0], "/config/") < 0 ||
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
