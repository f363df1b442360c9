/* The upstream pool against a loopback listener the test owns, with a
 * real event loop: connect, TLS handshake, reuse, and the idle pool's
 * pruning (peer closed, unasked bytes, idle timeout). The loop runs with
 * EVLOOP_ONCE under a deadline, a tick keeping it from blocking past it;
 * nothing sleeps. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "conf/config.h"
#include "conf/grammar.h"
#include "proxy/upstream.h"
#include "tls/tls.h"

#define DEADLINE_MS 3000
#define TICK_MS 20
#define MAX_SERVERS 16

static struct event_base *base;
static struct event *tick;
static config_upstream_t cfg;
static upstream_pool_t pool;
static bool pool_on;
static SSL_CTX *client_tls;
static int lfd = -1;                /* the MCS's listener */
/* the server's ends of accepted connections, by the client's port */
static int srv[MAX_SERVERS], srv_port[MAX_SERVERS], n_srv;

typedef struct owner {
    int calls;
    upstream_event_t ev;
    upstream_conn_t *u;
    gate_reason_t failure;
    bool release_on_fail;           /* as the exchange does, inside the callback */
} owner_t;

static void on_upstream(upstream_conn_t *u, upstream_event_t ev, void *data)
{
    owner_t *o = data;
    o->calls++;
    o->ev = ev;
    o->u = u;
    if (ev == UPSTREAM_FAILED) {
        o->failure = u->failure;
        if (o->release_on_fail) {
            upstream_release(u, false);
            o->u = NULL;
        }
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int port_of(const struct sockaddr_storage *ss)
{
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    return port_of(&ss);
}

/* A bound loopback TCP socket on a port the kernel picks. */
static int bound_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0, "%s", strerror(errno));
    return fd;
}

static void point_at(int port)
{
    char text[64];
    snprintf(text, sizeof text, "127.0.0.1:%d", port);
    cr_assert_eq(config_parse_addr(text, &cfg.addr), 0);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    base = event_base_new();
    cr_assert_not_null(base);
    tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval every = {0, TICK_MS * 1000};
    event_add(tick, &every);
    lfd = bound_socket();
    cr_assert_eq(listen(lfd, 64), 0);
    memset(&cfg, 0, sizeof cfg);
    point_at(local_port(lfd));
    cfg.connect_timeout_ms = 2000;
    cfg.response_timeout_ms = 2000;
    cfg.idle_timeout_ms = 60000;
    cfg.max_idle = 4;
    pool_on = false;
    client_tls = NULL;
    n_srv = 0;
}

static void teardown(void)
{
    if (pool_on)
        upstream_pool_destroy(&pool);
    SSL_CTX_free(client_tls);
    for (int i = 0; i < n_srv; i++)
        if (srv[i] >= 0)
            close(srv[i]);
    if (lfd >= 0)
        close(lfd);
    event_free(tick);
    event_base_free(base);
}

TestSuite(upstream, .init = setup, .fini = teardown);

static void pool_start(void)
{
    upstream_pool_init(&pool, base, &cfg, client_tls);
    pool_on = true;
}

/* Runs the loop until cond holds; false at the deadline. */
static bool run_until(bool (*cond)(const void *), const void *arg)
{
    long long deadline = now_ms() + DEADLINE_MS;
    for (int i = 0; i < 100000 && !cond(arg) && now_ms() < deadline; i++)
        event_base_loop(base, EVLOOP_ONCE);
    return cond(arg);
}

static bool called(const void *arg)
{
    return ((const owner_t *)arg)->calls > 0;
}

static bool pool_empty(const void *arg)
{
    (void)arg;
    return pool.n_idle == 0;
}

/* Runs the loop without waiting: what is already due fires. */
static void run_due(void)
{
    for (int i = 0; i < 5; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
}

static upstream_conn_t *connect_ready(owner_t *o)
{
    upstream_conn_t *u = upstream_connect(&pool, on_upstream, o);
    cr_assert_not_null(u, "%s", strerror(errno));
    cr_assert_eq(o->calls, 0, "reported from inside upstream_connect");
    cr_assert(run_until(called, o), "no report");
    cr_assert_eq(o->calls, 1);
    cr_assert_eq(o->ev, UPSTREAM_READY, "event %d, failure %d", o->ev, o->failure);
    cr_assert_eq(o->u, u);
    return u;
}

/* The server's end of u's connection. */
static int server_of(const upstream_conn_t *u)
{
    int want = local_port(u->io.fd);
    for (int tries = 0; tries < 100; tries++) {
        for (int i = 0; i < n_srv; i++)
            if (srv_port[i] == want)
                return srv[i];
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int s = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s >= 0) {
            cr_assert_lt(n_srv, MAX_SERVERS);
            srv[n_srv] = s;
            srv_port[n_srv++] = port_of(&ss);
            continue;
        }
        cr_assert_eq(errno, EAGAIN, "%s", strerror(errno));
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        poll(&p, 1, 100);
    }
    cr_assert_fail("no accepted connection from port %d", want);
    return -1;
}

static void server_close(int s)
{
    for (int i = 0; i < n_srv; i++)
        if (srv[i] == s)
            srv[i] = -1;
    close(s);
}

/* The client closed its end: the server reads the end of the stream (or
 * a reset, when the client left bytes unread). */
static bool peer_closed(int s)
{
    struct pollfd p = {.fd = s, .events = POLLIN};
    if (poll(&p, 1, DEADLINE_MS) != 1)
        return false;
    char c[64];
    ssize_t n;
    while ((n = recv(s, c, sizeof c, 0)) > 0)
        ;
    return n == 0 || errno == ECONNRESET;
}

static bool peer_open(int s)
{
    struct pollfd p = {.fd = s, .events = POLLIN};
    return poll(&p, 1, 0) == 0;
}

/* A round trip over the connection: it is live, and it is the server's s. */
static void round_trip(upstream_conn_t *u, int s)
{
    cr_assert_eq(sockio_write(&u->io, "ping", 4, 0), 4);
    struct pollfd p = {.fd = s, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, DEADLINE_MS), 1);
    char b[8];
    cr_assert_eq(recv(s, b, sizeof b, 0), 4);
    cr_assert_eq(memcmp(b, "ping", 4), 0);
    cr_assert_eq(send(s, "pong", 4, MSG_NOSIGNAL), 4);
    p.fd = u->io.fd;
    cr_assert_eq(poll(&p, 1, DEADLINE_MS), 1);
    cr_assert_eq(sockio_read(&u->io, b, sizeof b), 4);
    cr_assert_eq(memcmp(b, "pong", 4), 0);
}

/* ---- connect ------------------------------------------------------------ */

Test(upstream, connect_reports_ready_through_the_callback)
{
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    cr_assert_not(u->reused);
    cr_assert_eq(u->failure, GATE_REASON_NONE);
    cr_assert_eq(u->state, UPSTREAM_OPEN);
    cr_assert_null(u->io.ssl);
    run_due();
    cr_assert_eq(o.calls, 1, "READY once, and nothing armed after it");
    int s = server_of(u);
    round_trip(u, s);
    upstream_release(u, false);
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert(peer_closed(s), "released without reuse: closed");
}

Test(upstream, connect_refused_reports_failed)
{
    /* a bound port that does not listen answers SYN with RST */
    int closed = bound_socket();
    point_at(local_port(closed));
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = upstream_connect(&pool, on_upstream, &o);
    cr_assert_not_null(u, "refused at once (%s): not reported through the callback", strerror(errno));
    cr_assert_eq(o.calls, 0, "reported from inside upstream_connect");
    cr_assert(run_until(called, &o));
    cr_assert_eq(o.ev, UPSTREAM_FAILED);
    cr_assert_eq(o.failure, GATE_REASON_UPSTREAM_CONNECT);
    cr_assert_eq(u->failure, GATE_REASON_UPSTREAM_CONNECT);
    run_due();
    cr_assert_eq(o.calls, 1, "FAILED once: nothing stays armed");
    upstream_release(u, true);
    cr_assert_eq(pool.n_idle, 0u, "a failed connection never goes to the pool");
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &o));
    close(closed);
}

Test(upstream, failed_connection_released_inside_the_callback)
{
    int closed = bound_socket();
    point_at(local_port(closed));
    pool_start();
    owner_t o = {.release_on_fail = true};
    cr_assert_not_null(upstream_connect(&pool, on_upstream, &o));
    cr_assert(run_until(called, &o));
    cr_assert_eq(o.ev, UPSTREAM_FAILED);
    cr_assert_eq(o.failure, GATE_REASON_UPSTREAM_CONNECT);
    run_due();
    cr_assert_eq(o.calls, 1);
    close(closed);
}

Test(upstream, connect_timeout)
{
    /* A listener with a full accept queue drops the next SYN: the
     * connect neither completes nor fails until the timeout. */
    close(lfd);
    lfd = bound_socket();
    cr_assert_eq(listen(lfd, 0), 0);
    point_at(local_port(lfd));
    int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(filler, 0);
    cr_assert_eq(connect(filler, (struct sockaddr *)&cfg.addr.ss, cfg.addr.len), 0, "%s", strerror(errno));
    cfg.connect_timeout_ms = 100;
    pool_start();
    owner_t o = {.release_on_fail = true};
    long long t0 = now_ms();
    cr_assert_not_null(upstream_connect(&pool, on_upstream, &o));
    cr_assert(run_until(called, &o));
    long long took = now_ms() - t0;
    cr_assert_eq(o.ev, UPSTREAM_FAILED);
    cr_assert_eq(o.failure, GATE_REASON_UPSTREAM_CONNECT_TIMEOUT);
    cr_assert_geq(took, 95, "timed out after %lld ms of 100", took);
    close(filler);
}

/* ---- the pool ----------------------------------------------------------- */

Test(upstream, released_for_reuse_comes_back)
{
    pool_start();
    owner_t o = {0}, o2 = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    upstream_release(u, true);
    cr_assert_eq(pool.n_idle, 1u);
    run_due();
    cr_assert(peer_open(s), "pooled: still open");
    upstream_conn_t *again = upstream_pool_get(&pool, on_upstream, &o2);
    cr_assert_eq(again, u, "the pooled connection");
    cr_assert(again->reused);
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert_eq(o2.calls, 0, "no callback for a pooled connection");
    cr_assert_eq(o.calls, 1, "the first owner hears nothing more");
    round_trip(again, s);
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &o2), "handed out once");
    upstream_release(again, false);
    cr_assert(peer_closed(s));
}

Test(upstream, release_without_reuse_closes)
{
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    upstream_release(u, false);
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &o));
    cr_assert(peer_closed(s));
}

Test(upstream, max_idle_and_warmest_first)
{
    cfg.max_idle = 2;
    pool_start();
    owner_t o[3] = {{0}};
    upstream_conn_t *u[3];
    int s[3];
    for (int i = 0; i < 3; i++) {
        u[i] = connect_ready(&o[i]);
        s[i] = server_of(u[i]);
    }
    for (int i = 0; i < 3; i++)
        upstream_release(u[i], true);
    cr_assert_eq(pool.n_idle, 2u);
    cr_assert(peer_closed(s[2]), "no room: the third is closed");
    cr_assert(peer_open(s[0]));
    cr_assert(peer_open(s[1]));
    owner_t g = {0};
    upstream_conn_t *a = upstream_pool_get(&pool, on_upstream, &g);
    upstream_conn_t *b = upstream_pool_get(&pool, on_upstream, &g);
    cr_assert_eq(a, u[1], "the last released first");
    cr_assert_eq(b, u[0]);
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &g));
    round_trip(a, s[1]);
    round_trip(b, s[0]);
    upstream_release(a, false);
    upstream_release(b, false);
}

Test(upstream, pooled_connection_closed_by_the_server_is_dropped)
{
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    int fd = u->io.fd;
    upstream_release(u, true);
    server_close(s);
    cr_assert_eq(pool.n_idle, 1u, "nothing is seen before the loop runs");
    cr_assert(run_until(pool_empty, NULL), "still pooled");
    owner_t g = {0};
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &g));
    cr_assert_eq(g.calls, 0);
    cr_assert_eq(o.calls, 1, "an idle connection has no owner to tell");
    cr_assert_eq(fcntl(fd, F_GETFD), -1, "its socket is closed");
}

Test(upstream, pooled_connection_sent_unasked_bytes_is_dropped)
{
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    upstream_release(u, true);
    static const char late[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";
    cr_assert_eq(send(s, late, sizeof late - 1, MSG_NOSIGNAL), (ssize_t)(sizeof late - 1));
    cr_assert(run_until(pool_empty, NULL), "still pooled");
    cr_assert(peer_closed(s), "and closed");
    owner_t g = {0};
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &g));
}

Test(upstream, stale_reused_connection_is_reported_to_its_owner)
{
    /* The server closes a pooled connection and the pool hands it out
     * before the loop saw it: the owner learns through its callback, and
     * u->reused tells it the request may be sent again (the exchange's
     * retry, tested end to end in tests/integration). */
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    server_close(server_of(u));
    upstream_release(u, true);
    owner_t g = {0};
    upstream_conn_t *stale = upstream_pool_get(&pool, on_upstream, &g);
    cr_assert_eq(stale, u);
    cr_assert(stale->reused);
    static const char req[] = "GET /config/master HTTP/1.1\r\nHost: x\r\n\r\n";
    ssize_t w = sockio_write(&stale->io, req, sizeof req - 1, 0);
    cr_assert(w == (ssize_t)(sizeof req - 1) || w == SOCKIO_ERROR);
    struct timeval tv = {2, 0};
    upstream_arm_write(stale, false, NULL);
    upstream_arm_read(stale, true, &tv);
    cr_assert(run_until(called, &g), "the owner never heard");
    cr_assert_eq(g.ev, UPSTREAM_IO);
    cr_assert_eq(g.u, stale);
    cr_assert_eq(o.calls, 1, "not the first owner");
    char b[64];
    ssize_t n = sockio_read(&stale->io, b, sizeof b);
    cr_assert(n == 0 || n == SOCKIO_ERROR, "read %zd from a closed connection", n);
    cr_assert(stale->reused);
    upstream_release(stale, false);
    cr_assert_eq(pool.n_idle, 0u);
}

Test(upstream, idle_timeout_drops_the_connection)
{
    cfg.idle_timeout_ms = 100;
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    long long t0 = now_ms();
    upstream_release(u, true);
    run_due();
    cr_assert_eq(pool.n_idle, 1u, "dropped before its idle timeout");
    cr_assert(run_until(pool_empty, NULL), "never idled out");
    long long took = now_ms() - t0;
    cr_assert_geq(took, 95, "dropped after %lld ms of 100", took);
    cr_assert(peer_closed(s));
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &o));
    cr_assert_eq(o.calls, 1);
}

Test(upstream, idle_timeout_starts_again_on_each_release)
{
    cfg.idle_timeout_ms = 500;
    pool_start();
    owner_t o = {0};
    upstream_conn_t *u = connect_ready(&o);
    int s = server_of(u);
    /* idle 150 ms, in use, idle again: the first wait does not count */
    upstream_release(u, true);
    long long until = now_ms() + 150;
    while (now_ms() < until && pool.n_idle == 1)
        event_base_loop(base, EVLOOP_ONCE);
    cr_assert_eq(pool.n_idle, 1u);
    owner_t g = {0};
    cr_assert_eq(upstream_pool_get(&pool, on_upstream, &g), u);
    long long t1 = now_ms();
    upstream_release(u, true);
    cr_assert(run_until(pool_empty, NULL));
    long long took = now_ms() - t1;
    cr_assert_geq(took, 495, "idled out %lld ms after its second release", took);
    cr_assert(peer_closed(s));
}

Test(upstream, pool_close_refuses_further_reuse)
{
    pool_start();
    owner_t o[3] = {{0}};
    upstream_conn_t *u[3];
    int s[3];
    for (int i = 0; i < 3; i++) {
        u[i] = connect_ready(&o[i]);
        s[i] = server_of(u[i]);
    }
    upstream_release(u[0], true);
    upstream_release(u[1], true);
    cr_assert_eq(pool.n_idle, 2u);
    upstream_pool_close(&pool);
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert(peer_closed(s[0]));
    cr_assert(peer_closed(s[1]));
    owner_t g = {0};
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &g));
    /* the one in use ends cleanly, but does not go back */
    upstream_release(u[2], true);
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert(peer_closed(s[2]));
    cr_assert_null(upstream_pool_get(&pool, on_upstream, &g));
}

/* A reload hands the pool the gate-wide epoch of its peer: the same one
 * (the MCS did not move) keeps the pooled connections; another closes
 * them, and one in use is not pooled again when released. */
Test(upstream, reconfigure_closes_the_pool_only_for_another_peer)
{
    pool_start();
    owner_t o[3] = {{0}};
    upstream_conn_t *u[3];
    int s[3];
    for (int i = 0; i < 3; i++) {
        u[i] = connect_ready(&o[i]);
        s[i] = server_of(u[i]);
        cr_assert_eq(u[i]->epoch, 0u);
    }
    upstream_release(u[0], true);
    upstream_release(u[1], true);
    upstream_pool_reconfigure(&pool, &cfg, client_tls, 0);
    cr_assert_eq(pool.n_idle, 2u, "the same peer: the pool stays");
    cr_assert(peer_open(s[0]));
    upstream_pool_reconfigure(&pool, &cfg, client_tls, 3);
    cr_assert_eq(pool.epoch, 3u, "the gate's number, not one more");
    cr_assert_eq(pool.n_idle, 0u);
    cr_assert(peer_closed(s[0]));
    cr_assert(peer_closed(s[1]));
    upstream_release(u[2], true);
    cr_assert_eq(pool.n_idle, 0u, "made for the old peer: not pooled again");
    cr_assert(peer_closed(s[2]));
    owner_t n = {0};
    upstream_conn_t *fresh = connect_ready(&n);
    cr_assert_eq(fresh->epoch, 3u);
    upstream_release(fresh, true);
    cr_assert_eq(pool.n_idle, 1u);
}

/* ---- TLS ---------------------------------------------------------------- */

/* A throwaway self-signed server certificate, made in memory. */
static SSL_CTX *server_ctx(void)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    cr_assert_not_null(key);
    X509 *x = X509_new();
    cr_assert_not_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"skewgate-test", -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_set_pubkey(x, key);
    cr_assert_gt(X509_sign(x, key, EVP_sha256()), 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    cr_assert_not_null(ctx);
    cr_assert_eq(SSL_CTX_use_certificate(ctx, x), 1);
    cr_assert_eq(SSL_CTX_use_PrivateKey(ctx, key), 1);
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

typedef struct tls_server {
    owner_t *o;
    SSL_CTX *ctx;
    SSL *ssl;
    upstream_conn_t *u;
    int s;
    bool done;
} tls_server_t;

/* Accepts the connection and drives the server's side of the handshake
 * between loop turns, until the client reports. */
static bool tls_step(const void *arg)
{
    tls_server_t *t = (tls_server_t *)arg;
    if (t->o->calls > 0)
        return true;
    if (t->s < 0) {
        int s = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0)
            return false;
        cr_assert_lt(n_srv, MAX_SERVERS);
        srv[n_srv] = s;
        srv_port[n_srv++] = 0;
        t->s = s;
        t->ssl = SSL_new(t->ctx);
        SSL_set_fd(t->ssl, s);
        SSL_set_accept_state(t->ssl);
    }
    if (!t->done) {
        int rc = SSL_do_handshake(t->ssl);
        if (rc == 1)
            t->done = true;
        else
            cr_assert(SSL_get_error(t->ssl, rc) == SSL_ERROR_WANT_READ, "server handshake failed");
    }
    return false;
}

static void tls_client(void)
{
    cfg.tls = true;
    cfg.insecure_skip_verify = true;
    char err[256];
    client_tls = tls_client_ctx_new(&cfg, err, sizeof err);
    cr_assert_not_null(client_tls, "%s", err);
}

Test(upstream, tls_handshake_then_ready)
{
    tls_client();
    pool_start();
    owner_t o = {0};
    tls_server_t t = {.o = &o, .ctx = server_ctx(), .s = -1};
    upstream_conn_t *u = upstream_connect(&pool, on_upstream, &o);
    cr_assert_not_null(u);
    cr_assert_eq(o.calls, 0);
    cr_assert(run_until(tls_step, &t), "no report");
    cr_assert_eq(o.ev, UPSTREAM_READY, "failure %d", o.failure);
    cr_assert_not_null(u->io.ssl);
    cr_assert(SSL_is_init_finished(u->io.ssl), "READY only once the handshake is done");
    /* application data both ways */
    cr_assert_eq(sockio_write(&u->io, "ping", 4, 0), 4);
    char b[8];
    int n = -1;
    for (int i = 0; i < 100 && n <= 0; i++) {
        struct pollfd p = {.fd = t.s, .events = POLLIN};
        poll(&p, 1, 100);
        n = SSL_read(t.ssl, b, sizeof b);
    }
    cr_assert_eq(n, 4);
    cr_assert_eq(memcmp(b, "ping", 4), 0);
    /* pooled and reused with its TLS session */
    upstream_release(u, true);
    owner_t g = {0};
    cr_assert_eq(upstream_pool_get(&pool, on_upstream, &g), u);
    cr_assert_not_null(u->io.ssl);
    upstream_release(u, false);
    SSL_free(t.ssl);
    SSL_CTX_free(t.ctx);
}

Test(upstream, tls_handshake_with_a_plain_server_fails)
{
    tls_client();
    pool_start();
    owner_t o = {.release_on_fail = true};
    cr_assert_not_null(upstream_connect(&pool, on_upstream, &o));
    /* the server answers the ClientHello in plain HTTP and closes */
    int s = -1;
    for (int i = 0; i < 100 && s < 0; i++) {
        event_base_loop(base, EVLOOP_ONCE);
        s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    }
    cr_assert_geq(s, 0);
    static const char plain[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
    cr_assert_eq(send(s, plain, sizeof plain - 1, MSG_NOSIGNAL), (ssize_t)(sizeof plain - 1));
    close(s);
    cr_assert(run_until(called, &o));
    cr_assert_eq(o.ev, UPSTREAM_FAILED);
    cr_assert_eq(o.failure, GATE_REASON_UPSTREAM_TLS_HANDSHAKE);
}

Test(upstream, tls_handshake_timeout)
{
    tls_client();
    cfg.connect_timeout_ms = 100;
    pool_start();
    owner_t o = {.release_on_fail = true};
    /* Before the connect, which arms the deadline: taken after it, a
     * preemption in between (a busy machine) read as an early timeout. */
    long long t0 = now_ms();
    cr_assert_not_null(upstream_connect(&pool, on_upstream, &o));
    /* the server accepts and never answers */
    cr_assert(run_until(called, &o));
    cr_assert_eq(o.ev, UPSTREAM_FAILED);
    cr_assert_eq(o.failure, GATE_REASON_UPSTREAM_CONNECT_TIMEOUT);
    /* libevent reads CLOCK_MONOTONIC_COARSE (a tick: up to 10 ms at
     * HZ=100): the timer may fire a tick early by a precise clock. */
    cr_assert_geq(now_ms() - t0, 85);
}
