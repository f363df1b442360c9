/* addr: the one place that turns a socket address into text. */
#ifndef SKEWGATE_ADDR_H
#define SKEWGATE_ADDR_H

#include <stddef.h>
#include <sys/socket.h>
#include <arpa/inet.h>

/* Room for any IPv4 or IPv6 address as text, NUL included. */
#define ADDR_IP_TEXT_LEN INET6_ADDRSTRLEN

/* The IP of an AF_INET or AF_INET6 address ("127.0.0.1", "::1") into
 * buf[cap]: its length, or 0 (buf "") for another family. */
size_t addr_ip_text(const struct sockaddr_storage *ss, char *buf, size_t cap);
/* The port of an AF_INET or AF_INET6 address, host order; 0 otherwise. */
unsigned addr_port(const struct sockaddr_storage *ss);

#endif
