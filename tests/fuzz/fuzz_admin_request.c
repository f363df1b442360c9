/* libFuzzer target: the admin API's override form, POST /override with an
 * application/x-www-form-urlencoded body. The form is read inside the
 * evhttp handler of src/admin/listener.c, by static functions
 * (admin_parse_override, admin_override_of) that no header exposes, so
 * this file includes listener.c itself and calls admin_parse_override on a
 * bare evhttp_request whose input buffer holds the fuzz input; what the
 * rest of listener.c would call (the controller, the route plumbing, the
 * scrape) is stubbed to abort, since the parser must not reach it.
 * Checks: a refusal says why; an accepted form is action=admit|reject
 * (active, its decision, an expiry not before now when for= is given) or
 * action=clear (inactive); the form really held an action field. Then the
 * duration reader alone (config_parse_duration) on the input as text.
 * Not covered: the query-string path (an empty body reads the request
 * URI's query, which a bare request has not got), the routing, and the
 * request line and headers, which libevent's evhttp parses. */
// sources: src/conf/*.c src/core/addr.c src/core/cidr.c src/core/ignition.c src/core/ydoc.c src/core/text.c src/core/skew.c src/core/version.c src/core/time.c src/core/log.c src/verdict/verdict_json.c src/verdict/verdict.c src/verdict/override.c src/core/release.c src/admin/override_form.c
// pkgs: libevent jansson yaml-0.1 openssl
// dict: form.dict
#include "../../src/admin/listener.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parts of the gate listener.c links against that the form parser
 * must never call. */
void verdict_ctl_set_override(verdict_ctl_t *ctl, const verdict_override_t *o)
{
    (void)ctl, (void)o;
    abort();
}
const verdict_t *verdict_ctl_current(const verdict_ctl_t *ctl)
{
    (void)ctl;
    abort();
}
const source_t *verdict_ctl_source(const verdict_ctl_t *ctl)
{
    (void)ctl;
    abort();
}
bool verdict_ctl_ready(const verdict_ctl_t *ctl, const char **why)
{
    (void)ctl, (void)why;
    abort();
}
const char *source_kind(const source_t *src)
{
    (void)src;
    abort();
}
double source_last_sync(const source_t *src)
{
    (void)src;
    abort();
}
const char *source_last_error(const source_t *src, double *at)
{
    (void)src, (void)at;
    abort();
}
int scrape_init(scrape_t *s, verdict_ctl_t *ctl, const metrics_worker_t *const *workers, size_t n_workers)
{
    (void)s, (void)ctl, (void)workers, (void)n_workers;
    abort();
}
void scrape_release(scrape_t *s)
{
    (void)s;
    abort();
}
void scrape_metrics(void *arg, struct evhttp_request *req)
{
    (void)arg, (void)req;
    abort();
}
serve_t *serve_start(struct event_base *base, const config_addr_t *addr, const char *name,
                     uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                     size_t errlen)
{
    (void)base, (void)addr, (void)name, (void)request_timeout_ms, (void)routes, (void)arg, (void)err, (void)errlen;
    abort();
}
serve_t *serve_start_unix(struct event_base *base, const char *path, const char *name,
                          uint64_t request_timeout_ms, const serve_routes_t *routes, void *arg, char *err,
                          size_t errlen)
{
    (void)base, (void)path, (void)name, (void)request_timeout_ms, (void)routes, (void)arg, (void)err, (void)errlen;
    abort();
}
void serve_require_credential(serve_t *s, credential_t *cred, const char *socket_instead)
{
    (void)s, (void)cred, (void)socket_instead;
    abort();
}
void serve_set_request_timeout(serve_t *s, uint64_t request_timeout_ms)
{
    (void)s, (void)request_timeout_ms;
    abort();
}
void serve_free(serve_t *s)
{
    (void)s;
    abort();
}
int credential_init(credential_t *c, const char *token_file, char *err, size_t errlen)
{
    (void)c, (void)token_file, (void)err, (void)errlen;
    abort();
}
void credential_free(credential_t *c)
{
    (void)c;
    abort();
}
void serve_reply(struct evhttp_request *req, int code, const char *reason, const char *type, const char *body,
                 size_t len)
{
    (void)req, (void)code, (void)reason, (void)type, (void)body, (void)len;
    abort();
}
void serve_text(struct evhttp_request *req, int code, const char *reason, const char *line)
{
    (void)req, (void)code, (void)reason, (void)line;
    abort();
}
void serve_healthz(void *arg, struct evhttp_request *req)
{
    (void)arg, (void)req;
    abort();
}

/* Whether the form's first SERVE_MAX_BODY bytes have a field named action
 * (a key at the start or after '&' or ';', as evhttp splits). */
static bool has_action(const char *f, size_t n)
{
    for (size_t i = 0; i + 7 <= n; i++)
        if ((i == 0 || f[i - 1] == '&' || f[i - 1] == ';') && !memcmp(f + i, "action=", 7))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return 0;
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    if (!req || evbuffer_add(evhttp_request_get_input_buffer(req), data, size) < 0)
        abort();
    time_t before = time(NULL);
    verdict_override_t o;
    memset(&o, 0x5a, sizeof o);
    const char *why = (const char *)1;
    char reason[OVERRIDE_REASON_MAX + 1], why_buf[256];
    int rc = admin_parse_override(req, &o, reason, &why, why_buf, sizeof why_buf);
    if (rc == 0) {
        if (why || !has_action((const char *)data, size < SERVE_MAX_BODY ? size : SERVE_MAX_BODY))
            abort();
        /* reason=: bounded, and nothing a log line could be broken with */
        if (strlen(reason) > OVERRIDE_REASON_MAX)
            abort();
        for (const char *r = reason; *r; r++)
            if ((unsigned char)*r < 0x20 || *r == 0x7f)
                abort();
        if (o.active) {
            if ((unsigned)o.decision > DECISION_REJECT || (o.until != 0 && o.until < before))
                abort();
        } else if (o.until != 0) {
            abort();
        }
    } else if (rc != -1 || !why || !*why) {
        abort();
    }
    evhttp_request_free(req);

    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t ms, again;
    if (config_parse_duration(s, &ms) == 0 && (config_parse_duration(s, &again) != 0 || again != ms))
        abort();
    free(s);
    return 0;
}
