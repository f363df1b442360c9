/* cmd: the subcommands of the skewgate binary. Each returns the process
 * exit status: 0 success, 2 bad usage or input; see each for others. */
#ifndef SKEWGATE_CMD_H
#define SKEWGATE_CMD_H

int cmd_verdict(int argc, char **argv);   /* 0 admit, 3 reject, 2 bad input */
int cmd_check(int argc, char **argv);     /* 0 valid, 2 invalid */
int cmd_run(int argc, char **argv);       /* 0 stopped cleanly, 1 failed, 2 bad config */
int cmd_status(int argc, char **argv);    /* 0 admit, 3 reject, 1 gate unreachable */
int cmd_override(int argc, char **argv);  /* 0 done, 1 gate unreachable, 2 bad usage */
/* install|remove|status: 0 done (status: installed as configured), 1 absent,
 * differs or failed, 2 bad usage or config */
int cmd_redirect(int argc, char **argv);

struct config;
/* What `skewgate check --files` checks after loading: the files cfg names
 * (certificates, keys, CA and token files) load. A reload runs it too.
 * 0, or -1 with "FILE: problem" in err. */
int check_config_files(struct config *cfg, char *err, size_t errlen);
/* The part of it `run` cannot start without (certificates, keys, the
 * upstream CA, admin.token_file, admin.socket's directory, the admission
 * token files; not the Kubernetes source's, which it retries), so that a
 * start-up error names the key and its file:line:column too. */
int check_config_start(struct config *cfg, char *err, size_t errlen);
/* Token files (admin.token_file, admission.token.files, a configured
 * enforcement.kubernetes.token_file) that group or others may read: one
 * call of warn each, "FILE:LINE:COL: KEY: PATH is mode 0644: ...". `check
 * --files` prints them, `run` logs them at start and on each reload. */
typedef void (*check_warn_fn)(const char *msg, void *arg);
void check_config_warnings(const struct config *cfg, check_warn_fn warn, void *arg);
/* pace.enabled without an admission policy (neither admission.token.files
 * nor admission.machines.enabled): one call of warn, "FILE: pace.enabled
 * without an admission policy: any address ... can take a joining slot or
 * a place in the line;\n  protect it with ...", two lines naming both
 * keys. `check` prints it (without --files too), `run` logs it at start
 * and on each reload. */
void check_pace_protection(const struct config *cfg, check_warn_fn warn, void *arg);

/* The configuration a host service reads (deploy/systemd), for the
 * subcommands that default to it. */
#define CLI_DEFAULT_CONFIG "/etc/skewgate/skewgate.yaml"

#endif
