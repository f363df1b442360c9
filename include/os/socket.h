/* socket: the TCP sockets of the gate and of its clients: listening
 * sockets with the options every worker's copy must share, and
 * non-blocking outgoing connections (the upstream MCS and the Kubernetes
 * API both connect through here). */
#ifndef SKEWGATE_SOCKET_H
#define SKEWGATE_SOCKET_H

#include <stddef.h>
#include <sys/socket.h>

/* One SO_REUSEPORT listening socket (non-blocking, TCP_DEFER_ACCEPT,
 * TCP_NODELAY inherited by accepted sockets, IPv6 v6-only). A port 0 is
 * resolved and written back into ss, so that the other workers bind the
 * same port. The fd, or -1 with the reason in err. */
int socket_listen(struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen);
/* Starts a non-blocking connect (TCP_NODELAY set): the fd, whose
 * writability says the connect ended (socket_connect_result tells how),
 * or -1 with errno set when it failed at once. */
int socket_connect(const struct sockaddr *sa, socklen_t len);
/* After the connecting fd became writable: 0 connected, or -1 with errno
 * set to what the connect failed with. */
int socket_connect_result(int fd);

#endif
