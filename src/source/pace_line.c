#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/time.h"
#include "source/kube/client.h"
#include "source/kube/table.h"
#include "source/kube/token.h"
#include "source/pace_line.h"

#define PACE_LINE_MAX_BACKOFF_MS 2000
#define PACE_LINE_TRIES 3
#define PACE_LINE_ROUNDS 3
#define PACE_LINE_IDLE_MS 10000
#define PACE_LINE_MAX_ENTRIES 4096

typedef enum { OP_IDLE, OP_POST_WAIT, OP_GET, OP_WRITE, OP_DELETE } line_op_t;

struct pace_line {
    struct event_base *base;
    config_t *cfg;
    pace_line_ops_t ops;
    void *arg;
    kube_api_t api;
    bool api_ready;
    kube_table_t table;
    struct event *rebuild_ev;
    wakeup_t bell;
    bool bell_ready;
    struct event *bell_ev;
    struct event *kick_ev;
    kube_client_t *client;
    kube_token_t token;
    bool token_ready;
    char gate[PACE_GATE_LEN];
    char base_path[512];
    char last_error[PACE_VIEW_WHY_LEN];
    /* The writer. */
    line_op_t op;
    int tries;
    json_t *joining;            /* the joining Lease as last read or written: {rv, text}; NULL: none */
    pace_line_entry_t *waiters; /* wait Leases to create */
    size_t n_waiters;
    json_t *deletes;            /* name -> uid: wait Leases to delete */
    json_t *deleted;            /* name -> true: asked already */
    char deleting[128];
    pace_line_counts_t counts;
    bool failing;
    /* Rounds of PACE_LINE_TRIES conflicts in a row, with no success
     * between: the claims are dropped after each round and the writer
     * waits a jittered moment; PACE_LINE_ROUNDS of them and the room falls
     * back. */
    int rounds;
    /* Updates that failed otherwise (an error status, no answer) in a
     * row: the claims are dropped and the writer pauses after each;
     * PACE_LINE_ROUNDS of them and the room falls back. One 503 blinded
     * the gate for 5 s while its Leases watch was fine and the other
     * gates claimed (found by a review: 8 of 6). */
    int errors;
    bool backing_off;
    struct event *backoff_ev;
    unsigned seed;
};

/* ---- pure --------------------------------------------------------------- */

bool pace_line_shared(const config_t *cfg)
{
    const config_pace_t *p = &cfg->pace;
    if (p->line == PACE_LINE_API)
        return true;
    return p->line == PACE_LINE_AUTO && cfg->enforcement.source == SOURCE_KIND_KUBERNETES && p->replicas > 1;
}

bool pace_line_wanted(const config_t *cfg)
{
    return cfg->pace.enabled && cfg->enforcement.source == SOURCE_KIND_KUBERNETES && pace_line_shared(cfg);
}

void pace_line_wait_name(const addrset_key_t *key, char *buf, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t at = (size_t)snprintf(buf, len, "%s", PACE_LINE_WAIT_PREFIX);
    for (size_t i = 0; i < sizeof key->b && at + 2 < len; i++) {
        buf[at++] = hex[key->b[i] >> 4];
        buf[at++] = hex[key->b[i] & 15];
    }
    buf[at < len ? at : len - 1] = '\0';
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int pace_line_wait_key(const char *name, addrset_key_t *key)
{
    size_t plen = strlen(PACE_LINE_WAIT_PREFIX);
    if (strncmp(name, PACE_LINE_WAIT_PREFIX, plen) || strlen(name + plen) != 2 * sizeof key->b)
        return -1;
    for (size_t i = 0; i < sizeof key->b; i++) {
        int hi = hexval(name[plen + 2 * i]), lo = hexval(name[plen + 2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        key->b[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int64_t pace_line_micro_ms(const char *s)
{
    time_t t;
    if (!s || time_parse_rfc3339(s, &t) < 0)
        return 0;
    int64_t ms = (int64_t)t * 1000;
    const char *dot = strchr(s, '.');
    if (dot) {
        int64_t frac = 0;
        int digits = 0;
        for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++)
            if (digits < 3) {
                frac = frac * 10 + (*p - '0');
                digits++;
            }
        while (digits++ < 3)
            frac *= 10;
        ms += frac;
    }
    return ms;
}

static void micro_time(int64_t wall_ms, char *buf, size_t len)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char head[32];
    strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06dZ", head, (int)(wall_ms % 1000) * 1000);
}

static int64_t wall_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* ---- the records -------------------------------------------------------- */

static bool keep_lease(void *owner, json_t *records, const json_t *object, bool deleted)
{
    (void)owner;
    const json_t *md = json_object_get(object, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name)
        return false;
    if (deleted)
        return json_object_get(records, name) && json_object_del(records, name) == 0;
    json_t *rec = NULL;
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    if (!strcmp(name, PACE_LINE_JOINING)) {
        const char *text = json_string_value(json_object_get(json_object_get(md, "annotations"), PACE_LINE_ANNOTATION));
        rec = json_pack("{s:s, s:s}", "rv", rv ? rv : "", "text", text ? text : "");
    } else {
        addrset_key_t k;
        if (pace_line_wait_key(name, &k) < 0)
            return false;
        const json_t *spec = json_object_get(object, "spec");
        const char *uid = json_string_value(json_object_get(md, "uid"));
        int64_t at = pace_line_micro_ms(json_string_value(json_object_get(spec, "acquireTime")));
        rec = json_pack("{s:s, s:I}", "uid", uid ? uid : "", "at", (json_int_t)at);
    }
    if (!rec)
        return false;
    json_t *old = json_object_get(records, name);
    if (old && json_equal(old, rec)) {
        json_decref(rec);
        return false;
    }
    return json_object_set_new(records, name, rec) == 0;
}

/* ---- the view ----------------------------------------------------------- */

typedef struct wait_sort {
    int64_t at;
    const char *name;
    addrset_key_t key;
} wait_sort_t;

static int wait_cmp(const void *a, const void *b)
{
    const wait_sort_t *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void kick(pace_line_t *l);

static void queue_delete(pace_line_t *l, const char *name, const char *uid)
{
    if (json_object_get(l->deleted, name) || json_object_get(l->deletes, name))
        return;
    json_object_set_new(l->deletes, name, json_string(uid));
}

static pace_shared_t *build_shared(pace_line_t *l)
{
    pace_shared_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const kube_table_t *t = &l->table;
    s->listed = t->listed;
    s->failing = t->failing;
    if (t->failing)
        snprintf(s->why, sizeof s->why, "the shared line's Leases watch is failing: %.200s",
                 l->last_error[0] ? l->last_error : "?");
    size_t n_records = json_object_size(t->records);
    s->line = calloc(n_records + 1, sizeof *s->line);
    wait_sort_t *w = calloc(n_records + 1, sizeof *w);
    const json_t *jrec = json_object_get(t->records, PACE_LINE_JOINING);
    const char *text = json_string_value(json_object_get(jrec, "text"));
    size_t cap = text ? 1 : 0;
    for (const char *p = text; p && *p; p++)
        cap += *p == '\n';
    pace_line_entry_t *e = calloc(cap + 1, sizeof *e);
    s->joining = calloc(cap + 1, sizeof *s->joining);
    if (!s->line || !w || !e || !s->joining) {
        free(w);
        free(e);
        pace_shared_free(s);
        return NULL;
    }
    size_t bad = 0, n = text ? pace_shared_parse_joining(text, e, cap, &bad) : 0;
    int64_t to_mono = (int64_t)clock_coarse_ms() - wall_now();
    for (size_t i = 0; i < n; i++) {
        pace_shared_joiner_t *j = &s->joining[s->n_joining++];
        j->key = e[i].key;
        j->admitted_wall = e[i].admitted_wall;
        int64_t mono = e[i].admitted_wall + to_mono;
        j->admitted_ms = mono > 0 ? (uint64_t)mono : 0;
        memcpy(j->gate, e[i].gate, sizeof j->gate);
    }
    pace_shared_sort(s);
    size_t nw = 0;
    const char *name;
    json_t *rec;
    json_object_foreach((json_t *)t->records, name, rec) {
        if (!strcmp(name, PACE_LINE_JOINING))
            continue;
        wait_sort_t *x = &w[nw];
        if (pace_line_wait_key(name, &x->key) < 0)
            continue;
        x->at = json_integer_value(json_object_get(rec, "at"));
        x->name = name;
        nw++;
        /* Admitted by this gate: its wait Lease goes; admitted by a gate
         * that has not deleted it a minute later (it died, or restarted
         * under another name): any gate deletes it. */
        int64_t now = wall_now();
        for (size_t i = 0; i < n; i++)
            if (!memcmp(&e[i].key, &x->key, sizeof x->key) &&
                (!strcmp(e[i].gate, l->gate) || now - e[i].admitted_wall > 60000))
                queue_delete(l, name, json_string_value(json_object_get(rec, "uid")));
    }
    qsort(w, nw, sizeof *w, wait_cmp);
    for (size_t i = 0; i < nw; i++)
        s->line[s->n_line++] = (pace_shared_waiter_t){.key = w[i].key, .acquire_wall = w[i].at};
    free(w);
    free(e);
    return s;
}

static void on_rebuild(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pace_line_t *l = arg;
    /* The joining Lease as the watch shows it is what the next update
     * plans on (a 409 reads it again). */
    const json_t *jrec = json_object_get(l->table.records, PACE_LINE_JOINING);
    json_decref(l->joining);
    l->joining = jrec ? json_deep_copy(jrec) : NULL;
    pace_shared_t *s = build_shared(l);
    if (!s) {
        log_msg(LOG_ERROR, "pace_line", "out of memory: the room keeps the previous shared line");
        return;
    }
    log_json(LOG_DEBUG, "pace_line",
             json_pack("{s:b, s:b, s:I, s:I}", "listed", s->listed, "failing", s->failing, "joining",
                       (json_int_t)s->n_joining, "waiting", (json_int_t)s->n_line));
    l->ops.publish(l->arg, s);
    kick(l);
}

static void schedule(pace_line_t *l)
{
    event_active(l->rebuild_ev, EV_TIMEOUT, 0);
}

static void on_change(void *owner)
{
    schedule(owner);
}

static void on_error(void *owner, const char *what, const char *why)
{
    pace_line_t *l = owner;
    snprintf(l->last_error, sizeof l->last_error, "%s: %s", what, why);
    /* The room's why follows the latest failure (a 403 after a drop). */
    if (l->table.failing)
        schedule(l);
}

static const kube_table_ops_t lease_ops = {keep_lease, on_change, on_change, on_change, on_error};

/* ---- the writer --------------------------------------------------------- */

static bool writer_send(pace_line_t *l, line_op_t op, const char *method, const char *target, json_t *body)
{
    char err[256];
    if (kube_token_refresh(&l->token, err, sizeof err) < 0) {
        log_msg(LOG_WARN, "pace_line", "token: %s", err);
        json_decref(body);
        return false;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    kube_request_t req = {.method = method, .target = target, .token = kube_token_current(&l->token),
                          .content_type = text ? "application/json" : NULL, .body = text,
                          .body_len = text ? strlen(text) : 0};
    int rc = kube_client_send(l->client, &req, KUBE_BODY_WHOLE, PACE_LINE_IDLE_MS, err, sizeof err);
    free(text);
    if (rc < 0) {
        log_msg(LOG_WARN, "pace_line", "%s %s: %s", method, target, err);
        return false;
    }
    l->op = op;
    return true;
}

static json_t *lease_body(const pace_line_t *l, const char *name, const char *kind)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
                     "metadata", "name", name, "namespace", l->cfg->pace.namespace, "labels", PACE_LINE_LABEL, kind);
}

/* The writer waits ms before it runs again. */
static void writer_pause(pace_line_t *l, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    l->backing_off = true;
    evtimer_add(l->backoff_ev, &tv);
}

/* The room falls back (PACE_WRITE_FALLBACK_MS); the writer runs again
 * when that ends, to write what the room admitted blind meanwhile. */
static void write_fail(pace_line_t *l, const char *why)
{
    l->ops.written(l->arg, false);
    l->ops.failing(l->arg, why);
    if (!l->failing)
        log_msg(LOG_WARN, "pace_line", "the shared line falls back to counting blind: %s", why);
    l->failing = true;
    l->errors = 0;
    writer_pause(l, PACE_WRITE_FALLBACK_MS + 50);
}

/* An update failed, not for a conflict: the claims go (their nodes claim
 * again at their next retry) and the writer pauses 200-700 ms; only
 * PACE_LINE_ROUNDS such failures in a row fall back. */
static void write_error(pace_line_t *l, const char *why)
{
    if (++l->errors >= PACE_LINE_ROUNDS) {
        write_fail(l, why);
        return;
    }
    log_msg(LOG_WARN, "pace_line", "an update of the joining Lease failed (%d in a row): %s", l->errors, why);
    l->ops.written(l->arg, false);
    writer_pause(l, 200 + (long)(rand_r(&l->seed) % 500));
}

/* The joining Lease planned on as last read: PUT on its version, or
 * POST when there is none. false: nothing to write. */
static bool write_joining(pace_line_t *l)
{
    const char *text = json_string_value(json_object_get(l->joining, "text"));
    const char *rv = json_string_value(json_object_get(l->joining, "rv"));
    size_t cap = 1;
    for (const char *p = text; p && *p; p++)
        cap += *p == '\n';
    pace_line_entry_t *in = calloc(cap, sizeof *in);
    size_t out_cap = cap + l->cfg->pace.max_joining + 1;
    pace_line_entry_t *out = calloc(out_cap, sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return false;
    }
    size_t bad = 0, n_in = text ? pace_shared_parse_joining(text, in, cap, &bad) : 0, added = 0;
    size_t n = l->ops.plan(l->arg, l->gate, in, n_in, wall_now(), out, out_cap, &added);
    free(in);
    if (!added) {
        free(out);
        l->ops.written(l->arg, true);
        return false;
    }
    char *joined = pace_shared_format_joining(out, n);
    free(out);
    json_t *body = lease_body(l, PACE_LINE_JOINING, "joining");
    json_t *md = json_object_get(body, "metadata");
    json_object_set_new(md, "annotations", json_pack("{s:s}", PACE_LINE_ANNOTATION, joined ? joined : ""));
    free(joined);
    json_object_set_new(body, "spec", json_pack("{s:s}", "holderIdentity", l->gate));
    char target[1024];
    if (rv && *rv) {
        json_object_set_new(md, "resourceVersion", json_string(rv));
        snprintf(target, sizeof target, "%s/%s", l->base_path, PACE_LINE_JOINING);
        l->counts.put++;
        return writer_send(l, OP_WRITE, "PUT", target, body) || (write_error(l, "cannot send the update"), false);
    }
    l->counts.post++;
    return writer_send(l, OP_WRITE, "POST", l->base_path, body) || (write_error(l, "cannot send the create"), false);
}

static bool read_joining(pace_line_t *l)
{
    char target[1024];
    snprintf(target, sizeof target, "%s/%s", l->base_path, PACE_LINE_JOINING);
    l->counts.get++;
    return writer_send(l, OP_GET, "GET", target, NULL);
}

/* The next write, if any: claims first (admissions), then new waiters,
 * then the admitted nodes' wait Leases. */
static void writer_next(pace_line_t *l)
{
    if (l->op != OP_IDLE || !l->table.listed || l->backing_off)
        return;
    if (l->ops.pending(l->arg)) {
        l->tries = 0;
        if (write_joining(l))
            return;
    }
    if (!l->n_waiters) {
        free(l->waiters);
        l->waiters = NULL;
        l->n_waiters = l->ops.take_waiters(l->arg, &l->waiters);
    }
    while (l->n_waiters) {
        pace_line_entry_t *w = &l->waiters[--l->n_waiters];
        char name[128], at[64];
        pace_line_wait_name(&w->key, name, sizeof name);
        if (json_object_get(l->table.records, name))
            continue;
        json_t *body = lease_body(l, name, "wait");
        micro_time(w->admitted_wall, at, sizeof at);
        json_object_set_new(body, "spec", json_pack("{s:s, s:s}", "holderIdentity", l->gate, "acquireTime", at));
        l->counts.post++;
        if (writer_send(l, OP_POST_WAIT, "POST", l->base_path, body))
            return;
    }
    const char *name;
    json_t *uid;
    json_object_foreach(l->deletes, name, uid) {
        char target[1024];
        snprintf(target, sizeof target, "%s/%s", l->base_path, name);
        snprintf(l->deleting, sizeof l->deleting, "%s", name);
        json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                                 "preconditions", "uid", json_string_value(uid));
        json_object_set_new(l->deleted, name, json_true());
        json_object_del(l->deletes, name);
        l->counts.del++;
        if (writer_send(l, OP_DELETE, "DELETE", target, body))
            return;
        break;
    }
    /* Forget the deletions the watch no longer shows. */
    void *tmp;
    json_object_foreach_safe(l->deleted, tmp, name, uid)
        if (!json_object_get(l->table.records, name))
            json_object_del(l->deleted, name);
}

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pace_line_t *l = arg;
    l->backing_off = false;
    writer_next(l);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    writer_next(arg);
}

static void kick(pace_line_t *l)
{
    event_active(l->kick_ev, EV_TIMEOUT, 0);
}

static void on_bell(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pace_line_t *l = arg;
    wakeup_consume(&l->bell);
    writer_next(l);
}

static const char *status_reason(const kube_response_t *resp, char *buf, size_t len)
{
    if (!resp->status) {
        snprintf(buf, len, "%s%s%.200s", resp->error ? resp->error : "no answer", resp->detail[0] ? ": " : "",
                 resp->detail);
        return buf;
    }
    json_t *st = resp->body ? json_loadb(resp->body, resp->body_len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(st, "message"));
    snprintf(buf, len, "HTTP %d%s%.180s", resp->status, msg ? ": " : "", msg ? msg : "");
    json_decref(st);
    return buf;
}

static void on_done(void *arg, const kube_response_t *resp)
{
    pace_line_t *l = arg;
    line_op_t op = l->op;
    l->op = OP_IDLE;
    char why[PACE_VIEW_WHY_LEN];
    bool ok = resp->complete && resp->status >= 200 && resp->status < 300;
    switch (op) {
    case OP_POST_WAIT:
        /* 409 AlreadyExists: another gate put it in line first. */
        if (!ok && resp->status != 409)
            log_msg(LOG_WARN, "pace_line", "a wait Lease: %s", status_reason(resp, why, sizeof why));
        break;
    case OP_DELETE:
        if (!ok && resp->status != 404 && resp->status != 409)
            log_msg(LOG_WARN, "pace_line", "deleting %s: %s", l->deleting, status_reason(resp, why, sizeof why));
        break;
    case OP_GET:
        if (ok || resp->status == 404) {
            json_t *o = ok ? json_loadb(resp->body, resp->body_len, 0, NULL) : NULL;
            const json_t *md = json_object_get(o, "metadata");
            json_decref(l->joining);
            l->joining = NULL;
            if (o) {
                const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
                const char *text =
                    json_string_value(json_object_get(json_object_get(md, "annotations"), PACE_LINE_ANNOTATION));
                l->joining = json_pack("{s:s, s:s}", "rv", rv ? rv : "", "text", text ? text : "");
            }
            json_decref(o);
            if (write_joining(l))
                return;
        } else {
            write_error(l, status_reason(resp, why, sizeof why));
        }
        break;
    case OP_WRITE:
        if (ok) {
            json_t *o = json_loadb(resp->body, resp->body_len, 0, NULL);
            const json_t *md = json_object_get(o, "metadata");
            const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
            const char *text =
                json_string_value(json_object_get(json_object_get(md, "annotations"), PACE_LINE_ANNOTATION));
            json_decref(l->joining);
            l->joining = rv ? json_pack("{s:s, s:s}", "rv", rv, "text", text ? text : "") : NULL;
            json_decref(o);
            l->ops.written(l->arg, true);
            l->rounds = 0;
            l->errors = 0;
            if (l->failing) {
                l->ops.failing(l->arg, NULL);
                log_msg(LOG_INFO, "pace_line", "the shared line writes again");
            }
            l->failing = false;
        } else if (resp->status == 409) {
            /* Another gate wrote first (or created it): read, plan again. */
            l->counts.conflicts++;
            if (++l->tries >= PACE_LINE_TRIES && ++l->rounds >= PACE_LINE_ROUNDS) {
                snprintf(why, sizeof why, "the joining Lease's updates conflicted %d times in a row",
                         l->rounds * PACE_LINE_TRIES);
                l->rounds = 0;
                write_fail(l, why);
            } else if (l->tries >= PACE_LINE_TRIES) {
                /* Other gates write as fast: the claims go (their nodes
                 * claim again at their next retry), a jittered pause. */
                l->ops.written(l->arg, false);
                writer_pause(l, 20 + (long)(rand_r(&l->seed) % 100));
            } else if (read_joining(l)) {
                return;
            } else {
                write_error(l, "cannot read the joining Lease");
            }
        } else {
            write_error(l, status_reason(resp, why, sizeof why));
        }
        break;
    case OP_IDLE:
        break;
    }
    kick(l);
}

static void on_line_unused(void *arg, const char *line, size_t len, uint64_t arrived_ns)
{
    (void)arg;
    (void)line;
    (void)len;
    (void)arrived_ns;
}

/* ---- life --------------------------------------------------------------- */

pace_line_t *pace_line_new(struct event_base *base, config_t *cfg, const pace_line_ops_t *ops, void *arg)
{
    pace_line_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->base = base;
    l->cfg = config_ref(cfg);
    l->ops = *ops;
    l->arg = arg;
    char host[64] = "gate";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p == ' ')
            *p = '-';
    snprintf(l->gate, sizeof l->gate, "%.40s-%ld", host, (long)getpid());
    snprintf(l->base_path, sizeof l->base_path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
             cfg->pace.namespace);
    l->deletes = json_object();
    l->deleted = json_object();
    int rc = kube_table_init(&l->table, "Leases", "pace_line", &lease_ops, l);
    l->rebuild_ev = event_new(base, -1, 0, on_rebuild, l);
    l->kick_ev = event_new(base, -1, 0, on_kick, l);
    l->backoff_ev = evtimer_new(base, on_backoff, l);
    l->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)l;
    l->bell_ready = wakeup_init(&l->bell) == 0;
    if (l->bell_ready)
        l->bell_ev = event_new(base, wakeup_fd(&l->bell), EV_READ | EV_PERSIST, on_bell, l);
    if (rc < 0 || !l->rebuild_ev || !l->kick_ev || !l->backoff_ev || !l->bell_ev || !l->deletes || !l->deleted) {
        pace_line_free(l);
        return NULL;
    }
    return l;
}

int pace_line_start(pace_line_t *l, char *err, size_t errlen)
{
    if (kube_api_init(&l->api, &l->cfg->enforcement.kubernetes, err, errlen) < 0) {
        log_msg(LOG_ERROR, "pace_error", "pace.line: %s", err);
        return -1;
    }
    l->api_ready = true;
    static const kube_client_cbs_t cbs = {on_line_unused, on_done};
    l->client = kube_client_new(l->base, &l->api.ep, &l->api.tls, l->api.insecure, &cbs, l);
    l->token_ready = kube_token_init(&l->token, l->api.token_file) == 0;
    char rbac[512];
    snprintf(rbac, sizeof rbac, PACE_LINE_RBAC, l->cfg->pace.namespace);
    kube_reflector_cfg_t rcfg = {
        .what = "Leases (pace line)",
        .collection = {l->base_path, NULL, 500, PACE_LINE_LABEL},
        .rbac_hint = rbac,
        .watch_timeout_ms = l->cfg->enforcement.kubernetes.watch_timeout_ms,
        .max_backoff_ms = PACE_LINE_MAX_BACKOFF_MS,
    };
    if (!l->client || !l->token_ready || kube_table_watch(&l->table, l->base, &l->api, &rcfg) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    event_add(l->bell_ev, NULL);
    log_json(LOG_INFO, "pace_line", json_pack("{s:s, s:s, s:s}", "server", l->api.ep.authority, "namespace",
                                              l->cfg->pace.namespace, "gate", l->gate));
    kube_reflector_start(l->table.reflector);
    schedule(l);
    return 0;
}

void pace_line_free(pace_line_t *l)
{
    if (!l)
        return;
    kube_table_destroy(&l->table);
    if (l->client)
        kube_client_free(l->client);
    if (l->token_ready)
        kube_token_free(&l->token);
    if (l->rebuild_ev)
        event_free(l->rebuild_ev);
    if (l->kick_ev)
        event_free(l->kick_ev);
    if (l->backoff_ev)
        event_free(l->backoff_ev);
    if (l->bell_ev)
        event_free(l->bell_ev);
    if (l->bell_ready)
        wakeup_close(&l->bell);
    if (l->api_ready)
        kube_api_destroy(&l->api);
    json_decref(l->joining);
    json_decref(l->deletes);
    json_decref(l->deleted);
    free(l->waiters);
    config_unref(l->cfg);
    free(l);
}

wakeup_t *pace_line_bell(pace_line_t *l)
{
    return &l->bell;
}

const char *pace_line_gate(const pace_line_t *l)
{
    return l->gate;
}

pace_line_counts_t pace_line_counts(const pace_line_t *l)
{
    return l->counts;
}
