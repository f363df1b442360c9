#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "os/socket.h"

#define SOCKET_LISTEN_BACKLOG 1024

int socket_listen(struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    /* Wake us only once the client has sent something: one poll round
     * less per connection (the first read follows accept at once). */
    int defer = 5;
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
    /* Accepted sockets inherit TCP_NODELAY from the listener on Linux: no
     * setsockopt per connection. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)ss, len) < 0 || listen(fd, SOCKET_LISTEN_BACKLOG) < 0) {
        snprintf(err, errlen, "bind/listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t got = len;
    getsockname(fd, (struct sockaddr *)ss, &got);
    return fd;
}

/* Why a probe and not a check after the fact: the gate's own workers
 * share each listener's port through SO_REUSEPORT, and the kernel lets any
 * process of the same effective uid join such a group the same way, so a
 * second gate (or anything else with SO_REUSEPORT) would bind beside the
 * first without an error and take part of its connections. A socket bound
 * WITHOUT SO_REUSEPORT cannot share the port with any listening socket,
 * reuseport or not, of any uid: EADDRINUSE says someone listens there.
 * SO_REUSEADDR is set as on the real sockets, so that connections left in
 * TIME_WAIT by a gate that has just stopped (a restart) do not count: with
 * it, Linux refuses the bind only while a socket on an overlapping address
 * is in LISTEN. IPV6_V6ONLY as on the real sockets, so [::]:P and 0.0.0.0:P
 * stay apart. The probe never listens and is closed at once. */
int socket_probe_unshared(const struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    int rc = bind(fd, (const struct sockaddr *)ss, len);
    int saved = errno;
    close(fd);
    if (rc == 0)
        return 0;
    if (saved == EADDRINUSE)
        snprintf(err, errlen, "address already in use by another process (another skewgate, or any other "
                 "listener): refusing to share it");
    else
        snprintf(err, errlen, "bind: %s", strerror(saved));
    return -1;
}

static uint16_t ss_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_port;
    if (ss->ss_family == AF_INET6)
        return ((const struct sockaddr_in6 *)ss)->sin6_port;
    return 0;
}

bool socket_addr_overlap(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family || ss_port(a) != ss_port(b))
        return false;
    if (a->ss_family == AF_INET) {
        in_addr_t x = ((const struct sockaddr_in *)a)->sin_addr.s_addr;
        in_addr_t y = ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        return x == y || x == htonl(INADDR_ANY) || y == htonl(INADDR_ANY);
    }
    if (a->ss_family == AF_INET6) {
        const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
        const struct in6_addr *y = &((const struct sockaddr_in6 *)b)->sin6_addr;
        return IN6_ARE_ADDR_EQUAL(x, y) || IN6_IS_ADDR_UNSPECIFIED(x) || IN6_IS_ADDR_UNSPECIFIED(y);
    }
    return false;
}

bool socket_addr_port_zero(const struct sockaddr_storage *ss)
{
    return ss_port(ss) == 0;
}

int socket_connect(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Requests and heads are single writes the peer must see at once. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int socket_connect_result(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return -1;
    if (err == 0)
        return 0;
    errno = err;
    return -1;
}
