/* rewrite: the request head as the upstream gets it and the response head
 * as the client gets it. Pure functions over buffers: they read a parsed
 * head and write the new one into out[cap], returning its length, or 0
 * when it does not fit (never writing past cap). */
#ifndef SKEWGATE_REWRITE_H
#define SKEWGATE_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "http/connection.h"
#include "http/request.h"
#include "http/response.h"

/* Same method, target and headers (Accept and User-Agent untouched: the
 * MCS picks the spec by Accept), hop-by-hop headers and Expect dropped,
 * the gate's own credentials dropped (Authorization and the target's
 * `token` parameters: the MCS reads neither, and a secret goes no further
 * than it must),
 * X-Forwarded-For extended with peer, Host added from host when the client
 * sent none. An HTTP/1.0 client's request goes as 1.0, so that the
 * upstream frames the body by length or by closing, never chunked. */
size_t rewrite_request(char *out, size_t cap, const char *head, const http_request_t *req, bool http10,
                       const char *host, const struct sockaddr_storage *peer);

/* The share key of a forwarded request: fwd[0..len) is rewrite_request's
 * output, and the key is the bytes of it that the MCS reads when it
 * renders: the request line (method, target as sent, version) and every
 * field line the MCS's handler reads, as sent (the list is in rewrite.c,
 * with the MCS code it comes from). Two requests with the same key get
 * the same render, because the MCS receives the same in every byte it
 * reads; no reading of Accept decides it. Written into out[cap]: the
 * key's length, or 0 when it does not fit (the request is not shared). */
size_t rewrite_share_key(const char *fwd, size_t len, char *out, size_t cap);

/* HTTP/1.1, the upstream's status and reason, its end-to-end fields, and
 * the Connection line of conn. A chunked body is relayed as it came, so
 * its Transfer-Encoding and Trailer fields stay. */
size_t rewrite_response_head(char *out, size_t cap, const char *head, const http_response_t *resp,
                             bool chunked, http_conn_variant_t conn);

/* At most how much longer than the upstream's head the rewritten one can
 * be: a space after each field's colon, the Connection line. */
#define REWRITE_HEAD_GROWTH(max_headers) ((size_t)(max_headers) + 64)

#endif
