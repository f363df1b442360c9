/* os/socket: the gate's listeners share a port among themselves
 * (SO_REUSEPORT), and the probe without SO_REUSEPORT sees any listener on
 * the address, with SO_REUSEPORT or without, but not a socket that is
 * only bound, nor connections left in TIME_WAIT. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "os/socket.h"

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    cr_assert_eq(inet_pton(AF_INET, ip, &in->sin_addr), 1);
    return ss;
}

static struct sockaddr_storage v6(const char *ip, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
    in->sin6_family = AF_INET6;
    in->sin6_port = htons(port);
    cr_assert_eq(inet_pton(AF_INET6, ip, &in->sin6_addr), 1);
    return ss;
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

Test(socket, own_listeners_share_the_port_and_the_probe_sees_them)
{
    char err[256];
    struct sockaddr_storage ss = v4("127.0.0.1", 0);
    int a = socket_listen(&ss, sizeof(struct sockaddr_in), err, sizeof err);
    cr_assert_geq(a, 0, "%s", err);
    cr_assert_neq(port_of(&ss), 0);
    int b = socket_listen(&ss, sizeof(struct sockaddr_in), err, sizeof err);
    cr_assert_geq(b, 0, "a second worker's socket on the port: %s", err);
    cr_assert_eq(socket_probe_unshared(&ss, sizeof(struct sockaddr_in), err, sizeof err), -1);
    cr_assert(strstr(err, "address already in use by another process"), "%s", err);
    /* The wildcard of the port overlaps it too. */
    struct sockaddr_storage any = v4("0.0.0.0", port_of(&ss));
    cr_assert_eq(socket_probe_unshared(&any, sizeof(struct sockaddr_in), err, sizeof err), -1);
    close(a);
    close(b);
    cr_assert_eq(socket_probe_unshared(&ss, sizeof(struct sockaddr_in), err, sizeof err), 0, "%s", err);
}

Test(socket, probe_sees_a_listener_without_reuseport)
{
    char err[256];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_storage ss = v4("127.0.0.1", 0);
    socklen_t len = sizeof(struct sockaddr_in);
    cr_assert_eq(bind(fd, (struct sockaddr *)&ss, len), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    /* Bound, not listening: not a listener. */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    cr_assert_eq(socket_probe_unshared(&ss, len, err, sizeof err), 0, "%s", err);
    cr_assert_eq(listen(fd, 4), 0);
    cr_assert_eq(socket_probe_unshared(&ss, len, err, sizeof err), -1);
    cr_assert(strstr(err, "already in use"), "%s", err);
    /* ... which socket_listen cannot join either. */
    cr_assert_eq(socket_listen(&ss, len, err, sizeof err), -1);
    close(fd);
}

Test(socket, probe_ignores_time_wait)
{
    char err[256];
    struct sockaddr_storage ss = v4("127.0.0.1", 0);
    socklen_t len = sizeof(struct sockaddr_in);
    int l = socket_listen(&ss, len, err, sizeof err);
    cr_assert_geq(l, 0, "%s", err);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(c, (struct sockaddr *)&ss, len), 0);
    /* TCP_DEFER_ACCEPT: the connection is accepted once it has sent. */
    cr_assert_eq(write(c, "x", 1), 1);
    struct pollfd pfd = {.fd = l, .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 5000), 1);
    int s = accept(l, NULL, NULL);
    cr_assert_geq(s, 0);
    close(l);
    char buf[4];
    cr_assert_eq(read(s, buf, 1), 1);
    /* The gate's side closes first: its end goes to TIME_WAIT on the port. */
    close(s);
    cr_assert_eq(read(c, buf, sizeof buf), 0);
    close(c);
    /* There is one: a bind without SO_REUSEADDR is refused... */
    int plain = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(bind(plain, (struct sockaddr *)&ss, len), -1);
    cr_assert_eq(errno, EADDRINUSE);
    close(plain);
    /* ... and the probe, like the real sockets, does not count it. */
    cr_assert_eq(socket_probe_unshared(&ss, len, err, sizeof err), 0, "%s", err);
    int again = socket_listen(&ss, len, err, sizeof err);
    cr_assert_geq(again, 0, "%s", err);
    close(again);
}

Test(socket, overlap)
{
    struct sockaddr_storage a = v4("127.0.0.1", 22623), b = v4("0.0.0.0", 22623), c = v4("127.0.0.2", 22623),
                            d = v4("127.0.0.1", 22624), e = v6("::", 22623), f = v6("::1", 22623);
    cr_assert(socket_addr_overlap(&a, &a));
    cr_assert(socket_addr_overlap(&a, &b));
    cr_assert(socket_addr_overlap(&b, &c));
    cr_assert_not(socket_addr_overlap(&a, &c));
    cr_assert_not(socket_addr_overlap(&a, &d));
    cr_assert_not(socket_addr_overlap(&b, &e), "v6-only: [::]:P and 0.0.0.0:P are apart");
    cr_assert(socket_addr_overlap(&e, &f));
    cr_assert_not(socket_addr_port_zero(&a));
    struct sockaddr_storage z = v4("127.0.0.1", 0);
    cr_assert(socket_addr_port_zero(&z));
}
