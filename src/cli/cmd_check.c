/* skewgate check: validates a configuration the way `run` would load it,
 * without binding or connecting, in the habit of `nginx -t`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "source/pace_line.h"
#include "cli/cmd.h"
#include "conf/config.h"
#include "policy/token_set.h"
#include "source/kube/token.h"
#include "source/machines.h"
#include "tls/tls.h"

/* The errors of a file printed one a line; past these, how many more. */
#define CHECK_MAX_ERRORS 50

typedef struct check_run {
    const char *path;
    bool files;                 /* --files: also load what the config names */
    config_t *cfg;
    char err[CONFIG_ERR_LEN];   /* "FILE[:LINE:COL]: problem" of the failed stage */
    bool printed;               /* the failed stage printed its errors itself */
    size_t shown;
} check_run_t;

typedef int (*check_stage_fn)(check_run_t *run);

static void check_print_error(const char *msg, void *arg)
{
    check_run_t *run = arg;
    if (run->shown++ < CHECK_MAX_ERRORS)
        fprintf(stderr, "%s\n", msg);
}

/* Every error the file's text shows, one a line, as found (cmd_check's
 * first stage only: the others stop at their first). */
static int stage_load_config(check_run_t *run)
{
    config_report_t report = {.each = check_print_error, .arg = run};
    run->cfg = config_load_report(run->path, &report);
    if (run->cfg)
        return 0;
    run->printed = true;
    if (report.n_errors > CHECK_MAX_ERRORS)
        fprintf(stderr, "%s: and %zu more errors\n", run->path, report.n_errors - CHECK_MAX_ERRORS);
    if (report.rules_skipped)
        fprintf(stderr, "note: %s: the checks across keys (addresses that overlap, keys that need or exclude "
                "others) run once %s fixed\n", run->path, report.n_errors == 1 ? "this error is" : "these are");
    return -1;
}

/* A file a key names cannot be opened: "WHERE: PATH: cannot open: why",
 * WHERE the key's file:line:column (config_key_where). */
static int check_opens(check_run_t *run, const char *key, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int e = errno;
    char where[CONFIG_ERR_LEN / 2];
    config_key_where(run->cfg, key, where, sizeof where);
    snprintf(run->err, sizeof run->err, "%s: %s: cannot open: %s", where, path, strerror(e));
    return -1;
}

/* A module refused a file the key names (run->err says why): where first. */
static int check_failed_at(check_run_t *run, const char *key)
{
    char where[CONFIG_ERR_LEN / 2], why[CONFIG_ERR_LEN];
    snprintf(why, sizeof why, "%s", run->err);
    config_key_where(run->cfg, key, where, sizeof where);
    if (snprintf(run->err, sizeof run->err, "%s: %s", where, why) >= (int)sizeof run->err)
        run->err[sizeof run->err - 2] = '~';    /* cut short; the where and the start of why are there */
    return -1;
}

/* --files: the certificates, keys and CA files load as `run` would load
 * them, so a broken certificate is found before a restart or reload. */
static int stage_tls_files(check_run_t *run)
{
    if (!run->files)
        return 0;
    for (size_t i = 0; i < run->cfg->n_listeners; i++) {
        const config_tls_server_t *tls = &run->cfg->listeners[i].tls;
        if (!tls->enabled)
            continue;
        char cert_key[64], key_key[64];
        snprintf(cert_key, sizeof cert_key, "listeners[%zu].tls.certificate", i);
        snprintf(key_key, sizeof key_key, "listeners[%zu].tls.key", i);
        if (check_opens(run, cert_key, tls->certificate) < 0 || check_opens(run, key_key, tls->key) < 0)
            return -1;
        /* tls says "tls: key ..." for what is wrong with the key, and the
         * certificate otherwise (a mismatch names both). */
        if (tls_check_listener(tls, run->err, sizeof run->err) < 0)
            return check_failed_at(run, !strncmp(run->err, "tls: key ", 9) ? key_key : cert_key);
    }
    const config_upstream_t *up = &run->cfg->upstream;
    if (up->tls && up->ca_file && check_opens(run, "upstream.ca_file", up->ca_file) < 0)
        return -1;
    if (tls_check_upstream(up, run->err, sizeof run->err) < 0)
        return check_failed_at(run, "upstream");
    return 0;
}

/* A token file as kube_token reads it; key names it in the error. */
static int check_token_file(check_run_t *run, const char *path, const char *key)
{
    kube_token_t token;
    if (kube_token_init(&token, path) < 0) {
        snprintf(run->err, sizeof run->err, "out of memory");
        return -1;
    }
    int rc = kube_token_refresh(&token, run->err, sizeof run->err);
    kube_token_free(&token);
    return rc < 0 ? check_failed_at(run, key) : 0;
}

/* --files with the Kubernetes source or admission.machines (which uses
 * its connection): its CA file (unless the server is plain http://) and
 * its token file load as `run` would load them. */
static int stage_kube_files(check_run_t *run)
{
    const config_enforcement_t *e = &run->cfg->enforcement;
    if (!run->files || (e->source != SOURCE_KIND_KUBERNETES && !run->cfg->admission.machines.enabled))
        return 0;
    const config_source_kube_t *k = &e->kubernetes;
    if (strncmp(k->server, "http://", 7) != 0) {
        if (k->ca_file && *k->ca_file && check_opens(run, "enforcement.kubernetes.ca_file", k->ca_file) < 0)
            return -1;
        SSL_CTX *ctx = tls_api_ctx_new(k->ca_file, k->insecure_skip_tls_verify, run->err,
                                       sizeof run->err);
        if (!ctx)
            return check_failed_at(run, "enforcement.kubernetes.ca_file");
        SSL_CTX_free(ctx);
    }
    return check_token_file(run, k->token_file, "enforcement.kubernetes.token_file");
}

/* --files with admin.token_file: the token reads, as the gate reads it at
 * start-up (where an unreadable one stops it). */
static int stage_admin_files(check_run_t *run)
{
    const config_admin_t *a = &run->cfg->admin;
    if (!run->files || !a->enabled || !a->token_file)
        return 0;
    return check_token_file(run, a->token_file, "admin.token_file");
}

/* --files with admin.socket: its directory exists, as `run` needs to
 * create the socket there (a missing one fails its bind). */
static int stage_admin_socket(check_run_t *run)
{
    const config_admin_t *a = &run->cfg->admin;
    if (!run->files || !a->enabled || !a->socket)
        return 0;
    char dir[CONFIG_SOCKET_PATH_MAX + 1];
    snprintf(dir, sizeof dir, "%s", a->socket);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    const char *problem = stat(dir, &st) != 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
    if (!problem)
        return 0;
    char where[CONFIG_ERR_LEN / 2];
    config_key_where(run->cfg, "admin.socket", where, sizeof where);
    snprintf(run->err, sizeof run->err, "%s: the socket's directory %s: %s (the gate creates the socket, not "
             "its directory)", where, dir, problem);
    return -1;
}

/* --files with admission.token: every token file holds a usable token,
 * as `run` requires at start (the error names the file, never a token). */
static int stage_token_files(check_run_t *run)
{
    const config_admission_token_t *t = &run->cfg->admission.token;
    if (!run->files || t->n_files == 0)
        return 0;
    char key[64];
    token_set_t *set = token_set_load((const char *const *)t->files, t->n_files, run->err, sizeof run->err);
    token_set_unref(set);
    if (set)
        return 0;
    /* Its message names the file: point at the key that named it. */
    for (size_t i = 0; i < t->n_files; i++)
        if (strstr(run->err, t->files[i])) {
            snprintf(key, sizeof key, "admission.token.files[%zu]", i);
            return check_failed_at(run, key);
        }
    return check_failed_at(run, "admission.token.files");
}

/* Run in order while they pass. Stages after loading see run->cfg and vouch
 * for what the file's text cannot show: modules that open files or build
 * contexts at start-up (certificates that load, say) add theirs here. */
static const check_stage_fn check_stages[] = {
    stage_load_config,          /* first: check_config_files runs the others */
    stage_tls_files,
    stage_kube_files,
    stage_admin_files,
    stage_admin_socket,
    stage_token_files,
};

/* A token file that its group or others may read: one line for warn. */
static void warn_token_mode(const config_t *cfg, const char *key, const char *path, check_warn_fn warn, void *arg)
{
    struct stat st;
    if (!path || stat(path, &st) != 0 || !(st.st_mode & (S_IRGRP | S_IROTH)))
        return;
    char where[CONFIG_ERR_LEN / 2], msg[CONFIG_ERR_LEN];
    config_key_where(cfg, key, where, sizeof where);
    if (snprintf(msg, sizeof msg, "%s: %s is mode %04o: %s may read the token; chmod 0600 it, owned by the "
                 "gate's user", where, path, (unsigned)(st.st_mode & 07777),
                 st.st_mode & S_IROTH ? "every local user" : "its group") >= (int)sizeof msg)
        msg[sizeof msg - 2] = '~';
    warn(msg, arg);
}

static bool key_written(const config_t *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->n_origins; i++)
        if (!strcmp(cfg->origins[i].key, key))
            return true;
    return false;
}

void check_config_warnings(const config_t *cfg, check_warn_fn warn, void *arg)
{
    if (cfg->admin.enabled)
        warn_token_mode(cfg, "admin.token_file", cfg->admin.token_file, warn, arg);
    char key[64];
    for (size_t i = 0; i < cfg->admission.token.n_files; i++) {
        snprintf(key, sizeof key, "admission.token.files[%zu]", i);
        warn_token_mode(cfg, key, cfg->admission.token.files[i], warn, arg);
    }
    /* The default, the service account's token, is the kubelet's to mount
     * (0644 in every pod: the container is the boundary there). */
    const config_enforcement_t *e = &cfg->enforcement;
    if ((e->source == SOURCE_KIND_KUBERNETES || cfg->admission.machines.enabled) &&
        key_written(cfg, "enforcement.kubernetes.token_file"))
        warn_token_mode(cfg, "enforcement.kubernetes.token_file", e->kubernetes.token_file, warn, arg);
}

void check_pace_protection(const config_t *cfg, check_warn_fn warn, void *arg)
{
    if (!cfg->pace.enabled || cfg->admission.token.n_files > 0 || cfg->admission.machines.enabled)
        return;
    char msg[CONFIG_ERR_LEN];
    if (snprintf(msg, sizeof msg, "%s: pace.enabled without an admission policy: any address that can reach the "
                 "gate can take a joining slot or a place in the line;\n  protect it with admission.machines.enabled "
                 "(pending Machines' addresses only) or admission.token.files (holders of the provisioning token "
                 "only)", cfg->path) >= (int)sizeof msg)
        msg[sizeof msg - 2] = '~';
    warn(msg, arg);
}

/* What `run` cannot start without (the Kubernetes source's files it
 * retries instead: a token mounted late is not fatal). */
static const check_stage_fn start_stages[] = {
    stage_tls_files,
    stage_admin_files,
    stage_admin_socket,
    stage_token_files,
};

int check_config_start(config_t *cfg, char *err, size_t errlen)
{
    check_run_t run = {.path = cfg->path, .files = true, .cfg = cfg};
    for (size_t i = 0; i < sizeof start_stages / sizeof start_stages[0]; i++)
        if (start_stages[i](&run) < 0) {
            snprintf(err, errlen, "%s", run.err);
            return -1;
        }
    return 0;
}

int check_config_files(config_t *cfg, char *err, size_t errlen)
{
    check_run_t run = {.path = cfg->path, .files = true, .cfg = cfg};
    for (size_t i = 1; i < sizeof check_stages / sizeof check_stages[0]; i++)
        if (check_stages[i](&run) < 0) {
            snprintf(err, errlen, "%s", run.err);
            return -1;
        }
    return 0;
}

static void check_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate check [--files] -c FILE\n"
            "\n"
            "Loads and validates a configuration file as 'skewgate run' would, and\n"
            "prints 'FILE: ok' (exit 0) or every problem it finds in the file, one\n"
            "FILE:LINE:COL: line each (at most 50), and exits 2. The checks across keys\n"
            "run once the keys read without errors; --files stops at its first problem.\n"
            "When the configuration talks to the API server (enforcement.source\n"
            "kubernetes, or admission.machines on), it then prints the RBAC rules the\n"
            "service account needs (the gate's ClusterRole; with admission.machines or\n"
            "pacing, their components' rules too).\n"
            "\n"
            "options:\n"
            "  -c, --config FILE   the configuration file\n"
            "  -f, --files         also load the TLS certificates, keys, CA and token files\n"
            "                      it names, as 'run' does at start-up and on SIGHUP\n"
            "  -h, --help          this help\n");
}

/* Fills *path from -c FILE / --config FILE / --config=FILE. 0, 1 for help, or -1. */
static int check_args(int argc, char **argv, const char **path, bool *files)
{
    *path = NULL;
    *files = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
            return 1;
        if (!strcmp(arg, "-f") || !strcmp(arg, "--files")) {
            *files = true;
            continue;
        }
        if ((!strcmp(arg, "-c") || !strcmp(arg, "--config")) && i + 1 < argc)
            *path = argv[++i];
        else if (!strncmp(arg, "--config=", 9) && arg[9])
            *path = arg + 9;
        else {
            fprintf(stderr, "skewgate check: unexpected argument '%s'\n", arg);
            return -1;
        }
    }
    if (!*path) {
        fprintf(stderr, "skewgate check: -c FILE is required\n");
        return -1;
    }
    return 0;
}

static void check_print_warning(const char *msg, void *arg)
{
    (void)arg;
    fprintf(stderr, "warning: %s\n", msg);
}

int cmd_check(int argc, char **argv)
{
    const char *path;
    bool files;
    int args = check_args(argc, argv, &path, &files);
    if (args != 0) {
        check_usage(args > 0 ? stdout : stderr);
        return args > 0 ? 0 : 2;
    }
    check_run_t run = {.path = path, .files = files};
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof check_stages / sizeof check_stages[0]; i++)
        ok = check_stages[i](&run) == 0;
    if (!ok) {
        config_free(run.cfg);
        if (!run.printed)
            fprintf(stderr, "%s\n", run.err);
        return 2;
    }
    if (files)
        check_config_warnings(run.cfg, check_print_warning, NULL);
    check_pace_protection(run.cfg, check_print_warning, NULL);
    printf("%s: ok\n", path);
    /* Every configuration that talks to the API server (the Kubernetes
     * source, admission.machines, pacing's watch with the source,
     * upstream.mcs_release auto's ClusterOperator watch) needs rules of
     * its service account: the base ClusterRole's, and for the policies
     * and pacing more (deploy/kubernetes/components/admission-machines,
     * .../pacing): say what. */
    if (run.cfg->admission.machines.enabled || run.cfg->enforcement.source == SOURCE_KIND_KUBERNETES) {
        char rules[2048];
        machines_watch_rbac(run.cfg, rules, sizeof rules);
        printf("rbac: the service account needs get, list and watch on:\n%s", rules);
    }
    /* The shared line writes: its Leases, in its namespace only. */
    if (pace_line_wanted(run.cfg))
        printf("rbac: and for the shared line (pace.line), get, list, watch, create, update and delete on:\n"
               "  Role in %s: apiGroups [coordination.k8s.io] resources [leases] verbs [get list watch create "
               "update delete] (pace.line)\n",
               run.cfg->pace.namespace);
    config_free(run.cfg);
    return 0;
}
