/* http/message: what requests and responses share: slices, limits, the
 * known field names and the field list. The parsers (http/request.h,
 * http/response.h) are strict and zero-copy (RFC 9110, RFC 9112).
 *
 * The parsers read a contiguous buffer that may hold an incomplete head.
 * They never allocate and never copy: every result is an offset/length
 * slice into that buffer, so the buffer may move between calls (a pull-up)
 * as long as the bytes already seen stay the same. A parse can be resumed
 * (call again with the same bytes plus more and the search goes on where
 * it stopped), but the gate does not rely on it: its parse state is per
 * worker, shared by all connections, so every call after a read starts
 * afresh. That costs a rescan per partial read, bounded by
 * limits.max_header_bytes (16 KiB by default); nearly every head arrives
 * in one read.
 *
 * Results:  > 0  the head is complete; its length (request/status line,
 *                fields and the empty line) is the value returned.
 *             0  more bytes are needed, no limit exceeded yet.
 *           < 0  a negative HTTP status: the message is refused and the
 *                connection is to be closed after answering (requests:
 *                -400, -414, -431, -501, -505; responses: always -502).
 *                The reason, a static string for logs, is in ->error. */
#ifndef SKEWGATE_HTTP_MESSAGE_H
#define SKEWGATE_HTTP_MESSAGE_H

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
    HTTP_HDR_AUTHORIZATION,     /* the provisioning token (admission.token) */
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
    uint32_t repeated;          /* bit id: more than one field with that name */
} http_headers_t;
_Static_assert(HTTP_HDR__KNOWN <= 32, "repeated has a bit per known name");

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

#endif
