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

/* The configuration a host service reads (deploy/systemd), for the
 * subcommands that default to it. */
#define CLI_DEFAULT_CONFIG "/etc/skewgate/skewgate.yaml"

#endif
