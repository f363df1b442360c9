#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/cidr.h"

int cidr_parse(const char *text, cidr_t *out, const char **why)
{
    char ip[64];
    const char *slash = strchr(text, '/');
    size_t iplen = slash ? (size_t)(slash - text) : strlen(text);
    if (iplen == 0 || iplen >= sizeof ip) {
        *why = "expected IP/PREFIX, such as 10.0.0.0/16 or ::1/128";
        return -1;
    }
    memcpy(ip, text, iplen);
    ip[iplen] = '\0';
    cidr_t c = {0};
    if (inet_pton(AF_INET, ip, c.addr) == 1) {
        c.family = AF_INET;
    } else if (inet_pton(AF_INET6, ip, c.addr) == 1) {
        c.family = AF_INET6;
    } else {
        *why = "not an IPv4 or IPv6 address (expected IP/PREFIX, such as 10.0.0.0/16 or ::1/128)";
        return -1;
    }
    unsigned max = c.family == AF_INET ? 32 : 128, prefix = max;
    if (slash) {
        const char *p = slash + 1;
        /* Decimal, no sign, no leading zero: "/016" is more likely a typo than 16. */
        if (*p == '\0' || (p[0] == '0' && p[1] != '\0') || strspn(p, "0123456789") != strlen(p) || strlen(p) > 3) {
            *why = "the prefix length after '/' must be a decimal number";
            return -1;
        }
        prefix = 0;
        for (; *p; p++)
            prefix = prefix * 10 + (unsigned)(*p - '0');
        if (prefix > max) {
            *why = c.family == AF_INET ? "an IPv4 prefix length is at most 32" : "an IPv6 prefix length is at most 128";
            return -1;
        }
    }
    c.prefix = (uint8_t)prefix;
    for (unsigned bit = prefix; bit < max; bit++)
        if (c.addr[bit / 8] & (0x80u >> (bit % 8))) {
            *why = "host bits are set past the prefix length (write the network address, such as 10.0.0.0/16)";
            return -1;
        }
    *out = c;
    return 0;
}

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

bool cidr_match(const cidr_t *c, const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        return c->family == AF_INET && prefix_equal((const uint8_t *)&in->sin_addr, c->addr, c->prefix);
    }
    if (ss->ss_family != AF_INET6)
        return false;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    const uint8_t *a = in6->sin6_addr.s6_addr;
    if (c->family == AF_INET6)
        return prefix_equal(a, c->addr, c->prefix);
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && prefix_equal(a + 12, c->addr, c->prefix);
}

bool cidr_list_match(const cidr_t *list, size_t n, const struct sockaddr_storage *ss)
{
    for (size_t i = 0; i < n; i++)
        if (cidr_match(&list[i], ss))
            return true;
    return false;
}
