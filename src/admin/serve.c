#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
    char *socket_path;          /* a unix socket: every route allowed, the file removed at free */
    credential_t *cred;         /* TCP: what a mutating route asks */
    char *socket_instead;       /* TCP: admin.socket, where changes go when no token is configured */
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

bool serve_peer_cred(struct evhttp_request *req, unsigned *uid, int *pid)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    struct ucred cred;
    socklen_t cred_len = sizeof cred;
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0 || ss.ss_family != AF_UNIX ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0)
        return false;
    *uid = (unsigned)cred.uid;
    *pid = (int)cred.pid;
    return true;
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

static const char *serve_method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_POST:
        return "POST";
    default:
        return "other";
    }
}

/* A change (not GET or HEAD) over TCP: true when the request carries the token;
 * otherwise it has been answered (401 or 403, 503 when the token file
 * cannot be read). The answers name the fix, never the token. */
static bool serve_authorized(const serve_t *s, struct evhttp_request *req)
{
    if (s->socket_path)
        return true;
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    credential_result_t result = s->cred ? credential_check(s->cred, auth) : CREDENTIAL_UNCONFIGURED;
    static const char *const why[] = {
        [CREDENTIAL_OK] = "ok", [CREDENTIAL_MISSING] = "no bearer token", [CREDENTIAL_WRONG] = "wrong token",
        [CREDENTIAL_UNCONFIGURED] = "no credential configured", [CREDENTIAL_UNREADABLE] = "token file unreadable",
    };
    /* Who tried and why it failed, never what was sent. */
    if (result != CREDENTIAL_OK)
        log_json(LOG_WARN, "admin_refused",
                 json_pack("{s:s, s:s}", "path", evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req)), "why",
                           why[result]));
    switch (result) {
    case CREDENTIAL_OK:
        return true;
    case CREDENTIAL_MISSING:
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer realm=\"skewgate\"");
        serve_text(req, 401, "Unauthorized",
                   "this changes the gate: send Authorization: Bearer <the token of admin.token_file>, "
                   "or use admin.socket");
        return false;
    case CREDENTIAL_WRONG:
        serve_text(req, 403, "Forbidden", "wrong token: it is not the one of admin.token_file");
        return false;
    case CREDENTIAL_UNREADABLE:
        serve_text(req, 503, "Service Unavailable", "admin.token_file cannot be read now: see the gate's log");
        return false;
    case CREDENTIAL_UNCONFIGURED:
        break;
    }
    if (s->socket_instead) {
        char text[CONFIG_SOCKET_PATH_MAX + 256];
        snprintf(text, sizeof text,
                 "changes over TCP need admin.token_file, which is not set: send them to the admin socket %s "
                 "instead (skewgate override --admin %s, or -c with the gate's configuration)",
                 s->socket_instead, s->socket_instead);
        serve_text(req, 403, "Forbidden", text);
        return false;
    }
    serve_text(req, 403, "Forbidden",
               "changes need a credential and none is configured: set admin.socket (a unix socket, mode 0600) "
               "or admin.token_file (a bearer token) in the gate's configuration");
    return false;
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
    /* The path only: a query (or a header) may hold what is not for a log. */
    if (log_enabled(LOG_DEBUG))
        log_json(LOG_DEBUG, "admin_request",
                 json_pack("{s:s, s:s, s:s}", "method", serve_method_name(evhttp_request_get_command(req)), "path",
                           path ? path : "", "via", s->socket_path ? "socket" : "tcp"));
    for (size_t i = 0; path && i < s->routes->n; i++) {
        const serve_route_t *r = &s->routes->routes[i];
        if (strcmp(path, r->path))
            continue;
        if (!(evhttp_request_get_command(req) & r->methods)) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", r->allow);
            serve_text(req, 405, "Method Not Allowed", "method not allowed");
            return;
        }
        bool safe = evhttp_request_get_command(req) & (EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
        if (safe || serve_authorized(s, req))
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

/* The evhttp around a listening socket fd (taken: closed on failure). */
static serve_t *serve_on_fd(struct event_base *base, int fd, const char *what, const char *name,
                            uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                            size_t errlen)
{
    serve_t *s = calloc(1, sizeof *s);
    if (s)
        s->http = evhttp_new(base);
    if (!s || !s->http) {
        snprintf(err, errlen, "%s listener: out of memory", name);
        close(fd);
        serve_free(s);
        return NULL;
    }
    s->routes = routes;
    s->arg = arg;
    serve_set_request_timeout(s, request_timeout_ms);
    evhttp_set_bevcb(s->http, serve_conn_new, s);
    /* Every method reaches serve_on_request, which answers 405 itself. */
    evhttp_set_allowed_methods(s->http, 0x1ff);
    evhttp_set_max_body_size(s->http, SERVE_MAX_BODY);
    evhttp_set_max_headers_size(s->http, SERVE_MAX_HEADERS);
    evhttp_set_timeout(s->http, SERVE_TIMEOUT_S);
    evhttp_set_gencb(s->http, serve_on_request, s);
    if (!evhttp_accept_socket_with_handle(s->http, fd)) {
        close(fd);
        snprintf(err, errlen, "%s listener %s: cannot serve", name, what);
        serve_free(s);
        return NULL;
    }
    return s;
}

serve_t *serve_start(struct event_base *base, const config_addr_t *addr, const char *name,
                     uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                     size_t errlen)
{
    int fd = serve_listen(addr, name, err, errlen);
    return fd < 0 ? NULL
                  : serve_on_fd(base, fd, addr->text, name, request_timeout_ms, routes, arg, err, errlen);
}

/* A socket file at path that no gate serves any more (connect refused) is
 * removed; a live one is another gate's. 0, or -1 with err. */
static int serve_unlink_stale(const struct sockaddr_un *sun, const char *name, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(sun->sun_path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s socket %s: %s", name, sun->sun_path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s socket %s: a file that is not a socket is in the way", name, sun->sun_path);
        return -1;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int live = probe >= 0 && connect(probe, (const struct sockaddr *)sun, sizeof *sun) == 0;
    if (probe >= 0)
        close(probe);
    if (live) {
        snprintf(err, errlen, "%s socket %s: another process serves it", name, sun->sun_path);
        return -1;
    }
    if (unlink(sun->sun_path) < 0) {
        snprintf(err, errlen, "%s socket %s: %s", name, sun->sun_path, strerror(errno));
        return -1;
    }
    return 0;
}

serve_t *serve_start_unix(struct event_base *base, const char *path, const char *name,
                          uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                          size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen, "%s socket %s: path too long", name, path);
        return NULL;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    if (serve_unlink_stale(&sun, name, err, errlen) < 0)
        return NULL;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    /* bind creates the file with the umask's mode, at most 0777 & ~umask;
     * the chmod right after narrows it to the owner before listen, so no
     * connection can be made in between. */
    if (fd < 0 || bind(fd, (const struct sockaddr *)&sun, sizeof sun) < 0 || chmod(path, 0600) < 0 ||
        listen(fd, SERVE_BACKLOG) < 0) {
        snprintf(err, errlen, "%s socket %s: %s", name, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    serve_t *s = serve_on_fd(base, fd, path, name, request_timeout_ms, routes, arg, err, errlen);
    if (s && !(s->socket_path = strdup(path))) {
        snprintf(err, errlen, "%s socket: out of memory", name);
        serve_free(s);
        unlink(path);
        return NULL;
    }
    if (!s) {
        unlink(path);
        return NULL;
    }
    char event[48];
    snprintf(event, sizeof event, "%s_socket", name);
    log_json(LOG_INFO, event, json_pack("{s:s, s:s}", "path", path, "mode", "0600"));
    return s;
}

void serve_require_credential(serve_t *s, credential_t *cred, const char *socket_instead)
{
    s->cred = cred;
    free(s->socket_instead);
    s->socket_instead = socket_instead ? strdup(socket_instead) : NULL;
}

void serve_set_request_timeout(serve_t *s, uint64_t request_timeout_ms)
{
    s->request_timeout.tv_sec = (time_t)(request_timeout_ms / 1000);
    s->request_timeout.tv_usec = (suseconds_t)(request_timeout_ms % 1000 * 1000);
}

void serve_free(serve_t *s)
{
    if (!s)
        return;
    if (s->http)
        evhttp_free(s->http);
    if (s->socket_path) {
        unlink(s->socket_path);
        free(s->socket_path);
    }
    free(s->socket_instead);
    /* evhttp_free closed the attached connections (serve_conn_closed);
     * the rest are not evhttp's any more. */
    while (s->conns) {
        bufferevent_decref(s->conns->bev);
        serve_conn_unlink_free(s->conns);
    }
    free(s);
}
