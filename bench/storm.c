/* storm: N nodes booting at once, the client of bench/run scenario S6.
 * Each node opens its own TCP connection and does a full TLS handshake,
 * sends one GET with Ignition's headers and reads the answer; the body
 * must be exactly SIZE bytes with the SHA-256 given, or the node has not
 * got its config. Like Ignition (DESIGN 1.2) a node retries every 5xx and
 * every transport error on a new connection, backoff 200 ms doubling to
 * 5 s, and gives an attempt 10 s for the response head; a 4xx fails the
 * node at once, as it drops Ignition to the emergency shell. One thread,
 * epoll.
 *
 *   storm PORT PATH NODES SIZE SHA256_HEX ACCEPT DEADLINE_S
 *
 * Prints one JSON line: {"nodes", "ok", "failed", "retries", "bad_bodies",
 * "statuses": {code: count}, "done_ms": [each node's time from the start
 * to its last body byte, ascending]}. A node still without its config at
 * DEADLINE_S has failed. Exit 0 when every node got its config. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX 16384
#define READ_CHUNK (256 * 1024)
#define BACKOFF_FIRST_MS 200
#define BACKOFF_CAP_MS 5000
#define HEAD_TIMEOUT_MS 10000
#define MAX_STATUS 600

typedef enum { N_WAIT, N_CONNECT, N_HANDSHAKE, N_SEND, N_HEAD, N_BODY, N_DONE, N_FAILED } node_state_t;

typedef struct node {
    int fd;
    SSL *ssl;
    node_state_t state;
    size_t sent;
    char head[HEAD_MAX];
    size_t head_len;
    size_t body_want, body_got;
    EVP_MD_CTX *md;
    uint64_t retry_at_ms, head_deadline_ms, backoff_ms;
    double done_ms;
} node_t;

static node_t *nodes;
static int n_nodes, epfd, port;
static SSL_CTX *ctx;
static char request[1024];
static size_t request_len, want_size;
static unsigned char want_hash[32];
static unsigned long retries, bad_bodies, statuses[MAX_STATUS];
static uint64_t start_ms;
static char scratch[READ_CHUNK];

static double now_ms_f(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t now_ms(void) { return (uint64_t)now_ms_f(); }

static void watch(node_t *n, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = n};
    epoll_ctl(epfd, EPOLL_CTL_MOD, n->fd, &ev);
}

static void drop(node_t *n)
{
    if (n->ssl)
        SSL_free(n->ssl);
    n->ssl = NULL;
    if (n->fd >= 0)
        close(n->fd);   /* also leaves the epoll set */
    n->fd = -1;
}

/* A failed attempt: a new connection after the backoff, as Ignition. */
static void retry(node_t *n)
{
    drop(n);
    retries++;
    n->state = N_WAIT;
    n->retry_at_ms = now_ms() + n->backoff_ms;
    n->backoff_ms = n->backoff_ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : n->backoff_ms * 2;
}

static void attempt(node_t *n)
{
    n->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (n->fd < 0) {
        retry(n);
        return;
    }
    int one = 1;
    setsockopt(n->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = n};
    if ((connect(n->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) ||
        epoll_ctl(epfd, EPOLL_CTL_ADD, n->fd, &ev) < 0) {
        retry(n);
        return;
    }
    n->state = N_CONNECT;
    n->sent = n->head_len = n->body_got = n->body_want = 0;
    EVP_DigestInit_ex(n->md, EVP_sha256(), NULL);
}

/* After an SSL call that returned r <= 0: wait for what it wants, or, on
 * a real error (a reset, a cut, a close), try again as Ignition does. */
static void wait_or_retry(node_t *n, int r)
{
    int e = SSL_get_error(n->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        watch(n, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT);
    else
        retry(n);
}

/* The head in n->head is complete: its status and Content-Length; 0
 * when the body follows, else the status (0 too for no usable head). */
static int take_head(node_t *n, const char *end)
{
    int status = 0;
    if (sscanf(n->head, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status >= MAX_STATUS)
        return -1;
    statuses[status]++;
    if (status != 200)
        return status;
    const char *cl = memmem(n->head, (size_t)(end - n->head), "\r\nContent-Length:", 17);
    if (!cl)
        cl = memmem(n->head, (size_t)(end - n->head), "\r\ncontent-length:", 17);
    if (!cl)
        return -1;
    n->body_want = strtoull(cl + 17, NULL, 10);
    return 0;
}

static void body_bytes(node_t *n, const char *p, size_t len)
{
    EVP_DigestUpdate(n->md, p, len);
    n->body_got += len;
}

static void finish(node_t *n)
{
    unsigned char h[32];
    unsigned int hl = 0;
    EVP_DigestFinal_ex(n->md, h, &hl);
    if (n->body_got != want_size || memcmp(h, want_hash, 32) != 0) {
        bad_bodies++;
        retry(n);
        return;
    }
    n->done_ms = now_ms_f() - (double)start_ms;
    n->state = N_DONE;
    drop(n);
}

static void read_response(node_t *n)
{
    for (;;) {
        int r = SSL_read(n->ssl, scratch, sizeof scratch);
        if (r <= 0) {
            wait_or_retry(n, r);   /* a close or cut before the body was whole: retried */
            return;
        }
        size_t got = (size_t)r, off = 0;
        if (n->state == N_HEAD) {
            /* Bytes of earlier reads were all head: the end was not in them. */
            size_t room = sizeof n->head - 1 - n->head_len;
            size_t take = got < room ? got : room;
            memcpy(n->head + n->head_len, scratch, take);
            n->head_len += take;
            n->head[n->head_len] = '\0';
            char *end = strstr(n->head, "\r\n\r\n");
            if (!end) {
                if (n->head_len == sizeof n->head - 1) {
                    retry(n);
                    return;
                }
                continue;
            }
            int status = take_head(n, end);
            if (status >= 400 && status < 500) {
                n->state = N_FAILED;   /* Ignition gives up on a 4xx: the emergency shell */
                drop(n);
                return;
            }
            if (status != 0) {
                retry(n);   /* a 5xx (Ignition retries it) or no usable head */
                return;
            }
            n->state = N_BODY;
            size_t head_bytes = (size_t)(end + 4 - n->head);
            body_bytes(n, n->head + head_bytes, n->head_len - head_bytes);
            off = take;
        }
        if (off < got)
            body_bytes(n, scratch + off, got - off);
        if (n->body_got >= n->body_want) {
            finish(n);
            return;
        }
    }
}

static void step(node_t *n)
{
    int r;
    switch (n->state) {
    case N_CONNECT: {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            retry(n);
            return;
        }
        n->ssl = SSL_new(ctx);
        SSL_set_fd(n->ssl, n->fd);
        SSL_set_connect_state(n->ssl);
        n->state = N_HANDSHAKE;
    }
        /* fall through */
    case N_HANDSHAKE:
        r = SSL_do_handshake(n->ssl);
        if (r != 1) {
            wait_or_retry(n, r);
            return;
        }
        n->state = N_SEND;
        /* fall through */
    case N_SEND:
        while (n->sent < request_len) {
            r = SSL_write(n->ssl, request + n->sent, (int)(request_len - n->sent));
            if (r <= 0) {
                wait_or_retry(n, r);
                return;
            }
            n->sent += (size_t)r;
        }
        n->state = N_HEAD;
        n->head_deadline_ms = now_ms() + HEAD_TIMEOUT_MS;
        watch(n, EPOLLIN);
        /* fall through */
    case N_HEAD:
    case N_BODY:
        read_response(n);
        return;
    default:
        return;
    }
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: storm PORT PATH NODES SIZE SHA256_HEX ACCEPT DEADLINE_S\n");
        return 2;
    }
    port = atoi(argv[1]);
    n_nodes = atoi(argv[3]);
    want_size = strtoull(argv[4], NULL, 10);
    uint64_t deadline_s = strtoull(argv[7], NULL, 10);
    if (n_nodes < 1 || strlen(argv[5]) != 64) {
        fprintf(stderr, "storm: bad NODES or SHA256\n");
        return 2;
    }
    for (int i = 0; i < 32; i++) {
        int hi = hexval(argv[5][2 * i]), lo = hexval(argv[5][2 * i + 1]);
        if (hi < 0 || lo < 0) {
            fprintf(stderr, "storm: bad SHA256\n");
            return 2;
        }
        want_hash[i] = (unsigned char)(hi * 16 + lo);
    }
    int rl = snprintf(request, sizeof request,
                      "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: %s\r\nAccept-Encoding: identity\r\n"
                      "User-Agent: Ignition/2.14.0\r\n\r\n", argv[2], argv[6]);
    if (rl <= 0 || (size_t)rl >= sizeof request)
        return 2;
    request_len = (size_t)rl;
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);   /* a new node resumes nothing */
    epfd = epoll_create1(EPOLL_CLOEXEC);
    nodes = calloc((size_t)n_nodes, sizeof *nodes);
    if (!ctx || epfd < 0 || !nodes)
        return 1;
    start_ms = now_ms();
    for (int i = 0; i < n_nodes; i++) {
        nodes[i].fd = -1;
        nodes[i].backoff_ms = BACKOFF_FIRST_MS;
        nodes[i].md = EVP_MD_CTX_new();
        attempt(&nodes[i]);
    }
    struct epoll_event evs[256];
    uint64_t end_ms = start_ms + deadline_s * 1000;
    for (;;) {
        uint64_t t = now_ms();
        int left = 0;
        for (int i = 0; i < n_nodes; i++) {
            node_t *n = &nodes[i];
            if (n->state == N_WAIT && t >= n->retry_at_ms)
                attempt(n);
            else if (n->state == N_HEAD && t >= n->head_deadline_ms)
                retry(n);   /* Ignition's 10 s for the response head */
            left += n->state != N_DONE && n->state != N_FAILED;
        }
        if (!left || t >= end_ms)
            break;
        int k = epoll_wait(epfd, evs, 256, 20);
        for (int i = 0; i < k; i++)
            step(evs[i].data.ptr);
    }
    int ok = 0;
    double *done = calloc((size_t)n_nodes, sizeof *done);
    for (int i = 0; i < n_nodes; i++)
        if (nodes[i].state == N_DONE)
            done[ok++] = nodes[i].done_ms;
    for (int i = 1; i < ok; i++)    /* insertion sort: N is a few hundred */
        for (int j = i; j > 0 && done[j - 1] > done[j]; j--) {
            double x = done[j];
            done[j] = done[j - 1];
            done[j - 1] = x;
        }
    printf("{\"nodes\": %d, \"ok\": %d, \"failed\": %d, \"retries\": %lu, \"bad_bodies\": %lu, \"statuses\": {",
           n_nodes, ok, n_nodes - ok, retries, bad_bodies);
    for (int s = 0, first = 1; s < MAX_STATUS; s++)
        if (statuses[s]) {
            printf("%s\"%d\": %lu", first ? "" : ", ", s, statuses[s]);
            first = 0;
        }
    printf("}, \"done_ms\": [");
    for (int i = 0; i < ok; i++)
        printf("%s%.2f", i ? ", " : "", done[i]);
    printf("]}\n");
    return ok == n_nodes ? 0 : 1;
}
