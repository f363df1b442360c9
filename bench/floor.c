/* floor: the benchmark's lower bound. A minimal single-threaded epoll loop
 * that answers every HTTP request with a fixed 503 and an empty body, on a
 * plain port and (with a certificate) a TLS port, so that the system calls
 * (and for TLS, OpenSSL's record layer and handshake) are all it costs.
 *
 *   floor PLAIN_PORT [TLS_PORT CERT KEY TLS13_SUITES]   (port 0: the kernel picks)
 *
 * Prints one line "listening plain=P tls=T" on stdout once both listen.
 * No parsing beyond finding the end of each request head ("\r\n\r\n") and a
 * "Connection: close" in it, spelled exactly so, as wrk and bench/run send it
 * (then it answers with Connection: close and closes, as a
 * new-connection-per-request client expects). Requests must have no body.
 * No session cache, no tickets: every handshake is a full one. TLS reads
 * ahead, and a read goes back to epoll unless OpenSSL holds more: one
 * SSL_read per request, no read that only says EAGAIN.
 * SIGTERM or SIGINT ends it cleanly (so callgrind can write its profile). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char RESP_KA[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
static const char RESP_CLOSE[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

#define BUFSZ 16384

struct conn {
    int fd;
    SSL *ssl;         /* NULL: plain */
    int handshaken;
    size_t len;       /* bytes of an incomplete request head kept in buf */
    char buf[BUFSZ];
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static int listen_on(int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4096) ||
        getsockname(fd, (struct sockaddr *)&a, &al)) {
        perror("floor: listen");
        exit(1);
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

static void conn_close(int ep, struct conn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl) SSL_free(c->ssl);
    close(c->fd);
    free(c);
}

/* Writes a whole response; a loopback socket buffer takes it at once, and a
 * client that lets it fill is not one this floor serves. 0 ok, -1 failed. */
static int send_all(struct conn *c, const char *p, size_t n)
{
    while (n) {
        ssize_t w;
        if (c->ssl) {
            int r = SSL_write(c->ssl, p, (int)n);
            if (r <= 0) return -1;
            w = r;
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0) return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int has_close(const char *h, size_t n)
{
    static const char k[] = "\r\nConnection: close\r\n";
    return memmem(h, n, k, sizeof k - 1) != NULL;
}

/* Answers every complete request head in buf; 1: close the connection. */
static int serve(struct conn *c)
{
    size_t off = 0;
    for (;;) {
        char *end = memmem(c->buf + off, c->len - off, "\r\n\r\n", 4);
        if (!end) break;
        size_t hl = (size_t)(end + 4 - (c->buf + off));
        int cl = has_close(c->buf + off, hl);
        if (cl) {
            send_all(c, RESP_CLOSE, sizeof RESP_CLOSE - 1);
            if (c->ssl) SSL_shutdown(c->ssl);
            return 1;
        }
        if (send_all(c, RESP_KA, sizeof RESP_KA - 1)) return 1;
        off += hl;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    return c->len == BUFSZ; /* a head larger than the buffer: give up */
}

static void on_readable(int ep, struct conn *c)
{
    if (c->ssl && !c->handshaken) {
        int r = SSL_accept(c->ssl);
        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) conn_close(ep, c);
            ERR_clear_error();
            return;
        }
        c->handshaken = 1;
    }
    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n;
        if (c->ssl) {
            int r = SSL_read(c->ssl, c->buf + c->len, (int)(BUFSZ - c->len));
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                ERR_clear_error();
                if (e == SSL_ERROR_WANT_READ) return;
                conn_close(ep, c);
                return;
            }
            n = r;
        } else {
            n = recv(c->fd, c->buf + c->len, BUFSZ - c->len, 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
            if (n <= 0) {
                conn_close(ep, c);
                return;
            }
        }
        c->len += (size_t)n;
        if (serve(c)) {
            conn_close(ep, c);
            return;
        }
        /* Level-triggered: epoll says if more is there, unless OpenSSL
         * already read it ahead. */
        if (!c->ssl || !SSL_has_pending(c->ssl)) return;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 6) {
        fprintf(stderr, "usage: floor PLAIN_PORT [TLS_PORT CERT KEY TLS13_SUITES]\n");
        return 2;
    }
    SSL_CTX *ctx = NULL;
    int pport = 0, tport = 0;
    int pfd = listen_on(atoi(argv[1]), &pport), tfd = -1;
    if (argc == 6) {
        ctx = SSL_CTX_new(TLS_server_method());
        /* The bench's one TLS 1.3 policy: these suites, the server's order. */
        SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
        if (SSL_CTX_set_ciphersuites(ctx, argv[5]) != 1) {
            ERR_print_errors_fp(stderr);
            return 1;
        }
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
        SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
        SSL_CTX_set_read_ahead(ctx, 1);
        if (SSL_CTX_use_certificate_chain_file(ctx, argv[3]) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, argv[4], SSL_FILETYPE_PEM) != 1) {
            ERR_print_errors_fp(stderr);
            return 1;
        }
        tfd = listen_on(atoi(argv[2]), &tport);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.ptr = &pfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, pfd, &ev);
    if (tfd >= 0) {
        ev.data.ptr = &tfd;
        epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    }
    printf("listening plain=%d tls=%d\n", pport, tport);
    fflush(stdout);

    struct epoll_event evs[256];
    while (!stop) {
        int n = epoll_wait(ep, evs, 256, 200);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &pfd || p == &tfd) {
                int lfd = *(int *)p;
                for (int k = 0; k < 64; k++) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *c = malloc(sizeof *c);
                    if (!c) { close(fd); continue; }
                    c->fd = fd;
                    c->len = 0;
                    c->handshaken = 0;
                    c->ssl = NULL;
                    if (p == &tfd) {
                        c->ssl = SSL_new(ctx);
                        SSL_set_fd(c->ssl, fd);
                    }
                    struct epoll_event ce = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
                }
            } else {
                on_readable(ep, p);
            }
        }
    }
    close(ep);
    SSL_CTX_free(ctx);
    return 0;
}
