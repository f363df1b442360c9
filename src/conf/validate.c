/* validate: the rules across fields, checked once the whole file is read
 * (each names the key it refuses, file:line:column), what is derived from
 * the values read, and the redirect's pairs (written or by default). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf/config.h"
#include "schema.h"
#include "loading.h"
#include "conf/grammar.h"
#include "core/addr.h"

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
    /* What is kept for a slow reader comes in relay buffers (a head of
     * max_header_bytes, its growth and a TLS record, at least 64 KiB,
     * proxy/exchange.c); a budget of fewer than four keeps next to
     * nothing, and every client that falls behind would be cut (review). */
    uint64_t chunk = (uint64_t)l->max_header_bytes + l->max_headers + 16384 + 320;
    if (chunk < 65536)
        chunk = 65536;
    if (l->max_buffered_per_client < 4 * chunk)
        return schema_fail_at_path(ld, "limits.max_buffered_per_client",
                                   "holds fewer than four relay buffers of %llu bytes (max_header_bytes + max_headers + "
                                   "16KiB, at least 64KiB): at least %llu", (unsigned long long)chunk,
                                   (unsigned long long)(4 * chunk));
    uint32_t workers = ld->cfg->workers;
    if (workers && l->max_buffered / workers < 4 * chunk)
        return schema_fail_at_path(ld, "limits.max_buffered",
                                   "a worker's share (of %u) holds fewer than four relay buffers of %llu bytes: at "
                                   "least %llu", workers, (unsigned long long)chunk,
                                   (unsigned long long)(4 * chunk * workers));
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

/* Each of pace.replicas gates admits while replicas x its own joining
 * nodes fit in max_joining: fewer slots than gates would leave some, or
 * all, of them admitting nobody, ever. */
static int validate_pace(loader_t *ld)
{
    const config_pace_t *p = &ld->cfg->pace;
    bool shared = p->line == PACE_LINE_API ||
                  (p->line == PACE_LINE_AUTO && ld->cfg->enforcement.source == SOURCE_KIND_KUBERNETES &&
                   p->replicas > 1);
    if (p->line == PACE_LINE_API && ld->cfg->enforcement.source != SOURCE_KIND_KUBERNETES)
        return schema_fail_at_path(ld, "pace.line",
                                   "the shared line lives in the API: it needs enforcement.source kubernetes (or "
                                   "pace.line local)");
    /* The joining Lease holds a line of about 64 bytes a node in one
     * annotation, under the API's 256 KiB of annotations. */
    if (shared && p->max_joining > 2000)
        return schema_fail_at_path(ld, "pace.max_joining",
                                   "%u nodes joining at once on the shared line (pace.line): at most 2000 fit in "
                                   "its joining Lease (or pace.line local)", (unsigned)p->max_joining);
    if (p->replicas > p->max_joining)
        return schema_fail_at_path(ld, "pace.replicas",
                                   "%u gates sharing pace.max_joining %u: each needs at least one slot (raise "
                                   "max_joining to %u or more)", (unsigned)p->replicas, (unsigned)p->max_joining,
                                   (unsigned)p->replicas);
    return 0;
}

static int (*const validators[])(loader_t *) = {
    validate_listeners, validate_upstream, validate_admin, validate_metrics, validate_enforcement, validate_limits,
    validate_redirect, validate_coalesce, validate_pace,
};

int config_validate(loader_t *ld)
{
    for (size_t i = 0; i < ARRAY_LEN(validators); i++)
        if (validators[i](ld) < 0)
            return -1;
    return 0;
}

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

int config_derive(loader_t *ld)
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
