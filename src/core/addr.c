#include <string.h>
#include <netinet/in.h>

#include "core/addr.h"

size_t addr_ip_text(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    const void *ip;
    if (ss->ss_family == AF_INET)
        ip = &((const struct sockaddr_in *)ss)->sin_addr;
    else if (ss->ss_family == AF_INET6)
        ip = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    else
        ip = NULL;
    if (!ip || !inet_ntop(ss->ss_family, ip, buf, (socklen_t)cap)) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    return strlen(buf);
}

unsigned addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return 0;
}
