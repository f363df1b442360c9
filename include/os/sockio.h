/* sockio: non-blocking reads and writes on a connected socket, plain or
 * TLS, behind one interface, so that the state machines above never branch
 * on TLS: every read, write and handshake of a client, upstream or API
 * server connection goes through here. The other system calls of the data
 * path have their own homes in this layer (os/socket.h: listen, connect;
 * os/pipe.h: splice); docs/internals.md lists who may make which. */
#ifndef SKEWGATE_SOCKIO_H
#define SKEWGATE_SOCKIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <openssl/ssl.h>

typedef struct sockio {
    int fd;
    SSL *ssl;           /* NULL for plain */
    int send_flags;     /* MSG_MORE while a batch of records goes out */
    bool eof;           /* the peer ended the stream (for OpenSSL's BIO_eof) */
} sockio_t;

/* Results below zero: */
#define SOCKIO_ERROR     (-1)   /* fatal; close */
#define SOCKIO_WANT_READ (-2)   /* retry when the fd is readable */
#define SOCKIO_WANT_WRITE (-3)  /* retry when the fd is writable */

/* >0 bytes read, 0 orderly end of stream, or a SOCKIO_ code. */
ssize_t sockio_read(sockio_t *io, void *buf, size_t len);
/* The socket's own bytes, beneath any TLS session, for what a peer sends
 * before its handshake (a PROXY protocol header). With peek they stay in
 * the socket, so that a reader can take exactly the header and leave the
 * TLS records to OpenSSL. >0, 0 end of stream, or a SOCKIO_ code. */
ssize_t sockio_recv_plain(sockio_t *io, void *buf, size_t len, bool peek);
/* Frees a TLS session whose handshake never began, so that an answer goes
 * out in the clear (a refusal before the handshake). */
void sockio_drop_ssl(sockio_t *io);
/* Flags for sockio_write. SOCKIO_MORE: the caller writes again at once,
 * before it returns to the event loop, so the kernel may hold a part-filled
 * segment for what follows (MSG_MORE). Never set it on the last write
 * before waiting: that one pushes everything out. */
#define SOCKIO_MORE 1u

/* >0 bytes written (possibly fewer than len), or a SOCKIO_ code. */
ssize_t sockio_write(sockio_t *io, const void *buf, size_t len, unsigned flags);
/* Puts a new SSL on io's socket through sockio's own BIO, which reads and
 * sends on the fd directly and honours SOCKIO_MORE for TLS records. The
 * SSL belongs to io from then on, even on failure. 0, or -1 when out of
 * memory (ssl NULL included: pass SSL_new's result straight in). */
int sockio_attach_ssl(sockio_t *io, SSL *ssl);
/* Drives a TLS handshake (server or client side as the SSL was set up):
 * 1 done, or a SOCKIO_ code. */
int sockio_handshake(sockio_t *io);
/* Bytes already inside OpenSSL (decrypted or read ahead): readable
 * without waiting for the fd, which poll cannot tell. */
bool sockio_pending(const sockio_t *io);
/* Gives a TLS connection's record buffers back to the allocator
 * (SSL_free_buffers) when nothing waits in them; OpenSSL allocates them
 * again at the next read or write. True when they are gone (or there were
 * none to keep: plain). */
bool sockio_release_buffers(sockio_t *io);
/* Sends close_notify when TLS (best effort, never blocks), then closes. */
void sockio_close(sockio_t *io);
/* Ends the stream as broken: no close_notify, and a reset (SO_LINGER 0)
 * instead of a FIN, so that the peer cannot take what it got as whole,
 * even for a body that the close was to delimit. */
void sockio_abort(sockio_t *io);

#endif
