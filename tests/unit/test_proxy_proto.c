#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>

#include "core/addr.h"
#include "http/proxy_proto.h"

static int parse(const void *buf, size_t len, proxy_hdr_t *h)
{
    return proxy_hdr_parse((const unsigned char *)buf, len, h);
}

static void assert_src(const proxy_hdr_t *h, const char *ip, unsigned port)
{
    char text[ADDR_IP_TEXT_LEN];
    cr_assert(h->has_addr);
    addr_ip_text(&h->src, text, sizeof text);
    cr_assert_str_eq(text, ip);
    cr_assert_eq(addr_port(&h->src), port);
}

Test(proxy_proto, v1_tcp4_and_tcp6_give_the_source)
{
    proxy_hdr_t h;
    const char *v4 = "PROXY TCP4 192.0.2.7 10.0.0.1 56324 22623\r\nGET / HTTP/1.1\r\n";
    int r = parse(v4, strlen(v4), &h);
    cr_assert_eq(r, (int)strlen("PROXY TCP4 192.0.2.7 10.0.0.1 56324 22623\r\n"));
    cr_assert_eq(h.version, 1);
    assert_src(&h, "192.0.2.7", 56324);
    cr_assert_eq(addr_port(&h.dst), 22623);
    const char *v6 = "PROXY TCP6 2001:db8::1 ::1 1 65535\r\n";
    cr_assert_eq(parse(v6, strlen(v6), &h), (int)strlen(v6));
    assert_src(&h, "2001:db8::1", 1);
}

Test(proxy_proto, v1_unknown_keeps_the_peer)
{
    proxy_hdr_t h;
    const char *u = "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n";
    cr_assert_eq(parse(u, strlen(u), &h), (int)strlen(u));
    cr_assert_not(h.has_addr);
    cr_assert_eq(parse("PROXY UNKNOWN\r\n", 15, &h), 15);
}

Test(proxy_proto, v1_incomplete_needs_more_and_bad_ones_fail)
{
    proxy_hdr_t h;
    const char *full = "PROXY TCP4 192.0.2.7 10.0.0.1 56324 22623\r\n";
    for (size_t n = 0; n < strlen(full); n++)
        cr_assert_eq(parse(full, n, &h), 0, "prefix of %zu bytes", n);
    static const char *const bad[] = {
        "GET / HTTP/1.1\r\n",                               /* no header at all */
        "PROXY TCP4 192.0.2.7 10.0.0.1 56324 22623\n",      /* bare LF */
        "PROXY TCP4 192.0.2.7 10.0.0.1 56324\r\n",          /* a port missing */
        "PROXY TCP4 192.0.2.7 10.0.0.1 56324 22623 x\r\n",  /* one field too many */
        "PROXY TCP4 192.0.2.7  10.0.0.1 56324 22623\r\n",   /* two spaces */
        "PROXY TCP4 ::1 10.0.0.1 56324 22623\r\n",          /* family and address disagree */
        "PROXY TCP6 192.0.2.7 ::1 1 2\r\n",
        "PROXY TCP4 192.0.2.7 10.0.0.1 65536 22623\r\n",    /* port out of range */
        "PROXY TCP4 192.0.2.7 10.0.0.1 0443 22623\r\n",     /* leading zero */
        "PROXY TCP4 192.0.2.256 10.0.0.1 1 2\r\n",
        "PROXY UDP4 192.0.2.7 10.0.0.1 1 2\r\n",
        "proxy TCP4 192.0.2.7 10.0.0.1 1 2\r\n",
        "PROXY TCP4 192.0.2.7 10.0.0.1 1 2\x01\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(parse(bad[i], strlen(bad[i]), &h), -1, "%s", bad[i]);
    /* No CRLF within the spec's 107 bytes. */
    char longline[200];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "PROXY UNKNOWN ", 14);
    cr_assert_eq(parse(longline, 106, &h), 0);
    cr_assert_eq(parse(longline, 107, &h), -1);
}

static size_t v2(unsigned char *b, unsigned ver_cmd, unsigned fam, size_t addr_len)
{
    static const unsigned char sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
    memcpy(b, sig, 12);
    b[12] = (unsigned char)ver_cmd;
    b[13] = (unsigned char)fam;
    b[14] = (unsigned char)(addr_len >> 8);
    b[15] = (unsigned char)addr_len;
    return 16 + addr_len;
}

Test(proxy_proto, v2_inet_inet6_local_and_tlvs)
{
    unsigned char b[600] = {0};
    proxy_hdr_t h;
    size_t n = v2(b, 0x21, 0x11, 12);
    inet_pton(AF_INET, "198.51.100.9", b + 16);
    inet_pton(AF_INET, "10.0.0.1", b + 20);
    b[24] = 0x30, b[25] = 0x39;     /* 12345 */
    b[26] = 0x58, b[27] = 0x6f;
    memcpy(b + n, "GET", 3);
    cr_assert_eq(parse(b, n + 3, &h), (int)n);
    cr_assert_eq(h.version, 2);
    assert_src(&h, "198.51.100.9", 12345);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(parse(b, k, &h), 0, "prefix of %zu bytes", k);

    /* TLVs after the addresses are skipped. */
    n = v2(b, 0x21, 0x21, 36 + 20);
    inet_pton(AF_INET6, "2001:db8::7", b + 16);
    cr_assert_eq(parse(b, n, &h), (int)n);
    assert_src(&h, "2001:db8::7", 0);

    /* LOCAL (a health check): the peer stands. */
    n = v2(b, 0x20, 0x00, 0);
    cr_assert_eq(parse(b, n, &h), 16);
    cr_assert_not(h.has_addr);
    n = v2(b, 0x21, 0x31, 216);
    cr_assert_eq(parse(b, n, &h), (int)n);
    cr_assert_not(h.has_addr);
}

Test(proxy_proto, v2_bad_ones_fail)
{
    unsigned char b[600] = {0};
    proxy_hdr_t h;
    size_t n = v2(b, 0x11, 0x11, 12);                   /* version 1 in a v2 signature */
    cr_assert_eq(parse(b, n, &h), -1);
    n = v2(b, 0x22, 0x11, 12);                          /* command 2 */
    cr_assert_eq(parse(b, n, &h), -1);
    n = v2(b, 0x21, 0x11, 11);                          /* too short for IPv4 */
    cr_assert_eq(parse(b, n, &h), -1);
    n = v2(b, 0x21, 0x21, 12);                          /* too short for IPv6 */
    cr_assert_eq(parse(b, n, &h), -1);
    n = v2(b, 0x21, 0x12, 12);                          /* datagram */
    cr_assert_eq(parse(b, n, &h), -1);
    n = v2(b, 0x21, 0x41, 12);                          /* family 4 */
    cr_assert_eq(parse(b, n, &h), -1);
    v2(b, 0x21, 0x11, PROXY_HDR_MAX - 16 + 1);           /* over the bound: refused before it is read */
    cr_assert_eq(parse(b, 16, &h), -1);
    n = v2(b, 0x21, 0x11, PROXY_HDR_MAX - 16);           /* at the bound */
    cr_assert_eq(parse(b, n, &h), (int)n);
    b[5] = 'x';                                         /* signature broken */
    cr_assert_eq(parse(b, 16, &h), -1);
}
