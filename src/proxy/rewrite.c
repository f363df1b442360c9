#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/addr.h"
#include "http/query.h"
#include "policy/admission_token.h"
#include "proxy/rewrite.h"

/* Appends; past cap, every later append is a no-op and the result 0. */
typedef struct out {
    char *buf;
    size_t cap, at;
    bool overflow;
} out_t;

static void put(out_t *o, const char *s, size_t len)
{
    if (o->overflow || len > o->cap - o->at) {
        o->overflow = true;
        return;
    }
    memcpy(o->buf + o->at, s, len);
    o->at += len;
}

#define PUT_LIT(o, lit) put((o), lit, sizeof lit - 1)

static void put_field(out_t *o, const char *head, const http_header_t *h)
{
    put(o, head + h->name.off, h->name.len);
    PUT_LIT(o, ": ");
    put(o, head + h->value.off, h->value.len);
    PUT_LIT(o, "\r\n");
}

static size_t result(const out_t *o)
{
    return o->overflow ? 0 : o->at;
}

size_t rewrite_request(char *buf, size_t cap, const char *head, const http_request_t *req, bool http10,
                       const char *host, const struct sockaddr_storage *peer)
{
    out_t o = {buf, cap, 0, false};
    put(&o, head + req->method_name.off, req->method_name.len);
    PUT_LIT(&o, " ");
    if (req->query.len == 0) {
        put(&o, head + req->target.off, req->target.len);
    } else if (!o.overflow) {
        size_t n = http_target_without_param(head + req->target.off, req->target.len, ADMISSION_TOKEN_PARAM,
                                             o.buf + o.at, o.cap - o.at);
        o.overflow = n == 0;
        o.at += n;
    }
    if (http10)
        PUT_LIT(&o, " HTTP/1.0\r\n");
    else
        PUT_LIT(&o, " HTTP/1.1\r\n");
    for (size_t i = 0; i < req->headers.count; i++) {
        const http_header_t *h = &req->headers.list[i];
        if (h->id == HTTP_HDR_X_FORWARDED_FOR || h->id == HTTP_HDR_EXPECT || h->id == HTTP_HDR_AUTHORIZATION ||
            http_header_is_hop_by_hop(h->id) ||
            http_connection_lists(head, &req->headers, head + h->name.off, h->name.len))
            continue;
        put_field(&o, head, h);
    }
    if (!http_headers_get(&req->headers, HTTP_HDR_HOST)) {
        PUT_LIT(&o, "Host: ");
        put(&o, host, strlen(host));
        PUT_LIT(&o, "\r\n");
    }
    PUT_LIT(&o, "X-Forwarded-For: ");
    const http_header_t *xff = http_headers_get(&req->headers, HTTP_HDR_X_FORWARDED_FOR);
    if (xff) {
        put(&o, head + xff->value.off, xff->value.len);
        PUT_LIT(&o, ", ");
    }
    char ip[ADDR_IP_TEXT_LEN];
    put(&o, ip, addr_ip_text(peer, ip, sizeof ip));
    PUT_LIT(&o, "\r\n\r\n");
    return result(&o);
}

/* The request fields the MCS's handler reads, and so the only ones whose
 * bytes can change what it renders: openshift/machine-config-operator
 * pkg/server/api.go, APIHandler.ServeHTTP (release-4.13 to 4.19 and main
 * alike) reads r.Method, r.URL.Path, and r.Header.Get of "User-Agent" and
 * "Accept"; User-Agent only goes into its log line, Accept picks the spec
 * (detectSpecVersionFromAcceptHeader) and the 400. GetConfig is given the
 * pool name alone. Nothing else of the request is read. */
static const char *const mcs_read_fields[] = {"Accept"};

/* rewrite_request writes "Name: value", so a read field's line has its
 * colon right after the name: one byte to look at before the compare. */
static bool field_is_read(const char *line, size_t line_len)
{
    for (size_t i = 0; i < sizeof mcs_read_fields / sizeof mcs_read_fields[0]; i++) {
        size_t n = strlen(mcs_read_fields[i]);
        if (line_len > n && line[n] == ':' && strncasecmp(line, mcs_read_fields[i], n) == 0)
            return true;
    }
    return false;
}

size_t rewrite_share_key(const char *fwd, size_t len, char *out, size_t cap)
{
    out_t o = {out, cap, 0, false};
    const char *at = fwd, *end = fwd + len;
    bool request_line = true;
    /* rewrite_request wrote fwd: CRLF-ended lines, "Name: value" fields,
     * an empty line last. */
    for (;;) {
        /* memchr for the LF: glibc's memmem for "\r\n" cost 260
         * instructions a line, 6 lines a request (bench S3). */
        const char *lf = memchr(at, '\n', (size_t)(end - at));
        if (!lf || lf - at < 2)
            break;          /* the empty line, or no more */
        size_t line_len = (size_t)(lf - at) + 1;
        if (request_line || field_is_read(at, line_len))
            put(&o, at, line_len);
        request_line = false;
        at = lf + 1;
    }
    return result(&o);
}

size_t rewrite_response_head(char *buf, size_t cap, const char *head, const http_response_t *resp,
                             bool chunked, http_conn_variant_t conn)
{
    out_t o = {buf, cap, 0, false};
    char line[32];
    int n = snprintf(line, sizeof line, "HTTP/1.1 %03d ", resp->status);
    put(&o, line, (size_t)n);
    put(&o, head + resp->reason.off, resp->reason.len);
    PUT_LIT(&o, "\r\n");
    for (size_t i = 0; i < resp->headers.count; i++) {
        const http_header_t *h = &resp->headers.list[i];
        bool framing = chunked && (h->id == HTTP_HDR_TRANSFER_ENCODING || h->id == HTTP_HDR_TRAILER);
        if (!framing && (http_header_is_hop_by_hop(h->id) ||
                         http_connection_lists(head, &resp->headers, head + h->name.off, h->name.len)))
            continue;
        put_field(&o, head, h);
    }
    size_t len;
    const char *conn_line = http_connection_line(conn, &len);
    put(&o, conn_line, len);
    PUT_LIT(&o, "\r\n");
    return result(&o);
}
