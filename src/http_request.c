/* http_request: the request head (RFC 9112 3 and 6), parsed strictly.
 * Whatever the upstream (Go's net/http) could read differently from us is
 * refused here, so that the gate and the MCS always judge the same
 * request. */
#include <string.h>

#include "http_internal.h"

enum { RL_METHOD, RL_TARGET, RL_VERSION };

static const char BAD_METHOD[] = "invalid method";
static const char BAD_TARGET[] = "invalid request-target";
static const char BAD_VERSION[] = "invalid HTTP version";
static const char LONG_TARGET[] = "request-target too long";

static int request_error(http_request_t *req, int status, const char *why)
{
    req->error = why;
    return status;
}

void http_request_init(http_request_t *req, http_header_t *headers, uint32_t cap)
{
    req->headers.list = headers;
    req->headers.cap = cap;
    http_request_reset(req);
}

void http_request_reset(http_request_t *req)
{
    req->started = false;
    req->rl_done = false;
    req->error = NULL;
    req->headers.count = 0;
}

/* Checks the request line while its end has not arrived, so that garbage
 * (a TLS ClientHello on the plain port) or an overlong target is refused at
 * once rather than when the head limit is reached. It reaches the verdicts
 * parse_request_line() would, on a prefix. */
static int request_line_prefix(const char *buf, size_t len, const http_limits_t *lim,
                               http_request_t *req)
{
    const unsigned char *b = (const unsigned char *)buf;
    for (size_t i = req->rl_pos; i < len; i++) {
        switch (req->rl_part) {
        case RL_METHOD:
            if (b[i] == ' ' && i > req->rl_mark) {
                req->rl_part = RL_TARGET;
                req->rl_mark = (uint32_t)i + 1;
            } else if (!http_is(b[i], HTTP_C_TOKEN)) {
                return request_error(req, -400, BAD_METHOD);
            }
            break;
        case RL_TARGET:
            if (b[i] == ' ' && i > req->rl_mark) {
                req->rl_part = RL_VERSION;
                req->rl_mark = (uint32_t)i + 1;
            } else if (!http_is(b[i], HTTP_C_TARGET)) {
                return request_error(req, -400, BAD_TARGET);
            } else if (i + 1 - req->rl_mark > lim->max_uri_bytes) {
                return request_error(req, -414, LONG_TARGET);
            }
            break;
        default:
            if (i - req->rl_mark > sizeof "HTTP/1.1" - 1)   /* its CR may follow */
                return request_error(req, -400, BAD_VERSION);
            break;
        }
    }
    req->rl_pos = (uint32_t)len;
    return 0;
}

static http_method_t method_of(const char *m, size_t n)
{
    /* Methods are case-sensitive (RFC 9110 9.1). */
    switch (n) {
    case 3:
        return memcmp(m, "GET", 3) == 0 ? HTTP_METHOD_GET : HTTP_METHOD_OTHER;
    case 4:
        return memcmp(m, "HEAD", 4) == 0 ? HTTP_METHOD_HEAD : HTTP_METHOD_OTHER;
    case 7:
        return memcmp(m, "OPTIONS", 7) == 0 ? HTTP_METHOD_OPTIONS : HTTP_METHOD_OTHER;
    }
    return HTTP_METHOD_OTHER;
}

static void split_query(const char *buf, uint32_t off, uint32_t end, http_request_t *req)
{
    const char *q = memchr(buf + off, '?', end - off);
    uint32_t path_end = q ? (uint32_t)(q - buf) : end;
    req->path = (http_slice_t){off, path_end - off};
    req->query = q ? (http_slice_t){path_end + 1, end - path_end - 1}
                   : (http_slice_t){end, 0};
}

static uint32_t scheme_len(const char *t, uint32_t n)
{
    if (n >= 7 && HTTP_TOKEN_EQ(t, 4, "http") && memcmp(t + 4, "://", 3) == 0)
        return 7;
    if (n >= 8 && HTTP_TOKEN_EQ(t, 5, "https") && memcmp(t + 5, "://", 3) == 0)
        return 8;
    return 0;
}

/* origin-form, asterisk-form for OPTIONS, and absolute-form, which RFC 9112
 * 3.2.2 requires servers to accept. Go reads an absolute-form target's path
 * as it reads an origin-form one, so the gate judges its path alike. Other
 * schemes, userinfo and an empty host are refused: no client of ours sends
 * them and Go would read some of them in ways we do not model. */
static int parse_target(const char *buf, http_request_t *req)
{
    uint32_t off = req->target.off, n = req->target.len, end = off + n;
    const char *t = buf + off;

    if (t[0] == '/') {
        req->form = HTTP_TARGET_ORIGIN;
        split_query(buf, off, end, req);
        return 0;
    }
    if (n == 1 && t[0] == '*') {
        if (req->method != HTTP_METHOD_OPTIONS)
            return request_error(req, -400, "asterisk-form outside OPTIONS");
        req->form = HTTP_TARGET_ASTERISK;
        req->path = req->target;
        req->query = (http_slice_t){end, 0};
        return 0;
    }
    uint32_t s = scheme_len(t, n);
    if (s == 0)
        return request_error(req, -400, BAD_TARGET);
    uint32_t a = off + s, p = a;
    while (p < end && buf[p] != '/' && buf[p] != '?') {
        if (buf[p] == '@')
            return request_error(req, -400, "userinfo in request-target");
        if (!http_is((unsigned char)buf[p], HTTP_C_HOST))
            return request_error(req, -400, BAD_TARGET);
        p++;
    }
    if (p == a)
        return request_error(req, -400, "empty host in request-target");
    req->form = HTTP_TARGET_ABSOLUTE;
    req->authority = (http_slice_t){a, p - a};
    split_query(buf, p, end, req);
    return 0;
}

static int parse_request_line(const char *buf, uint32_t start, uint32_t end,
                              const http_limits_t *lim, http_request_t *req)
{
    const unsigned char *b = (const unsigned char *)buf;
    uint32_t p = start;

    /* Exactly one SP between the parts: RFC 9112 3 lets a server split on
     * any whitespace, but a proxy must not read more leniently than the
     * server behind it. */
    while (p < end && http_is(b[p], HTTP_C_TOKEN))
        p++;
    if (p == start || p == end || b[p] != ' ')
        return request_error(req, -400, BAD_METHOD);
    req->method_name = (http_slice_t){start, p - start};
    req->method = method_of(buf + start, p - start);

    uint32_t t = ++p;
    while (p < end && http_is(b[p], HTTP_C_TARGET))
        p++;
    if (p - t > lim->max_uri_bytes)
        return request_error(req, -414, LONG_TARGET);
    if (p == t || p == end || b[p] != ' ')
        return request_error(req, -400, BAD_TARGET);
    req->target = (http_slice_t){t, p - t};
    req->authority = (http_slice_t){t, 0};

    const char *v = buf + p + 1;
    if (end - p - 1 != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
        v[6] != '.' || v[7] < '0' || v[7] > '9')
        return request_error(req, -400, BAD_VERSION);
    if (v[5] != '1' || v[7] > '1')
        return request_error(req, -505, "HTTP version not supported");
    req->version_minor = (uint8_t)(v[7] - '0');

    return parse_target(buf, req);
}

static uint32_t field_count(const http_headers_t *h, http_header_id_t id)
{
    uint32_t n = 0;
    if (h->first[id] >= 0)
        for (uint32_t i = (uint32_t)h->first[id]; i < h->count; i++)
            n += h->list[i].id == id;
    return n;
}

static int parse_host(const char *buf, http_request_t *req)
{
    const http_headers_t *h = &req->headers;
    uint32_t hosts = field_count(h, HTTP_HDR_HOST);
    if (hosts > 1)
        return request_error(req, -400, "more than one Host field");
    if (hosts == 0)
        return req->version_minor == 1 ? request_error(req, -400, "missing Host field") : 0;
    const http_header_t *f = http_headers_get(h, HTTP_HDR_HOST);
    for (uint32_t i = 0; i < f->value.len; i++)
        if (!http_is((unsigned char)buf[f->value.off + i], HTTP_C_HOST))
            return request_error(req, -400, "invalid Host field");
    return 0;
}

/* Message body length, RFC 9112 6.3, refusing every ambiguity a smuggler
 * could use: two Content-Length fields (even equal ones), Transfer-Encoding
 * next to Content-Length or in HTTP/1.0, chunked twice or not last. */
static int parse_framing(const char *buf, http_request_t *req)
{
    const http_headers_t *h = &req->headers;
    const http_header_t *cl = http_headers_get(h, HTTP_HDR_CONTENT_LENGTH);
    req->content_length = -1;
    req->chunked = false;
    if (cl) {
        if (field_count(h, HTTP_HDR_CONTENT_LENGTH) > 1)
            return request_error(req, -400, "more than one Content-Length field");
        if (http_parse_length(buf + cl->value.off, cl->value.len, &req->content_length) < 0)
            return request_error(req, -400, "invalid Content-Length");
    }
    if (h->first[HTTP_HDR_TRANSFER_ENCODING] >= 0) {
        if (cl)
            return request_error(req, -400, "Transfer-Encoding with Content-Length");
        if (req->version_minor == 0)
            return request_error(req, -400, "Transfer-Encoding in HTTP/1.0");
        unsigned chunked = 0;
        for (uint32_t i = (uint32_t)h->first[HTTP_HDR_TRANSFER_ENCODING]; i < h->count; i++) {
            const http_header_t *f = &h->list[i];
            if (f->id != HTTP_HDR_TRANSFER_ENCODING)
                continue;
            http_list_t it = {buf + f->value.off, buf + f->value.off + f->value.len};
            const char *c;
            size_t n;
            while (http_list_next(&it, &c, &n)) {
                /* We decode no coding but chunked (RFC 9112 6.1: 501). */
                if (!HTTP_TOKEN_EQ(c, n, "chunked"))
                    return request_error(req, -501, "unsupported transfer coding");
                chunked++;
            }
        }
        if (chunked != 1)
            return request_error(req, -400, "invalid Transfer-Encoding");
        req->chunked = true;
    }
    req->has_body = req->chunked || req->content_length > 0;
    return 0;
}

static int request_semantics(const char *buf, http_request_t *req)
{
    int rc = parse_host(buf, req);
    if (rc == 0)
        rc = parse_framing(buf, req);
    if (rc < 0)
        return rc;
    const http_header_t *e = http_headers_get(&req->headers, HTTP_HDR_EXPECT);
    req->expect_continue = e && HTTP_TOKEN_EQ(buf + e->value.off, e->value.len, "100-continue");
    req->keep_alive = http_keep_alive(buf, &req->headers, req->version_minor);
    return 0;
}

int http_request_parse(const char *buf, size_t len, const http_limits_t *lim,
                       http_request_t *req)
{
    if (!req->started) {
        /* RFC 9112 2.2: a server SHOULD ignore at least one empty line before
         * the request line (old clients sent a CRLF after a POST body). We
         * ignore exactly one; a second is noise no client of ours sends. */
        if (len < 2)
            return 0;
        req->start = buf[0] == '\r' && buf[1] == '\n' ? 2 : 0;
        http_scan_init(&req->scan, req->start);
        req->rl_pos = req->rl_mark = req->start;
        req->rl_part = RL_METHOD;
        req->started = true;
    }
    /* A head that fits ends within max_header_bytes; looking further only
     * costs time. This also keeps every offset below 2^31. */
    size_t view = len;
    if (view > (size_t)lim->max_header_bytes + 1)
        view = (size_t)lim->max_header_bytes + 1;

    int head = http_scan_head(buf, view, &req->scan, &req->error);
    if (head < 0)
        return head;
    int rc = 0;
    if (req->scan.first_end == 0) {
        rc = request_line_prefix(buf, view, lim, req);
    } else if (!req->rl_done) {
        rc = parse_request_line(buf, req->start, req->scan.first_end, lim, req);
        req->rl_done = true;
    }
    if (rc < 0)
        return rc;

    if (head == 0) {
        if (view >= lim->max_header_bytes)     /* the head will be longer */
            return request_error(req, -431, "request head too large");
        if (req->scan.lines > 0 && req->scan.lines - 1 > lim->max_headers)
            return request_error(req, -431, "too many header fields");
        return 0;
    }
    if ((uint32_t)head > lim->max_header_bytes)
        return request_error(req, -431, "request head too large");

    http_headers_clear(&req->headers);
    rc = http_fields_parse(buf, req->scan.first_end + 2, (uint32_t)head, lim->max_headers,
                           &req->headers, &req->error);
    if (rc == 0)
        rc = request_semantics(buf, req);
    return rc < 0 ? rc : head;
}
