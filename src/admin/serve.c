#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "serve.h"
#include "core/addr.h"
#include "core/log.h"

/* Requests to these listeners are tiny; anything bigger is a mistake. */
#define SERVE_MAX_HEADERS 8192
#define SERVE_TIMEOUT_S 10
#define SERVE_BACKLOG 64

/* One accepted connection and its request deadline. evhttp 2.1 has only
 * an idle timeout, which restarts on every byte: a client sending one
 * byte every few seconds held a connection for as long as it liked (still
 * open after a minute). The deadline runs from the accept, or from the
 * end of the previous answer, to the whole request read. */
typedef struct serve_conn {
    struct serve_conn *prev, *next;
    serve_t *serve;
    struct bufferevent *bev;
    struct evhttp_connection *evcon;    /* NULL until attached */
    struct event *deadline;             /* first fire (at once): attach */
} serve_conn_t;

struct serve {
    struct evhttp *http;
    const serve_routes_t *routes;
    void *arg;
    struct timeval request_timeout;
    serve_conn_t *conns;        /* open connections, for serve_conn_of */
};

/* libevent 2.1.12 sends whatever is in the output buffer even to a HEAD,
 * and then no Content-Length: a HEAD gets the GET's length and no body,
 * or the next answer on the connection would start inside this one's. */
void serve_reply(struct evhttp_request *req, int code, const char *reason, const char *type, const char *body,
                 size_t len)
{
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", type);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char n[24];
        snprintf(n, sizeof n, "%zu", len);
        evhttp_add_header(headers, "Content-Length", n);
    } else {
        evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    }
    evhttp_send_reply(req, code, reason, NULL);
}

void serve_text(struct evhttp_request *req, int code, const char *reason, const char *line)
{
    char body[512];
    int n = snprintf(body, sizeof body, "%s\n", line);
    serve_reply(req, code, reason, "text/plain; charset=utf-8", body,
                n < (int)sizeof body ? (size_t)n : sizeof body - 1);
}

void serve_healthz(void *arg, struct evhttp_request *req)
{
    (void)arg;
    serve_text(req, 200, "OK", "ok");
}

static void serve_conn_unlink_free(serve_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->serve->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->deadline);
    free(c);
}

/* evhttp lets the connection go (closed, timed out, or the listener freed). */
static void serve_conn_closed(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    serve_conn_unlink_free(arg);
}

/* From here evhttp tells us when the connection goes: the reference taken
 * at the accept (which kept the bufferevent's memory, not its socket,
 * for this check) is given back. */
static void serve_conn_attach(serve_conn_t *c, struct evhttp_connection *evcon)
{
    c->evcon = evcon;
    evhttp_connection_set_closecb(evcon, serve_conn_closed, c);
    bufferevent_decref(c->bev);
}

/* Attach (the first fire, as soon as evhttp has made the connection), or
 * the deadline passed: evhttp drops a connection whose read timed out,
 * without an answer. */
static void serve_conn_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    serve_conn_t *c = arg;
    if (c->evcon) {
        bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
        return;     /* c is freed by serve_conn_closed */
    }
    /* evhttp set its own callbacks, with the connection as their argument;
     * none left: it has already freed it. */
    bufferevent_event_cb eventcb;
    void *evcon;
    bufferevent_getcb(c->bev, NULL, NULL, &eventcb, &evcon);
    if (!eventcb) {
        bufferevent_decref(c->bev);
        serve_conn_unlink_free(c);
        return;
    }
    serve_conn_attach(c, evcon);
    evtimer_add(c->deadline, &c->serve->request_timeout);
}

/* evhttp's bufferevent for each accepted connection; NULL (out of memory)
 * makes evhttp make its own, without the deadline. */
static struct bufferevent *serve_conn_new(struct event_base *base, void *arg)
{
    serve_t *s = arg;
    serve_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->deadline = evtimer_new(base, serve_conn_fire, c);
    c->bev = c->deadline ? bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE) : NULL;
    if (!c->bev) {
        if (c->deadline)
            event_free(c->deadline);
        free(c);
        return NULL;
    }
    bufferevent_incref(c->bev);
    c->serve = s;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    static const struct timeval at_once = {0, 0};
    evtimer_add(c->deadline, &at_once);
    return c->bev;
}

/* The connection a request came on; NULL if it has no deadline. A linear
 * walk: the admin and metrics listeners have a handful of clients. */
static serve_conn_t *serve_conn_of(const serve_t *s, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    for (serve_conn_t *c = s->conns; bev && c; c = c->next)
        if (c->bev == bev) {
            if (!c->evcon)  /* read before the attach came round */
                serve_conn_attach(c, evcon);
            return c;
        }
    return NULL;
}

/* The answer is out: the next request on a kept-alive connection gets
 * the whole deadline again. */
static void serve_conn_answered(struct evhttp_request *req, void *arg)
{
    (void)req;
    serve_conn_t *c = arg;
    evtimer_add(c->deadline, &c->serve->request_timeout);
}

static void serve_on_request(struct evhttp_request *req, void *arg)
{
    const serve_t *s = arg;
    serve_conn_t *c = serve_conn_of(s, req);
    if (c) {
        evtimer_del(c->deadline);
        evhttp_request_set_on_complete_cb(req, serve_conn_answered, c);
    }
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    for (size_t i = 0; path && i < s->routes->n; i++) {
        const serve_route_t *r = &s->routes->routes[i];
        if (strcmp(path, r->path))
            continue;
        if (!(evhttp_request_get_command(req) & r->methods)) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", r->allow);
            serve_text(req, 405, "Method Not Allowed", "method not allowed");
            return;
        }
        r->handle(s->arg, req);
        return;
    }
    serve_text(req, 404, "Not Found", s->routes->not_found);
}

/* The listening socket, logged as "<name>_listening"; -1 with err set. */
static int serve_listen(const config_addr_t *addr, const char *name, char *err, size_t errlen)
{
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        (addr->ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
        bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 || listen(fd, SERVE_BACKLOG) < 0) {
        snprintf(err, errlen, "%s listener %s: %s", name, addr->text, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[ADDR_IP_TEXT_LEN] = "?";
    unsigned port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        addr_ip_text(&ss, host, sizeof host);
        port = addr_port(&ss);
    }
    char event[48];
    snprintf(event, sizeof event, "%s_listening", name);
    log_json(LOG_INFO, event, json_pack("{s:s, s:i}", "host", host, "port", (int)port));
    return fd;
}

serve_t *serve_start(struct event_base *base, const config_addr_t *addr, const char *name,
                     uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                     size_t errlen)
{
    serve_t *s = calloc(1, sizeof *s);
    if (s)
        s->http = evhttp_new(base);
    if (!s || !s->http) {
        snprintf(err, errlen, "%s listener: out of memory", name);
        serve_free(s);
        return NULL;
    }
    s->routes = routes;
    s->arg = arg;
    s->request_timeout.tv_sec = (time_t)(request_timeout_ms / 1000);
    s->request_timeout.tv_usec = (suseconds_t)(request_timeout_ms % 1000 * 1000);
    evhttp_set_bevcb(s->http, serve_conn_new, s);
    /* Every method reaches serve_on_request, which answers 405 itself. */
    evhttp_set_allowed_methods(s->http, 0x1ff);
    evhttp_set_max_body_size(s->http, SERVE_MAX_BODY);
    evhttp_set_max_headers_size(s->http, SERVE_MAX_HEADERS);
    evhttp_set_timeout(s->http, SERVE_TIMEOUT_S);
    evhttp_set_gencb(s->http, serve_on_request, s);
    int fd = serve_listen(addr, name, err, errlen);
    if (fd < 0 || !evhttp_accept_socket_with_handle(s->http, fd)) {
        if (fd >= 0) {
            close(fd);
            snprintf(err, errlen, "%s listener %s: cannot serve", name, addr->text);
        }
        serve_free(s);
        return NULL;
    }
    return s;
}

void serve_free(serve_t *s)
{
    if (!s)
        return;
    if (s->http)
        evhttp_free(s->http);
    /* evhttp_free closed the attached connections (serve_conn_closed);
     * the rest are not evhttp's any more. */
    while (s->conns) {
        bufferevent_decref(s->conns->bev);
        serve_conn_unlink_free(s->conns);
    }
    free(s);
}
