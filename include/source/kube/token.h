/* kube_token: the bearer token file, re-read when it changes. Projected
 * service account tokens rotate (kubelet swaps the file about hourly), so
 * each request checks the file's identity first; the token itself is
 * never logged. */
#ifndef SKEWGATE_KUBE_TOKEN_H
#define SKEWGATE_KUBE_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define KUBE_TOKEN_MAX 16384

typedef struct kube_token {
    char *path;
    bool loaded;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim;
    char value[KUBE_TOKEN_MAX];     /* without surrounding whitespace */
    char error[256];                /* the problem last logged, "" if none */
} kube_token_t;

/* path is copied. -1 when out of memory. */
int kube_token_init(kube_token_t *t, const char *path);
void kube_token_free(kube_token_t *t);

/* Reads the file again if it is not the one last read. 1 when the token
 * changed, 0 when it is the same, -1 with err when the file cannot be used
 * (the previous token, if any, stays in value). */
int kube_token_refresh(kube_token_t *t, char *err, size_t errlen);

/* The token to send now: refreshed, a change or a new problem logged once.
 * A file that cannot be read keeps the last token; with none, NULL (the
 * request goes without one and the 401 says the rest). */
const char *kube_token_current(kube_token_t *t);

#endif
