/* kube_client against a plain loopback listener the test owns: the
 * endpoint's scheme, not the TLS slot, says whether a connection is TLS.
 * An https:// server without a context is refused before anything is
 * sent, so the bearer token never goes out in clear; an http:// server
 * is spoken to in plain HTTP whatever the slot holds. The loop runs under
 * a deadline; nothing sleeps. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "source/kube/client.h"

#define DEADLINE_MS 1000
#define TOKEN "sekrit-token"

static struct event_base *base;
static int lfd = -1, cfd = -1;
static struct event *accept_ev, *read_ev;
static char got[4096];          /* what the server was sent */
static size_t got_len;
static bool accepted;
static kube_response_t done;    /* on_done's, detail and all */
static bool finished;

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    ssize_t n = read(fd, got + got_len, sizeof got - 1 - got_len);
    if (n > 0)
        got_len += (size_t)n;
    got[got_len] = '\0';
    if (strstr(got, "\r\n\r\n")) {
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        cr_assert_eq(write(fd, answer, sizeof answer - 1), (ssize_t)(sizeof answer - 1));
    }
    if (n <= 0 || got_len == sizeof got - 1)
        event_del(read_ev);
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    cfd = accept(fd, NULL, NULL);
    cr_assert_geq(cfd, 0);
    accepted = true;
    read_ev = event_new(base, cfd, EV_READ | EV_PERSIST, on_read, NULL);
    event_add(read_ev, NULL);
}

static void on_line(void *arg, const char *line, size_t len, uint64_t arrived_ns)
{
    (void)arg;
    (void)line;
    (void)len;
    (void)arrived_ns;
}

static void on_done(void *arg, const kube_response_t *resp)
{
    (void)arg;
    done = *resp;
    finished = true;
    event_base_loopbreak(base);
}

static const kube_client_cbs_t cbs = {.on_line = on_line, .on_done = on_done};

static int setup_listener(void)
{
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, len), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    accept_ev = event_new(base, lfd, EV_READ | EV_PERSIST, on_accept, NULL);
    event_add(accept_ev, NULL);
    return ntohs(sa.sin_port);
}

static void setup(void)
{
    base = event_base_new();
    cr_assert_not_null(base);
    got_len = 0;
    got[0] = '\0';
    accepted = finished = false;
}

static void teardown(void)
{
    if (read_ev)
        event_free(read_ev);
    event_free(accept_ev);
    read_ev = accept_ev = NULL;
    if (cfd >= 0)
        close(cfd);
    close(lfd);
    cfd = lfd = -1;
    event_base_free(base);
}

TestSuite(kube_client, .init = setup, .fini = teardown);

/* Starts a GET of /api with TOKEN to scheme://127.0.0.1:port with slot as
 * the owner's TLS slot, and turns the loop until on_done or the deadline.
 * The request's own return. */
static int request(const char *scheme, SSL_CTX *slot, char *err, size_t errlen)
{
    char server[64];
    snprintf(server, sizeof server, "%s://127.0.0.1:%d", scheme, setup_listener());
    kube_endpoint_t ep;
    cr_assert_eq(kube_endpoint_parse(server, NULL, NULL, &ep, err, errlen), 0, "%s", err);
    kube_client_t *c = kube_client_new(base, &ep, &slot, false, &cbs, NULL);
    cr_assert_not_null(c);
    int rc = kube_client_request(c, "/api", TOKEN, KUBE_BODY_WHOLE, DEADLINE_MS, err, errlen);
    /* Whatever rc says, long enough for a connection to be made and read. */
    static const struct timeval deadline = {DEADLINE_MS / 1000, DEADLINE_MS % 1000 * 1000};
    event_base_loopexit(base, &deadline);
    event_base_dispatch(base);
    kube_client_free(c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    return rc;
}

Test(kube_client, an_https_server_without_a_tls_context_is_refused_before_connecting)
{
    char err[512] = "";
    int rc = request("https", NULL, err, sizeof err);
    cr_expect_null(strstr(got, TOKEN), "the token went out in clear: %s", got);
    cr_expect_not(accepted, "a connection was made to an https:// server without TLS");
    cr_expect_eq(rc, -1, "the request started (on_done: %s %s)", done.error ? done.error : "-", done.detail);
    cr_expect_not_null(strstr(err, "https://127.0.0.1:"), "err: %s", err);
    cr_expect_not_null(strstr(err, "TLS"), "err: %s", err);
    cr_expect_not(finished, "on_done after a request that did not start");
}

Test(kube_client, an_http_server_is_plain_whatever_the_tls_slot_holds)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    cr_assert_not_null(ctx);
    char err[512] = "";
    int rc = request("http", ctx, err, sizeof err);
    SSL_CTX_free(ctx);
    cr_assert_eq(rc, 0, "%s", err);
    cr_expect(!strncmp(got, "GET /api HTTP/1.1\r\n", 19), "the server read: %.40s", got);
    cr_expect_not_null(strstr(got, "Authorization: Bearer " TOKEN "\r\n"), "the server read: %s", got);
    cr_expect(finished && done.complete && done.status == 200, "on_done: %s %s", done.error ? done.error : "-",
              done.detail);
}

Test(kube_client, an_http_server_without_a_tls_context_is_plain)
{
    char err[512] = "";
    int rc = request("http", NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_expect_not_null(strstr(got, "Authorization: Bearer " TOKEN "\r\n"), "the server read: %s", got);
    cr_expect(finished && done.complete && done.status == 200, "on_done: %s %s", done.error ? done.error : "-",
              done.detail);
}
