/* The upstream response head parser: status line, framing, strictness. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "http/response.h"

static const http_limits_t LIM = {.max_header_bytes = 16384, .max_headers = 100, .max_uri_bytes = 0};
static http_header_t hdrs[128];
static http_response_t resp;

static int parse_as(const char *s, bool is_head)
{
    http_response_init(&resp, hdrs, 128);
    return http_response_parse(s, strlen(s), &LIM, is_head, &resp);
}

static int parse(const char *s) { return parse_as(s, false); }

static void refused(const char *s, const char *why)
{
    int rc = parse(s);
    cr_assert_eq(rc, -502, "%s -> %d (%s)", s, rc, resp.error);
    cr_assert_str_eq(resp.error, why, "%s", s);
}

static const char MCS_200[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: application/json\r\n"
    "Date: Mon, 02 Jun 2025 10:00:00 GMT\r\n"
    "Content-Length: 4718592\r\n"
    "\r\n";

Test(http_response, mcs_answer)
{
    cr_assert_eq(parse(MCS_200), (int)strlen(MCS_200));
    cr_assert_eq(resp.status, 200);
    cr_assert_eq(resp.reason.len, 2);
    cr_assert_eq(resp.version_minor, 1);
    cr_assert_eq(resp.body, HTTP_BODY_LENGTH);
    cr_assert_eq(resp.content_length, 4718592);
    cr_assert(resp.keep_alive);
    cr_assert_eq(resp.headers.count, 3);
}

Test(http_response, byte_by_byte)
{
    size_t n = strlen(MCS_200);
    http_response_init(&resp, hdrs, 128);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(http_response_parse(MCS_200, i, &LIM, false, &resp), 0, "at %zu", i);
    cr_assert_eq(http_response_parse(MCS_200, n, &LIM, false, &resp), (int)n);
    cr_assert_eq(resp.content_length, 4718592);
}

Test(http_response, head_then_body_bytes)
{
    const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    cr_assert_eq(parse(s), (int)strlen(s) - 5);
}

Test(http_response, chunked)
{
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 0);
    cr_assert_eq(resp.body, HTTP_BODY_CHUNKED);
    cr_assert(resp.keep_alive);
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: CHUNKED\r\n\r\n"), 0);
    cr_assert_eq(resp.body, HTTP_BODY_CHUNKED);
}

Test(http_response, until_close)
{
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\n\r\n"), 0);
    cr_assert_eq(resp.body, HTTP_BODY_UNTIL_CLOSE);
    cr_assert_not(resp.keep_alive);
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), 0);
    cr_assert_eq(resp.body, HTTP_BODY_UNTIL_CLOSE);
    cr_assert_not(resp.keep_alive);
}

Test(http_response, head_request_has_no_body)
{
    cr_assert_gt(parse_as(MCS_200, true), 0);
    cr_assert_eq(resp.body, HTTP_BODY_NONE);
    cr_assert_eq(resp.content_length, 4718592);
    cr_assert(resp.keep_alive);
    cr_assert_gt(parse_as("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true), 0);
    cr_assert_eq(resp.body, HTTP_BODY_NONE);
}

Test(http_response, statuses_without_body)
{
    static const char *const t[] = {
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_gt(parse(t[i]), 0, "%s", t[i]);
        cr_expect_eq(resp.body, HTTP_BODY_NONE, "%s", t[i]);
        cr_expect(resp.keep_alive, "%s", t[i]);
    }
    cr_assert_gt(parse("HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\n\r\n"), 0);
    cr_assert_eq(resp.body, HTTP_BODY_LENGTH);
}

Test(http_response, continue_then_final)
{
    const char *s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
    int n = parse(s);
    cr_assert_eq(n, 25);
    cr_assert_eq(resp.status, 100);
    http_response_reset(&resp);
    cr_assert_eq(http_response_parse(s + n, strlen(s + n), &LIM, false, &resp), (int)strlen(s + n));
    cr_assert_eq(resp.status, 503);
    cr_assert_eq(resp.content_length, 0);
}

Test(http_response, keep_alive_table)
{
    static const struct { const char *head; bool keep; } t[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
        {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", false},
        {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
        {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: Keep-Alive\r\n\r\n", true},
        {"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n", false},   /* until close */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_gt(parse(t[i].head), 0, "%s", t[i].head);
        cr_expect_eq(resp.keep_alive, t[i].keep, "%s", t[i].head);
    }
}

Test(http_response, repeated_equal_content_length_is_one)
{
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n"), 0);
    cr_assert_eq(resp.content_length, 7);
    cr_assert_gt(parse("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n"), 0);
    cr_assert_eq(resp.content_length, 7);
}

Test(http_response, differing_content_length)
{
    refused("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n", "conflicting Content-Length values");
    refused("HTTP/1.1 200 OK\r\nContent-Length: 7, 8\r\n\r\n", "conflicting Content-Length values");
}

Test(http_response, invalid_content_length)
{
    refused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length");
    refused("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", "invalid Content-Length");
    refused("HTTP/1.1 200 OK\r\nContent-Length: 1a\r\n\r\n", "invalid Content-Length");
    refused("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "invalid Content-Length");
    refused("HTTP/1.1 304 Not Modified\r\nContent-Length: x\r\n\r\n", "invalid Content-Length");
}

Test(http_response, transfer_encoding_with_content_length)
{
    refused("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n",
            "Transfer-Encoding with Content-Length");
}

Test(http_response, chunked_not_last)
{
    refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "chunked is not the last transfer coding");
    refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "chunked is not the last transfer coding");
    refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n", "empty Transfer-Encoding");
}

Test(http_response, transfer_encoding_in_http10)
{
    refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding in HTTP/1.0");
}

Test(http_response, status_line)
{
    refused("HTTP/1.1 20 OK\r\n\r\n", "invalid status code");
    refused("HTTP/1.1 2000 OK\r\n\r\n", "invalid status line");
    refused("HTTP/1.1 600 Nope\r\n\r\n", "invalid status code");
    refused("HTTP/1.1 099 Nope\r\n\r\n", "invalid status code");
    refused("HTTP/2 200 OK\r\n\r\n", "invalid status line");
    refused("HTTP/1.2 200 OK\r\n\r\n", "invalid status line");
    refused("HTTP/1.1  200 OK\r\n\r\n", "invalid status code");
    refused("http/1.1 200 OK\r\n\r\n", "invalid status line");
    refused("HTTP/1.1 200 O\x01K\r\n\r\n", "invalid reason phrase");
}

Test(http_response, empty_reason)
{
    const char *s = "HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n";
    cr_assert_eq(parse(s), (int)strlen(s));
    cr_assert_eq(resp.status, 500);
    cr_assert_eq(resp.reason.len, 0);
    cr_assert_gt(parse("HTTP/1.1 500 \r\n\r\n"), 0);
    cr_assert_eq(resp.reason.len, 0);
    cr_assert_gt(parse("HTTP/1.1 599 status code 599\r\n\r\n"), 0);
    cr_assert_eq(resp.status, 599);
}

Test(http_response, field_strictness)
{
    refused("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n folded\r\n\r\n", "obs-fold or whitespace before a field name");
    refused("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", "bare LF");
    refused("HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", "whitespace between field name and colon");
    refused("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare CR");
    refused("\r\nHTTP/1.1 200 OK\r\n\r\n", "empty line instead of the start line");
}

Test(http_response, head_too_large)
{
    http_limits_t lim = {.max_header_bytes = 40, .max_headers = 2, .max_uri_bytes = 0};
    const char *s = "HTTP/1.1 200 OK\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    http_response_init(&resp, hdrs, 128);
    cr_assert_eq(http_response_parse(s, strlen(s), &lim, false, &resp), -502);
    cr_assert_str_eq(resp.error, "response head too large");
    http_response_reset(&resp);
    cr_assert_eq(http_response_parse(s, 39, &lim, false, &resp), 0);
    cr_assert_eq(http_response_parse(s, 40, &lim, false, &resp), -502);
}

Test(http_response, too_many_fields)
{
    http_limits_t lim = {.max_header_bytes = 4096, .max_headers = 2, .max_uri_bytes = 0};
    const char *s = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    http_response_init(&resp, hdrs, 128);
    cr_assert_eq(http_response_parse(s, strlen(s), &lim, false, &resp), -502);
    cr_assert_str_eq(resp.error, "too many header fields");
}

static bool shareable(const char *s)
{
    cr_assert_gt(parse(s), 0, "%s", s);
    return http_response_is_shareable(s, &resp);
}

Test(http_response, only_a_complete_200_any_asker_may_have_is_shareable)
{
    cr_expect(shareable(MCS_200));
    cr_expect(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nVary: Accept\r\n\r\n"));
    cr_expect(shareable("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVary: accept, Accept\r\n"
                        "Cache-Control: max-age=0, public\r\n\r\n"));
    /* A 4xx or 5xx belongs to the request that caused it. */
    cr_expect_not(shareable("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 203 Non-Authoritative Information\r\nContent-Length: 0\r\n\r\n"));
    /* Framed by Content-Length only. */
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"));
    /* What one client may have. */
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nSet-Cookie: s=1\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nset-cookie: s=1\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: no-store\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: max-age=5, Private\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: private=\"x\"\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: no-cache\r\n\r\n"));
    /* Vary on anything but Accept (which the key holds). */
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nVary: *\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nVary: Accept, User-Agent\r\n\r\n"));
    cr_expect_not(shareable("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nVary: Accept\r\nVary: Cookie\r\n\r\n"));
}
