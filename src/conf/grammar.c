/* grammar: the configuration's scalar grammars (durations, sizes,
 * addresses), their inverses for messages, and the address facts the
 * loader's rules ask about (wildcard, loopback, overlap). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "conf/grammar.h"
#include "core/addr.h"

bool grammar_decimal(const char **p, uint64_t *out, bool *overflow)
{
    const char *s = *p;
    uint64_t n = 0;
    *overflow = false;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            *overflow = true;
        else
            n = n * 10 + d;
        s++;
    }
    if (s == *p || *overflow)
        return false;
    *p = s;
    *out = n;
    return true;
}

/* Largest first; "ms" is matched before "m". Days are 24h: a duration
 * here is elapsed time, not the calendar. */
static const struct duration_unit {
    const char *suffix;
    uint64_t ms;
} duration_units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
enum { DURATION_UNIT_MS = 4 };

static const char duration_syntax[] =
    "expected a whole number and a unit (d, h, m, s, ms), e.g. 250ms, 10s, 5m, 1h30m, 7d";

/* The index of the unit at p, or -1. */
static int duration_unit_at(const char *p)
{
    if (p[0] == 'm' && p[1] == 's')
        return DURATION_UNIT_MS;
    for (int i = 0; i < DURATION_UNIT_MS; i++)
        if (*p == duration_units[i].suffix[0])
            return i;
    return -1;
}

int grammar_duration(const char *s, uint64_t *ms, const char **why)
{
    static const char overflow_msg[] = "duration out of range";
    uint64_t total = 0;
    int next_unit = 0;  /* units go largest first, each once: one spelling per value */
    const char *p = s;
    if (*p == '-') {
        *why = "a duration cannot be negative";
        return -1;
    }
    do {
        uint64_t n;
        bool overflow;
        if (!grammar_decimal(&p, &n, &overflow)) {
            *why = overflow ? overflow_msg : duration_syntax;
            return -1;
        }
        int unit = duration_unit_at(p);
        if (unit < next_unit) {
            /* The two mistakes people make, named: 90 for 90s, 1.5h for 1h30m. */
            *why = !*p ? "a number needs a unit (d, h, m, s, ms), e.g. 90s"
                   : *p == '.' || *p == ',' ? "whole numbers of each unit: 1h30m, not 1.5h"
                                            : duration_syntax;
            return -1;
        }
        p += strlen(duration_units[unit].suffix);
        next_unit = unit + 1;
        uint64_t scale = duration_units[unit].ms;
        if (n > (UINT64_MAX - total) / scale) {
            *why = overflow_msg;
            return -1;
        }
        total += n * scale;
    } while (*p);
    *ms = total;
    return 0;
}

int config_parse_duration(const char *s, uint64_t *ms)
{
    const char *why;
    return grammar_duration(s, ms, &why);
}

int grammar_size(const char *s, uint64_t *bytes, const char **why)
{
    static const struct { const char *suffix; unsigned shift; } units[] = {
        {"", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}};
    const char *p = s;
    uint64_t n;
    bool overflow;
    if (!grammar_decimal(&p, &n, &overflow)) {
        *why = overflow ? "size out of range" : "expected bytes or a number with KiB, MiB or GiB, e.g. 16384, 16KiB, 1MiB";
        return -1;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (n > (UINT64_MAX >> units[i].shift)) {
            *why = "size out of range";
            return -1;
        }
        *bytes = n << units[i].shift;
        return 0;
    }
    *why = "expected bytes or a number with KiB, MiB or GiB, e.g. 16384, 16KiB, 1MiB";
    return -1;
}

int config_parse_size(const char *s, uint64_t *bytes)
{
    const char *why;
    return grammar_size(s, bytes, &why);
}

void grammar_format_duration(uint64_t ms, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    /* From hours down: "168h" reads as the limit it is, not "7d". */
    for (size_t i = 1; i < sizeof duration_units / sizeof duration_units[0]; i++) {
        uint64_t n = ms / duration_units[i].ms;
        ms %= duration_units[i].ms;
        if (n && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%llu%s", (unsigned long long)n,
                                     duration_units[i].suffix);
    }
    if (!used)
        snprintf(buf, len, "0s");
}

void grammar_format_size(uint64_t bytes, char *buf, size_t len)
{
    if (bytes && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%lluMiB", (unsigned long long)(bytes >> 20));
    else if (bytes && bytes % 1024 == 0)
        snprintf(buf, len, "%lluKiB", (unsigned long long)(bytes >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

static int parse_port(const char *s, uint16_t *port)
{
    const char *p = s;
    uint64_t n;
    bool overflow;
    if (!grammar_decimal(&p, &n, &overflow) || *p || n > 65535)
        return -1;
    *port = (uint16_t)n;
    return 0;
}

/* Splits "IP:PORT" or "[IPv6]:PORT" into host and port text. */
static int split_host_port(const char *s, char *host, size_t hostlen, const char **port,
                           int *family, const char **why)
{
    const char *host_start = s, *host_end;
    if (s[0] == '[') {
        host_start = s + 1;
        host_end = strchr(s, ']');
        if (!host_end) {
            *why = "missing ']' after the IPv6 address";
            return -1;
        }
        if (host_end[1] != ':') {
            *why = "missing port (expected [IPv6]:PORT)";
            return -1;
        }
        *port = host_end + 2;
        *family = AF_INET6;
    } else {
        host_end = strrchr(s, ':');
        if (!host_end) {
            *why = "missing port (expected IP:PORT, e.g. 0.0.0.0:22623 or [::]:22623)";
            return -1;
        }
        if (strchr(s, ':') != host_end) {
            *why = "an IPv6 address must be in brackets, e.g. [::1]:8443";
            return -1;
        }
        *port = host_end + 1;
        *family = AF_INET;
    }
    size_t n = (size_t)(host_end - host_start);
    if (n >= hostlen) {
        *why = "not an IP address (hostnames are not accepted)";
        return -1;
    }
    memcpy(host, host_start, n);
    host[n] = '\0';
    return 0;
}

int grammar_addr(const char *s, config_addr_t *out, const char **why)
{
    char host[INET6_ADDRSTRLEN];
    const char *port_text;
    int family;
    uint16_t port;
    if (strlen(s) >= sizeof out->text) {
        *why = "address too long";
        return -1;
    }
    if (split_host_port(s, host, sizeof host, &port_text, &family, why) < 0)
        return -1;
    if (parse_port(port_text, &port) < 0) {
        *why = "the port must be a number from 0 to 65535";
        return -1;
    }
    config_addr_t a;
    memset(&a, 0, sizeof a);
    if (family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        if (!*host)
            sin->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
            goto not_ip;
        a.len = sizeof *sin;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a.ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
            goto not_ip;
        a.len = sizeof *sin6;
    }
    snprintf(a.text, sizeof a.text, "%s", s);
    *out = a;
    return 0;
not_ip:
    *why = "not an IP address (hostnames are not accepted)";
    return -1;
}

int config_parse_addr(const char *s, config_addr_t *out)
{
    const char *why;
    return grammar_addr(s, out, &why);
}

bool grammar_addr_is_wildcard(const config_addr_t *a)
{
    if (a->ss.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
}

bool grammar_addr_is_loopback(const config_addr_t *a)
{
    if (a->ss.ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr) >> 24) == 127;
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
}

static bool addr_same_ip(const config_addr_t *a, const config_addr_t *b)
{
    if (a->ss.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&b->ss)->sin_addr.s_addr;
    return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr,
                              &((const struct sockaddr_in6 *)&b->ss)->sin6_addr);
}

bool grammar_addrs_overlap(const config_addr_t *a, const config_addr_t *b)
{
    if (a->ss.ss_family != b->ss.ss_family || addr_port(&a->ss) == 0 || addr_port(&a->ss) != addr_port(&b->ss))
        return false;
    return grammar_addr_is_wildcard(a) || grammar_addr_is_wildcard(b) || addr_same_ip(a, b);
}
