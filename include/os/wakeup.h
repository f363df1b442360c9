/* wakeup: one thread's doorbell for the others. Any thread may ring it;
 * the owner's event loop watches wakeup_fd and, when it is readable (or
 * when it rang itself), calls wakeup_consume and then looks at what the
 * ringers published. Rings between two consumes cost one write(2) in
 * all: the first ringer claims the doorbell, the rest see it claimed.
 *
 * The order is the point: wakeup_consume drains the eventfd before it
 * gives the claim back. Giving it back first lets a ring land between the
 * two, whose count the drain then swallows: the doorbell stays claimed
 * with nothing pending, and every later ring is lost (coalesce.c had
 * exactly this; test_wakeup rings a million times to catch it). */
#ifndef SKEWGATE_WAKEUP_H
#define SKEWGATE_WAKEUP_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct wakeup {
    int fd;                     /* an eventfd, nonblocking */
    _Atomic bool claimed;       /* a ring is pending: no need to write again */
} wakeup_t;

/* 0, or -1 with errno set. */
int wakeup_init(wakeup_t *w);
void wakeup_close(wakeup_t *w);
static inline int wakeup_fd(const wakeup_t *w)
{
    return w->fd;
}
/* Any thread: true when the caller is the first to ring since the last
 * consume and must make the owner run: wakeup_signal from another
 * thread; on the owner's own thread, activating its event is cheaper. */
bool wakeup_claim(wakeup_t *w);
void wakeup_signal(wakeup_t *w);
/* wakeup_claim, then wakeup_signal if needed. */
void wakeup_ring(wakeup_t *w);
/* The owner: takes the pending ring. What every ringer stored before its
 * ring is visible to the caller afterwards. */
void wakeup_consume(wakeup_t *w);

#endif
