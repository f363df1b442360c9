#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "os/pipe.h"

int pipe_pool_init(pipe_pool_t *p, size_t keep)
{
    p->n = 0;
    p->cap = keep;
    p->spare = calloc(keep, sizeof *p->spare);
    return p->spare ? 0 : -1;
}

void pipe_pool_destroy(pipe_pool_t *p)
{
    while (p->n) {
        p->n--;
        close(p->spare[p->n][0]);
        close(p->spare[p->n][1]);
    }
    free(p->spare);
    p->spare = NULL;
}

int pipe_pool_get(pipe_pool_t *p, int fds[2])
{
    if (p->n) {
        p->n--;
        fds[0] = p->spare[p->n][0];
        fds[1] = p->spare[p->n][1];
        return 0;
    }
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    if (fcntl(fds[1], F_SETPIPE_SZ, PIPE_CAPACITY) < PIPE_CAPACITY) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    return 0;
}

void pipe_pool_put(pipe_pool_t *p, const int fds[2], bool empty)
{
    if (empty && p->n < p->cap) {
        p->spare[p->n][0] = fds[0];
        p->spare[p->n][1] = fds[1];
        p->n++;
        return;
    }
    close(fds[0]);
    close(fds[1]);
}

ssize_t pipe_splice(int from, int to, size_t len)
{
    for (;;) {
        ssize_t n = splice(from, NULL, to, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n >= 0)
            return n;
        if (errno == EAGAIN)
            return PIPE_AGAIN;
        if (errno != EINTR)
            return PIPE_ERROR;
    }
}
