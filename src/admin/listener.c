#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "admin/listener.h"
#include "core/log.h"
#include "core/addr.h"

/* Requests to a loopback listener are tiny; anything bigger is a mistake. */
#define ADMIN_MAX_BODY 1024
#define ADMIN_MAX_HEADERS 8192
#define ADMIN_TIMEOUT_S 10

struct admin {
    struct evhttp *http;
    verdict_ctl_t *ctl;
    const metrics_worker_t **workers;
    size_t n_workers;
};

static void admin_reply(struct evhttp_request *req, int code, const char *reason, const char *type,
                        const char *body, size_t len)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    evhttp_send_reply(req, code, reason, NULL);
}

static void admin_text(struct evhttp_request *req, int code, const char *reason, const char *line)
{
    char body[512];
    int n = snprintf(body, sizeof body, "%s\n", line);
    admin_reply(req, code, reason, "text/plain; charset=utf-8", body,
                n < (int)sizeof body ? (size_t)n : sizeof body - 1);
}

static void admin_json(struct evhttp_request *req, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    if (!text) {
        admin_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    size_t len = strlen(text);
    text[len] = '\n';   /* json_dumps's NUL becomes the final newline */
    admin_reply(req, 200, "OK", "application/json", text, len + 1);
    free(text);
}

static void admin_healthz(admin_t *a, struct evhttp_request *req)
{
    (void)a;
    admin_text(req, 200, "OK", "ok");
}

static void admin_readyz(admin_t *a, struct evhttp_request *req)
{
    const char *why;
    if (verdict_ctl_ready(a->ctl, &why))
        admin_text(req, 200, "OK", "ok");
    else
        admin_text(req, 503, "Service Unavailable", why);
}

/* The verdict, which source decided it and when that source last
 * confirmed its view (RFC 3339 UTC, null: never). */
static json_t *admin_verdict_json(const admin_t *a)
{
    json_t *j = verdict_to_json(verdict_ctl_current(a->ctl));
    const source_t *src = verdict_ctl_source(a->ctl);
    if (!j || !src)
        return j;
    json_object_set_new(j, "source", json_string(source_kind(src)));
    double last = source_last_sync(src);
    if (last > 0) {
        time_t sec = (time_t)last;
        struct tm tm;
        char when[48];
        gmtime_r(&sec, &tm);
        size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(when + n, sizeof when - n, ".%03dZ", (int)((last - (double)sec) * 1000));
        json_object_set_new(j, "lastSync", json_string(when));
    } else {
        json_object_set_new(j, "lastSync", json_null());
    }
    return j;
}

static void admin_verdict(admin_t *a, struct evhttp_request *req)
{
    admin_json(req, admin_verdict_json(a));
}

static void admin_metrics(admin_t *a, struct evhttp_request *req)
{
    const source_t *src = verdict_ctl_source(a->ctl);
    metrics_gate_t g = {
        .verdict = verdict_ctl_current(a->ctl),
        .source_last_sync = src ? source_last_sync(src) : 0,
        .source_reconnects = src ? source_reconnects(src) : 0,
    };
    size_t len;
    char *text = metrics_render(a->workers, a->n_workers, &g, &len);
    if (!text) {
        admin_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    admin_reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}

/* action and for= of the override form as an override; NULL or what is wrong. */
static const char *admin_override_of(const char *action, const char *dur, verdict_override_t *o)
{
    uint64_t ms = 0;
    *o = (verdict_override_t){0};
    if (!action)
        return "missing action=admit|reject|clear";
    if (!strcmp(action, "clear"))
        return dur ? "for= goes with admit or reject, not clear" : NULL;
    if (strcmp(action, "admit") && strcmp(action, "reject"))
        return "action must be admit, reject or clear";
    if (dur && (config_parse_duration(dur, &ms) < 0 || ms == 0))
        return "for= must be a duration such as 30s, 10m, 1h";
    o->active = true;
    o->decision = strcmp(action, "admit") ? DECISION_REJECT : DECISION_ADMIT;
    if (dur) {
        /* Whole seconds, rounded up: the override lasts at least as asked. */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t end_ms = ms + (uint64_t)now.tv_nsec / 1000000 + 1;
        o->until = now.tv_sec + (time_t)((end_ms + 999) / 1000);
    }
    return NULL;
}

/* The override form: action=admit|reject|clear and, not with clear,
 * for=DURATION; from the body (application/x-www-form-urlencoded) or,
 * with an empty body, the query. 0, or -1 with *why. */
static int admin_parse_override(struct evhttp_request *req, verdict_override_t *o, const char **why)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    char body[ADMIN_MAX_BODY + 1];
    int n = evbuffer_remove(in, body, ADMIN_MAX_BODY);
    body[n > 0 ? n : 0] = '\0';
    const char *form = n > 0 ? body : evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    /* evhttp_parse_query_str initialises kv, and empties it on failure. */
    struct evkeyvalq kv;
    if (!form || evhttp_parse_query_str(form, &kv) < 0) {
        *why = "expected action=admit|reject|clear[&for=DURATION]";
        return -1;
    }
    const char *action = NULL, *dur = NULL;
    *why = NULL;
    for (struct evkeyval *e = kv.tqh_first; e; e = e->next.tqe_next) {
        if (!strcmp(e->key, "action"))
            action = e->value;
        else if (!strcmp(e->key, "for"))
            dur = e->value;
        else
            *why = "unknown field: expected action=admit|reject|clear[&for=DURATION]";
    }
    if (!*why)
        *why = admin_override_of(action, dur, o);
    evhttp_clear_headers(&kv);
    return *why ? -1 : 0;
}

static void admin_override(admin_t *a, struct evhttp_request *req)
{
    verdict_override_t o;
    const char *why;
    if (admin_parse_override(req, &o, &why) < 0) {
        admin_text(req, 400, "Bad Request", why);
        return;
    }
    verdict_ctl_set_override(a->ctl, &o);
    log_msg(LOG_WARN, "override", "local override via the admin API: %s%s",
            o.active ? decision_name(o.decision) : "cleared",
            o.active && o.until ? " (with expiry)" : "");
    admin_json(req, admin_verdict_json(a));
}

static const struct admin_route {
    const char *path;
    unsigned methods;
    const char *allow;
    void (*handle)(admin_t *a, struct evhttp_request *req);
} admin_routes[] = {
    {"/healthz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_healthz},
    {"/readyz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_readyz},
    {"/verdict", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_verdict},
    {"/metrics", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_metrics},
    {"/override", EVHTTP_REQ_POST, "POST", admin_override},
};

static void admin_on_request(struct evhttp_request *req, void *arg)
{
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    for (size_t i = 0; path && i < sizeof admin_routes / sizeof admin_routes[0]; i++) {
        const struct admin_route *r = &admin_routes[i];
        if (strcmp(path, r->path))
            continue;
        if (!(evhttp_request_get_command(req) & r->methods)) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", r->allow);
            admin_text(req, 405, "Method Not Allowed", "method not allowed");
            return;
        }
        r->handle(arg, req);
        return;
    }
    admin_text(req, 404, "Not Found", "not found: /healthz /readyz /verdict /metrics /override");
}

static int admin_listen(const config_admin_t *cfg, char *err, size_t errlen)
{
    int fd = socket(cfg->addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (const struct sockaddr *)&cfg->addr.ss, cfg->addr.len) < 0 || listen(fd, 64) < 0) {
        snprintf(err, errlen, "admin listener %s: %s", cfg->addr.text, strerror(errno));
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
    log_json(LOG_INFO, "admin_listening", json_pack("{s:s, s:i}", "host", host, "port", (int)port));
    return fd;
}

admin_t *admin_start(struct event_base *base, const config_admin_t *cfg, verdict_ctl_t *ctl,
                     const metrics_worker_t *const *workers, size_t n_workers, char *err, size_t errlen)
{
    admin_t *a = calloc(1, sizeof *a);
    if (a)
        a->workers = malloc(n_workers * sizeof *a->workers);
    if (a && a->workers)
        a->http = evhttp_new(base);
    if (!a || !a->workers || !a->http) {
        snprintf(err, errlen, "admin listener: out of memory");
        admin_free(a);
        return NULL;
    }
    memcpy(a->workers, workers, n_workers * sizeof *a->workers);
    a->n_workers = n_workers;
    a->ctl = ctl;
    /* Every method reaches admin_on_request, which answers 405 itself. */
    evhttp_set_allowed_methods(a->http, 0x1ff);
    evhttp_set_max_body_size(a->http, ADMIN_MAX_BODY);
    evhttp_set_max_headers_size(a->http, ADMIN_MAX_HEADERS);
    evhttp_set_timeout(a->http, ADMIN_TIMEOUT_S);
    evhttp_set_gencb(a->http, admin_on_request, a);
    int fd = admin_listen(cfg, err, errlen);
    if (fd < 0 || !evhttp_accept_socket_with_handle(a->http, fd)) {
        if (fd >= 0) {
            close(fd);
            snprintf(err, errlen, "admin listener %s: cannot serve", cfg->addr.text);
        }
        admin_free(a);
        return NULL;
    }
    return a;
}

void admin_free(admin_t *a)
{
    if (!a)
        return;
    if (a->http)
        evhttp_free(a->http);
    free(a->workers);
    free(a);
}
