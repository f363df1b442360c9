/* http/request: the strict request-head parser (results as in
 * http/message.h). */
#ifndef SKEWGATE_HTTP_REQUEST_H
#define SKEWGATE_HTTP_REQUEST_H

#include "http/message.h"

typedef enum {
    HTTP_METHOD_OTHER,
    HTTP_METHOD_GET,
    HTTP_METHOD_HEAD,
    HTTP_METHOD_OPTIONS,
} http_method_t;

typedef enum {
    HTTP_TARGET_ORIGIN,         /* /path?query */
    HTTP_TARGET_ABSOLUTE,       /* http(s)://authority/path?query */
    HTTP_TARGET_ASTERISK,       /* OPTIONS * */
} http_target_form_t;

typedef struct http_request {
    http_method_t method;
    http_slice_t method_name;
    http_target_form_t form;
    http_slice_t target;        /* the request-target as sent */
    http_slice_t authority;     /* absolute-form only: host[:port] */
    http_slice_t path;          /* still percent-encoded; see http_path.h.
                                 * Absolute-form may leave it empty (= "/");
                                 * asterisk-form: "*". */
    http_slice_t query;         /* after the '?', empty if none */
    uint8_t version_minor;      /* HTTP/1.0 or HTTP/1.1 */
    bool keep_alive;
    bool chunked;               /* Transfer-Encoding: chunked */
    bool has_body;              /* chunked or Content-Length > 0 */
    bool expect_continue;       /* Expect: 100-continue, HTTP/1.1 only */
    int64_t content_length;     /* -1 if absent */
    http_headers_t headers;
    const char *error;          /* why it failed: static text for the log */

    /* resumable state */
    http_scan_t scan;
    uint32_t start;             /* 2 after a tolerated leading CRLF */
    uint32_t rl_pos;            /* request line bytes walked */
    uint32_t rl_mark;           /* start of the part being walked */
    uint32_t rl_target;         /* start of the request-target */
    uint8_t rl_part;            /* method, target or version */
    bool started;
    bool rl_done;
} http_request_t;

/* Gives the request its field storage (cap entries) and readies it for a
 * first message. Fields found before a failure stay readable (for the log). */
void http_request_init(http_request_t *req, http_header_t *headers, uint32_t cap);
/* Readies it for the next message on the connection. */
void http_request_reset(http_request_t *req);

/* Between calls buf must hold the same bytes, possibly more of them. After
 * a result other than 0, call http_request_reset() before the next head. */
int http_request_parse(const char *buf, size_t len, const http_limits_t *lim,
                       http_request_t *req);

#endif
