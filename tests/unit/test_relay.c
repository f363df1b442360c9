/* The relay, driven over socketpairs without a worker: the test plays the
 * upstream (writes into up_peer) and the client (reads from cli_peer) and
 * calls relay_pump() where a worker's events would. AF_UNIX stream sockets
 * hold back on the sender's SO_SNDBUF, so a small one on the relay's
 * client socket makes a slow client and short writes. Every loop is
 * bounded by a step count; nothing sleeps. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "proxy/relay.h"
#include "tls/tls.h"

#define CAP (64 * 1024)     /* the relay's buffer, as a worker's is at least */
#define STEPS 200000        /* bound on any pump loop */
#define STALL 4             /* rounds without progress before a loop gives up */

static const char HEAD[] = "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
#define HEAD_LEN (sizeof HEAD - 1)

/* the relay's ends, and the test's */
static int cli = -1, cli_peer = -1, up = -1, up_peer = -1;
static sockio_t cio, uio;
static relay_t r;
static char *buf;
static size_t cap;
static pipe_pool_t pipes;
/* what the upstream sends: src[0..src_len), src[0..src_next) already sent
 * (or put in the buffer with the head) */
static unsigned char *src;
static size_t src_len, src_next;
/* what the client got */
static unsigned char *got;
static size_t got_len, got_cap;
/* TLS: the test's ends speak through these instead of the sockets */
static SSL *feed_ssl, *drain_ssl;

static unsigned char pattern(size_t i)
{
    /* no short period: a byte dropped, doubled or moved shows */
    return (unsigned char)(i * 7 + (i >> 8) * 13 + (i >> 16) * 29 + 1);
}

static void pair(int *a, int *b)
{
    int fds[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0, "%s",
                 strerror(errno));
    *a = fds[0];
    *b = fds[1];
}

static void set_sndbuf(int fd, int bytes)
{
    cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes), 0);
}

static size_t pending(int fd)
{
    int n = 0;
    cr_assert_eq(ioctl(fd, FIONREAD, &n), 0, "%s", strerror(errno));
    return (size_t)n;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void setup(void)
{
    pair(&cli, &cli_peer);
    pair(&up, &up_peer);
    /* the upstream can queue a whole test body without the test waiting */
    set_sndbuf(up_peer, 4 << 20);
    cio = (sockio_t){.fd = cli};
    uio = (sockio_t){.fd = up};
    cap = CAP;
    buf = malloc(cap);
    cr_assert_not_null(buf);
    cr_assert_eq(pipe_pool_init(&pipes, 2), 0);
    relay_init(&r, &cio, &uio, buf, cap, NULL);
    src = NULL;
    src_len = src_next = 0;
    got = NULL;
    got_len = got_cap = 0;
    feed_ssl = drain_ssl = NULL;
}

static void teardown(void)
{
    relay_end(&r);
    close_fd(&cli);
    close_fd(&cli_peer);
    close_fd(&up);
    close_fd(&up_peer);
    pipe_pool_destroy(&pipes);
    free(buf);
    free(src);
    free(got);
}

TestSuite(relay, .init = setup, .fini = teardown);

static void src_pattern(size_t len)
{
    src = malloc(len ? len : 1);
    cr_assert_not_null(src);
    for (size_t i = 0; i < len; i++)
        src[i] = pattern(i);
    src_len = len;
}

static void src_text(const char *s, size_t len)
{
    src = malloc(len ? len : 1);
    cr_assert_not_null(src);
    memcpy(src, s, len);
    src_len = len;
}

/* The response head is in the buffer, as the exchange leaves it, with
 * the first `with` bytes of src behind it (what came with the head);
 * returns what relay_account made of them. */
static ssize_t start(http_body_t body, int64_t content_length, size_t with, pipe_pool_t *pp)
{
    relay_init(&r, &cio, &uio, buf, cap, pp);
    relay_frame(&r, body, content_length);
    cr_assert_leq(HEAD_LEN + with, cap);
    memcpy(buf, HEAD, HEAD_LEN);
    memcpy(buf + HEAD_LEN, src, with);
    ssize_t used = relay_account(&r, buf + HEAD_LEN, with);
    src_next = with;
    r.off = 0;
    r.len = HEAD_LEN + (used > 0 ? (size_t)used : 0);
    return used;
}

/* The upstream sends up to max more bytes of src (what its socket takes). */
static size_t feed(size_t max)
{
    size_t put = 0;
    while (put < max && src_next < src_len) {
        size_t n = src_len - src_next;
        if (n > max - put)
            n = max - put;
        if (n > 65536)
            n = 65536;
        if (feed_ssl) {
            int w = SSL_write(feed_ssl, src + src_next, (int)n);
            if (w <= 0) {
                cr_assert_eq(SSL_get_error(feed_ssl, w), SSL_ERROR_WANT_WRITE);
                break;
            }
            src_next += (size_t)w;
            put += (size_t)w;
            continue;
        }
        ssize_t w = send(up_peer, src + src_next, n, MSG_NOSIGNAL);
        if (w < 0) {
            cr_assert_eq(errno, EAGAIN, "%s", strerror(errno));
            break;
        }
        src_next += (size_t)w;
        put += (size_t)w;
    }
    return put;
}

/* The client reads up to max bytes. */
static size_t drain(size_t max)
{
    size_t took = 0;
    while (took < max) {
        if (got_cap - got_len < 65536) {
            got_cap = got_cap * 2 + 65536;
            got = realloc(got, got_cap);
            cr_assert_not_null(got);
        }
        size_t n = max - took < 65536 ? max - took : 65536;
        if (drain_ssl) {
            int rd = SSL_read(drain_ssl, got + got_len, (int)n);
            if (rd <= 0) {
                cr_assert_eq(SSL_get_error(drain_ssl, rd), SSL_ERROR_WANT_READ);
                break;
            }
            got_len += (size_t)rd;
            took += (size_t)rd;
            continue;
        }
        ssize_t rd = read(cli_peer, got + got_len, n);
        if (rd <= 0) {
            cr_assert(rd == 0 || errno == EAGAIN, "%s", strerror(errno));
            break;
        }
        got_len += (size_t)rd;
        took += (size_t)rd;
    }
    return took;
}

/* What the client got is the head, then src from its start. */
static void check_client_prefix(void)
{
    cr_assert_geq(got_len, HEAD_LEN);
    cr_assert_eq(memcmp(got, HEAD, HEAD_LEN), 0, "the head reached the client intact");
    size_t body = got_len - HEAD_LEN;
    cr_assert_leq(body, src_len);
    for (size_t i = 0; i < body; i++)
        cr_assert_eq(got[HEAD_LEN + i], src[i], "body byte %zu of %zu differs", i, body);
}

/* Every byte is accounted for: what entered the relay (the head, and what
 * it read from the upstream) is what it sent plus what it holds, and
 * what it sent is what the client read plus what waits at the client. */
static void check_accounts(void)
{
    size_t read_in = src_next - pending(up);
    size_t held = (size_t)relay_held(&r);
    cr_assert_leq(r.off, r.len);
    cr_assert_leq(r.len, cap, "the buffer never holds more than its capacity");
    cr_assert_eq(HEAD_LEN + read_in, r.sent + held, "in %zu = sent %llu + held %zu", HEAD_LEN + read_in,
                 (unsigned long long)r.sent, held);
    cr_assert_eq(r.sent, got_len + pending(cli_peer));
    if (r.pipe[0] >= 0) {
        cr_assert_eq(r.off, r.len, "no byte waits in the buffer behind the pipe");
        cr_assert_leq(r.pipe_len, RELAY_PIPE_BYTES);
        cr_assert_eq(pending(r.pipe[0]), r.pipe_len, "pipe_len is what the pipe holds");
    }
}

/* After RELAY_WAIT: it waits on something, and only on what it needs. */
static void check_wait(void)
{
    if (drain_ssl) {
        /* the bytes inside OpenSSL are not to be counted from outside */
        cr_assert_neq(r.want, 0u, "a wait on nothing never ends");
        cr_assert_eq(r.pipe[0], -1, "TLS is never spliced");
        cr_assert_leq(r.off, r.len);
        cr_assert_leq(r.len, cap);
        return;
    }
    cr_assert_neq(r.want, 0u, "a wait on nothing never ends");
    cr_assert_eq(r.want & RELAY_WANT_UPSTREAM_WRITE, 0u, "plain sockets never need the other direction");
    if (r.want & RELAY_WANT_UPSTREAM_READ)
        cr_assert_eq(pending(up), 0u, "wants to read while the upstream has %zu bytes for it", pending(up));
    bool holds = relay_held(&r) > 0;
    cr_assert_eq(!!(r.want & RELAY_WANT_CLIENT_WRITE), holds,
                 "wants the client exactly when it holds bytes for it (want %u, holds %d)", r.want, holds);
    check_accounts();
}

/* Whether an event the relay waits for has come, as the worker's event
 * loop would see it: the relay is pumped only then. */
static bool ready(unsigned want)
{
    struct pollfd p[2] = {{.fd = cli}, {.fd = up}};
    if (want & RELAY_WANT_CLIENT_WRITE)
        p[0].events |= POLLOUT;
    if (want & RELAY_WANT_UPSTREAM_READ)
        p[1].events |= POLLIN;
    if (want & RELAY_WANT_UPSTREAM_WRITE)
        p[1].events |= POLLOUT;
    cr_assert_geq(poll(p, 2, 0), 0);
    return (p[0].revents | p[1].revents) != 0;
}

/* Feeds and drains (feed_step, drain_step bytes per round; 0: not at all)
 * and pumps, the first time and then whenever what it waits for is
 * ready, until it stops waiting. Fails when nothing it waits for can
 * come: the test has nothing left to do and no wanted event is ready. */
static relay_result_t run(size_t feed_step, size_t drain_step)
{
    int idle = 0;
    bool first = true;
    for (int i = 0; i < STEPS; i++) {
        size_t moved = feed_step ? feed(feed_step) : 0;
        moved += drain_step && !first ? drain(drain_step) : 0;
        if (first || ready(r.want)) {
            first = false;
            idle = 0;
            relay_result_t res = relay_pump(&r);
            if (res != RELAY_WAIT)
                return res;
            check_wait();
        } else if (!moved && ++idle >= STALL) {
            cr_assert_fail("stalled: want %u, fed %zu of %zu, sent %llu", r.want, src_next, src_len,
                           (unsigned long long)r.sent);
        }
    }
    cr_assert_fail("no end after %d rounds", STEPS);
    return RELAY_WAIT;
}

/* ---- through the buffer ---------------------------------------------- */

Test(relay, content_length_delivered_exactly)
{
    size_t n = 300000;
    src_pattern(n + 100);   /* 100 bytes past the body, which must stay unread */
    cr_assert_eq(start(HTTP_BODY_LENGTH, (int64_t)n, 1000, NULL), 1000);
    cr_assert_not(r.surplus);
    cr_assert_eq(run(50000, 1 << 20), RELAY_DONE);
    drain(1 << 20);
    src_len = n;
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    cr_assert_eq(r.sent, HEAD_LEN + n);
    cr_assert_eq(pending(up), 100u, "not a byte read past the body");
    cr_assert_eq(r.pipe[0], -1, "no pipe pool, no splice");
}

Test(relay, slow_client_stops_upstream_reads)
{
    size_t n = 1 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    feed(n);
    cr_assert_eq(src_next, n, "the upstream socket took the whole body");
    /* The client reads nothing: the buffer fills and the relay stops. */
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    check_wait();
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_CLIENT_WRITE, "a full buffer does not want upstream reads");
    size_t in = n - pending(up);
    cr_assert_gt(pending(up), 0u);
    cr_assert_leq(in, cap + r.sent, "read %zu, sent %llu: more than the buffer", in, (unsigned long long)r.sent);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(relay_pump(&r), RELAY_WAIT);
        cr_assert_eq(r.want, (unsigned)RELAY_WANT_CLIENT_WRITE);
        cr_assert_eq(n - pending(up), in, "pumping again reads nothing more while the client is stuck");
    }
    /* A slow reader, a few KiB at a time: every write is short. */
    cr_assert_eq(run(0, 3000), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, short_writes_of_every_size)
{
    size_t n = 200000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 500, NULL);
    /* drain sizes from a fixed sequence: 1 byte to 12 KiB */
    unsigned x = 12345;
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < STEPS && res == RELAY_WAIT; i++) {
        feed(7000);
        res = relay_pump(&r);
        if (res != RELAY_WAIT)
            break;
        check_wait();
        x = x * 1103515245u + 12345u;
        drain(1 + (x >> 16) % 12288);
    }
    cr_assert_eq(res, RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, trickling_upstream_wants_only_upstream_reads)
{
    size_t n = 5000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    for (int i = 0; i < STEPS && src_next < n; i++) {
        feed(1 + (size_t)i % 13);
        relay_result_t res = relay_pump(&r);
        if (src_next == n) {
            cr_assert_eq(res, RELAY_DONE, "done with the last byte");
            break;
        }
        cr_assert_eq(res, RELAY_WAIT, "done before the body was complete");
        check_wait();
        cr_assert_eq(r.want, (unsigned)RELAY_WANT_UPSTREAM_READ);
        cr_assert_eq(r.sent, HEAD_LEN + src_next, "what came is passed on at once, not held to fill the buffer");
        drain(1 << 20);
    }
    cr_assert_eq(src_next, n);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, upstream_closed_mid_body_is_cut)
{
    size_t n = 200000, sent = 70000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    cr_assert_eq(feed(sent), sent);
    for (int i = 0; i < 100 && pending(up) > 0; i++) {
        cr_assert_eq(relay_pump(&r), RELAY_WAIT);
        drain(1 << 20);
    }
    cr_assert_eq(shutdown(up_peer, SHUT_WR), 0);
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < 100 && res == RELAY_WAIT; i++) {
        res = relay_pump(&r);
        drain(1 << 20);
    }
    cr_assert_eq(res, RELAY_CUT);
    cr_assert_eq(r.cut, GATE_REASON_UPSTREAM_CLOSED_EARLY);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_leq(got_len, HEAD_LEN + sent);
    cr_assert_lt(got_len, HEAD_LEN + n, "the client never got the whole body");
}

Test(relay, upstream_reset_mid_body_is_cut)
{
    size_t n = 200000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    feed(30000);
    /* The upstream closes with our request unread: a reset. */
    cr_assert_eq(write(up, "GET / HTTP/1.1\r\n\r\n", 18), 18);
    close_fd(&up_peer);
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < 100 && res == RELAY_WAIT; i++) {
        res = relay_pump(&r);
        drain(1 << 20);
    }
    cr_assert_eq(res, RELAY_CUT);
    cr_assert_eq(r.cut, GATE_REASON_UPSTREAM_READ);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_lt(got_len, HEAD_LEN + n);
}

Test(relay, cut_while_the_client_is_behind)
{
    size_t n = 1 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    feed(40000);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert(r.want & RELAY_WANT_CLIENT_WRITE);
    cr_assert_eq(shutdown(up_peer, SHUT_WR), 0);
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < 1000 && res == RELAY_WAIT; i++) {
        res = relay_pump(&r);
        if (res == RELAY_WAIT)
            check_wait();
        drain(2000);
    }
    cr_assert_eq(res, RELAY_CUT, "a short body is never reported done");
    cr_assert_eq(r.cut, GATE_REASON_UPSTREAM_CLOSED_EARLY);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_lt(got_len, HEAD_LEN + n);
}

Test(relay, surplus_with_the_head_is_not_relayed)
{
    const char body[] = "hello";
    const char more[] = "HTTP/1.1 200 OK\r\n";
    char all[64];
    snprintf(all, sizeof all, "%s%s", body, more);
    src_text(all, strlen(all));
    cr_assert_eq(start(HTTP_BODY_LENGTH, 5, strlen(all), NULL), 5);
    cr_assert(r.surplus);
    cr_assert(r.body_done);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    cr_assert_eq(got_len, HEAD_LEN + 5);
    src_len = 5;
    check_client_prefix();
}

Test(relay, no_surplus_when_the_head_brings_less)
{
    src_pattern(10);
    cr_assert_eq(start(HTTP_BODY_LENGTH, 10, 4, NULL), 4);
    cr_assert_not(r.surplus);
    cr_assert_not(r.body_done);
    cr_assert_eq(r.body_left, 6);
}

Test(relay, reads_stop_at_the_end_of_the_body)
{
    const char all[] = "0123456789EXTRA";
    src_text(all, strlen(all));
    start(HTTP_BODY_LENGTH, 10, 4, NULL);
    feed(1000);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    cr_assert_eq(got_len, HEAD_LEN + 10);
    src_len = 10;
    check_client_prefix();
    cr_assert_eq(pending(up), 5u, "the bytes past the body were never read");
}

Test(relay, no_body_reads_nothing)
{
    src_text("unasked", 7);
    cr_assert_eq(start(HTTP_BODY_NONE, 0, 0, NULL), 0);
    feed(7);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    cr_assert_eq(got_len, HEAD_LEN);
    cr_assert_eq(pending(up), 7u);
    /* bytes behind the head of a bodiless response are surplus */
    char b[3] = "abc";
    cr_assert_eq(relay_account(&r, b, 3), 0);
    cr_assert(r.surplus);
}

Test(relay, zero_length_body)
{
    src_text("x", 1);
    start(HTTP_BODY_LENGTH, 0, 0, NULL);
    feed(1);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    cr_assert_eq(got_len, HEAD_LEN);
    cr_assert_eq(pending(up), 1u);
}

static const char CHUNKED[] = "5\r\nhello\r\n"
                              "1;ext=1\r\n,\r\n"
                              "A\r\n world of \r\n"
                              "0\r\n"
                              "Trailer-One: 1\r\n"
                              "\r\n";
#define CHUNKED_LEN (sizeof CHUNKED - 1)

Test(relay, chunked_relayed_verbatim_byte_by_byte)
{
    src_text(CHUNKED, CHUNKED_LEN);
    start(HTTP_BODY_CHUNKED, -1, 0, NULL);
    relay_result_t res = RELAY_WAIT;
    for (size_t i = 0; i < CHUNKED_LEN; i++) {
        cr_assert_eq(feed(1), 1u);
        res = relay_pump(&r);
        if (i + 1 < CHUNKED_LEN) {
            cr_assert_eq(res, RELAY_WAIT, "done at byte %zu of %zu", i + 1, CHUNKED_LEN);
            check_wait();
            cr_assert_eq(r.want, (unsigned)RELAY_WANT_UPSTREAM_READ);
        }
        drain(1 << 20);
    }
    cr_assert_eq(res, RELAY_DONE, "done with the last CRLF");
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + CHUNKED_LEN);
    cr_assert_not(r.surplus);
}

Test(relay, chunked_stops_at_the_last_chunk)
{
    char all[sizeof CHUNKED + 16];
    memcpy(all, CHUNKED, CHUNKED_LEN);
    memcpy(all + CHUNKED_LEN, "HTTP/1.1 200", 12);
    src_text(all, CHUNKED_LEN + 12);
    start(HTTP_BODY_CHUNKED, -1, 0, NULL);
    feed(sizeof all);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    cr_assert_eq(got_len, HEAD_LEN + CHUNKED_LEN, "the bytes after the last chunk are not relayed");
    src_len = CHUNKED_LEN;
    check_client_prefix();
    cr_assert(r.surplus);
}

Test(relay, chunked_large_to_a_slow_client)
{
    /* chunks larger and smaller than the buffer, across many refills */
    static const size_t sizes[] = {1, 16384, 100000, 3, 65536, 65535, 200000, 7};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        total += sizes[i] + 32;
    total += 64;
    src = malloc(total);
    cr_assert_not_null(src);
    size_t at = 0, k = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        at += (size_t)sprintf((char *)src + at, "%zx\r\n", sizes[i]);
        for (size_t j = 0; j < sizes[i]; j++)
            src[at++] = pattern(k++);
        memcpy(src + at, "\r\n", 2);
        at += 2;
    }
    memcpy(src + at, "0\r\n\r\n", 5);
    at += 5;
    src_len = at;
    set_sndbuf(cli, 8192);
    start(HTTP_BODY_CHUNKED, -1, 100, &pipes);
    cr_assert_eq(run(30000, 20000), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + src_len);
    cr_assert_not(r.surplus);
    cr_assert_eq(r.pipe[0], -1, "an unknown length never goes through the pipe");
}

Test(relay, chunked_broken_framing_is_cut)
{
    const char bad[] = "5\r\nhello\r\n3\r\nabcXY\r\n0\r\n\r\n";
    src_text(bad, strlen(bad));
    start(HTTP_BODY_CHUNKED, -1, 0, NULL);
    feed(sizeof bad);
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < 10 && res == RELAY_WAIT; i++) {
        res = relay_pump(&r);
        drain(1 << 20);
    }
    cr_assert_eq(res, RELAY_CUT);
    cr_assert_eq(r.cut, GATE_REASON_BAD_UPSTREAM_CHUNKING);
    cr_assert_lt(got_len, HEAD_LEN + strlen(bad));
}

Test(relay, chunked_broken_with_the_head)
{
    src_text("zz\r\n", 4);
    cr_assert_eq(start(HTTP_BODY_CHUNKED, -1, 4, NULL), -1);
}

Test(relay, until_close_ends_at_eof)
{
    size_t n = 150000;
    src_pattern(n);
    start(HTTP_BODY_UNTIL_CLOSE, -1, 2000, &pipes);
    feed(n);
    relay_result_t res = RELAY_WAIT;
    for (int i = 0; i < 1000 && (pending(up) > 0 || pending(cli_peer) > 0); i++) {
        res = relay_pump(&r);
        cr_assert_eq(res, RELAY_WAIT, "done before the upstream closed");
        check_wait();
        drain(1 << 20);
    }
    res = relay_pump(&r);
    cr_assert_eq(res, RELAY_WAIT, "done before the upstream closed");
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_UPSTREAM_READ);
    cr_assert_eq(shutdown(up_peer, SHUT_WR), 0);
    cr_assert_eq(relay_pump(&r), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    cr_assert_eq(r.pipe[0], -1, "an unknown length never goes through the pipe");
}

/* No SIGPIPE handler here: sockio's own MSG_NOSIGNAL must keep the
 * process alive. */
Test(relay, client_gone)
{
    size_t n = 100000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    close_fd(&cli_peer);
    feed(n);
    cr_assert_eq(relay_pump(&r), RELAY_CLIENT_GONE);
}

Test(relay, client_gone_while_behind)
{
    size_t n = 1 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    feed(n);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_CLIENT_WRITE);
    close_fd(&cli_peer);
    cr_assert_eq(relay_pump(&r), RELAY_CLIENT_GONE);
}

Test(relay, never_reads_more_than_its_buffer)
{
    /* An odd size, and a guard behind it that no write may touch. */
    size_t n = 1 << 20, odd = 20000;
    free(buf);
    buf = malloc(odd + 64);
    cr_assert_not_null(buf);
    memset(buf + odd, 0xa5, 64);
    cap = odd;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    feed(n);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(relay_pump(&r), RELAY_WAIT);
        check_wait();
        cr_assert_leq(n - pending(up) + HEAD_LEN, r.sent + cap);
    }
    cr_assert_eq(run(0, 5000), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    for (size_t i = 0; i < 64; i++)
        cr_assert_eq((unsigned char)buf[odd + i], 0xa5, "written past the buffer at %zu", i);
}

/* ---- through the pipe ------------------------------------------------ */

Test(relay, splice_after_the_head)
{
    size_t n = 300000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    cr_assert_eq(r.pipe[0], -1);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    check_wait();
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_UPSTREAM_READ);
    cr_assert_eq(r.sent, HEAD_LEN);
    cr_assert_geq(r.pipe[0], 0, "plain to plain with a known length: the pipe, once the head is out");
    cr_assert_eq(run(40000, 1 << 20), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, splice_waits_for_the_buffer_to_drain)
{
    /* The client's socket is full before the head goes: the head and the
     * body read with it must reach the client before any spliced byte. */
    size_t n = 400000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    size_t junk = 0;
    char fill[4096];
    memset(fill, 'j', sizeof fill);
    for (int i = 0; i < 10000; i++) {
        ssize_t w = send(cli, fill, sizeof fill, MSG_NOSIGNAL);
        if (w < 0)
            break;
        junk += (size_t)w;
    }
    cr_assert_gt(junk, 0u);
    start(HTTP_BODY_LENGTH, (int64_t)n, 3000, &pipes);
    feed(100000);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert(r.want & RELAY_WANT_CLIENT_WRITE);
    cr_assert_eq(r.pipe[0], -1, "no splice while buffered bytes wait");
    cr_assert_gt(r.len - r.off, HEAD_LEN + 3000, "it read body into the buffer meanwhile");
    for (size_t left = junk; left > 0;) {
        ssize_t rd = read(cli_peer, fill, left < sizeof fill ? left : sizeof fill);
        cr_assert_gt(rd, 0);
        left -= (size_t)rd;
    }
    cr_assert_eq(run(40000, 1 << 20), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, splice_backpressure_holds_at_most_the_pipe_mark)
{
    size_t n = 3 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    /* The client reads nothing: the pipe fills to its mark, no further. */
    size_t in = 0;
    int same = 0;
    for (int i = 0; i < 200 && same < 3; i++) {
        feed(n);
        cr_assert_eq(relay_pump(&r), RELAY_WAIT);
        check_wait();
        size_t now = src_next - pending(up);
        same = now == in ? same + 1 : 0;
        in = now;
    }
    cr_assert_eq(same, 3, "the relay kept reading");
    cr_assert_geq(r.pipe[0], 0);
    cr_assert_gt(r.pipe_len, 0u);
    cr_assert_leq(r.pipe_len, RELAY_PIPE_BYTES);
    cr_assert_gt(pending(up), 0u, "the upstream is held back");
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_CLIENT_WRITE, "stuck on the client only");
    cr_assert_leq(in + HEAD_LEN, r.sent + RELAY_PIPE_BYTES);
    /* Now a slow client takes it all. */
    cr_assert_eq(run(1 << 20, 64 * 1024), RELAY_DONE);
    drain(4 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, splice_cut_mid_body)
{
    size_t n = 400000, sent = 150000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    cr_assert_eq(feed(sent), sent);
    for (int i = 0; i < 100 && (pending(up) > 0 || r.pipe_len > 0); i++) {
        cr_assert_eq(relay_pump(&r), RELAY_WAIT);
        drain(1 << 20);
    }
    cr_assert_geq(r.pipe[0], 0);
    cr_assert_eq(shutdown(up_peer, SHUT_WR), 0);
    cr_assert_eq(relay_pump(&r), RELAY_CUT);
    cr_assert_eq(r.cut, GATE_REASON_UPSTREAM_CLOSED_EARLY);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + sent);
    /* the pipe is empty: it goes back to the pool */
    int fds[2] = {r.pipe[0], r.pipe[1]};
    relay_end(&r);
    cr_assert_eq(r.pipe[0], -1);
    cr_assert_eq(pipes.n, 1u);
    cr_assert_eq(pipes.spare[0][0], fds[0]);
    cr_assert_eq(pipes.spare[0][1], fds[1]);
}

Test(relay, splice_cut_with_bytes_in_the_pipe_closes_it)
{
    size_t n = 400000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    /* the head leaves, then the client stops reading */
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_geq(r.pipe[0], 0);
    feed(100000);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    check_wait();
    cr_assert_gt(r.pipe_len, 0u);
    cr_assert_eq(shutdown(up_peer, SHUT_WR), 0);
    cr_assert_eq(relay_pump(&r), RELAY_CUT);
    cr_assert_eq(r.cut, GATE_REASON_UPSTREAM_CLOSED_EARLY);
    cr_assert_gt(r.pipe_len, 0u);
    int fds[2] = {r.pipe[0], r.pipe[1]};
    relay_end(&r);
    cr_assert_eq(pipes.n, 0u, "a pipe with bytes in it is not pooled");
    cr_assert_eq(fcntl(fds[0], F_GETFD), -1, "and it is closed");
    cr_assert_eq(errno, EBADF);
    cr_assert_eq(fcntl(fds[1], F_GETFD), -1);
    cr_assert_eq(errno, EBADF);
}

Test(relay, splice_pipe_reused_by_the_next_relay)
{
    size_t n = 100000;
    src_pattern(n);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    cr_assert_eq(run(n, 1 << 20), RELAY_DONE);
    int fds[2] = {r.pipe[0], r.pipe[1]};
    cr_assert_geq(fds[0], 0);
    relay_end(&r);
    cr_assert_eq(pipes.n, 1u, "an empty pipe goes back to the pool");
    cr_assert_eq(fcntl(fds[0], F_GETFD) >= 0, true, "still open");
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    /* the next response on the same sockets */
    free(got);
    got = NULL;
    got_len = got_cap = 0;
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_eq(r.pipe[0], fds[0], "the pooled pipe, not a new one");
    cr_assert_eq(r.pipe[1], fds[1]);
    cr_assert_eq(pipes.n, 0u);
    cr_assert_eq(run(n, 1 << 20), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    relay_end(&r);
    cr_assert_eq(pipes.n, 1u);
}

Test(relay, splice_client_gone)
{
    /* splice(2) into a socket has no MSG_NOSIGNAL: the gate ignores
     * SIGPIPE (cmd_run), and so does this test. */
    signal(SIGPIPE, SIG_IGN);
    size_t n = 400000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    feed(100000);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_geq(r.pipe[0], 0);
    cr_assert_gt(r.pipe_len, 0u);
    close_fd(&cli_peer);
    cr_assert_eq(relay_pump(&r), RELAY_CLIENT_GONE);
    relay_end(&r);
    cr_assert_eq(pipes.n, 0u, "the pipe held bytes: closed, not pooled");
}

Test(relay, splice_pipe_full_of_fragments_waits_on_the_client)
{
    /* Each small send is a socket buffer of its own, and each takes a
     * pipe slot when spliced: the pipe fills by slots, far below its byte
     * mark. The upstream is still readable then, so wanting it would spin;
     * the client's writability is what brings the relay back. */
    size_t n = 100000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, &pipes);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_geq(r.pipe[0], 0);
    cr_assert_eq(r.sent, HEAD_LEN);
    cr_assert_eq(drain(1 << 20), HEAD_LEN);
    size_t junk = 0;
    char fill[4096];
    memset(fill, 'j', sizeof fill);
    for (int i = 0; i < 10000; i++) {
        ssize_t w = send(cli, fill, sizeof fill, MSG_NOSIGNAL);
        if (w < 0)
            break;
        junk += (size_t)w;
    }
    for (int i = 0; i < 2000; i++)
        cr_assert_eq(feed(1), 1u);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_gt(r.pipe_len, 0u);
    cr_assert_lt(r.pipe_len, 2000u, "the pipe took every fragment: no slot limit reached");
    cr_assert_gt(pending(up), 0u);
    cr_assert_eq(r.want, (unsigned)RELAY_WANT_CLIENT_WRITE);
    cr_assert_eq(pending(r.pipe[0]), r.pipe_len);
    for (size_t left = junk; left > 0;) {
        ssize_t rd = read(cli_peer, fill, left < sizeof fill ? left : sizeof fill);
        cr_assert_gt(rd, 0);
        left -= (size_t)rd;
    }
    cr_assert_eq(run(40000, 1 << 20), RELAY_DONE);
    drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

/* ---- TLS on both sides ------------------------------------------------ */

/* A throwaway self-signed identity, in memory and as PEM files for the
 * gate's own server context. */
static EVP_PKEY *id_key;
static X509 *id_crt;

static void make_identity(const char *dir, char *crt, char *key, size_t len)
{
    id_key = EVP_EC_gen("P-256");
    cr_assert_not_null(id_key);
    id_crt = X509_new();
    cr_assert_not_null(id_crt);
    X509_set_version(id_crt, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(id_crt), 1);
    X509_gmtime_adj(X509_getm_notBefore(id_crt), -60);
    X509_gmtime_adj(X509_getm_notAfter(id_crt), 3600);
    X509_NAME *name = X509_get_subject_name(id_crt);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"skewgate-test", -1, -1, 0);
    X509_set_issuer_name(id_crt, name);
    X509_set_pubkey(id_crt, id_key);
    cr_assert_gt(X509_sign(id_crt, id_key, EVP_sha256()), 0);
    snprintf(crt, len, "%s/tls.crt", dir);
    snprintf(key, len, "%s/tls.key", dir);
    FILE *f = fopen(crt, "w");
    cr_assert_not_null(f);
    cr_assert_eq(PEM_write_X509(f, id_crt), 1);
    fclose(f);
    f = fopen(key, "w");
    cr_assert_not_null(f);
    cr_assert_eq(PEM_write_PrivateKey(f, id_key, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
}

/* The test's own TLS end, as lenient about retries as the gate's. */
static SSL *peer_ssl(int fd, bool server)
{
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    cr_assert_not_null(ctx);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (server) {
        cr_assert_eq(SSL_CTX_use_certificate(ctx, id_crt), 1);
        cr_assert_eq(SSL_CTX_use_PrivateKey(ctx, id_key), 1);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    SSL *ssl = SSL_new(ctx);
    SSL_CTX_free(ctx);  /* the SSL holds its own reference */
    cr_assert_not_null(ssl);
    SSL_set_fd(ssl, fd);
    if (server)
        SSL_set_accept_state(ssl);
    else
        SSL_set_connect_state(ssl);
    return ssl;
}

static void handshake(sockio_t *gate, SSL *peer)
{
    bool g = false, t = false;
    for (int i = 0; i < 1000 && !(g && t); i++) {
        if (!g) {
            int rc = sockio_handshake(gate);
            cr_assert(rc == 1 || rc == SOCKIO_WANT_READ || rc == SOCKIO_WANT_WRITE, "gate handshake: %d", rc);
            g = rc == 1;
        }
        if (!t) {
            int rc = SSL_do_handshake(peer);
            int e = SSL_get_error(peer, rc);
            cr_assert(rc == 1 || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE, "peer handshake");
            t = rc == 1;
        }
    }
    cr_assert(g && t, "no handshake");
}

Test(relay, tls_both_sides_slow_client)
{
    char dir[] = "/tmp/skewgate-relay-XXXXXX", crt[96], key[96], err[256];
    cr_assert_not_null(mkdtemp(dir));
    make_identity(dir, crt, key, sizeof crt);
    /* the gate's contexts as it makes them */
    config_tls_server_t scfg = {.enabled = true, .certificate = crt, .key = key,
                                .min_version = TLS1_2_VERSION, .session_tickets = false};
    SSL_CTX *gate_server = tls_server_ctx_new(&scfg, err, sizeof err);
    cr_assert_not_null(gate_server, "%s", err);
    config_upstream_t ucfg = {.tls = true, .insecure_skip_verify = true};
    SSL_CTX *gate_client = tls_client_ctx_new(&ucfg, err, sizeof err);
    cr_assert_not_null(gate_client, "%s", err);
    cr_assert_eq(sockio_attach_ssl(&cio, SSL_new(gate_server)), 0);
    SSL_set_accept_state(cio.ssl);
    cr_assert_eq(sockio_attach_ssl(&uio, SSL_new(gate_client)), 0);
    SSL_set_connect_state(uio.ssl);
    drain_ssl = peer_ssl(cli_peer, false);
    feed_ssl = peer_ssl(up_peer, true);
    handshake(&cio, drain_ssl);
    handshake(&uio, feed_ssl);

    size_t n = 600000;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    /* plain-to-plain only: with TLS a pipe pool and a known length change nothing */
    start(HTTP_BODY_LENGTH, (int64_t)n, 1000, &pipes);
    cr_assert_eq(run(50000, 3000), RELAY_DONE);
    for (int i = 0; i < 1000 && got_len < HEAD_LEN + n; i++)
        drain(1 << 20);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    cr_assert_eq(r.sent, HEAD_LEN + n);
    cr_assert_eq(r.pipe[0], -1);
    cr_assert_eq(pipes.n, 0u);

    SSL_free(cio.ssl);
    SSL_free(uio.ssl);
    cio.ssl = uio.ssl = NULL;
    SSL_free(drain_ssl);
    SSL_free(feed_ssl);
    drain_ssl = feed_ssl = NULL;
    SSL_CTX_free(gate_server);
    SSL_CTX_free(gate_client);
    X509_free(id_crt);
    EVP_PKEY_free(id_key);
    unlink(crt);
    unlink(key);
    rmdir(dir);
}

/* A buffer smaller than a TLS record: an empty buffer must still read,
 * never wait on nothing (found by this suite before the relay allowed it). */
Test(relay, small_buffer_never_waits_on_nothing)
{
    char small[8192];
    relay_init(&r, &cio, &uio, small, sizeof small, NULL);
    relay_frame(&r, HTTP_BODY_LENGTH, 100000);
    char body[4096] = {0};
    cr_assert_eq(write(up_peer, body, sizeof body), (ssize_t)sizeof body);
    relay_result_t res = relay_pump(&r);
    cr_assert(res != RELAY_WAIT || r.want != 0, "WAIT on nothing with cap %zu", sizeof small);
    cr_assert_eq(r.sent, sizeof body, "the 4 KiB that arrived went on: %llu", (unsigned long long)r.sent);
}

/* For an HTTP/1.0 client: the payload alone, in order, whatever the read
 * boundaries; done at the last chunk, surplus after it not relayed. */
Test(relay, dechunk_gives_the_payload_alone)
{
    static const char body[] = "4\r\nWiki\r\n6;ext=1\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nHTTP";
    static const char payload[] = "Wikipedia in \r\n\r\nchunks.";
    for (size_t step = 1; step <= sizeof body; step++) {
        src_text(body, sizeof body - 1);
        relay_init(&r, &cio, &uio, buf, cap, NULL);
        relay_frame(&r, HTTP_BODY_CHUNKED, -1);
        r.dechunk = true;
        src_next = 0;
        relay_result_t res = RELAY_WAIT;
        while (res == RELAY_WAIT && src_next < src_len) {
            feed(step);
            res = relay_pump(&r);
            drain(1 << 20);
        }
        cr_assert_eq(res, RELAY_DONE, "step %zu: not done", step);
        drain(1 << 20);
        cr_assert_eq(got_len, sizeof payload - 1, "step %zu: %zu bytes", step, got_len);
        cr_assert_eq(memcmp(got, payload, got_len), 0, "step %zu: the payload differs", step);
        if (step >= sizeof body - 1)    /* all of it read at once: what follows the body is surplus */
            cr_assert(r.surplus, "the bytes after the last chunk are surplus");
        free(src);
        src = NULL;
        got_len = 0;
    }
}

/* ---- the store: a client behind does not hold the upstream back -------- */

#define CHUNK (64 * 1024)
static size_t store_chunks, store_max, store_peak;

static char *store_get(void *arg)
{
    (void)arg;
    if (store_chunks >= store_max)
        return NULL;
    store_chunks++;
    if (store_chunks > store_peak)
        store_peak = store_chunks;
    char *c = malloc(CHUNK);
    cr_assert_not_null(c);
    return c;
}

static void store_put(void *arg, char *chunk)
{
    (void)arg;
    cr_assert_gt(store_chunks, 0u, "a chunk given back twice");
    store_chunks--;
    free(chunk);
}

static const relay_store_ops_t store_ops = {.get = store_get, .put = store_put};

/* The client reads nothing: with room in the store, the relay reads the
 * whole body anyway; then the client takes it all, in order. */
static void whole_body_kept(http_body_t body, size_t n, size_t src_n, pipe_pool_t *pp)
{
    set_sndbuf(cli, 4096);
    store_chunks = store_peak = 0;
    store_max = SIZE_MAX;
    start(body, (int64_t)n, 0, pp);
    relay_keep(&r, &store_ops, NULL, CHUNK);
    for (int i = 0; i < 1000 && !r.body_done; i++) {
        feed(src_n);
        relay_result_t res = relay_pump(&r);
        cr_assert_eq(res, RELAY_WAIT);
        check_wait();
        cr_assert(r.want & RELAY_WANT_CLIENT_WRITE, "the client is behind");
    }
    cr_assert(r.body_done, "the upstream was read to the end while the client read nothing");
    cr_assert_eq(r.want & RELAY_WANT_UPSTREAM_READ, 0u);
    cr_assert_gt(r.store.bytes, 0u, "the store holds what the client is not ready for");
    cr_assert_eq(run(0, 100000), RELAY_DONE);
    drain(1 << 24);
    cr_assert_eq(store_chunks, 0u, "every chunk went back as it was sent");
    cr_assert_gt(store_peak, 1u);
}

Test(relay, store_takes_the_body_a_slow_client_is_not_ready_for)
{
    size_t n = 3 << 20;
    src_pattern(n);
    whole_body_kept(HTTP_BODY_LENGTH, n, n, NULL);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    cr_assert_eq(r.sent, HEAD_LEN + n);
}

Test(relay, store_behind_the_pipe_keeps_the_order)
{
    size_t n = 3 << 20;
    src_pattern(n);
    whole_body_kept(HTTP_BODY_LENGTH, n, n, &pipes);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
}

Test(relay, store_with_a_chunked_body)
{
    /* A chunked body of 2 MiB: chunk headers, payload, the last chunk. */
    size_t payload = 2 << 20, step = 10000, len = 0;
    src = malloc(payload + payload / step * 16 + 64);
    cr_assert_not_null(src);
    for (size_t at = 0; at < payload; at += step) {
        size_t k = payload - at < step ? payload - at : step;
        len += (size_t)sprintf((char *)src + len, "%zx\r\n", k);
        for (size_t i = 0; i < k; i++)
            src[len++] = pattern(at + i);
        memcpy(src + len, "\r\n", 2);
        len += 2;
    }
    memcpy(src + len, "0\r\n\r\n", 5);
    len += 5;
    src_len = len;
    whole_body_kept(HTTP_BODY_CHUNKED, 0, len, NULL);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + len, "relayed verbatim");
}

Test(relay, store_full_says_so_and_holds_what_it_has)
{
    size_t n = 3 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    store_chunks = store_peak = 0;
    store_max = 4;
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    relay_keep(&r, &store_ops, NULL, CHUNK);
    feed(n);
    relay_result_t res;
    for (int i = 0; i < 100 && (res = relay_pump(&r)) == RELAY_WAIT; i++)
        feed(n);
    cr_assert_eq(res, RELAY_FULL, "the owner must hear that the store may hold no more");
    cr_assert_eq(store_chunks, 4u);
    cr_assert_eq(r.store.bytes, 4u * CHUNK, "every chunk it got is full");
    cr_assert(r.want & RELAY_WANT_CLIENT_WRITE);
    check_accounts();
    /* The owner made room (another reader cut): it goes on, and once the
     * client reads, all of it arrives in order. */
    store_max = SIZE_MAX;
    cr_assert_eq(run(n, 200000), RELAY_DONE);
    drain(1 << 24);
    check_client_prefix();
    cr_assert_eq(got_len, HEAD_LEN + n);
    cr_assert_eq(store_chunks, 0u);
}

Test(relay, store_chunks_go_back_when_the_relay_ends_early)
{
    size_t n = 3 << 20;
    src_pattern(n);
    set_sndbuf(cli, 4096);
    store_chunks = store_peak = 0;
    store_max = SIZE_MAX;
    start(HTTP_BODY_LENGTH, (int64_t)n, 0, NULL);
    relay_keep(&r, &store_ops, NULL, CHUNK);
    feed(1 << 20);
    cr_assert_eq(relay_pump(&r), RELAY_WAIT);
    cr_assert_gt(store_chunks, 1u);
    relay_end(&r);
    cr_assert_eq(store_chunks, 0u, "a cut relay gives its chunks back");
    cr_assert_null(r.store.chunks);
}
