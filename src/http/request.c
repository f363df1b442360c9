/* http_request: the request head (RFC 9112 3 and 6), parsed strictly.
 * Whatever the upstream (Go's net/http) could read differently from us is
 * refused here, so that the gate and the MCS always judge the same
 * request. */
#include <string.h>

#include "http/request.h"
#include "internal.h"

enum { RL_METHOD, RL_TARGET, RL_VERSION };

static const char BAD_TARGET[] = "invalid request-target";
static const char BAD_VERSION[] = "invalid HTTP version";

static int request_error(http_request_t *req, int status, const char *why)
{
    req->error = why;
    return status;
}

void http_request_init(http_request_t *req, http_header_t *headers, uint32_t cap)
{
    req->headers.list = headers;
    req->headers.cap = cap < INT16_MAX ? cap : INT16_MAX;
    http_request_reset(req);
}

void http_request_reset(http_request_t *req)
{
    req->started = false;
    req->rl_done = false;
    req->error = NULL;
    http_headers_clear(&req->headers);
}

/* The first byte at or after i, below len, that is not a request-target
 * character (visible ASCII but '#': 0x21-0x7e without 0x23), eight bytes
 * at a time; at most len. Exact per byte, with no carry between bytes: of
 * a = b & 0x7f, a + 0x5f has its high bit set iff a >= 0x21, a + 1 iff
 * a == 0x7f, (a ^ 0x23) + 0x7f iff a != 0x23; a byte >= 0x80 is refused
 * by its own high bit. The byte loop after it does the last few bytes. */
static size_t target_skip_words(const unsigned char *b, size_t i, size_t len)
{
    const uint64_t ones = 0x0101010101010101u, low7 = 0x7f7f7f7f7f7f7f7fu, highs = 0x8080808080808080u;
    while (len - i >= 8) {
        uint64_t x;
        memcpy(&x, b + i, 8);
        uint64_t a = x & low7;
        uint64_t bad = ~((a + 0x5f * ones) & ((a ^ 0x23 * ones) + 0x7f * ones) & ~((a + ones) | x)) & highs;
        if (bad) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t)(__builtin_ctzll(bad) >> 3);
#else
            return i + (size_t)(__builtin_clzll(bad) >> 3);
#endif
        }
        i += 8;
    }
    return i;
}

/* Walks the request line byte by byte as it arrives, so that garbage (a
 * TLS ClientHello on the plain port) or an overlong target is refused at
 * once, not when the head limit is reached. Exactly one SP between the
 * parts: RFC 9112 3 lets a server split on any whitespace, but a proxy must
 * not read more leniently than the server behind it. */
static int request_line_walk(const char *buf, size_t len, const http_limits_t *lim,
                             http_request_t *req)
{
    const unsigned char *b = (const unsigned char *)buf;
    size_t i = req->rl_pos;
    switch (req->rl_part) {
    case RL_METHOD:
        while (i < len && http_is(b[i], HTTP_C_TOKEN))
            i++;
        if (i == len)
            break;
        if (b[i] != ' ' || i == req->rl_mark)
            return request_error(req, -400, "invalid method");
        req->rl_part = RL_TARGET;
        req->rl_mark = req->rl_target = (uint32_t)++i;
        __attribute__((fallthrough));
    case RL_TARGET:
        i = target_skip_words(b, i, len);
        while (i < len && http_is(b[i], HTTP_C_TARGET))
            i++;
        if (i - req->rl_mark > lim->max_uri_bytes)
            return request_error(req, -414, "request-target too long");
        if (i == len)
            break;
        if (b[i] != ' ' || i == req->rl_mark)
            return request_error(req, -400, BAD_TARGET);
        req->rl_part = RL_VERSION;
        req->rl_mark = (uint32_t)++i;
        __attribute__((fallthrough));
    default:
        /* "HTTP/1.1" and its CR; request_line_finish() reads it. */
        if (len - req->rl_mark > sizeof "HTTP/1.1")
            return request_error(req, -400, BAD_VERSION);
        i = len;
    }
    req->rl_pos = (uint32_t)i;
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

/* The walk has passed the whole line, its CR included: a CR is neither a
 * token nor a target character, so the line got to its version. */
static int request_line_finish(const char *buf, uint32_t cr, http_request_t *req)
{
    uint32_t t = req->rl_target, v = req->rl_mark;
    req->method_name = (http_slice_t){req->start, t - 1 - req->start};
    req->method = method_of(buf + req->start, req->method_name.len);
    req->target = (http_slice_t){t, v - 1 - t};
    req->authority = (http_slice_t){t, 0};

    const char *ver = buf + v;
    if (cr - v != 8 || memcmp(ver, "HTTP/", 5) != 0 || ver[5] < '0' || ver[5] > '9' ||
        ver[6] != '.' || ver[7] < '0' || ver[7] > '9')
        return request_error(req, -400, BAD_VERSION);
    if (ver[5] != '1' || ver[7] > '1')
        return request_error(req, -505, "HTTP version not supported");
    req->version_minor = (uint8_t)(ver[7] - '0');

    return parse_target(buf, req);
}

/* 0, 1, or 2 for more than one: the field parse marks a name seen again. */
static uint32_t field_count(const http_headers_t *h, http_header_id_t id)
{
    return h->first[id] < 0 ? 0 : (h->repeated >> id & 1u) ? 2 : 1;
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
        http_field_elements_t e;
        http_field_elements_init(&e, buf, h, HTTP_HDR_TRANSFER_ENCODING);
        const char *c;
        size_t n;
        while (http_field_elements_next(&e, &c, &n)) {
            /* We decode no coding but chunked (RFC 9112 6.1: 501). */
            if (!HTTP_TOKEN_EQ(c, n, "chunked"))
                return request_error(req, -501, "unsupported transfer coding");
            chunked++;
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
    /* Authorization is a singleton (RFC 9110 11.6.2, no list syntax): of
     * two, a proxy reading the first and a server reading the last would
     * judge different credentials; a strict proxy refuses the request. */
    if (rc == 0 && field_count(&req->headers, HTTP_HDR_AUTHORIZATION) > 1)
        rc = request_error(req, -400, "more than one Authorization field");
    if (rc < 0)
        return rc;
    const http_header_t *e = http_headers_get(&req->headers, HTTP_HDR_EXPECT);
    /* RFC 9110 10.1.1: a 100-continue in an HTTP/1.0 request is ignored. */
    req->expect_continue = e && req->version_minor == 1 &&
                           HTTP_TOKEN_EQ(buf + e->value.off, e->value.len, "100-continue");
    req->keep_alive = http_keep_alive(buf, &req->headers, req->version_minor);
    return 0;
}

/* The request line is done with before the field lines are searched, so
 * that the first error by position decides the answer, whatever the pieces
 * the head arrives in. 1 once the line is complete and parsed, 0 before. */
static int request_line(const char *buf, size_t view, const http_limits_t *lim,
                        http_request_t *req)
{
    const char *lf = memchr(buf + req->rl_pos, '\n', view - req->rl_pos);
    uint32_t end = lf ? (uint32_t)(lf - buf) : (uint32_t)view;
    if (lf && end == req->start + 1 && buf[req->start] == '\r')
        return request_error(req, -400, "empty line instead of the start line");
    int rc = request_line_walk(buf, end, lim, req);
    if (rc < 0 || !lf)
        return rc;
    if (end == req->start || buf[end - 1] != '\r')
        return request_error(req, -400, "bare LF");
    if ((rc = request_line_finish(buf, end - 1, req)) < 0)
        return rc;
    http_scan_init_fields(&req->scan, end - 1);
    req->rl_done = true;
    return 1;
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
        req->rl_pos = req->rl_mark = req->start;
        req->rl_part = RL_METHOD;
        req->started = true;
    }
    /* A head that fits ends within max_header_bytes: a byte past them is
     * never looked at, and an error there is a 431 whatever it is. This
     * also keeps every offset below 2^31. */
    size_t view = len < lim->max_header_bytes ? len : lim->max_header_bytes;

    if (!req->rl_done) {
        int rc = request_line(buf, view, lim, req);
        if (rc < 0)
            return rc;
    }
    int head = req->rl_done ? http_scan_head(buf, view, &req->scan, lim->max_headers, &req->error) : 0;
    if (head < 0)
        return head;
    if (head == 0)
        return view == lim->max_header_bytes ? request_error(req, -431, "request head too large") : 0;

    int rc = http_fields_parse(buf, req->scan.first_end + 2, (uint32_t)head, &req->headers,
                               &req->error);
    if (rc == 0)
        rc = request_semantics(buf, req);
    return rc < 0 ? rc : head;
}
