#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>

#include "proxy/rewrite.h"

/* The request as the MCS gets it. */
static const char *upstream_head(const char *head)
{
    static http_header_t fields[32];
    static char out[2048];
    http_request_t req;
    http_limits_t lim = {16384, 32, 8192};
    http_request_init(&req, fields, 32);
    cr_assert_gt(http_request_parse(head, strlen(head), &lim, &req), 0, "%s", head);
    struct sockaddr_storage peer = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&peer;
    in->sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.9", &in->sin_addr);
    size_t n = rewrite_request(out, sizeof out - 1, head, &req, false, "mcs", &peer);
    cr_assert_gt(n, 0);
    out[n] = '\0';
    return out;
}

Test(rewrite, the_gates_credentials_never_go_upstream)
{
    const char *up = upstream_head("GET /config/worker?token=s3cret HTTP/1.1\r\nHost: a\r\n"
                                   "Authorization: Bearer s3cret\r\nAccept: x\r\n\r\n");
    cr_assert_str_eq(up, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAccept: x\r\nX-Forwarded-For: 127.0.0.9\r\n\r\n");
    up = upstream_head("GET /config/worker?a=1&token=s3cret&b HTTP/1.1\r\nHost: a\r\n\r\n");
    cr_assert_str_eq(up, "GET /config/worker?a=1&b HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 127.0.0.9\r\n\r\n");
    /* Other queries pass as sent. */
    up = upstream_head("GET /config/worker?tokens=1 HTTP/1.1\r\nHost: a\r\n\r\n");
    cr_assert_str_eq(up, "GET /config/worker?tokens=1 HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 127.0.0.9\r\n\r\n");
}
