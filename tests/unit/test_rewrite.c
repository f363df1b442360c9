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

/* The share key of a client's request: taken from the request as the MCS
 * gets it. */
static const char *share_key(const char *head)
{
    static char key[1024];
    const char *up = upstream_head(head);
    size_t n = rewrite_share_key(up, strlen(up), key, sizeof key - 1);
    cr_assert_gt(n, 0, "%s", head);
    key[n] = '\0';
    return key;
}

Test(rewrite, the_share_key_is_the_request_line_and_accept_lines_as_forwarded)
{
    cr_expect_str_eq(share_key("GET /config/worker HTTP/1.1\r\nHost: a\r\nUser-Agent: Ignition/2.14.0\r\n"
                               "Accept: application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1\r\n\r\n"),
                     "GET /config/worker HTTP/1.1\r\n"
                     "Accept: application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1\r\n");
    /* Every Accept line, in order, each as sent: the gate does not read them. */
    cr_expect_str_eq(share_key("GET /config/worker HTTP/1.1\r\nACCEPT: b\r\nHost: a\r\naccept: A\r\n\r\n"),
                     "GET /config/worker HTTP/1.1\r\nACCEPT: b\r\naccept: A\r\n");
    /* Fields the MCS does not read are left out: two Ignitions on other hosts share. */
    cr_expect_str_eq(share_key("GET /config/worker HTTP/1.1\r\nHost: b\r\nX-Forwarded-For: 10.0.0.1\r\n"
                               "Accept-Encoding: identity\r\n\r\n"),
                     "GET /config/worker HTTP/1.1\r\n");
}

Test(rewrite, the_share_key_is_taken_after_the_rewrite)
{
    /* Connection: Accept takes Accept off the forwarded request: the key
     * must not hold it, or the request would share the answer to another
     * Accept (the MCS sees none, and serves spec 2.2.0). */
    cr_expect_str_eq(share_key("GET /config/worker HTTP/1.1\r\nHost: a\r\nConnection: Accept\r\n"
                               "Accept: application/vnd.coreos.ignition+json;version=3.4.0\r\n\r\n"),
                     "GET /config/worker HTTP/1.1\r\n");
    /* The token parameter is stripped before the MCS, and so from the key. */
    cr_expect_str_eq(share_key("GET /config/worker?token=s3cret HTTP/1.1\r\nHost: a\r\nAccept: x\r\n\r\n"),
                     "GET /config/worker HTTP/1.1\r\nAccept: x\r\n");
    /* Any other query is sent, and so in the key. */
    cr_expect_str_eq(share_key("GET /config/worker?a=1 HTTP/1.1\r\nHost: a\r\nAccept: x\r\n\r\n"),
                     "GET /config/worker?a=1 HTTP/1.1\r\nAccept: x\r\n");
}

Test(rewrite, a_share_key_that_does_not_fit_is_none)
{
    const char *up = upstream_head("GET /config/worker HTTP/1.1\r\nHost: a\r\nAccept: xxxxxxxxxxxxxxxxxxxx\r\n\r\n");
    char key[40];
    cr_expect_eq(rewrite_share_key(up, strlen(up), key, sizeof key), 0);
}
