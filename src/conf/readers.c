/* readers: what the gate's own values must look like (readers.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "readers.h"
#include "core/cidr.h"
#include "core/ignition.h"
#include "core/text.h"
#include "core/version.h"
#include "core/release.h"

int conf_read_workers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    static const range_t workers_range = {1, CONFIG_MAX_WORKERS};
    static const field_t as_count = {"workers", schema_read_count, 0, &workers_range};
    (void)f;
    if (node->kind == YNODE_SCALAR && node->len == 4 && !strcmp(node->value, "auto"))
        return 0;   /* the default, 0: resolved at start (config_worker_threads) */
    if (node->kind == YNODE_SCALAR && node->plain && node->len && strspn(node->value, "0123456789") == node->len)
        return schema_read_count(ld, node, &as_count, dst);
    return schema_fail_expected(ld, node, "auto or a whole number from 1 to 256");
}

/* The limits are parsed by core/version, as `skewgate verdict --ocp-limit`
 * parses them: both accept exactly the API's formats. */
int conf_read_ocp_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_scalar_text(ld, node, "an OCP version such as \"4.13.0\"");
    if (!s)
        return -1;
    if (version_parse_ocp(s, dst) < 0)
        return schema_fail(ld, node, ld->path, "invalid OCP version \"%s\": expected MAJOR.MINOR.PATCH, e.g. 4.13.0", s);
    return 0;
}

int conf_read_rhel_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_scalar_text(ld, node, "a RHEL version such as \"9.2\"");
    if (!s)
        return -1;
    if (version_parse_rhel(s, dst) < 0)
        return schema_fail(ld, node, ld->path, "invalid RHEL version \"%s\": expected MAJOR.MINOR, e.g. 9.2", s);
    return 0;
}

int conf_read_min_spec(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_evidence_t *e = dst;
    const char *s = schema_scalar_text(ld, node, "auto or an Ignition spec such as \"3.2.0\"");
    if (!s)
        return -1;
    if (!strcmp(s, "auto")) {
        e->min_spec_auto = true;
        return 0;
    }
    if (ignition_version_parse(s, &e->min_spec) < 0)
        return schema_fail(ld, node, ld->path,
                           "invalid Ignition spec \"%s\": expected auto or MAJOR.MINOR.PATCH with major 2 or 3, "
                           "e.g. 3.2.0", s);
    e->min_spec_auto = false;
    return 0;
}

/* A plain 4.20 is the YAML float 4.2: only a string reads, so that the
 * release is exactly what was written. */
int conf_read_mcs_release(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    if (node->kind == YNODE_SCALAR && node->plain && strcmp(node->value, "auto") != 0)
        return schema_fail(ld, node, ld->path,
                           "invalid MCS release %s: expected auto or a quoted release such as \"4.22\" "
                           "(a plain 4.20 is the number 4.2)", node->value);
    const char *s = schema_string_text(ld, node);
    if (!s)
        return -1;
    if (!strcmp(s, "auto")) {
        *(unsigned *)dst = 0;
        return 0;
    }
    unsigned minor;
    if (mcs_release_parse(s, &minor) < 0)
        return schema_fail(ld, node, ld->path,
                           "invalid MCS release \"%s\": expected auto or \"4.N\" with N from %u, e.g. \"4.22\"", s,
                           MCS_RELEASE_OLDEST);
    *(unsigned *)dst = minor;
    return 0;
}

/* The name goes into the API path; a DNS-1123 subdomain, as Kubernetes
 * requires of object names. */
static bool is_dns_subdomain(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
        bool edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (!alnum && (edge || (s[i] != '-' && s[i] != '.')))
            return false;
    }
    return true;
}

int conf_read_kube_name(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_string_text(ld, node);
    if (!s)
        return -1;
    if (!is_dns_subdomain(s))
        return schema_fail(ld, node, ld->path,
                           "invalid object name \"%s\": expected lowercase letters, digits, '-' and '.'", s);
    return schema_set_string(ld, node, dst, s);
}

/* Table names that others write: `skewgate redirect` replaces and deletes
 * its table whole, so a name shared with another writer would destroy its
 * rules, or have them destroy the redirect. */
static const struct {
    const char *name;
    const char *who;            /* who writes it */
} well_known_tables[] = {
    {"filter", "Debian's /etc/nftables.conf writes table inet filter, which nftables.service loads at boot; "
               "iptables-nft names its ip and ip6 tables so too"},
    {"nat", "hand-written rulesets add table inet nat for their NAT rules; iptables-nft names its ip and ip6 "
            "tables so too"},
    {"mangle", "iptables-nft's tables (ip, ip6) for iptables -t mangle, a name rulesets copy"},
    {"raw", "iptables-nft's tables (ip, ip6) for iptables -t raw, a name rulesets copy"},
    {"security", "iptables-nft's tables (ip, ip6) for iptables -t security, a name rulesets copy"},
    {"firewalld", "firewalld writes table inet firewalld and rewrites it on every reload"},
    {"netavark", "podman's netavark writes table inet netavark for its containers"},
};

int conf_read_nft_table(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_string_text(ld, node);
    if (!s)
        return -1;
    if (!text_is_identifier(s, CONFIG_REDIRECT_TABLE_MAX))
        return schema_fail(ld, node, ld->path,
                           "invalid nftables table name \"%s\": expected a letter or '_', then letters, digits "
                           "and '_', at most %d", s, CONFIG_REDIRECT_TABLE_MAX);
    for (size_t i = 0; i < sizeof well_known_tables / sizeof well_known_tables[0]; i++) {
        if (!strcmp(s, well_known_tables[i].name))
            return schema_fail(ld, node, ld->path,
                               "\"%s\" is a well-known table name (%s): skewgate redirect replaces and "
                               "deletes its table whole, so it needs a name nothing else writes (the default is "
                               "\"skewgate\")", s, well_known_tables[i].who);
    }
    return schema_set_string(ld, node, dst, s);
}

/* "" = in-cluster; http:// serves kubectl proxy, which holds the credentials. */
int conf_read_kube_server(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_string_text(ld, node);
    if (!s)
        return -1;
    const char *rest = !strncmp(s, "https://", 8) ? s + 8 : !strncmp(s, "http://", 7) ? s + 7 : NULL;
    if (*s && (!rest || !*rest || strpbrk(s, " \t\r\n")))
        return schema_fail(ld, node, ld->path,
                           "invalid server \"%s\": expected https://HOST[:PORT], or \"\" for in-cluster", s);
    return schema_set_string(ld, node, dst, s);
}

/* Requests are matched after percent-decoding and cleaning (as the MCS
 * routes them), so a prefix that is not itself clean could never match. */
static bool is_clean_prefix(const char *s)
{
    if (s[0] != '/' || strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../"))
        return false;
    size_t len = strlen(s);
    if ((len >= 2 && !strcmp(s + len - 2, "/.")) || (len >= 3 && !strcmp(s + len - 3, "/..")))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == '%' || *p == '?' || *p == '#')
            return false;
    return true;
}

/* A list node of 1..max items; else -1 with "expected ...", the empty
 * list's reason, or "at most MAX NOUN" at the first item too many. */
static int list_bounds(loader_t *ld, const ynode_t *node, size_t max, const char *expected, const char *empty,
                       const char *noun)
{
    if (node->kind != YNODE_SEQ)
        return schema_fail_expected(ld, node, expected);
    if (node->n == 0)
        return schema_fail(ld, node, ld->path, "%s", empty);
    if (node->n > max)
        return schema_fail(ld, node->items[max], ld->path, "at most %zu %s", max, noun);
    return 0;
}

int conf_read_prefixes(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_gate_t *gate = dst;
    if (list_bounds(ld, node, CONFIG_MAX_PREFIXES, "a list of path prefixes", "at least one prefix is required",
                    "prefixes") < 0)
        return -1;
    for (size_t i = 0; i < gate->n_prefixes; i++) {
        free(gate->prefixes[i]);
        gate->prefixes[i] = NULL;
    }
    gate->n_prefixes = 0;
    size_t before = ld->n_errors;
    for (size_t i = 0; i < node->n && !ld->stop; i++) {
        size_t saved = schema_path_push_index(ld, i);
        const char *s = schema_string_text(ld, node->items[i]);
        if (s && !is_clean_prefix(s))
            schema_fail(ld, node->items[i], ld->path,
                        "prefix \"%s\" must be a clean absolute path (no //, /./, /../, %%, ? or #): "
                        "requests are matched after decoding and cleaning", s);
        else if (s && schema_set_string(ld, node->items[i], &gate->prefixes[i], s) == 0)
            gate->n_prefixes = i + 1;   /* config_free frees [0, n); a bad item's slot is NULL */
        schema_path_pop(ld, saved);
    }
    return ld->n_errors > before ? -1 : 0;
}

/* --- TLS lists: OpenSSL is asked, so a typo is caught with its position. */

static SSL_CTX *tls_probe(loader_t *ld)
{
    if (!ld->tls_probe)
        ld->tls_probe = SSL_CTX_new(TLS_server_method());
    return ld->tls_probe;
}

static int probe_ciphers(SSL_CTX *ctx, const char *list) { return SSL_CTX_set_cipher_list(ctx, list); }
static int probe_ciphersuites(SSL_CTX *ctx, const char *list) { return SSL_CTX_set_ciphersuites(ctx, list); }
static int probe_groups(SSL_CTX *ctx, const char *list) { return (int)SSL_CTX_set1_groups_list(ctx, list); }

typedef struct tls_list_kind {
    const char *what;                       /* "TLS 1.2 cipher" */
    int (*probe)(SSL_CTX *, const char *);
    const char *separators;
    const char *operators;                  /* leading characters of non-name elements */
} tls_list_kind_t;

static const tls_list_kind_t cipher_list = {"TLS 1.2 cipher", probe_ciphers, ":, ", "!-+@"};
static const tls_list_kind_t ciphersuite_list = {"TLS 1.3 ciphersuite", probe_ciphersuites, ":", ""};
static const tls_list_kind_t group_list = {"key exchange group", probe_groups, ":", ""};

/* OpenSSL skips unknown names as long as one name in a list is known, so
 * each name is also tried alone; operators only mean something in a list. */
static int check_tls_list(loader_t *ld, const ynode_t *node, const char *list, const tls_list_kind_t *kind)
{
    SSL_CTX *ctx = tls_probe(ld);
    if (!ctx)
        return schema_fail_oom(ld, node);
    char *copy = strdup(list);
    if (!copy)
        return schema_fail_oom(ld, node);
    int rc = 0;
    char *save = NULL;
    for (char *name = strtok_r(copy, kind->separators, &save); name && rc == 0;
         name = strtok_r(NULL, kind->separators, &save)) {
        if (!strchr(kind->operators, name[0]) && !kind->probe(ctx, name))
            rc = schema_fail(ld, node, ld->path, "unknown %s \"%s\"", kind->what, name);
    }
    free(copy);
    if (rc == 0 && (!*list || !kind->probe(ctx, list)))
        rc = schema_fail(ld, node, ld->path, "\"%s\" selects no %s", list, kind->what);
    ERR_clear_error();
    return rc;
}

static int read_tls_list(loader_t *ld, const ynode_t *node, void *dst, const tls_list_kind_t *kind)
{
    const char *s = schema_string_text(ld, node);
    if (!s || check_tls_list(ld, node, s, kind) < 0)
        return -1;
    return schema_set_string(ld, node, dst, s);
}

int conf_read_ciphers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &cipher_list);
}

int conf_read_ciphersuites(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &ciphersuite_list);
}

int conf_read_groups(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &group_list);
}

int conf_read_trusted_proxies(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_listener_t *l = dst;
    if (list_bounds(ld, node, CONFIG_MAX_TRUSTED_PROXIES, "a list of CIDRs, such as [\"10.0.0.0/16\"]",
                    "at least one CIDR is required (the load balancers' addresses)", "CIDRs") < 0)
        return -1;
    size_t before = ld->n_errors;
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = schema_path_push_index(ld, i);
        const char *s = schema_string_text(ld, node->items[i]);
        const char *why;
        if (s && cidr_parse(s, &l->trusted_proxies[i], &why) < 0)
            schema_fail(ld, node->items[i], ld->path, "\"%s\": %s", s, why);
        schema_path_pop(ld, saved);
    }
    if (ld->n_errors > before)
        return -1;
    l->n_trusted_proxies = node->n;
    return 0;
}

int conf_read_token_files(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    config_admission_token_t *t = dst;
    if (list_bounds(ld, node, CONFIG_MAX_TOKEN_FILES, "a list of token files",
                    "at least one token file is required (remove admission.token to turn the policy off)",
                    "token files") < 0)
        return -1;
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = schema_path_push_index(ld, i);
        t->n_files = i + 1;     /* from here on config_free owns the path */
        if (schema_place(ld, node->items[i]) < 0 || schema_read_path(ld, node->items[i], f, &t->files[i]) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(t->files[j], t->files[i]))
                return schema_fail(ld, node->items[i], ld->path, "\"%s\" is already admission.token.files[%zu]",
                                   t->files[i], j);
        schema_path_pop(ld, saved);
    }
    return 0;
}

int conf_read_held_pools(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_held_t *h = dst;
    if (node->kind != YNODE_SEQ)
        return schema_fail_expected(ld, node, "a list of pool names");
    if (node->n > CONFIG_MAX_HELD_POOLS)
        return schema_fail(ld, node->items[CONFIG_MAX_HELD_POOLS], ld->path, "at most %d pools",
                           CONFIG_MAX_HELD_POOLS);
    h->n_pools = 0;
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = schema_path_push_index(ld, i);
        const char *s = schema_string_text(ld, node->items[i]);
        if (!s)
            return -1;
        if (!is_dns_subdomain(s) || strlen(s) >= CONFIG_HELD_POOL_LEN)
            return schema_fail(ld, node->items[i], ld->path,
                               "invalid pool name \"%s\": expected a MachineConfigPool's name (lowercase letters, "
                               "digits, '-' and '.'), at most %d bytes", s, CONFIG_HELD_POOL_LEN - 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(h->pools[j], s))
                return schema_fail(ld, node->items[i], ld->path, "\"%s\" is already held.pools[%zu]", s, j);
        memset(h->pools[i], 0, sizeof h->pools[i]);
        memcpy(h->pools[i], s, strlen(s));
        h->n_pools = i + 1;
        schema_path_pop(ld, saved);
    }
    return 0;
}
