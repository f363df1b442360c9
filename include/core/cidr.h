/* cidr: IP prefixes ("10.0.0.0/16", "::1/128") and whether a socket
 * address falls in one, for listeners[].trusted_proxies. */
#ifndef SKEWGATE_CIDR_H
#define SKEWGATE_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct cidr {
    int family;                 /* AF_INET or AF_INET6 */
    uint8_t prefix;             /* 0..32 or 0..128 */
    uint8_t addr[16];           /* network byte order; bits past prefix are zero */
} cidr_t;

/* "IP/LEN", or a bare IP (one address: /32, /128). Host bits past the
 * prefix are refused, as a typo would widen or shift the range. 0, or -1
 * with a static reason in *why. */
int cidr_parse(const char *text, cidr_t *out, const char **why);
/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) matches the IPv4 prefixes. */
bool cidr_match(const cidr_t *c, const struct sockaddr_storage *ss);
bool cidr_list_match(const cidr_t *list, size_t n, const struct sockaddr_storage *ss);

#endif
