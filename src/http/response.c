/* http_response: the upstream's response head (RFC 9112 4 and 6.3). The
 * MCS is trusted but verified: anything malformed or ambiguous in its
 * framing is refused (-502), never guessed at, because a wrong guess would
 * hand a node a truncated or spliced Ignition config. */
#include <string.h>
#include <strings.h>

#include "http/response.h"
#include "internal.h"

static int response_error(http_response_t *resp, const char *why)
{
    resp->error = why;
    return -502;
}

void http_response_init(http_response_t *resp, http_header_t *headers, uint32_t cap)
{
    resp->headers.list = headers;
    resp->headers.cap = cap < INT16_MAX ? cap : INT16_MAX;
    http_response_reset(resp);
}

void http_response_reset(http_response_t *resp)
{
    http_scan_init(&resp->scan);
    resp->error = NULL;
    http_headers_clear(&resp->headers);
}

static int parse_status_line(const char *buf, uint32_t end, http_response_t *resp)
{
    const char *v = buf;
    if (end < 12 || memcmp(v, "HTTP/1.", 7) != 0 || (v[7] != '0' && v[7] != '1') || v[8] != ' ')
        return response_error(resp, "invalid status line");
    resp->version_minor = (uint8_t)(v[7] - '0');
    const char *c = v + 9;
    if (c[0] < '1' || c[0] > '5' || c[1] < '0' || c[1] > '9' || c[2] < '0' || c[2] > '9')
        return response_error(resp, "invalid status code");
    resp->status = (uint16_t)((c[0] - '0') * 100 + (c[1] - '0') * 10 + (c[2] - '0'));
    /* RFC 9112 4 wants the SP before an empty reason; some servers omit it
     * and nothing is ambiguous without it, so it is optional here. */
    uint32_t p = 12;
    if (p < end && buf[p++] != ' ')
        return response_error(resp, "invalid status line");
    resp->reason = (http_slice_t){p, end - p};
    for (; p < end; p++)
        if (!http_is((unsigned char)buf[p], HTTP_C_VALUE))
            return response_error(resp, "invalid reason phrase");
    return 0;
}

/* All Content-Length values, across fields and within comma lists, must be
 * one number (RFC 9110 8.6 allows repeating it). */
static int parse_content_length(const char *buf, http_response_t *resp)
{
    const http_headers_t *h = &resp->headers;
    resp->content_length = -1;
    if (h->first[HTTP_HDR_CONTENT_LENGTH] < 0)
        return 0;
    for (uint32_t i = (uint32_t)h->first[HTTP_HDR_CONTENT_LENGTH]; i < h->count; i++) {
        const http_header_t *f = &h->list[i];
        if (f->id != HTTP_HDR_CONTENT_LENGTH)
            continue;
        http_list_t it = {buf + f->value.off, buf + f->value.off + f->value.len};
        const char *e;
        size_t n;
        bool any = false;
        int64_t v;
        while (http_list_next(&it, ',', &e, &n)) {
            if (http_parse_length(e, n, &v) < 0)
                return response_error(resp, "invalid Content-Length");
            if (resp->content_length >= 0 && v != resp->content_length)
                return response_error(resp, "conflicting Content-Length values");
            resp->content_length = v;
            any = true;
        }
        if (!any)
            return response_error(resp, "invalid Content-Length");
    }
    return 0;
}

/* chunked must be the last coding and appear once; a response whose last
 * coding is another one is delimited by the close (RFC 9112 6.3 item 4). */
static int parse_transfer_encoding(const char *buf, http_response_t *resp, bool *chunked)
{
    const http_headers_t *h = &resp->headers;
    bool last_chunked = false, any = false;
    http_field_elements_t e;
    http_field_elements_init(&e, buf, h, HTTP_HDR_TRANSFER_ENCODING);
    const char *c;
    size_t n;
    while (http_field_elements_next(&e, &c, &n)) {
        if (last_chunked)
            return response_error(resp, "chunked is not the last transfer coding");
        last_chunked = HTTP_TOKEN_EQ(c, n, "chunked");
        any = true;
    }
    if (!any)
        return response_error(resp, "empty Transfer-Encoding");
    *chunked = last_chunked;
    return 0;
}

static int response_framing(const char *buf, bool is_head, http_response_t *resp)
{
    const http_headers_t *h = &resp->headers;
    int rc = parse_content_length(buf, resp);
    if (rc < 0)
        return rc;
    bool chunked = false, te = h->first[HTTP_HDR_TRANSFER_ENCODING] >= 0;
    if (te) {
        /* RFC 9112 6.3 lets Transfer-Encoding override Content-Length, but
         * a sender of both is broken or hostile: refuse rather than pick. */
        if (resp->content_length >= 0)
            return response_error(resp, "Transfer-Encoding with Content-Length");
        if (resp->version_minor == 0)
            return response_error(resp, "Transfer-Encoding in HTTP/1.0");
        if ((rc = parse_transfer_encoding(buf, resp, &chunked)) < 0)
            return rc;
    }
    resp->keep_alive = http_keep_alive(buf, h, resp->version_minor);

    if (is_head || resp->status < 200 || resp->status == 204 || resp->status == 304)
        resp->body = HTTP_BODY_NONE;
    else if (chunked)
        resp->body = HTTP_BODY_CHUNKED;
    else if (!te && resp->content_length >= 0)
        resp->body = HTTP_BODY_LENGTH;
    else
        resp->body = HTTP_BODY_UNTIL_CLOSE;
    if (resp->body == HTTP_BODY_UNTIL_CLOSE)
        resp->keep_alive = false;
    return 0;
}

int http_response_parse(const char *buf, size_t len, const http_limits_t *lim,
                        bool is_head, http_response_t *resp)
{
    size_t view = len < lim->max_header_bytes ? len : lim->max_header_bytes;
    int head = http_scan_head(buf, view, &resp->scan, lim->max_headers, &resp->error);
    if (head < 0)
        return response_error(resp, resp->error);
    if (head == 0)
        return view == lim->max_header_bytes ? response_error(resp, "response head too large") : 0;

    int rc = parse_status_line(buf, resp->scan.first_end, resp);
    if (rc < 0)
        return rc;
    if (http_fields_parse(buf, resp->scan.first_end + 2, (uint32_t)head, &resp->headers,
                          &resp->error) < 0)
        return response_error(resp, resp->error);
    rc = response_framing(buf, is_head, resp);
    return rc < 0 ? rc : head;
}

static bool name_is(const char *buf, const http_header_t *h, const char *name)
{
    size_t n = strlen(name);
    const char *at = buf + h->name.off;
    return h->name.len == n && (*at | 0x20) == (*name | 0x20) && strncasecmp(at, name, n) == 0;
}

/* A directive of Cache-Control, by its name (before any '='). */
static bool cache_control_forbids(const char *elem, size_t len)
{
    const char *eq = memchr(elem, '=', len);
    size_t n = eq ? (size_t)(eq - elem) : len;
    static const char *const forbidding[] = {"no-store", "no-cache", "private"};
    for (size_t i = 0; i < sizeof forbidding / sizeof forbidding[0]; i++)
        if (n == strlen(forbidding[i]) && strncasecmp(elem, forbidding[i], n) == 0)
            return true;
    return false;
}

bool http_response_is_shareable(const char *buf, const http_response_t *resp)
{
    if (resp->status != 200 || resp->body != HTTP_BODY_LENGTH)
        return false;
    for (uint32_t i = 0; i < resp->headers.count; i++) {
        const http_header_t *h = &resp->headers.list[i];
        if (h->id != HTTP_HDR_OTHER)
            continue;
        bool cc = name_is(buf, h, "Cache-Control"), vary = name_is(buf, h, "Vary");
        if (name_is(buf, h, "Set-Cookie") || name_is(buf, h, "Set-Cookie2"))
            return false;
        if (!cc && !vary)
            continue;
        http_list_t it = {buf + h->value.off, buf + h->value.off + h->value.len};
        const char *elem;
        size_t len;
        while (http_list_next(&it, ',', &elem, &len)) {
            if (cc && cache_control_forbids(elem, len))
                return false;
            if (vary && !(len == 6 && strncasecmp(elem, "Accept", 6) == 0))
                return false;
        }
    }
    return true;
}
