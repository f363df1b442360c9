/*
 * hold_storm: N clients that each ask the gate for a config on one
 * connection and ask again INTERVAL ms after every answer, as Ignition's
 * fetch loop does while it is held, for SECONDS.
 *
 *   hold_storm PORT CLIENTS SECONDS INTERVAL_MS ACCEPT
 *
 * Client i connects from 127.1.x.y (x = i / 250, y = i % 250 + 1), so the
 * gate sees CLIENTS distinct nodes, as its held table would in a real
 * storm. Prints one line:
 *   answers=N per_status=503:N,... errors=N p50_ms=F p99_ms=F max_ms=F
 * where the latency is request written to head read. A Python asyncio
 * client managed about 1,900 answers/s on the 2-core machine, well short
 * of the 5,000/s that 1,000 clients at 200 ms ask for; this one is a
 * single epoll loop that costs a few microseconds per answer.
 *
 * Bounded: at most SECONDS (<= 600) and CLIENTS (<= 20,000); loopback only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 20000
#define MAX_SECONDS 600
#define HEAD_MAX 8192
#define STATUSES 600

typedef struct {
    int fd;
    int index;
    char head[HEAD_MAX];
    size_t head_len;
    long long body_left;     /* body bytes still to read; -1 while in the head */
    long long sent_ns;       /* when the request was written */
    long long next_ns;       /* when to ask again; 0 while a request is out */
} client_t;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static unsigned long statuses[STATUSES];
static unsigned long errors, answers;
static long long *latencies;
static size_t latencies_len, latencies_cap;
static char request[1024];
static size_t request_len;
static int epfd;
static uint16_t port;

static void client_close(client_t *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

/* Connects client c from its own loopback address; the request goes out
 * once the connection is writable. */
static int client_connect(client_t *c)
{
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | ((unsigned)(c->index / 250) << 8) |
                                (unsigned)(c->index % 250 + 1));
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons(port);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(c->fd, (struct sockaddr *)&src, sizeof src) < 0 ||
        (connect(c->fd, (struct sockaddr *)&dst, sizeof dst) < 0 && errno != EINPROGRESS)) {
        client_close(c);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        client_close(c);
        return -1;
    }
    c->head_len = 0;
    c->body_left = -1;
    c->next_ns = 0;
    c->sent_ns = 0;
    return 0;
}

static void client_fail(client_t *c, long long now, long long interval)
{
    errors++;
    client_close(c);
    c->next_ns = now + interval;   /* reconnect after the interval, as Ignition would */
}

static void client_send(client_t *c, long long now, long long interval)
{
    ssize_t n = send(c->fd, request, request_len, MSG_NOSIGNAL);
    if (n != (ssize_t)request_len) {
        client_fail(c, now, interval);
        return;
    }
    c->sent_ns = now;
    c->next_ns = 0;
    c->head_len = 0;
    c->body_left = -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* A whole head is in c->head: counts its status and learns the body's
 * length. Returns the bytes of c->head past the head, or -1. */
static long long head_done(client_t *c, const char *end, long long now)
{
    int status = 0;
    if (sscanf(c->head, "HTTP/1.1 %3d ", &status) != 1 || status < 100 || status >= STATUSES)
        return -1;
    statuses[status]++;
    answers++;
    if (latencies_len < latencies_cap)
        latencies[latencies_len++] = now - c->sent_ns;
    long long length = 0;
    for (const char *p = strstr(c->head, "\r\n") + 2; p < end; p = strstr(p, "\r\n") + 2)
        if (strncasecmp(p, "content-length:", 15) == 0)
            length = atoll(p + 15);
    long long past = (long long)c->head_len - (long long)(end + 4 - c->head);
    c->body_left = length - past;
    return past;
}

static void client_read(client_t *c, long long now, long long interval)
{
    for (;;) {
        char buf[16384];
        char *into = c->body_left < 0 ? c->head + c->head_len : buf;
        size_t room = c->body_left < 0 ? HEAD_MAX - 1 - c->head_len : sizeof buf;
        if (room == 0) {
            client_fail(c, now, interval);
            return;
        }
        ssize_t n = recv(c->fd, into, room, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            client_fail(c, now, interval);
            return;
        }
        if (c->body_left < 0) {
            c->head_len += (size_t)n;
            c->head[c->head_len] = '\0';
            char *end = strstr(c->head, "\r\n\r\n");
            if (!end)
                continue;
            if (head_done(c, end, now) < 0) {
                client_fail(c, now, interval);
                return;
            }
        } else {
            c->body_left -= n;
        }
        if (c->body_left == 0) {
            c->next_ns = now + interval;
            c->body_left = -1;
            c->head_len = 0;
        } else if (c->body_left < 0) {
            client_fail(c, now, interval);   /* more bytes than Content-Length */
            return;
        }
    }
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: hold_storm PORT CLIENTS SECONDS INTERVAL_MS ACCEPT\n");
        return 2;
    }
    port = (uint16_t)atoi(argv[1]);
    int clients = atoi(argv[2]);
    int seconds = atoi(argv[3]);
    long long interval = atoll(argv[4]) * 1000000LL;
    if (port == 0 || clients < 1 || clients > MAX_CLIENTS || seconds < 1 ||
        seconds > MAX_SECONDS || interval < 1000000LL) {
        fprintf(stderr, "hold_storm: bad arguments (clients <= %d, seconds <= %d, interval >= 1 ms)\n",
                MAX_CLIENTS, MAX_SECONDS);
        return 2;
    }
    request_len = (size_t)snprintf(request, sizeof request,
                                   "GET /config/worker HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "User-Agent: Ignition/2.14.0\r\nAccept: %s\r\n\r\n", argv[5]);
    if (request_len >= sizeof request) {
        fprintf(stderr, "hold_storm: ACCEPT too long\n");
        return 2;
    }
    /* room for every answer at 1 ms each: far more than the interval allows */
    latencies_cap = (size_t)clients * (size_t)seconds * 1000u / (size_t)(interval / 1000000LL) + 1;
    latencies = malloc(latencies_cap * sizeof *latencies);
    client_t *all = calloc((size_t)clients, sizeof *all);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!latencies || !all || epfd < 0) {
        perror("hold_storm");
        return 1;
    }
    long long start = now_ns(), stop = start + (long long)seconds * 1000000000LL;
    for (int i = 0; i < clients; i++) {
        all[i].index = i;
        all[i].fd = -1;
        /* spread the first requests over one interval, as a storm of
         * nodes booting together would not all ask in the same millisecond */
        all[i].next_ns = start + interval * i / clients;
    }
    /* One 1 ms tick drives the timers: at 1,000 clients a scan costs a few
     * microseconds, cheaper than a heap of 5,000 timers a second. */
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec tick = {.it_interval = {0, 1000000}, .it_value = {0, 1000000}};
    timerfd_settime(tfd, 0, &tick, NULL);
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev);

    struct epoll_event evs[256];
    for (long long now = now_ns(); now < stop; now = now_ns()) {
        int n = epoll_wait(epfd, evs, 256, 100);
        now = now_ns();
        for (int k = 0; k < n; k++) {
            client_t *c = evs[k].data.ptr;
            if (!c) {
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    perror("hold_storm: timerfd");
                continue;
            }
            if (c->fd < 0)
                continue;
            if (evs[k].events & (EPOLLERR | EPOLLHUP) && !(evs[k].events & EPOLLIN)) {
                client_fail(c, now, interval);
                continue;
            }
            if (evs[k].events & EPOLLOUT && c->sent_ns == 0) {
                client_send(c, now, interval);   /* connected: the first request */
                continue;
            }
            if (evs[k].events & EPOLLIN)
                client_read(c, now, interval);
        }
        for (int i = 0; i < clients; i++) {
            client_t *c = &all[i];
            if (c->next_ns == 0 || c->next_ns > now)
                continue;
            if (c->fd < 0) {
                if (client_connect(c) < 0)
                    client_fail(c, now, interval);
            } else {
                client_send(c, now, interval);
            }
        }
    }
    qsort(latencies, latencies_len, sizeof *latencies, cmp_ll);
    double p50 = 0, p99 = 0, max = 0;
    if (latencies_len) {
        p50 = latencies[latencies_len / 2] / 1e6;
        p99 = latencies[latencies_len * 99 / 100] / 1e6;
        max = latencies[latencies_len - 1] / 1e6;
    }
    printf("answers=%lu per_status=", answers);
    const char *sep = "";
    for (int s = 0; s < STATUSES; s++)
        if (statuses[s]) {
            printf("%s%d:%lu", sep, s, statuses[s]);
            sep = ",";
        }
    printf("%s errors=%lu p50_ms=%.2f p99_ms=%.2f max_ms=%.2f seconds=%.2f\n", *sep ? "" : "none",
           errors, p50, p99, max, (now_ns() - start) / 1e9);
    return 0;
}
