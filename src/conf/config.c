/* config: the entry points: parse a document (defaults, then the tables
 * of tables.c overlaid from the file, then the rules of validate.c), read
 * and load a file, and the configuration's lifetime (references, free).
 * Every key is optional except listeners (and the few a chosen feature
 * needs); defaults are set first (defaults.c) and the file overlays them. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "conf/config.h"
#include "schema.h"
#include "loading.h"
#include "core/refcount.h"
#include "core/ydoc.h"

/* A configuration is a page of YAML; anything far larger is a wrong path. */
#define CONFIG_MAX_FILE_BYTES (1u << 20)

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

/* One error that is not the walk's (the file, its YAML): as schema_fail
 * tells them. */
static void loader_error(loader_t *ld, const char *msg)
{
    if (ld->n_errors++ == 0 && ld->err && ld->errlen)
        snprintf(ld->err, ld->errlen, "%s", msg);
    if (ld->each)
        ld->each(msg, ld->each_arg);
}

static int load_document(loader_t *ld, const char *text, size_t len, bool *rules_skipped)
{
    char yerr[CONFIG_ERR_LEN], msg[CONFIG_ERR_LEN + 256];
    ydoc_t *doc = ydoc_parse(text, len, yerr, sizeof yerr);
    if (!doc) {
        snprintf(msg, sizeof msg, "%s:%s", ld->name, yerr);
        loader_error(ld, msg);
        return -1;
    }
    ld->root = ydoc_root(doc);
    int rc = config_set_defaults(ld, ld->cfg);
    if (rc == 0 && ld->root->kind != YNODE_MAP)
        rc = schema_fail_expected(ld, ld->root, "a mapping of settings");
    if (rc == 0) {
        rc = schema_read_map(ld, ld->root, &config_root_schema, ld->cfg);
        *rules_skipped = rc < 0;
    }
    if (rc == 0)
        rc = config_validate(ld);
    if (rc == 0)
        rc = config_derive(ld);
    ydoc_free(doc);
    return rc;
}

/* The first error, and how many more there are and where to see them. */
static void first_and_more(char *err, size_t errlen, size_t n_errors, const char *name)
{
    if (!err || !errlen || n_errors < 2)
        return;
    char more[CONFIG_ERR_LEN];
    int n = snprintf(more, sizeof more, " (and %zu more: skewgate check -c %s)", n_errors - 1, name);
    if (n < 0 || (size_t)n >= errlen)
        return;
    size_t used = strlen(err);
    if (used + (size_t)n >= errlen) {
        used = errlen - 1 - (size_t)n;  /* cut the first short; how many more is what must show */
        if (used)
            err[used - 1] = '~';
    }
    snprintf(err + used, errlen - used, "%s", more);
}

static config_t *parse_reporting(const char *text, size_t len, const char *name, char *err, size_t errlen,
                                 config_report_t *report)
{
    loader_t ld = {.name = name, .err = err, .errlen = errlen};
    if (report) {
        ld.each = report->each;
        ld.each_arg = report->arg;
    }
    config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->path = strdup(name)) || config_dir(name, &ld.dir) < 0) {
        char msg[CONFIG_ERR_LEN];
        snprintf(msg, sizeof msg, "%s: out of memory", name);
        loader_error(&ld, msg);
        if (report)
            report->n_errors = ld.n_errors;
        config_free(cfg);
        return NULL;
    }
    ld.cfg = cfg;
    atomic_init(&cfg->refs, 1);
    bool rules_skipped = false;
    int rc = load_document(&ld, text, len, &rules_skipped);
    schema_loader_free(&ld);
    if (report) {
        report->n_errors = ld.n_errors;
        report->rules_skipped = rules_skipped;
    }
    if (rc < 0) {
        first_and_more(err, errlen, ld.n_errors, name);
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

config_t *config_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    return parse_reporting(text, len, name, err, errlen, NULL);
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

static config_t *load_reporting(const char *path, char *err, size_t errlen, config_report_t *report)
{
    char scratch[CONFIG_ERR_LEN];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    size_t len;
    char *text = read_file(path, &len, err, errlen);
    if (!text) {
        if (report) {
            report->n_errors = 1;
            if (report->each)
                report->each(err, report->arg);
        }
        return NULL;
    }
    config_t *cfg = parse_reporting(text, len, path, err, errlen, report);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (cfg && EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) == 1)
        for (unsigned i = 0; i < mdlen && 2 * i + 2 < sizeof cfg->sha256; i++)
            snprintf(cfg->sha256 + 2 * i, 3, "%02x", md[i]);
    free(text);
    return cfg;
}

config_t *config_load(const char *path, char *err, size_t errlen)
{
    return load_reporting(path, err, errlen, NULL);
}

config_t *config_load_report(const char *path, config_report_t *report)
{
    char err[CONFIG_ERR_LEN];
    return load_reporting(path, err, sizeof err, report);
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
    free(cfg->pace.namespace);
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
