/* storm_mcs: the Machine Config Server stand-in of the storm benchmark
 * (bench/run scenario S6). Like the MCS it renders every config on every
 * request, with no cache, and renders cost CPU: each GET of a pool burns
 * RENDER_MS of this thread's CPU time (a busy loop on
 * CLOCK_THREAD_CPUTIME_ID, not a sleep, so that renders compete for the
 * core as the Go MCS's do), then sends the pool's body with an explicit
 * Content-Length, Content-Type: application/json and no cache headers, as
 * the MCS does. One thread per connection, keep-alive, like net/http.
 *
 *   storm_mcs PORT RENDER_MS POOL=BYTES...     (port 0: the kernel picks)
 *
 * Prints "listening port=P" once it listens. GET /renders answers the
 * renders done so far and those under way, "DONE BUSY" (no render cost),
 * so that a count is read once none is under way; GET /healthz answers 200;
 * an unknown pool 500 (as the MCS), other paths 404; POOL-SUFFIX is POOL. The body of a pool is
 * the same bytes on every render (a function of its size only), so a
 * client can check each copy against one SHA-256. SIGTERM ends it. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_POOLS 8
#define HEAD_MAX 16384

typedef struct pool {
    char name[64];
    char *body;
    size_t len;
} pool_t;

static pool_t pools[MAX_POOLS];
static size_t n_pools;
static uint64_t render_ns;
static atomic_ulong renders, rendering;

/* A valid JSON document of exactly len bytes: an Ignition-like head, then
 * pseudo-random letters (an LCG seeded by the size) up to the closing. */
static char *make_body(size_t len)
{
    static const char head[] = "{\"ignition\":{\"version\":\"3.4.0\"},\"pad\":\"";
    static const char tail[] = "\"}";
    if (len < sizeof head + sizeof tail)
        return NULL;
    char *b = malloc(len);
    if (!b)
        return NULL;
    memcpy(b, head, sizeof head - 1);
    uint32_t x = (uint32_t)len;
    for (size_t i = sizeof head - 1; i < len - (sizeof tail - 1); i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (char)('a' + (x >> 16) % 26);
    }
    memcpy(b + len - (sizeof tail - 1), tail, sizeof tail - 1);
    return b;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Burns render_ns of this thread's CPU; the volatile sink keeps the loop. */
static void render(void)
{
    volatile uint64_t sink = 0;
    atomic_fetch_add(&rendering, 1);
    uint64_t until = thread_cpu_ns() + render_ns;
    while (thread_cpu_ns() < until)
        for (int i = 0; i < 1000; i++)
            sink += (uint64_t)i * 2654435761u;
    atomic_fetch_add(&renders, 1);
    atomic_fetch_sub(&rendering, 1);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int answer(int fd, const char *status, const char *type, const char *body, size_t len, bool head_only,
                  bool close_after)
{
    char h[256];
    int n = snprintf(h, sizeof h, "HTTP/1.1 %s\r\n%s%s%sContent-Length: %zu\r\n%s\r\n", status,
                     type ? "Content-Type: " : "", type ? type : "", type ? "\r\n" : "", len,
                     close_after ? "Connection: close\r\n" : "");
    if (send_all(fd, h, (size_t)n) < 0)
        return -1;
    return head_only ? 0 : send_all(fd, body, len);
}

/* "s1m" serves /config/s1m and /config/s1m-ANYTHING: a storm asks for a
 * pool name of its own (a cold cache in front, and a path without a query,
 * which is what is coalesced), with the body of its size. */
static bool pool_matches(const pool_t *p, const char *name, size_t len)
{
    size_t n = strlen(p->name);
    return len >= n && !memcmp(name, p->name, n) && (len == n || name[n] == '-');
}

/* One request head in buf[0..n): answers it; -1 ends the connection. */
static int serve(int fd, const char *buf, size_t n, bool *close_after)
{
    const char *sp1 = memchr(buf, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - buf)) : NULL;
    if (!sp1 || !sp2)
        return -1;
    bool get = sp1 - buf == 3 && !memcmp(buf, "GET", 3);
    bool head = sp1 - buf == 4 && !memcmp(buf, "HEAD", 4);
    *close_after = memmem(buf, n, "\r\nConnection: close\r\n", 21) || memmem(buf, n, "HTTP/1.0\r\n", 10);
    if (!get && !head)
        return answer(fd, "405 Method Not Allowed", NULL, "", 0, false, *close_after);
    const char *path = sp1 + 1;
    const char *query = memchr(path, '?', (size_t)(sp2 - path));
    size_t plen = (size_t)((query ? query : sp2) - path);
    char count[32];
    if (plen == 8 && !memcmp(path, "/healthz", 8))
        return answer(fd, "200 OK", NULL, "", 0, head, *close_after);
    if (plen == 8 && !memcmp(path, "/renders", 8)) {
        int c = snprintf(count, sizeof count, "%lu %lu\n", atomic_load(&renders), atomic_load(&rendering));
        return answer(fd, "200 OK", "text/plain", count, (size_t)c, head, *close_after);
    }
    if (plen > 8 && !memcmp(path, "/config/", 8)) {
        render();
        for (size_t i = 0; i < n_pools; i++)
            if (pool_matches(&pools[i], path + 8, plen - 8))
                return answer(fd, "200 OK", "application/json", pools[i].body, pools[i].len, head,
                              *close_after);
        return answer(fd, "500 Internal Server Error", NULL, "", 0, head, *close_after);
    }
    return answer(fd, "404 Not Found", NULL, "", 0, head, *close_after);
}

static void *connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[HEAD_MAX];
    size_t have = 0;
    for (;;) {
        char *end = memmem(buf, have, "\r\n\r\n", 4);
        if (end) {
            size_t n = (size_t)(end + 4 - buf);
            bool close_after = false;
            if (serve(fd, buf, n, &close_after) < 0 || close_after)
                break;
            memmove(buf, buf + n, have - n);
            have -= n;
            continue;
        }
        if (have == sizeof buf)
            break;
        ssize_t r = recv(fd, buf + have, sizeof buf - have, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: storm_mcs PORT RENDER_MS POOL=BYTES...\n");
        return 2;
    }
    render_ns = strtoull(argv[2], NULL, 10) * 1000000u;
    for (int i = 3; i < argc && n_pools < MAX_POOLS; i++) {
        char *eq = strchr(argv[i], '=');
        size_t name_len = eq ? (size_t)(eq - argv[i]) : 0;
        if (!eq || name_len == 0 || name_len >= sizeof pools[0].name) {
            fprintf(stderr, "storm_mcs: bad pool %s\n", argv[i]);
            return 2;
        }
        pool_t *p = &pools[n_pools++];
        memcpy(p->name, argv[i], name_len);
        p->len = strtoull(eq + 1, NULL, 10);
        if (!(p->body = make_body(p->len))) {
            fprintf(stderr, "storm_mcs: cannot make a body of %zu bytes\n", p->len);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4096) ||
        getsockname(lfd, (struct sockaddr *)&a, &al)) {
        perror("storm_mcs: listen");
        return 1;
    }
    printf("listening port=%d\n", ntohs(a.sin_port));
    fflush(stdout);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("storm_mcs: accept");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, &attr, connection, (void *)(intptr_t)fd) != 0)
            close(fd);
    }
}
