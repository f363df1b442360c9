/* socket: the TCP sockets of the gate and of its clients: listening
 * sockets with the options every worker's copy must share, and
 * non-blocking outgoing connections (the upstream MCS and the Kubernetes
 * API both connect through here). */
#ifndef SKEWGATE_SOCKET_H
#define SKEWGATE_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* One SO_REUSEPORT listening socket (non-blocking, TCP_DEFER_ACCEPT,
 * TCP_NODELAY inherited by accepted sockets, IPv6 v6-only). A port 0 is
 * resolved and written back into ss, so that the other workers bind the
 * same port. The fd, or -1 with the reason in err. */
int socket_listen(struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen);
/* Whether another process listens on the address, whatever its options:
 * a socket bound there without SO_REUSEPORT (SO_REUSEADDR and v6-only as
 * socket_listen's), closed at once. 0 free, or -1 with the reason in err
 * ("address already in use by another process ..." for EADDRINUSE). Call
 * it before socket_listen for an address none of the gate's own sockets
 * overlaps (socket_addr_overlap), and not for port 0. */
int socket_probe_unshared(const struct sockaddr_storage *ss, socklen_t len, char *err, size_t errlen);
/* Same family and port, and the same address or either one the wildcard:
 * two listeners the kernel would call a conflict without SO_REUSEPORT. */
bool socket_addr_overlap(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
bool socket_addr_port_zero(const struct sockaddr_storage *ss);
/* Starts a non-blocking connect (TCP_NODELAY set): the fd, whose
 * writability says the connect ended (socket_connect_result tells how),
 * or -1 with errno set when it failed at once. */
int socket_connect(const struct sockaddr *sa, socklen_t len);
/* After the connecting fd became writable: 0 connected, or -1 with errno
 * set to what the connect failed with. */
int socket_connect_result(int fd);

#endif
