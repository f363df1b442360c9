#include <errno.h>
#include <unistd.h>
#include <sys/socket.h>
#include <openssl/err.h>

#include "sockio.h"

static ssize_t sockio_ssl_result(SSL *ssl, int ret)
{
    switch (SSL_get_error(ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        return SOCKIO_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return SOCKIO_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == EAGAIN || errno == EINTR)
            return SOCKIO_WANT_READ;
        /* With SSL_OP_IGNORE_UNEXPECTED_EOF a missing close_notify reads
         * as SSL_ERROR_ZERO_RETURN; anything here is a real error. */
        ERR_clear_error();
        return SOCKIO_ERROR;
    default:
        ERR_clear_error();
        return SOCKIO_ERROR;
    }
}

ssize_t sockio_read(sockio_t *io, void *buf, size_t len)
{
    if (io->ssl) {
        size_t got = 0;
        /* A stale queue entry would turn WANT_READ into SSL_ERROR_SSL. */
        ERR_clear_error();
        int ret = SSL_read_ex(io->ssl, buf, len, &got);
        return ret > 0 ? (ssize_t)got : sockio_ssl_result(io->ssl, ret);
    }
    for (;;) {
        ssize_t n = read(io->fd, buf, len);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN ? SOCKIO_WANT_READ : SOCKIO_ERROR;
    }
}

ssize_t sockio_write(sockio_t *io, const void *buf, size_t len)
{
    if (io->ssl) {
        size_t put = 0;
        ERR_clear_error();
        int ret = SSL_write_ex(io->ssl, buf, len, &put);
        return ret > 0 ? (ssize_t)put : sockio_ssl_result(io->ssl, ret);
    }
    for (;;) {
        /* send(MSG_NOSIGNAL): a peer that went away must not raise SIGPIPE. */
        ssize_t n = send(io->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN ? SOCKIO_WANT_WRITE : SOCKIO_ERROR;
    }
}

int sockio_handshake(sockio_t *io)
{
    ERR_clear_error();
    int ret = SSL_do_handshake(io->ssl);
    if (ret == 1)
        return 1;
    ssize_t r = sockio_ssl_result(io->ssl, ret);
    return r == 0 ? SOCKIO_ERROR : (int)r;
}

bool sockio_pending(const sockio_t *io)
{
    /* With read-ahead, whole records can wait in OpenSSL undecrypted, where
     * SSL_pending does not see them. */
    return io->ssl && SSL_has_pending(io->ssl);
}

void sockio_close(sockio_t *io)
{
    if (io->ssl) {
        /* One non-blocking attempt; a peer that does not read it loses nothing. */
        if (SSL_is_init_finished(io->ssl))
            SSL_shutdown(io->ssl);
        SSL_free(io->ssl);
        io->ssl = NULL;
        ERR_clear_error();
    }
    if (io->fd >= 0) {
        close(io->fd);
        io->fd = -1;
    }
}
