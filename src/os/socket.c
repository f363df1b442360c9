#include <errno.h>
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
