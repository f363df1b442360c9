/* serve: the evhttp plumbing the admin API and the metrics listener share
 * (private to src/admin/): one listening socket on a configured address,
 * an evhttp on the main thread's loop with the small-request limits, a
 * route table that answers 404 and 405 itself, and the replies. */
#ifndef SKEWGATE_ADMIN_SERVE_H
#define SKEWGATE_ADMIN_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "credential.h"

struct event_base;
struct evhttp_request;

/* The largest request body read (the admin API's override form). */
#define SERVE_MAX_BODY 1024

typedef struct serve_route {
    const char *path;           /* exact match on the request path */
    unsigned methods;           /* EVHTTP_REQ_* mask */
    const char *allow;          /* the Allow header of a 405 */
    void (*handle)(void *arg, struct evhttp_request *req);
} serve_route_t;
/* A request with a method other than GET or HEAD (RFC 9110's safe
 * methods here) changes the gate: over TCP it needs a credential. */

typedef struct serve_routes {
    const serve_route_t *routes;
    size_t n;
    const char *not_found;      /* the 404 body: the paths served */
} serve_routes_t;

typedef struct serve serve_t;

/* Binds addr (IPv6 v6-only, no SO_REUSEPORT: a second gate on the same
 * port is an error, not a share) and serves routes on base, each handler
 * called with arg. A request not read whole within request_timeout_ms of
 * the accept (or of the previous answer) closes its connection. Logs
 * "<name>_listening" with the bound host and port.
 * NULL with "<name> listener ADDR: why" in err. routes must outlive it. */
serve_t *serve_start(struct event_base *base, const config_addr_t *addr, const char *name,
                     uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                     size_t errlen);
/* The same on a unix socket at path, created mode 0600 (a stale socket
 * left by a dead gate is replaced; a live one, or any other file, is an
 * error) and removed by serve_free. Whoever can connect may call every
 * route, mutations included: the socket's mode is the credential, as
 * with HAProxy's stats socket. Logs "<name>_socket" with the path. */
serve_t *serve_start_unix(struct event_base *base, const char *path, const char *name,
                          uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                          size_t errlen);
/* Over TCP, a change (not GET or HEAD) needs cred's bearer token
 * (borrowed; NULL or never set: refused, 403, telling how to configure
 * one, or, with socket_instead (copied: admin.socket), to use that). */
void serve_require_credential(serve_t *s, credential_t *cred, const char *socket_instead);
/* A reload's limits.header_timeout: the deadline of each request from
 * now on (one being read keeps the deadline it has). */
void serve_set_request_timeout(serve_t *s, uint64_t request_timeout_ms);
void serve_free(serve_t *s);

/* Who sent req. Over a unix socket: true, with the peer's uid and pid as
 * the kernel says them (SO_PEERCRED, at its connect); over TCP: false
 * (what vouches for it there is the credential serve checked). */
bool serve_peer_cred(struct evhttp_request *req, unsigned *uid, int *pid);

void serve_reply(struct evhttp_request *req, int code, const char *reason, const char *type, const char *body,
                 size_t len);
/* line and a newline, text/plain. */
void serve_text(struct evhttp_request *req, int code, const char *reason, const char *line);
/* GET /healthz: 200 "ok" while the process runs (arg unused). */
void serve_healthz(void *arg, struct evhttp_request *req);

#endif
