/* sockio: non-blocking reads and writes on a socket, plain or TLS, behind
 * one interface, so that the proxy's state machines never branch on TLS.
 * This is the one place that knows OS and OpenSSL I/O details. */
#ifndef SKEWGATE_SOCKIO_H
#define SKEWGATE_SOCKIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <openssl/ssl.h>

typedef struct sockio {
    int fd;
    SSL *ssl;           /* NULL for plain */
} sockio_t;

/* Results below zero: */
#define SOCKIO_ERROR     (-1)   /* fatal; close */
#define SOCKIO_WANT_READ (-2)   /* retry when the fd is readable */
#define SOCKIO_WANT_WRITE (-3)  /* retry when the fd is writable */

/* >0 bytes read, 0 orderly end of stream, or a SOCKIO_ code. */
ssize_t sockio_read(sockio_t *io, void *buf, size_t len);
/* >0 bytes written (possibly fewer than len), or a SOCKIO_ code. */
ssize_t sockio_write(sockio_t *io, const void *buf, size_t len);
/* Drives a TLS handshake (server or client side as the SSL was set up):
 * 1 done, or a SOCKIO_ code. */
int sockio_handshake(sockio_t *io);
/* Bytes already inside OpenSSL (decrypted or read ahead): readable
 * without waiting for the fd, which poll cannot tell. */
bool sockio_pending(const sockio_t *io);
/* Sends close_notify when TLS (best effort, never blocks), then closes. */
void sockio_close(sockio_t *io);

#endif
