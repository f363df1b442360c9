/* http: strict, zero-copy parsing of HTTP/1.1 message heads (RFC 9110,
 * RFC 9112) for the data path.
 *
 * The parsers read a contiguous buffer that may hold an incomplete head.
 * They never allocate and never copy: every result is an offset/length
 * slice into that buffer, so the buffer may move between calls (a pull-up)
 * as long as the bytes already seen stay the same. A parse is resumable:
 * call again with the same bytes plus more; the search for the end of the
 * head continues where it stopped, so feeding a head in n pieces costs O(n)
 * in total, not O(n^2).
 *
 * Results:  > 0  the head is complete; its length (request/status line,
 *                fields and the empty line) is the value returned.
 *             0  more bytes are needed, no limit exceeded yet.
 *           < 0  a negative HTTP status: the message is refused and the
 *                connection is to be closed after answering (requests:
 *                -400, -414, -431, -501, -505; responses: always -502).
 *                The reason, a static string for logs, is in ->error. */
#ifndef SKEWGATE_HTTP_H
#define SKEWGATE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A piece of the parsed buffer. */
typedef struct http_slice {
    uint32_t off;
    uint32_t len;
} http_slice_t;

#define HTTP_SLICE_PTR(buf, s) ((const char *)(buf) + (s).off)

typedef struct http_limits {
    uint32_t max_header_bytes;  /* whole head; must be below 2^31 */
    uint32_t max_headers;       /* field lines */
    uint32_t max_uri_bytes;     /* request-target; ignored for responses */
} http_limits_t;

/* Field names the gate acts on, matched case-insensitively. */
typedef enum {
    HTTP_HDR_HOST,
    HTTP_HDR_ACCEPT,
    HTTP_HDR_USER_AGENT,
    HTTP_HDR_X_FORWARDED_FOR,
    HTTP_HDR_CONTENT_LENGTH,
    HTTP_HDR_EXPECT,
    /* hop-by-hop (RFC 9110 7.6.1): never forwarded as received */
    HTTP_HDR_CONNECTION,
    HTTP_HDR_KEEP_ALIVE,
    HTTP_HDR_PROXY_CONNECTION,
    HTTP_HDR_TE,
    HTTP_HDR_TRAILER,
    HTTP_HDR_TRANSFER_ENCODING,
    HTTP_HDR_UPGRADE,
    HTTP_HDR__KNOWN,
    HTTP_HDR_OTHER = HTTP_HDR__KNOWN
} http_header_id_t;

typedef struct http_header {
    http_slice_t name;
    http_slice_t value;         /* without leading and trailing OWS */
    http_header_id_t id;
} http_header_t;

/* The field lines of a head, in order. The storage is the caller's. */
typedef struct http_headers {
    http_header_t *list;
    uint32_t cap;               /* capped at INT16_MAX */
    uint32_t count;
    int16_t first[HTTP_HDR__KNOWN];  /* index of the first field with that name, -1 */
} http_headers_t;

http_header_id_t http_header_id(const char *name, size_t len);
bool http_header_is_hop_by_hop(http_header_id_t id);
/* The first field with that name, or NULL. */
const http_header_t *http_headers_get(const http_headers_t *h, http_header_id_t id);
/* Does any Connection field list this field name (RFC 9110 7.6.1: such a
 * field is hop-by-hop too)? Case-insensitive. */
bool http_connection_lists(const char *buf, const http_headers_t *h, const char *name, size_t len);

/* Where the search for the end of a head stopped. Private to the parsers. */
typedef struct http_scan {
    uint32_t pos;               /* bytes searched */
    uint32_t line;              /* start of the line being searched */
    uint32_t lines;             /* complete lines */
    uint32_t first_end;         /* offset of the first line's CR; 0 until seen */
} http_scan_t;

/* ---- requests ---------------------------------------------------------- */

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

/* ---- responses --------------------------------------------------------- */

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

#endif
