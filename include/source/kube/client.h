/* kube_client: one HTTP/1.1 request at a time (a GET, or a PATCH of
 * `skewgate override --cluster`) to the Kubernetes API server, on
 * an event_base, over plain TCP or TLS (sockio). It connects, sends,
 * parses the response head (http_response_parse), de-chunks the body
 * (http_chunked_step) and hands it over whole or line by line (watch
 * streams). Each request gets its own connection: a list is followed by a
 * watch that lasts minutes, so reuse would save one handshake per watch.
 *
 * Bounds: the head is at most 64 KiB, a body or a line at most
 * KUBE_BODY_MAX; beyond, the request fails (too_large). Connecting, the handshake,
 * sending and the head share one deadline (KUBE_REQUEST_TIMEOUT_MS); the
 * body fails after idle_timeout_ms without a byte.
 *
 * Callbacks may call kube_client_request() or kube_client_cancel() on the
 * client (also from on_line); the client then touches nothing of the old
 * request. */
#ifndef SKEWGATE_KUBE_CLIENT_H
#define SKEWGATE_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "source/kube/endpoint.h"

#define KUBE_BODY_MAX (8u << 20)
#define KUBE_REQUEST_TIMEOUT_MS 10000

struct event_base;
typedef struct kube_client kube_client_t;

typedef enum {
    KUBE_BODY_WHOLE,            /* on_done gets the body */
    KUBE_BODY_LINES,            /* a 2xx body goes to on_line, line by line */
} kube_body_mode_t;

typedef struct kube_response {
    int status;                 /* 0 when no head arrived */
    bool complete;              /* the body ended as its framing says */
    const char *error;          /* when !complete: what went wrong (static) */
    char detail[256];           /* when !complete: more, e.g. the TLS reason */
    const char *body;           /* WHOLE, or any non-2xx answer: the body */
    size_t body_len;
    bool too_large;             /* !complete because the body passed KUBE_BODY_MAX */
} kube_response_t;

typedef struct kube_client_cbs {
    /* One line without its end of line (LF or CRLF); empty lines are
     * skipped. arrived_ns: CLOCK_MONOTONIC when its last byte was read. */
    void (*on_line)(void *arg, const char *line, size_t len, uint64_t arrived_ns);
    /* The request is over and its connection closed. Not called after
     * kube_client_cancel(). resp is valid during the call only. */
    void (*on_done)(void *arg, const kube_response_t *resp);
} kube_client_cbs_t;

/* ep->tls (the scheme) says whether a connection is TLS. tls_ctx: where
 * the owner keeps its TLS context, read at each connect, so a context the
 * owner replaces (a rotated CA, kube_api_follow_ca) is the next
 * connection's; a connection under way keeps the one it was made with
 * (SSL_new holds a reference). For https:// a request without a context
 * there fails closed, before connecting (never plain HTTP); for http://
 * the slot is not read and may be NULL. Each connection verifies ep->host
 * unless insecure. The owner's slot must outlive the client. NULL when out
 * of memory. */
kube_client_t *kube_client_new(struct event_base *base, const kube_endpoint_t *ep,
                               SSL_CTX *const *tls_ctx, bool insecure, const kube_client_cbs_t *cbs,
                               void *arg);
/* Drops the request in flight, if any, silently, as kube_client_cancel.
 * The memory (and the resolver's) is freed a loop turn later, once the
 * callbacks libevent still owes for a cancelled lookup have run; so the
 * loop must turn once more before event_base_free (EVLOOP_NONBLOCK). */
void kube_client_free(kube_client_t *c);

/* Starts GET target, with "Authorization: Bearer token" unless token is
 * NULL. A host name is resolved with libevent's evdns (resolv.conf,
 * /etc/hosts), never blocking the loop; its failure comes as on_done's
 * error "cannot resolve". 0, or -1 with err (nothing to wait for then).
 * A body buffer grown past 256 KiB by the last answer is freed first,
 * and the heap trimmed (malloc_trim) so that RSS comes down. */
int kube_client_request(kube_client_t *c, const char *target, const char *token,
                        kube_body_mode_t mode, uint64_t idle_timeout_ms, char *err,
                        size_t errlen);
/* Any request: a method, and a body of content_type when that is not
 * NULL (e.g. a PATCH of application/merge-patch+json). */
typedef struct kube_request {
    const char *method;
    const char *target;
    const char *token;          /* NULL: no Authorization */
    const char *content_type;   /* NULL: no body */
    const char *body;
    size_t body_len;
} kube_request_t;

/* Starts r as kube_client_request starts a GET; r's strings are copied. */
int kube_client_send(kube_client_t *c, const kube_request_t *r, kube_body_mode_t mode,
                     uint64_t idle_timeout_ms, char *err, size_t errlen);

/* Drops the request in flight, if any, silently. */
void kube_client_cancel(kube_client_t *c);

#endif
