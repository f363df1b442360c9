/* admin_client: what `skewgate status` and `skewgate override` use to ask
 * a running gate's admin listener: one blocking HTTP/1.1 exchange on
 * loopback (never the data path). */
#ifndef SKEWGATE_ADMIN_CLIENT_H
#define SKEWGATE_ADMIN_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"
#include "source/kube/token.h"

#define ADMIN_CLIENT_DEFAULT_ADDR "127.0.0.1:22625"

/* The listener to ask: admin_addr ("127.0.0.1:22625", or the path of a
 * unix socket: anything with a '/', "/run/skewgate/admin.sock", or
 * "build/demo/admin.sock" from the current directory) if given, else the admin.socket
 * or, without one, the admin.address of the configuration file
 * config_path if given, else the default. 0, or -1 with err. */
int admin_client_addr(const char *admin_addr, const char *config_path, config_addr_t *out, char *err,
                      size_t errlen);

/* Sends METHOD PATH (with form, if not NULL, as a urlencoded body) and
 * reads the whole answer. The HTTP status with *body malloc'ed and
 * NUL-terminated, or -1 with err when the gate cannot be reached or
 * answers no HTTP. Bounded by a few seconds. */
int admin_client_request(const config_addr_t *addr, const char *method, const char *path, const char *form,
                         char **body, char *err, size_t errlen);
/* The same with "Authorization: Bearer token" unless token is NULL. */
int admin_client_request_auth(const config_addr_t *addr, const char *token, const char *method, const char *path,
                              const char *form, char **body, char *err, size_t errlen);

/* The bearer token for a change over TCP: the contents of token_file if
 * given, else of the admin.token_file of config_path if it has one, in
 * out (kube_token_free it when *have); *have false when there is none (the
 * gate then says 401 or 403 itself). The token is never printed. 0, or -1
 * with err. */
int admin_client_token(const char *token_file, const char *config_path, kube_token_t *out, bool *have,
                       char *err, size_t errlen);

#endif
