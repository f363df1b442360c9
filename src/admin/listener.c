#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "admin/listener.h"
#include "admin/override_form.h"
#include "conf/grammar.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/time.h"
#include "held_json.h"
#include "page.h"
#include "scrape.h"
#include "serve.h"

/* Who set the local override last, and why. */
typedef struct admin_setter {
    bool by_socket;             /* else by admin.token_file's token over TCP */
    unsigned uid;               /* by_socket: the peer's, SO_PEERCRED */
    int pid;
    char credential[CONFIG_SOCKET_PATH_MAX + 1];  /* !by_socket: credential_name */
    char reason[OVERRIDE_REASON_MAX + 1];          /* "" none given */
    time_t at;
} admin_setter_t;

struct admin {
    serve_t *serve;
    serve_t *socket;            /* admin.socket, if configured: the same routes */
    credential_t cred;          /* admin.token_file, for mutations over TCP */
    verdict_ctl_t *ctl;
    scrape_t scrape;
    verdict_override_t local;   /* the local override as last set here */
    admin_setter_t setter;      /* who set it, while local.active */
};

static void admin_json(struct evhttp_request *req, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    if (!text) {
        serve_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    size_t len = strlen(text);
    text[len] = '\n';   /* json_dumps's NUL becomes the final newline */
    serve_reply(req, 200, "OK", "application/json", text, len + 1);
    free(text);
}

/* The admission.machines watch running now; NULL when the policy is off. */
static const machines_watch_t *admin_machines(const admin_t *a)
{
    return a->scrape.machines ? *a->scrape.machines : NULL;
}

/* Ready when the verdict source and, with the policy on, the machines
 * watch have synced since they (re)started: a watch that never lists
 * holds every node. */
static void admin_readyz(void *arg, struct evhttp_request *req)
{
    const admin_t *a = arg;
    const machines_watch_t *m = admin_machines(a);
    const char *why;
    if (verdict_ctl_ready(a->ctl, &why) && (!m || machines_watch_ready(m, &why)))
        serve_text(req, 200, "OK", "ok");
    else
        serve_text(req, 503, "Service Unavailable", why);
}

/* Whether the override deciding v is this gate's local one (else the
 * cluster-wide annotation's): the local one wins while in force. */
static bool admin_local_decides(const admin_t *a, const verdict_t *v)
{
    const verdict_override_t *o = &a->local;
    return o->active && o->decision == v->decision && o->until == v->override_until;
}

/* The override in force, if the verdict is one: {decision, until (RFC
 * 3339, null: no expiry), origin (local: this gate's admin API; cluster:
 * the annotation), setBy ({via: socket, uid, pid} or {via: token,
 * credential}; null for the annotation), reason (null: none given), setAt
 * (null for the annotation)}, else null. */
static json_t *admin_override_json(const admin_t *a, const verdict_t *v)
{
    if (v->reason != REASON_OVERRIDE)
        return json_null();
    char until[TIME_RFC3339_LEN], at[TIME_RFC3339_LEN];
    bool local = admin_local_decides(a, v);
    const admin_setter_t *w = &a->setter;
    json_t *by = !local        ? json_null()
                 : w->by_socket ? json_pack("{s:s, s:I, s:i}", "via", "socket", "uid", (json_int_t)w->uid, "pid", w->pid)
                                : json_pack("{s:s, s:s}", "via", "token", "credential", w->credential);
    return json_pack("{s:s, s:o, s:s, s:o, s:o, s:o}", "decision", decision_name(v->decision), "until",
                     v->override_until ? json_string(time_format_rfc3339(v->override_until, until, sizeof until))
                                       : json_null(),
                     "origin", local ? "local" : "cluster", "setBy", by, "reason",
                     local && w->reason[0] ? json_string(w->reason) : json_null(), "setAt",
                     local ? json_string(time_format_rfc3339(w->at, at, sizeof at)) : json_null());
}

/* Wall-clock seconds as RFC 3339 UTC with milliseconds. */
static json_t *admin_when_json(double t)
{
    time_t sec = (time_t)t;
    struct tm tm;
    char when[48];
    gmtime_r(&sec, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03dZ", (int)((t - (double)sec) * 1000));
    return json_string(when);
}

/* {state, since, lastList (null: not every collection listed since the
 * watch started), lastError ({message, at}, null: none since)}. */
static json_t *admin_machines_json(const machines_watch_t *m)
{
    machines_health_t h;
    machines_watch_health(m, &h);
    return json_pack("{s:s, s:o, s:o, s:o}", "state", machines_state_name(h.state), "since", admin_when_json(h.since),
                     "lastList", h.last_list > 0 ? admin_when_json(h.last_list) : json_null(), "lastError",
                     h.last_error ? json_pack("{s:s, s:o}", "message", h.last_error, "at",
                                              admin_when_json(h.last_error_at))
                                  : json_null());
}

/* The last reload, if it was refused: {at, file, line, column (null when
 * the error names no place in the file), location ("FILE[:LINE:COL]"),
 * message, servingSince (when the configuration serving now was loaded),
 * sha256 (of it)}; null while the last reload took, or without a file. */
static json_t *admin_reload_refused_json(const config_reloads_t *r)
{
    if (!r || !r->last_error[0])
        return json_null();
    /* last_error is "FILE[:LINE:COL]: why", FILE the configuration's path. */
    const char *e = r->last_error, *msg = e;
    size_t plen = strlen(r->path), loc_len = 0;
    unsigned line = 0, col = 0;
    bool named = !strncmp(e, r->path, plen) && e[plen] == ':';
    if (named) {
        int n = 0;
        if (sscanf(e + plen, ":%u:%u: %n", &line, &col, &n) == 2 && n > 0) {
            loc_len = plen + (size_t)n - 2;
            msg = e + plen + n;
        } else {
            line = col = 0;
            loc_len = plen;
            msg = e + plen + 1 + (e[plen + 1] == ' ');
        }
    }
    char at[TIME_RFC3339_LEN], since[TIME_RFC3339_LEN];
    return json_pack("{s:s, s:o, s:o, s:o, s:s%, s:s, s:s, s:s}", "at",
                     time_format_rfc3339(r->failed_at, at, sizeof at), "file",
                     named ? json_string(r->path) : json_null(), "line",
                     line ? json_integer(line) : json_null(), "column", col ? json_integer(col) : json_null(),
                     "location", named ? e : "", loc_len, "message", msg, "servingSince",
                     time_format_rfc3339(r->loaded_at, since, sizeof since), "sha256", r->sha256);
}

/* The verdict, which source decided it, when that source last confirmed
 * its view (RFC 3339 UTC, null: never) and why it last failed ({message,
 * at}, null: never); with admission.machines on, its watch as
 * machinesWatch; the last reload if it was refused as reloadRefused. */
static json_t *admin_verdict_json(const admin_t *a)
{
    json_t *j = verdict_to_json(verdict_ctl_current(a->ctl));
    const source_t *src = verdict_ctl_source(a->ctl);
    if (!j || !src)
        return j;
    json_object_set_new(j, "source", json_string(source_kind(src)));
    double last = verdict_ctl_last_sync(a->ctl), failed_at;
    json_object_set_new(j, "lastSync", last > 0 ? admin_when_json(last) : json_null());
    const char *why = source_last_error(src, &failed_at);
    json_object_set_new(j, "lastError", why ? json_pack("{s:s, s:o}", "message", why, "at", admin_when_json(failed_at))
                                            : json_null());
    json_object_set_new(j, "override", admin_override_json(a, verdict_ctl_current(a->ctl)));
    const mcs_release_t *mcs = verdict_ctl_mcs_release(a->ctl);
    char release[16];
    snprintf(release, sizeof release, "4.%u", mcs->minor);
    json_t *m = json_pack("{s:s, s:s, s:s}", "release", release, "family", mcs_family_name(mcs->family), "from",
                          mcs_release_from_name(mcs->from));
    if (m && mcs->version[0])
        json_object_set_new(m, "version", json_string(mcs->version));
    if (m && mcs->why[0])
        json_object_set_new(m, "why", json_string(mcs->why));
    json_object_set_new(j, "mcsRelease", m);
    if (admin_machines(a))
        json_object_set_new(j, "machinesWatch", admin_machines_json(admin_machines(a)));
    json_object_set_new(j, "reloadRefused", admin_reload_refused_json(a->scrape.reloads));
    return j;
}

static void admin_verdict(void *arg, struct evhttp_request *req)
{
    admin_json(req, admin_verdict_json(arg));
}

/* The held table's JSON, and with pacing on the room's as its "pace"
 * member: the room's text is spliced in whole (pace_json_text renders
 * every waiting node without building it as a json_t). */
static char *admin_held_text(const admin_t *a, size_t *len)
{
    held_view_t view;
    if (scrape_held(&a->scrape, &view) < 0)
        return NULL;
    json_t *j = held_json(&view, clock_wall_coarse_ms());
    held_view_release(&view);
    char *held = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    pace_report_t rep;
    int on = held ? scrape_pace(&a->scrape, true, &rep) : 0;
    if (on <= 0)
        return on < 0 ? (free(held), NULL) : (held ? (*len = strlen(held), held) : NULL);
    pace_clocks_t clocks = {.mono_ms = clock_coarse_ms(), .wall_ms = clock_wall_coarse_ms()};
    size_t pace_len;
    /* What protects the line, of the configuration serving now. */
    const config_admission_t *ad = &(*a->scrape.cfg)->admission;
    json_t *protection = json_object();
    char *pace = protection && pace_protection_json(protection, ad->token.n_files > 0, ad->machines.enabled) == 0
                     ? pace_json_text(&rep, &clocks, protection, &pace_len)
                     : NULL;
    json_decref(protection);
    pace_report_release(&rep);
    char *text = NULL;
    size_t held_len = strlen(held);
    /* The held object's closing brace gives way to the pace member. */
    if (pace && (text = malloc(held_len + pace_len + 16))) {
        size_t at = held_len - 1;
        memcpy(text, held, at);
        at += (size_t)sprintf(text + at, ",\n  \"pace\": ");
        memcpy(text + at, pace, pace_len);
        at += pace_len;
        text[at++] = '\n';
        text[at++] = '}';
        text[at] = '\0';
        *len = at;
    }
    free(held);
    free(pace);
    return text;
}

static void admin_held(void *arg, struct evhttp_request *req)
{
    size_t len;
    char *text = admin_held_text(arg, &len);
    if (!text) {
        serve_text(req, 500, "Internal Server Error", "out of memory");
        return;
    }
    text[len] = '\n';  /* the NUL becomes the final newline */
    serve_reply(req, 200, "OK", "application/json", text, len + 1);
    free(text);
}

/* GET /config: the configuration serving now and the reloads so far. */
static void admin_config(void *arg, struct evhttp_request *req)
{
    const config_reloads_t *r = ((const admin_t *)arg)->scrape.reloads;
    if (!r) {
        serve_text(req, 404, "Not Found", "no configuration file");
        return;
    }
    char when[TIME_RFC3339_LEN];
    json_t *j = json_pack("{s:s, s:s, s:s, s:{s:I, s:I}}", "path", r->path, "sha256", r->sha256, "loaded_at",
                          time_format_rfc3339(r->loaded_at, when, sizeof when), "reloads", "success",
                          (json_int_t)r->success, "failure", (json_int_t)r->failure);
    if (j && r->last_error[0]) {
        json_object_set_new(j, "last_error", json_string(r->last_error));
        json_object_set_new(j, "last_error_at", json_string(time_format_rfc3339(r->failed_at, when, sizeof when)));
    }
    admin_json(req, j);
}

static void admin_metrics(void *arg, struct evhttp_request *req)
{
    admin_t *a = arg;
    scrape_metrics(&a->scrape, req);
}

/* action, for= and reason= of the override form as an override; NULL or
 * what is wrong (in why[len]). */
static const char *admin_override_of(const char *action, const char *dur, const char *reason,
                                     verdict_override_t *o, char *why, size_t len)
{
    uint64_t ms = 0;
    *o = (verdict_override_t){0};
    if (!action)
        return "missing action=admit|reject|clear";
    if (reason && override_form_reason(reason, why + 8, len - 8) < 0)
        return memcpy(why, "reason: ", 8);
    if (!strcmp(action, "clear"))
        return dur ? "for= goes with admit or reject, not clear" : NULL;
    if (strcmp(action, "admit") && strcmp(action, "reject"))
        return "action must be admit, reject or clear";
    if (dur && override_form_duration(dur, true, &ms, why + 5, len - 5) < 0)
        return memcpy(why, "for: ", 5);
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
 * for=DURATION, and reason=TEXT; from the body
 * (application/x-www-form-urlencoded) or, with an empty body, the query.
 * 0 (*reason NULL or copied into reason_buf), or -1 with *why. */
static int admin_parse_override(struct evhttp_request *req, verdict_override_t *o, char *reason_buf,
                                const char **why, char *why_buf, size_t why_len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    char body[SERVE_MAX_BODY + 1];
    int n = evbuffer_remove(in, body, SERVE_MAX_BODY);
    body[n > 0 ? n : 0] = '\0';
    const char *form = n > 0 ? body : evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    /* evhttp_parse_query_str initialises kv, and empties it on failure. */
    struct evkeyvalq kv;
    reason_buf[0] = '\0';
    if (!form || evhttp_parse_query_str(form, &kv) < 0) {
        *why = "expected action=admit|reject|clear[&for=DURATION][&reason=TEXT]";
        return -1;
    }
    const char *action = NULL, *dur = NULL, *reason = NULL;
    *why = NULL;
    for (struct evkeyval *e = kv.tqh_first; e && !*why; e = e->next.tqe_next) {
        const char **field = !strcmp(e->key, "action")   ? &action
                             : !strcmp(e->key, "for")    ? &dur
                             : !strcmp(e->key, "reason") ? &reason
                                                         : NULL;
        if (!field)
            *why = "unknown field: expected action=admit|reject|clear[&for=DURATION][&reason=TEXT]";
        else if (*field)
            *why = field == &action ? "action= given twice" : field == &dur ? "for= given twice" : "reason= given twice";
        else
            *field = e->value;
    }
    if (!*why)
        *why = admin_override_of(action, dur, reason, o, why_buf, why_len);
    if (!*why && reason)
        snprintf(reason_buf, OVERRIDE_REASON_MAX + 1, "%s", reason);
    evhttp_clear_headers(&kv);
    return *why ? -1 : 0;
}

/* "uid 1000 (pid 4242) over the admin socket" or "the token of
 * admin.token_file /etc/skewgate/admin.token over TCP". */
static void admin_setter_text(const admin_setter_t *w, char *buf, size_t cap)
{
    if (w->by_socket)
        snprintf(buf, cap, "uid %u (pid %d) over the admin socket", w->uid, w->pid);
    else
        snprintf(buf, cap, "the token of admin.token_file %s over TCP", w->credential);
}

static void admin_override(void *arg, struct evhttp_request *req)
{
    admin_t *a = arg;
    verdict_override_t o;
    const char *why;
    char why_buf[256], reason[OVERRIDE_REASON_MAX + 1];
    if (admin_parse_override(req, &o, reason, &why, why_buf, sizeof why_buf) < 0) {
        serve_text(req, 400, "Bad Request", why);
        return;
    }
    /* Who: the socket's peer as the kernel names it; over TCP only the
     * token's holder gets here (serve_authorized). */
    admin_setter_t w = {.at = time(NULL)};
    w.by_socket = serve_peer_cred(req, &w.uid, &w.pid);
    if (!w.by_socket)
        snprintf(w.credential, sizeof w.credential, "%s", credential_name(&a->cred));
    snprintf(w.reason, sizeof w.reason, "%s", reason);
    a->local = o;
    a->setter = w;
    verdict_ctl_set_override(a->ctl, &o);
    char by[CONFIG_SOCKET_PATH_MAX + 96], msg[CONFIG_SOCKET_PATH_MAX + OVERRIDE_REASON_MAX + 192];
    admin_setter_text(&w, by, sizeof by);
    snprintf(msg, sizeof msg, "local override via the admin API: %s%s, by %s%s%s%s",
             o.active ? decision_name(o.decision) : "cleared", o.active && o.until ? " (with expiry)" : "", by,
             w.reason[0] ? ": \"" : "", w.reason, w.reason[0] ? "\"" : "");
    char until[TIME_RFC3339_LEN];
    log_json(LOG_WARN, "override",
             json_pack("{s:s, s:s, s:o, s:o, s:o}", "msg", msg, "action",
                       o.active ? decision_name(o.decision) : "clear", "until",
                       o.until ? json_string(time_format_rfc3339(o.until, until, sizeof until)) : json_null(), "by",
                       w.by_socket ? json_pack("{s:s, s:I, s:i}", "via", "socket", "uid", (json_int_t)w.uid, "pid", w.pid)
                                   : json_pack("{s:s, s:s}", "via", "token", "credential", w.credential),
                       "reason", w.reason[0] ? json_string(w.reason) : json_null()));
    admin_json(req, admin_verdict_json(a));
}

static const serve_route_t admin_route_table[] = {
    {"/healthz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", serve_healthz},
    {"/readyz", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_readyz},
    {"/verdict", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_verdict},
    {"/metrics", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_metrics},
    {"/override", EVHTTP_REQ_POST, "POST", admin_override},
    {"/held", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_held},
    {"/config", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", admin_config},
    {"/", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", page_html},
    {"/status.js", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", page_script},
    {"/status.css", EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "GET, HEAD", page_style},
};
static const serve_routes_t admin_routes = {
    admin_route_table, sizeof admin_route_table / sizeof admin_route_table[0],
    "not found: / /healthz /readyz /verdict /held /config /metrics /override",
};

admin_t *admin_start(struct event_base *base, const config_admin_t *cfg, uint64_t request_timeout_ms,
                     verdict_ctl_t *ctl,
                     const metrics_worker_t *const *workers, size_t n_workers, char *err, size_t errlen)
{
    admin_t *a = calloc(1, sizeof *a);
    if (!a || scrape_init(&a->scrape, ctl, workers, n_workers) < 0) {
        snprintf(err, errlen, "admin listener: out of memory");
        admin_free(a);
        return NULL;
    }
    a->ctl = ctl;
    if (credential_init(&a->cred, cfg->token_file, err, errlen) < 0 ||
        !(a->serve = serve_start(base, &cfg->addr, "admin", request_timeout_ms, &admin_routes, a, err, errlen)) ||
        (cfg->socket && !(a->socket = serve_start_unix(base, cfg->socket, "admin", request_timeout_ms, &admin_routes,
                                                       a, err, errlen)))) {
        admin_free(a);
        return NULL;
    }
    serve_require_credential(a->serve, &a->cred, cfg->socket);
    if (!cfg->socket && !cfg->token_file)
        log_msg(LOG_WARN, "admin_readonly", "neither admin.socket nor admin.token_file is set: the admin API "
                "refuses overrides (403) until one is configured");
    return a;
}

void admin_set_reloads(admin_t *a, const config_reloads_t *reloads)
{
    a->scrape.reloads = reloads;
}

void admin_set_machines(admin_t *a, machines_watch_t *const *machines)
{
    a->scrape.machines = machines;
}

void admin_set_pace(admin_t *a, pace_room_t *pace, config_t *const *cfg)
{
    a->scrape.pace = pace;
    a->scrape.cfg = cfg;
}

void admin_set_request_timeout(admin_t *a, uint64_t request_timeout_ms)
{
    serve_set_request_timeout(a->serve, request_timeout_ms);
    if (a->socket)
        serve_set_request_timeout(a->socket, request_timeout_ms);
}

void admin_free(admin_t *a)
{
    if (!a)
        return;
    serve_free(a->serve);
    serve_free(a->socket);
    credential_free(&a->cred);
    scrape_release(&a->scrape);
    free(a);
}
