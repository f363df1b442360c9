#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/http.h>

#include "serve.h"
#include "core/addr.h"
#include "core/log.h"

/* Requests to these listeners are tiny; anything bigger is a mistake. */
#define SERVE_MAX_HEADERS 8192
#define SERVE_TIMEOUT_S 10
#define SERVE_BACKLOG 64

struct serve {
    struct evhttp *http;
    const serve_routes_t *routes;
    void *arg;
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

static void serve_on_request(struct evhttp_request *req, void *arg)
{
    const serve_t *s = arg;
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
                     const serve_routes_t *routes, void *arg, char *err, size_t errlen)
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
    free(s);
}
