#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "os/wakeup.h"

int wakeup_init(wakeup_t *w)
{
    atomic_init(&w->claimed, false);
    w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return w->fd < 0 ? -1 : 0;
}

void wakeup_close(wakeup_t *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

bool wakeup_claim(wakeup_t *w)
{
    return !atomic_exchange_explicit(&w->claimed, true, memory_order_acq_rel);
}

void wakeup_signal(wakeup_t *w)
{
    uint64_t one = 1;
    /* Only EAGAIN can fail here (the counter near 2^64): then it is
     * readable already. */
    ssize_t n = write(w->fd, &one, sizeof one);
    (void)n;
}

void wakeup_ring(wakeup_t *w)
{
    if (wakeup_claim(w))
        wakeup_signal(w);
}

void wakeup_consume(wakeup_t *w)
{
    uint64_t count;
    ssize_t n = read(w->fd, &count, sizeof count);   /* EAGAIN when it rang itself */
    (void)n;
    /* An exchange, not a store: it reads the last ringer's claim, which
     * orders that ringer's stores before whatever the caller reads next. */
    atomic_exchange_explicit(&w->claimed, false, memory_order_acq_rel);
}
