/* skewgate check: validates a configuration the way `run` would load it,
 * without binding or connecting, in the habit of `nginx -t`. */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "conf/config.h"
#include "proxy/token_set.h"
#include "source/kube/token.h"
#include "source/machines.h"
#include "tls/tls.h"

typedef struct check_run {
    const char *path;
    bool files;                 /* --files: also load what the config names */
    config_t *cfg;
    char err[CONFIG_ERR_LEN];   /* "FILE[:LINE:COL]: problem" of the failed stage */
} check_run_t;

typedef int (*check_stage_fn)(check_run_t *run);

static int stage_load_config(check_run_t *run)
{
    run->cfg = config_load(run->path, run->err, sizeof run->err);
    return run->cfg ? 0 : -1;
}

/* --files: the certificates, keys and CA files load as `run` would load
 * them, so a broken certificate is found before a restart or reload. */
static int stage_tls_files(check_run_t *run)
{
    if (!run->files)
        return 0;
    for (size_t i = 0; i < run->cfg->n_listeners; i++)
        if (tls_check_listener(&run->cfg->listeners[i].tls, run->err, sizeof run->err) < 0)
            return -1;
    return tls_check_upstream(&run->cfg->upstream, run->err, sizeof run->err);
}

/* A token file as kube_token reads it; what names its key in the error. */
static int check_token_file(check_run_t *run, const char *path, const char *what)
{
    kube_token_t token;
    if (kube_token_init(&token, path) < 0) {
        snprintf(run->err, sizeof run->err, "out of memory");
        return -1;
    }
    char err[256];
    int rc = kube_token_refresh(&token, err, sizeof err);
    kube_token_free(&token);
    if (rc < 0) {
        snprintf(run->err, sizeof run->err, "%s: %s", what, err);
        return -1;
    }
    return 0;
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
        SSL_CTX *ctx = tls_api_ctx_new(k->ca_file, k->insecure_skip_tls_verify, run->err,
                                       sizeof run->err);
        if (!ctx)
            return -1;
        SSL_CTX_free(ctx);
    }
    return check_token_file(run, k->token_file, "enforcement.kubernetes");
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

/* --files with admission.token: every token file holds a usable token,
 * as `run` requires at start (the error names the file, never a token). */
static int stage_token_files(check_run_t *run)
{
    const config_admission_token_t *t = &run->cfg->admission.token;
    if (!run->files || t->n_files == 0)
        return 0;
    token_set_t *set = token_set_load((const char *const *)t->files, t->n_files, run->err, sizeof run->err);
    token_set_unref(set);
    return set ? 0 : -1;
}

/* Run in order while they pass. Stages after loading see run->cfg and vouch
 * for what the file's text cannot show: modules that open files or build
 * contexts at start-up (certificates that load, say) add theirs here. */
static const check_stage_fn check_stages[] = {
    stage_load_config,          /* first: check_config_files runs the others */
    stage_tls_files,
    stage_kube_files,
    stage_admin_files,
    stage_token_files,
};

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
            "prints 'FILE: ok' (exit 0) or the first problem as FILE:LINE:COL (exit 2).\n"
            "With admission.machines on, it then prints the RBAC rules the service\n"
            "account needs (the gate's ClusterRole and the admission-machines component).\n"
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
        fprintf(stderr, "%s\n", run.err);
        return 2;
    }
    printf("%s: ok\n", path);
    /* The admission policies need more than the gate's base ClusterRole
     * (deploy/kubernetes/components/admission-machines): say what. */
    if (run.cfg->admission.machines.enabled) {
        char rules[2048];
        machines_watch_rbac(run.cfg, rules, sizeof rules);
        printf("rbac: the service account needs get, list and watch on:\n%s", rules);
    }
    config_free(run.cfg);
    return 0;
}
