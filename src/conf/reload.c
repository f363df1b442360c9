#include <stdio.h>
#include <string.h>

#include "conf/reload.h"

static bool same_text(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool same_addr(const config_addr_t *a, const config_addr_t *b)
{
    return a->len == b->len && memcmp(&a->ss, &b->ss, a->len) == 0;
}

static void workers_text(uint32_t workers, char *out, size_t len)
{
    if (workers)
        snprintf(out, len, "%u", workers);
    else
        snprintf(out, len, "auto");
}

static void token_files_text(const config_admission_token_t *t, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "%s", t->n_files ? "" : "none");
    for (size_t i = 0; i < t->n_files && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", i ? ", " : "", t->files[i]);
}

static bool same_token_files(const config_admission_token_t *a, const config_admission_token_t *b)
{
    if (a->n_files != b->n_files)
        return false;
    for (size_t i = 0; i < a->n_files; i++)
        if (!same_text(a->files[i], b->files[i]))
            return false;
    return true;
}

bool config_machines_same_objects(const config_admission_machines_t *a, const config_admission_machines_t *b)
{
    if (a->enabled != b->enabled)
        return false;
    return !a->enabled || (same_text(a->namespace, b->namespace) && a->cluster_api == b->cluster_api &&
                           (!a->cluster_api || same_text(a->cluster_api_namespace, b->cluster_api_namespace)));
}

bool config_machines_same(const config_admission_machines_t *a, const config_admission_machines_t *b)
{
    return config_machines_same_objects(a, b) && (!a->enabled || a->page_size == b->page_size);
}

static bool same_listener_addr(bool a_on, const config_addr_t *a, bool b_on, const config_addr_t *b)
{
    return a_on == b_on && (!a_on || strcmp(a->text, b->text) == 0);
}

/* The shared line runs (source/pace_line.h, pace_line_wanted): started
 * with the gate only, so a reload may not turn it on or off. */
static bool pace_shared_on(const config_t *c)
{
    const config_pace_t *p = &c->pace;
    return p->enabled && c->enforcement.source == SOURCE_KIND_KUBERNETES &&
           (p->line == PACE_LINE_API || (p->line == PACE_LINE_AUTO && p->replicas > 1));
}

int config_restart_needed(const config_t *old, const config_t *new, char *why, size_t len)
{
    /* Each row: the key, whether the values are the same (compared whole:
     * two lists of paths may differ past what the text below holds), and
     * the old and new values as text, for the message. */
    struct {
        const char *key;
        bool same;
        char was[160], now[160];
    } rows[] = {
        /* As written: auto is the CPUs at start, and a cpuset narrowed
         * since is no change of the file's. */
        {"workers", old->workers == new->workers, "", ""},
        {"limits.max_header_bytes", old->limits.max_header_bytes == new->limits.max_header_bytes, "", ""},
        {"limits.max_headers", old->limits.max_headers == new->limits.max_headers, "", ""},
        {"limits.max_uri_bytes", old->limits.max_uri_bytes == new->limits.max_uri_bytes, "", ""},
        {"admin", same_listener_addr(old->admin.enabled, &old->admin.addr, new->admin.enabled, &new->admin.addr),
         "", ""},
        {"metrics",
         same_listener_addr(old->metrics.enabled, &old->metrics.addr, new->metrics.enabled, &new->metrics.addr), "",
         ""},
        /* The admin API's unix socket and credential are opened at start,
         * the held tables sized and timed when the workers start. */
        {"admin.socket", same_text(old->admin.socket, new->admin.socket), "", ""},
        {"admin.token_file", same_text(old->admin.token_file, new->admin.token_file), "", ""},
        {"held.max_clients", old->held.max_clients == new->held.max_clients, "", ""},
        {"held.forget_after", old->held.forget_after_ms == new->held.forget_after_ms, "", ""},
        /* The token files are watched from start; their contents reload. */
        {"admission.token.files", same_token_files(&old->admission.token, &new->admission.token), "", ""},
        /* The shared line's Leases watch and writer start with the gate:
         * whether it runs (pace.line resolved, pacing on), and where. */
        {"pace.line", pace_shared_on(old) == pace_shared_on(new), "", ""},
        {"pace.namespace", !pace_shared_on(old) || same_text(old->pace.namespace, new->pace.namespace), "", ""},
    };
    workers_text(old->workers, rows[0].was, sizeof rows[0].was);
    workers_text(new->workers, rows[0].now, sizeof rows[0].now);
    snprintf(rows[1].was, sizeof rows[1].was, "%u", old->limits.max_header_bytes);
    snprintf(rows[1].now, sizeof rows[1].now, "%u", new->limits.max_header_bytes);
    snprintf(rows[2].was, sizeof rows[2].was, "%u", old->limits.max_headers);
    snprintf(rows[2].now, sizeof rows[2].now, "%u", new->limits.max_headers);
    snprintf(rows[3].was, sizeof rows[3].was, "%u", old->limits.max_uri_bytes);
    snprintf(rows[3].now, sizeof rows[3].now, "%u", new->limits.max_uri_bytes);
    snprintf(rows[4].was, sizeof rows[4].was, "%s", old->admin.enabled ? old->admin.addr.text : "disabled");
    snprintf(rows[4].now, sizeof rows[4].now, "%s", new->admin.enabled ? new->admin.addr.text : "disabled");
    snprintf(rows[5].was, sizeof rows[5].was, "%s", old->metrics.enabled ? old->metrics.addr.text : "disabled");
    snprintf(rows[5].now, sizeof rows[5].now, "%s", new->metrics.enabled ? new->metrics.addr.text : "disabled");
    snprintf(rows[6].was, sizeof rows[6].was, "%s", old->admin.socket ? old->admin.socket : "none");
    snprintf(rows[6].now, sizeof rows[6].now, "%s", new->admin.socket ? new->admin.socket : "none");
    snprintf(rows[7].was, sizeof rows[7].was, "%s", old->admin.token_file ? old->admin.token_file : "none");
    snprintf(rows[7].now, sizeof rows[7].now, "%s", new->admin.token_file ? new->admin.token_file : "none");
    snprintf(rows[8].was, sizeof rows[8].was, "%u", old->held.max_clients);
    snprintf(rows[8].now, sizeof rows[8].now, "%u", new->held.max_clients);
    snprintf(rows[9].was, sizeof rows[9].was, "%llums", (unsigned long long)old->held.forget_after_ms);
    snprintf(rows[9].now, sizeof rows[9].now, "%llums", (unsigned long long)new->held.forget_after_ms);
    token_files_text(&old->admission.token, rows[10].was, sizeof rows[10].was);
    token_files_text(&new->admission.token, rows[10].now, sizeof rows[10].now);
    snprintf(rows[11].was, sizeof rows[11].was, "%s", pace_shared_on(old) ? "the shared line" : "the gate's own");
    snprintf(rows[11].now, sizeof rows[11].now, "%s", pace_shared_on(new) ? "the shared line" : "the gate's own");
    snprintf(rows[12].was, sizeof rows[12].was, "%s", old->pace.namespace ? old->pace.namespace : "");
    snprintf(rows[12].now, sizeof rows[12].now, "%s", new->pace.namespace ? new->pace.namespace : "");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!rows[i].same) {
            snprintf(why, len, "%s needs a restart (%s -> %s)", rows[i].key, rows[i].was, rows[i].now);
            return -1;
        }
    return 0;
}

bool config_listener_same(const config_listener_t *a, const config_listener_t *b)
{
    return strcmp(a->addr.text, b->addr.text) == 0 && a->tls.enabled == b->tls.enabled;
}

bool config_upstream_same_peer(const config_upstream_t *a, const config_upstream_t *b)
{
    return same_addr(&a->addr, &b->addr) && a->tls == b->tls && same_text(a->ca_file, b->ca_file) &&
           same_text(a->server_name, b->server_name) && a->insecure_skip_verify == b->insecure_skip_verify;
}

bool config_source_same(const config_enforcement_t *a, const config_enforcement_t *b)
{
    if (a->source != b->source)
        return false;
    if (a->source == SOURCE_KIND_FILE)
        return same_text(a->file.path, b->file.path) && a->file.poll_interval_ms == b->file.poll_interval_ms;
    return config_kube_same(&a->kubernetes, &b->kubernetes) && same_text(a->kubernetes.name, b->kubernetes.name);
}

bool config_kube_same(const config_source_kube_t *a, const config_source_kube_t *b)
{
    return config_kube_same_server(a, b) && same_text(a->ca_file, b->ca_file) &&
           same_text(a->token_file, b->token_file) && a->insecure_skip_tls_verify == b->insecure_skip_tls_verify &&
           a->watch_timeout_ms == b->watch_timeout_ms;
}

bool config_kube_same_server(const config_source_kube_t *a, const config_source_kube_t *b)
{
    return same_text(a->server, b->server);
}
