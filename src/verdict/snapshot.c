#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/refcount.h"
#include "verdict/snapshot.h"

/* ---- rendering into one growing buffer, then one allocation */

typedef struct render_buf {
    char *data;
    size_t len, cap;
    bool failed;
} render_buf_t;

typedef struct span {
    size_t offset, len, head_len;
} span_t;

static void buf_append(render_buf_t *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

__attribute__((format(printf, 2, 3)))
static void buf_printf(render_buf_t *b, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* Header lines are short and built from fixed names and numbers. */
    if (n < 0 || (size_t)n >= sizeof line)
        b->failed = true;
    else
        buf_append(b, line, (size_t)n);
}

typedef struct response_spec {
    const char *status;         /* "503 Service Unavailable" */
    const char *content_type;   /* NULL for an empty body */
    const char *body;
    size_t body_len;
} response_spec_t;

static span_t render_response(render_buf_t *b, const response_spec_t *r, const char *reason,
                              http_conn_variant_t variant)
{
    span_t span = {.offset = b->len};
    buf_printf(b, "HTTP/1.1 %s\r\n", r->status);
    if (r->content_type)
        buf_printf(b, "Content-Type: %s\r\n", r->content_type);
    buf_printf(b, "Content-Length: %zu\r\nSkewgate-Reason: %s\r\nCache-Control: no-store\r\n%s\r\n",
               r->body_len, reason, http_connection_line(variant, NULL));
    span.head_len = b->len - span.offset;
    buf_append(b, r->body, r->body_len);
    span.len = b->len - span.offset;
    return span;
}

static void render_row(render_buf_t *b, const response_spec_t *r, const char *reason,
                       span_t row[HTTP_CONN__COUNT])
{
    for (int variant = 0; variant < HTTP_CONN__COUNT; variant++)
        row[variant] = render_response(b, r, reason, variant);
}

/* ---- explain: a minimal Ignition config that writes the reason */

static const char *const spec_versions[IGNITION_SPEC__COUNT] = {
    [IGNITION_SPEC_2_2] = "2.2.0", [IGNITION_SPEC_3_1] = "3.1.0",
    [IGNITION_SPEC_3_2] = "3.2.0", [IGNITION_SPEC_3_3] = "3.3.0", [IGNITION_SPEC_3_4] = "3.4.0",
    [IGNITION_SPEC_3_5] = "3.5.0",
};

static const char *const explain_paths[] = {"/etc/issue", "/etc/motd"};

/* RFC 3986 unreserved characters pass; everything else is escaped, which
 * every data URL parser accepts. */
static char *data_url(const char *text)
{
    static const char prefix[] = "data:,";
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(text);
    char *url = malloc(sizeof prefix + 3 * n);
    if (!url)
        return NULL;
    memcpy(url, prefix, sizeof prefix - 1);
    char *p = url + sizeof prefix - 1;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
        if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
            *s == '-' || *s == '.' || *s == '_' || *s == '~') {
            *p++ = (char)*s;
        } else {
            *p++ = '%';
            *p++ = hex[*s >> 4];
            *p++ = hex[*s & 15];
        }
    }
    *p = '\0';
    return url;
}

/* Spec 2.x names the filesystem and replaces files by default; spec 3.x
 * fails on an existing file unless told to overwrite. 420 = 0644. */
static char *explain_body(ignition_spec_t spec, const char *source)
{
    bool spec2 = spec == IGNITION_SPEC_2_2;
    json_t *files = json_array();
    for (size_t i = 0; i < sizeof explain_paths / sizeof explain_paths[0]; i++) {
        json_t *file = spec2 ? json_pack("{s:s, s:s}", "filesystem", "root", "path", explain_paths[i])
                             : json_pack("{s:s, s:b}", "path", explain_paths[i], "overwrite", 1);
        json_object_set_new(file, "mode", json_integer(0644));
        json_object_set_new(file, "contents", json_pack("{s:s}", "source", source));
        json_array_append_new(files, file);
    }
    json_t *config = json_pack("{s:{s:s}, s:{s:o}}", "ignition", "version", spec_versions[spec],
                               "storage", "files", files);
    char *body = config ? json_dumps(config, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(config);
    return body;
}

typedef span_t answer_spans_t[IGNITION_SPEC__COUNT][HTTP_CONN__COUNT];

static void render_explain(render_buf_t *b, const char *message, const char *reason, answer_spans_t spans)
{
    char text[VERDICT_MESSAGE_LEN + 64];
    snprintf(text, sizeof text, "skewgate: this node was not admitted: %s\n", message);
    char *source = data_url(text);
    if (!source) {
        b->failed = true;
        return;
    }
    for (int spec = 0; spec < IGNITION_SPEC_UNSUPPORTED; spec++) {
        char *body = explain_body(spec, source);
        if (!body) {
            b->failed = true;
            break;
        }
        response_spec_t r = {"200 OK", "application/json", body, strlen(body)};
        render_row(b, &r, reason, spans[spec]);
        free(body);
    }
    free(source);
    /* The MCS's own failures, empty as its are: an unsupported version,
     * and 3.0.0 where 4.20 on cannot convert to it. */
    response_spec_t bad_request = {"400 Bad Request", NULL, "", 0};
    render_row(b, &bad_request, reason, spans[IGNITION_SPEC_UNSUPPORTED]);
    response_spec_t unconvertible = {"500 Internal Server Error", NULL, "", 0};
    render_row(b, &unconvertible, reason, spans[IGNITION_SPEC_UNCONVERTIBLE]);
}

/* Every answer of one reject mode for one reason and message. */
static void render_answers(render_buf_t *b, reject_mode_t mode, const char *reason, const char *message,
                           answer_spans_t spans)
{
    char deny_body[VERDICT_MESSAGE_LEN + 64];

    switch (mode) {
    case REJECT_EXPLAIN:
        render_explain(b, message, reason, spans);
        break;
    case REJECT_DENY: {
        int n = snprintf(deny_body, sizeof deny_body, "skewgate: %s: %s\n", reason, message);
        response_spec_t r = {"403 Forbidden", "text/plain; charset=utf-8", deny_body, (size_t)n};
        render_row(b, &r, reason, spans[0]);
        break;
    }
    case REJECT_HOLD:
    default: {
        response_spec_t r = {"503 Service Unavailable", NULL, "", 0};
        render_row(b, &r, reason, spans[0]);
        break;
    }
    }
    if (mode != REJECT_EXPLAIN)
        for (int spec = 1; spec < IGNITION_SPEC__COUNT; spec++)
            memcpy(spans[spec], spans[0], sizeof spans[0]);
}

static void place_answers(gate_snapshot_t *s, const answer_spans_t spans,
                          gate_response_t out[IGNITION_SPEC__COUNT][HTTP_CONN__COUNT])
{
    for (int spec = 0; spec < IGNITION_SPEC__COUNT; spec++)
        for (int variant = 0; variant < HTTP_CONN__COUNT; variant++) {
            const span_t *span = &spans[spec][variant];
            out[spec][variant] = (gate_response_t){s->bytes + span->offset, span->len, span->head_len};
        }
}

/* ---- the snapshot */

gate_snapshot_t *gate_snapshot_new(const verdict_t *v, reject_mode_t mode, mcs_family_t family)
{
    render_buf_t b = {0};
    answer_spans_t spans, evidence_spans;
    render_answers(&b, mode, verdict_reason_name(v->reason), v->message, spans);
    /* The evidence answers cost one more set of bytes per verdict, so that
     * a held node's answer is as ready as a rejected cluster's. */
    char limit[VERDICT_VERSION_LEN], evidence_message[VERDICT_MESSAGE_LEN];
    snprintf(evidence_message, sizeof evidence_message,
             "this node's Ignition asks for an older config spec than the boot images of OCP %s (the oldest "
             "this cluster supports) read: it is booting from an older boot image",
             version_format_ocp(&v->limits.ocp, limit, sizeof limit));
    render_answers(&b, mode, GATE_EVIDENCE_REASON, evidence_message, evidence_spans);

    gate_snapshot_t *s = b.failed ? NULL : malloc(sizeof *s + b.len);
    if (s) {
        atomic_init(&s->refs, 1);
        s->admit = v->decision == DECISION_ADMIT;
        s->mode = mode;
        s->mcs_family = family;
        s->verdict = *v;
        memcpy(s->bytes, b.data, b.len);
        place_answers(s, spans, s->responses);
        place_answers(s, evidence_spans, s->evidence_responses);
    }
    free(b.data);
    return s;
}

gate_snapshot_t *gate_snapshot_ref(gate_snapshot_t *s)
{
    refcount_hold(&s->refs);
    return s;
}

void gate_snapshot_unref(gate_snapshot_t *s)
{
    if (s && refcount_drop(&s->refs))
        free(s);
}

static const gate_response_t *pick(const gate_response_t table[IGNITION_SPEC__COUNT][HTTP_CONN__COUNT],
                                   int spec_index, http_conn_variant_t variant)
{
    if (spec_index < 0 || spec_index >= IGNITION_SPEC__COUNT)
        spec_index = IGNITION_SPEC_UNSUPPORTED;
    if ((unsigned)variant >= HTTP_CONN__COUNT)
        variant = HTTP_CONN_CLOSE;
    return &table[spec_index][variant];
}

const gate_response_t *gate_snapshot_reject(const gate_snapshot_t *s, int spec_index,
                                            http_conn_variant_t variant)
{
    return pick(s->responses, spec_index, variant);
}

const gate_response_t *gate_snapshot_evidence(const gate_snapshot_t *s, int spec_index,
                                              http_conn_variant_t variant)
{
    return pick(s->evidence_responses, spec_index, variant);
}
