/* credential: who may change the gate through the admin API (private to
 * src/admin/). Over the unix socket the socket's mode (0600) is the
 * credential and serve never asks here; over TCP a request must carry
 * "Authorization: Bearer TOKEN" with the token of admin.token_file. The
 * file is checked for a change on every use (a rotation or a removal
 * takes effect at the next request), the token is compared in constant
 * time (SHA-256 digests, CRYPTO_memcmp) and never logged. */
#ifndef SKEWGATE_ADMIN_CREDENTIAL_H
#define SKEWGATE_ADMIN_CREDENTIAL_H

#include <stddef.h>

#include "source/kube/token.h"

typedef enum {
    CREDENTIAL_OK,
    CREDENTIAL_MISSING,         /* no Authorization: Bearer: 401 */
    CREDENTIAL_WRONG,           /* a token, not the file's: 403 */
    CREDENTIAL_UNCONFIGURED,    /* no admin.token_file: nothing works over TCP, 403 */
    CREDENTIAL_UNREADABLE,      /* the file cannot be read now: 503 */
} credential_result_t;

typedef struct credential {
    kube_token_t token;
    char error[256];            /* the file problem last logged, "" if none */
} credential_t;

/* token_file NULL: CREDENTIAL_UNCONFIGURED for every request. Reads the
 * file once, so that a gate with an unreadable token file does not start.
 * 0, or -1 with err (no token in it). */
int credential_init(credential_t *c, const char *token_file, char *err, size_t errlen);
void credential_free(credential_t *c);

/* The credential's name, for a log line and a report of who changed the
 * gate: the path of its token file (one credential today: whoever holds
 * that file's token); "" when none is configured. Never the token. */
const char *credential_name(const credential_t *c);

/* authorization: the request's Authorization field, NULL when absent. */
credential_result_t credential_check(credential_t *c, const char *authorization);

#endif
