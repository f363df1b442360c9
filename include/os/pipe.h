/* pipe: splice(2) through a pipe, for bodies that go from one plain
 * socket to another without being copied into the process, and a
 * per-thread stack of empty pipes, so a relay does not cost a pipe2 and
 * an fcntl each. */
#ifndef SKEWGATE_PIPE_H
#define SKEWGATE_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A pipe's capacity: above the bytes a relay keeps in it, because each
 * fragment of spliced socket data takes a slot whatever its size. */
#define PIPE_CAPACITY (1024 * 1024)

typedef struct pipe_pool {
    int (*spare)[2];
    size_t n, cap;
} pipe_pool_t;

int pipe_pool_init(pipe_pool_t *p, size_t keep);   /* 0 or -1 */
void pipe_pool_destroy(pipe_pool_t *p);
/* An empty pipe of PIPE_CAPACITY: fds[0] reads, fds[1] writes. 0, or -1
 * when none can be made (the caller relays through its buffer instead). */
int pipe_pool_get(pipe_pool_t *p, int fds[2]);
/* Keeps an empty pipe for the next relay; closes one that still holds
 * bytes (an aborted relay) or that does not fit. */
void pipe_pool_put(pipe_pool_t *p, const int fds[2], bool empty);

/* Results of pipe_splice below zero. */
#define PIPE_AGAIN (-1)     /* the source is empty or the sink full */
#define PIPE_ERROR (-2)     /* errno says why */
/* Moves up to len bytes from fd `from` to fd `to`, one of them a pipe:
 * >0 bytes moved, 0 the source ended, or a PIPE_ code. */
ssize_t pipe_splice(int from, int to, size_t len);

#endif
