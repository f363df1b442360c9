/* A coalescing reader's client for the unit tests: a socketpair whose
 * far end the test reads, and a count of the reader's wake-ups. Included
 * after proxy/coalesce.h (test_coalesce_storebuf.c: after its modelled
 * copy of coalesce.c, whose names it then calls). */
#ifndef SKEWGATE_TEST_COALESCE_CLIENT_H
#define SKEWGATE_TEST_COALESCE_CLIENT_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

typedef struct client {
    coalesce_reader_t r;
    sockio_t io;
    int peer;       /* the test reads the client's side here */
    int wakes;
} client_t;

static void on_wake(coalesce_reader_t *r)
{
    ((client_t *)((char *)r - offsetof(client_t, r)))->wakes++;
}

static void client_init(client_t *c)
{
    memset(c, 0, sizeof *c);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    c->io.fd = sv[0];
    c->peer = sv[1];
}

static void client_close(client_t *c)
{
    coalesce_reader_leave(&c->r);
    close(c->io.fd);
    close(c->peer);
}

#endif
