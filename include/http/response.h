/* http/response: the strict response-head parser (results as in
 * http/message.h). */
#ifndef SKEWGATE_HTTP_RESPONSE_H
#define SKEWGATE_HTTP_RESPONSE_H

#include "http/message.h"

typedef enum {
    HTTP_BODY_NONE,             /* HEAD, 1xx, 204, 304 */
    HTTP_BODY_LENGTH,           /* content_length bytes */
    HTTP_BODY_CHUNKED,          /* see http_chunked.h */
    HTTP_BODY_UNTIL_CLOSE,      /* the body ends when the upstream closes */
} http_body_t;

typedef struct http_response {
    uint16_t status;
    http_slice_t reason;
    uint8_t version_minor;
    bool keep_alive;            /* the upstream connection may be reused */
    http_body_t body;
    int64_t content_length;     /* -1 if absent; kept for HEAD and 304 */
    http_headers_t headers;
    const char *error;          /* why it failed: static text for the log */

    http_scan_t scan;
} http_response_t;

void http_response_init(http_response_t *resp, http_header_t *headers, uint32_t cap);
void http_response_reset(http_response_t *resp);

/* is_head: the request was HEAD, so the response has no body whatever its
 * fields say. A 1xx head is complete on its own: the final response follows
 * it; reset and parse again. max_uri_bytes is not used. */
int http_response_parse(const char *buf, size_t len, const http_limits_t *lim,
                        bool is_head, http_response_t *resp);

/* May this response, parsed from buf, be handed to every client that sent
 * the same request, as a shared fetch does? Only a complete 200 framed by
 * Content-Length that says nothing against it: no Set-Cookie (a cookie is
 * one client's), no Cache-Control no-store, no-cache or private (RFC 9111
 * 5.2.2: not to be stored or reused without the origin), and a Vary that
 * names no field but Accept (the share key holds Accept; anything else,
 * or "*", may differ between the askers). Any doubt answers false: the
 * cost is a render per asker, never a wrong answer. */
bool http_response_is_shareable(const char *buf, const http_response_t *resp);

#endif
