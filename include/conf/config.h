/* config: the YAML configuration (conf/skewgate.yaml documents every key
 * with its default). Loading is strict: unknown keys, wrong types, bad
 * durations, sizes or addresses are errors naming file:line:column.
 * Relative file paths in the configuration are resolved against the
 * configuration file's directory; the struct holds the resolved paths.
 * Files are not opened here: the modules that use them do, at start-up
 * and in `skewgate check`. */
#ifndef SKEWGATE_CONFIG_H
#define SKEWGATE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config_types.h"

/* Loads and validates a file. NULL with "file:LINE:COL: problem" in err:
 * the first error, and when there were more " (and N more: skewgate check
 * -c FILE)". */
config_t *config_load(const char *path, char *err, size_t errlen);
/* Same, from text; name is used in errors and its directory (if it has a
 * '/') resolves relative paths. */
config_t *config_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);

/* Every error a load finds, for `skewgate check`. The keys are all read,
 * past errors in their values (an unknown key, a bad value, a wrong
 * type); the rules across keys (overlapping addresses, keys that need
 * others) are checked only when the keys had none. */
typedef struct config_report {
    /* Told each error in the order found: "FILE[:LINE:COL]: problem". */
    void (*each)(const char *msg, void *arg);
    void *arg;
    size_t n_errors;            /* out: how many */
    bool rules_skipped;         /* out: the keys had errors, so the rules across them were not checked */
} config_report_t;
/* config_load telling report every error; NULL when there was one. */
config_t *config_load_report(const char *path, config_report_t *report);
void config_free(config_t *cfg);
/* A whole file of at most 1 MiB (a configuration, a kubeconfig), malloc'ed
 * with *len; NULL with "PATH: cannot open|read: why" in err. Not
 * NUL-terminated. */
char *config_read_file(const char *path, size_t *len, char *err, size_t errlen);
/* "FILE:LINE:COL: KEY" where key was written, or "FILE: KEY (default)"
 * where it was not: the start of a message about the file key names. */
void config_key_where(const config_t *cfg, const char *key, char *buf, size_t len);
/* One more holder; returns cfg. */
config_t *config_ref(config_t *cfg);
/* One holder less: the last frees it (config_free). NULL is ignored. */
void config_unref(config_t *cfg);

/* The worker threads to start: workers as written, or for auto one per
 * CPU this process may run on now (sched_getaffinity). Asked once, at
 * start: a cpuset narrowed later (the kubelet's CPU manager) changes
 * nothing in a running gate, and reloads compare workers as written. */
uint32_t config_worker_threads(const config_t *cfg);

/* The redirect's port pairs: redirect.ports as written (validated at
 * load), or by default CONFIG_MCS_TLS_PORT -> the port of the first TLS
 * listener and CONFIG_MCS_PLAIN_PORT -> the port of the first plain one,
 * for those that exist. A default target must have a fixed port, listen
 * beyond loopback and not be the MCS port itself; this is checked here,
 * not at load, so that a configuration that never installs a redirect may
 * use port 0. 0 with out[0..*n) filled, or -1 with "FILE: problem" in err. */
int config_redirect_ports(const config_t *cfg, config_redirect_port_t out[CONFIG_MAX_REDIRECT_PORTS],
                          size_t *n, char *err, size_t errlen);

#endif
