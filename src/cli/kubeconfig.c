#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "cli/kubeconfig.h"
#include "conf/config.h"
#include "core/ydoc.h"

const char *kubeconfig_path(const char *kubeconfig_flag, char *buf, size_t len, char *err, size_t errlen)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    int n;
    if (kubeconfig_flag)
        n = snprintf(buf, len, "%s", kubeconfig_flag);
    else if (env && *env)
        /* kubectl merges every file of the list; the first is the one
         * that `oc login` writes, and the only one read here. */
        n = snprintf(buf, len, "%.*s", (int)strcspn(env, ":"), env);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.kube/config", home);
    else {
        snprintf(err, errlen, "no kubeconfig: give --kubeconfig FILE, set KUBECONFIG, or -c the gate's configuration");
        return NULL;
    }
    if (n < 0 || (size_t)n >= len || !*buf) {
        snprintf(err, errlen, "the kubeconfig path is empty or too long");
        return NULL;
    }
    return buf;
}

void kube_credentials_free(kube_credentials_t *c)
{
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    free(c->token_file);
    free(c->name);
    *c = (kube_credentials_t){0};
}

typedef struct kc_reader {
    const char *path;
    char *dir;                  /* for relative paths; NULL: the current one */
    char *err;
    size_t errlen;
} kc_reader_t;

__attribute__((format(printf, 3, 4)))
static int kc_fail(kc_reader_t *r, const ynode_t *at, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(r->err, r->errlen, "%s:%d:%d: %s", r->path, at->line, at->col, what);
    else
        snprintf(r->err, r->errlen, "%s: %s", r->path, what);
    return -1;
}

/* map[key] as a non-empty string; NULL when absent (*bad when it is there
 * but not a string). */
static const char *kc_string(kc_reader_t *r, const ynode_t *map, const char *key, bool *bad)
{
    const ynode_t *v = ynode_get(map, key);
    if (!v)
        return NULL;
    if (v->kind != YNODE_SCALAR || !v->value[0] || strlen(v->value) != v->len) {
        kc_fail(r, v, "%s: expected a non-empty string", key);
        *bad = true;
        return NULL;
    }
    return v->value;
}

/* The entry of list key (clusters, users, contexts) called name: its
 * mapping under field (cluster, user, context). */
static const ynode_t *kc_entry(kc_reader_t *r, const ynode_t *root, const char *key, const char *field,
                               const char *name, const ynode_t *from)
{
    const ynode_t *list = ynode_get(root, key);
    for (size_t i = 0; list && list->kind == YNODE_SEQ && i < list->n; i++) {
        const ynode_t *e = list->items[i], *n = ynode_get(e, "name");
        if (!n || n->kind != YNODE_SCALAR || strcmp(n->value, name))
            continue;
        const ynode_t *body = ynode_get(e, field);
        if (!body || body->kind != YNODE_MAP) {
            kc_fail(r, e, "%s \"%s\" has no %s mapping", key, name, field);
            return NULL;
        }
        return body;
    }
    kc_fail(r, from, "no entry named \"%s\" in %s", name, key);
    return NULL;
}

/* A path from the kubeconfig, resolved against its directory. */
static char *kc_path(const kc_reader_t *r, const char *p)
{
    char *out = NULL;
    if (p[0] == '/' || !r->dir)
        return strdup(p);
    return asprintf(&out, "%s/%s", r->dir, p) < 0 ? NULL : out;
}

static int kc_ca_data(kc_reader_t *r, const ynode_t *at, const char *b64, kube_credentials_t *out)
{
    size_t len = strlen(b64);
    unsigned char *pem = malloc(len / 4 * 3 + 4);
    char *clean = malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; clean && i < len; i++)
        if (b64[i] != '\n' && b64[i] != '\r' && b64[i] != ' ')
            clean[n++] = b64[i];
    int got = pem && clean && n % 4 == 0 ? EVP_DecodeBlock(pem, (unsigned char *)clean, (int)n) : -1;
    if (got < 0) {
        free(pem);
        free(clean);
        return kc_fail(r, at, "certificate-authority-data: not base64");
    }
    /* EVP_DecodeBlock counts the padding's bytes too. */
    for (size_t i = n; i > 0 && clean[i - 1] == '='; i--)
        got--;
    free(clean);
    out->ca_data = (char *)pem;
    out->ca_data_len = (size_t)got;
    return 0;
}

static int kc_cluster(kc_reader_t *r, const ynode_t *cluster, const char *name, kube_credentials_t *out)
{
    bool bad = false;
    const char *server = kc_string(r, cluster, "server", &bad);
    const char *ca = kc_string(r, cluster, "certificate-authority", &bad);
    const char *ca_data = kc_string(r, cluster, "certificate-authority-data", &bad);
    if (bad)
        return -1;
    if (!server)
        return kc_fail(r, cluster, "cluster \"%s\" has no server", name);
    const ynode_t *insecure = ynode_get(cluster, "insecure-skip-tls-verify");
    if (insecure && (insecure->kind != YNODE_SCALAR || (strcmp(insecure->value, "true") && strcmp(insecure->value, "false"))))
        return kc_fail(r, insecure, "insecure-skip-tls-verify: expected true or false");
    out->insecure = insecure && !strcmp(insecure->value, "true");
    if (!(out->server = strdup(server)) || (ca && !(out->ca_file = kc_path(r, ca))))
        return kc_fail(r, NULL, "out of memory");
    return ca_data ? kc_ca_data(r, ynode_get(cluster, "certificate-authority-data"), ca_data, out) : 0;
}

static int kc_user(kc_reader_t *r, const ynode_t *user, const char *name, kube_credentials_t *out)
{
    static const char *const unsupported[] = {"client-certificate", "client-certificate-data", "exec",
                                              "auth-provider", "username"};
    bool bad = false;
    const char *token = kc_string(r, user, "token", &bad);
    const char *file = kc_string(r, user, "tokenFile", &bad);
    if (bad)
        return -1;
    if (!token && !file) {
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
            if (ynode_get(user, unsupported[i]))
                return kc_fail(r, ynode_get(user, unsupported[i]),
                               "user \"%s\" authenticates with %s, which skewgate does not support: use a "
                               "bearer token (e.g. `oc login` writes one; `oc whoami -t` prints it)",
                               name, unsupported[i]);
        return kc_fail(r, user, "user \"%s\" has no token or tokenFile", name);
    }
    if ((token && !(out->token = strdup(token))) || (!token && !(out->token_file = kc_path(r, file))))
        return kc_fail(r, NULL, "out of memory");
    return 0;
}

/* The current context's cluster and user, into out. */
static int kc_select(kc_reader_t *r, const ynode_t *root, kube_credentials_t *out)
{
    if (root->kind != YNODE_MAP)
        return kc_fail(r, root, "not a kubeconfig: expected a mapping");
    bool bad = false;
    const char *ctx_name = kc_string(r, root, "current-context", &bad);
    if (bad)
        return -1;
    if (!ctx_name)
        return kc_fail(r, NULL, "current-context is not set (kubectl config use-context NAME)");
    const ynode_t *ctx = kc_entry(r, root, "contexts", "context", ctx_name, ynode_get(root, "current-context"));
    if (!ctx)
        return -1;
    const char *cluster_name = kc_string(r, ctx, "cluster", &bad), *user_name = kc_string(r, ctx, "user", &bad);
    if (bad)
        return -1;
    if (!cluster_name || !user_name)
        return kc_fail(r, ctx, "context \"%s\" names no %s", ctx_name, cluster_name ? "user" : "cluster");
    const ynode_t *cluster = kc_entry(r, root, "clusters", "cluster", cluster_name, ynode_get(ctx, "cluster"));
    const ynode_t *user = cluster ? kc_entry(r, root, "users", "user", user_name, ynode_get(ctx, "user")) : NULL;
    if (!user || kc_cluster(r, cluster, cluster_name, out) < 0 || kc_user(r, user, user_name, out) < 0)
        return -1;
    return (out->name = strdup("cluster")) ? 0 : kc_fail(r, NULL, "out of memory");
}

int kube_credentials_from_kubeconfig(const char *path, kube_credentials_t *out, char *err, size_t errlen)
{
    *out = (kube_credentials_t){0};
    kc_reader_t r = {.path = path, .err = err, .errlen = errlen};
    size_t len;
    char *text = config_read_file(path, &len, err, errlen);
    if (!text)
        return -1;
    char yerr[256];
    ydoc_t *doc = ydoc_parse(text, len, yerr, sizeof yerr);
    explicit_bzero(text, len);   /* it may hold a token */
    free(text);
    if (!doc) {
        snprintf(err, errlen, "%s:%s", path, yerr);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    if (slash)
        r.dir = strndup(path, (size_t)(slash - path) ? (size_t)(slash - path) : 1);
    int rc = kc_select(&r, ydoc_root(doc), out);
    free(r.dir);
    ydoc_free(doc);
    return rc;
}

int kube_credentials_from_config(const char *config_path, kube_credentials_t *out, char *err, size_t errlen)
{
    *out = (kube_credentials_t){0};
    config_t *cfg = config_load(config_path, err, errlen);
    if (!cfg)
        return -1;
    const config_source_kube_t *k = &cfg->enforcement.kubernetes;
    int rc = 0;
    if (!(out->server = strdup(k->server)) || !(out->ca_file = strdup(k->ca_file)) ||
        !(out->token_file = strdup(k->token_file)) || !(out->name = strdup(k->name))) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    out->insecure = k->insecure_skip_tls_verify;
    config_free(cfg);
    return rc;
}
