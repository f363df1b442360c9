#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "http/proxy_proto.h"

static const unsigned char v2_sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
static const char v1_sig[] = "PROXY ";

/* Does buf[0..len) begin sig[0..siglen), as far as both go? */
static bool starts(const unsigned char *buf, size_t len, const void *sig, size_t siglen)
{
    return memcmp(buf, sig, len < siglen ? len : siglen) == 0;
}

/* A port in decimal, 0..65535, no sign, no leading zero. */
static bool v1_port(const char *s, size_t len, unsigned *port)
{
    if (len == 0 || len > 5 || (s[0] == '0' && len > 1))
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *port = v;
    return v <= 65535;
}

static bool v1_addr(int family, const char *s, size_t len, unsigned port, struct sockaddr_storage *ss)
{
    char text[64];
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, s, len);
    text[len] = '\0';
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        return inet_pton(AF_INET, text, &in->sin_addr) == 1;
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)port);
    return inet_pton(AF_INET6, text, &in6->sin6_addr) == 1;
}

/* "PROXY TCP4 SRC DST SPORT DPORT\r\n", "PROXY TCP6 ...", "PROXY UNKNOWN ...\r\n". */
static int v1_parse(const unsigned char *buf, size_t len, proxy_hdr_t *out)
{
    size_t scan = len < PROXY_HDR_V1_MAX ? len : PROXY_HDR_V1_MAX;
    const unsigned char *lf = memchr(buf, '\n', scan);
    if (!lf)
        return len >= PROXY_HDR_V1_MAX ? -1 : 0;
    size_t line_len = (size_t)(lf - buf) + 1;
    if (line_len < 2 || buf[line_len - 2] != '\r')
        return -1;
    const char *line = (const char *)buf;
    size_t end = line_len - 2;
    for (size_t i = 0; i < end; i++)
        if (buf[i] < 0x20 || buf[i] > 0x7e)
            return -1;
    /* Split on single spaces: exactly what the spec writes. */
    const char *part[6];
    size_t plen[6], n = 0, at = sizeof v1_sig - 1;
    while (at <= end && n < 6) {
        const char *sp = memchr(line + at, ' ', end - at);
        size_t stop = sp ? (size_t)(sp - line) : end;
        part[n] = line + at;
        plen[n++] = stop - at;
        at = stop + 1;
        if (!sp)
            break;
    }
    *out = (proxy_hdr_t){.version = 1};
    if (n >= 1 && plen[0] == 7 && !memcmp(part[0], "UNKNOWN", 7))
        return (int)line_len;   /* the rest of the line is to be ignored */
    int family = n >= 1 && plen[0] == 4 && !memcmp(part[0], "TCP4", 4)   ? AF_INET
                 : n >= 1 && plen[0] == 4 && !memcmp(part[0], "TCP6", 4) ? AF_INET6
                                                                         : 0;
    if (!family || n != 5 || at <= end)
        return -1;
    unsigned sport, dport;
    if (!v1_port(part[3], plen[3], &sport) || !v1_port(part[4], plen[4], &dport) ||
        !v1_addr(family, part[1], plen[1], sport, &out->src) || !v1_addr(family, part[2], plen[2], dport, &out->dst))
        return -1;
    out->has_addr = true;
    out->addr_len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    return (int)line_len;
}

/* One end of a v2 INET (1) or INET6 (2) address block: the IP and the
 * port at their places, both in network order as the socket wants them. */
static void v2_addr(struct sockaddr_storage *ss, unsigned family, const unsigned char *ip, const unsigned char *port)
{
    memset(ss, 0, sizeof *ss);
    if (family == 1) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        memcpy(&in->sin_addr, ip, 4);
        memcpy(&in->sin_port, port, 2);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        in6->sin6_family = AF_INET6;
        memcpy(&in6->sin6_addr, ip, 16);
        memcpy(&in6->sin6_port, port, 2);
    }
}

static int v2_parse(const unsigned char *buf, size_t len, proxy_hdr_t *out)
{
    if (len < 16)
        return 0;
    unsigned version = buf[12] >> 4, command = buf[12] & 0x0f;
    unsigned family = buf[13] >> 4, transport = buf[13] & 0x0f;
    size_t total = 16 + ((size_t)buf[14] << 8 | buf[15]);
    if (version != 2 || command > 1 || family > 3 || transport > 2 || total > PROXY_HDR_MAX)
        return -1;
    /* The address block each family needs at least; TLVs may follow. */
    static const size_t block[4] = {0, 12, 36, 216};
    if (total - 16 < block[family])
        return -1;
    if (len < total)
        return 0;
    *out = (proxy_hdr_t){.version = 2};
    /* LOCAL: the proxy speaks for itself (a health check); UNSPEC or UNIX:
     * no IP to take. Either way the connection's peer stands. */
    if (command == 0 || family == 0 || family == 3)
        return (int)total;
    if (transport != 1)
        return -1;              /* a PROXY of a datagram flow on a stream */
    /* src address, dst address, src port, dst port */
    size_t alen = family == 1 ? 4 : 16;
    const unsigned char *a = buf + 16;
    v2_addr(&out->src, family, a, a + 2 * alen);
    v2_addr(&out->dst, family, a + alen, a + 2 * alen + 2);
    out->addr_len = family == 1 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    out->has_addr = true;
    return (int)total;
}

int proxy_hdr_parse(const unsigned char *buf, size_t len, proxy_hdr_t *out)
{
    if (len == 0)
        return 0;
    if (starts(buf, len, v2_sig, sizeof v2_sig))
        return len < sizeof v2_sig ? 0 : v2_parse(buf, len, out);
    if (starts(buf, len, v1_sig, sizeof v1_sig - 1))
        return len < sizeof v1_sig - 1 ? 0 : v1_parse(buf, len, out);
    return -1;
}
