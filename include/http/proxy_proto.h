/* proxy_proto: the PROXY protocol header (HAProxy's proxy-protocol.txt,
 * versions 1 and 2) that a load balancer sends first on a connection, so
 * that the gate learns the client's address. A pure parser over the bytes
 * read so far, like the HTTP parsers beside it: it reads what a client
 * sends before anything else, takes no socket and allocates nothing.
 *
 * Results: > 0  the header is complete and valid: its length (the bytes
 *               that follow are the connection's own: TLS or HTTP);
 *            0  more bytes are needed (what is there could still begin a
 *               valid header, and fewer than PROXY_HDR_MAX bytes were seen);
 *           -1  not a valid header: answer 400 and close. */
#ifndef SKEWGATE_HTTP_PROXY_PROTO_H
#define SKEWGATE_HTTP_PROXY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Version 1 is one line of at most 107 bytes, CRLF included (the spec's
 * own bound). Version 2 is 16 bytes and an address block with TLVs: 536
 * bytes in all is the spec's "safe" receive size, room for the largest
 * address block (216 bytes, AF_UNIX) and the TLVs an AWS NLB or HAProxy
 * adds (a few dozen bytes); a longer header is refused. */
#define PROXY_HDR_V1_MAX 107
#define PROXY_HDR_MAX 536

typedef struct proxy_hdr {
    int version;                /* 1 or 2 */
    /* false: use the connection's own peer (v2 LOCAL, v1 UNKNOWN, v2
     * AF_UNSPEC or AF_UNIX): the proxy's health check, say. */
    bool has_addr;
    struct sockaddr_storage src, dst;
    socklen_t addr_len;
} proxy_hdr_t;

int proxy_hdr_parse(const unsigned char *buf, size_t len, proxy_hdr_t *out);

#endif
