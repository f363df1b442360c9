/* schema: the engine (schema.h). It knows YAML's types and the shapes of
 * values every configuration has (booleans, counts, durations, sizes,
 * enums, addresses, strings, file paths); what a value means to the gate
 * is in the tables of tables.c and the readers of readers.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/ssl.h>

#include "schema.h"
#include "conf/grammar.h"
#include "core/addr.h"

int schema_fail(loader_t *ld, const ynode_t *at, const char *path, const char *fmt, ...)
{
    char problem[CONFIG_ERR_LEN], msg[2 * CONFIG_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "%s:%d:%d: %s%s%s", ld->name, at->line, at->col, path, *path ? ": " : "", problem);
    if (ld->n_errors++ == 0 && ld->err && ld->errlen)
        snprintf(ld->err, ld->errlen, "%s", msg);
    if (ld->each)
        ld->each(msg, ld->each_arg);
    return -1;
}

int schema_fail_oom(loader_t *ld, const ynode_t *at)
{
    ld->stop = true;
    return schema_fail(ld, at, ld->path, "out of memory");
}

static size_t path_push_key(loader_t *ld, const char *key)
{
    size_t old = strlen(ld->path);
    snprintf(ld->path + old, sizeof ld->path - old, "%s%s", old ? "." : "", key);
    return old;
}

size_t schema_path_push_index(loader_t *ld, size_t i)
{
    size_t old = strlen(ld->path);
    snprintf(ld->path + old, sizeof ld->path - old, "[%zu]", i);
    return old;
}

void schema_path_pop(loader_t *ld, size_t old) { ld->path[old] = '\0'; }

int schema_place(loader_t *ld, const ynode_t *node)
{
    if (ld->n_placed == ld->cap_placed) {
        size_t cap = ld->cap_placed ? ld->cap_placed * 2 : 64;
        placed_t *grown = realloc(ld->placed, cap * sizeof *grown);
        if (!grown)
            return schema_fail_oom(ld, node);
        ld->placed = grown;
        ld->cap_placed = cap;
    }
    char *path = strdup(ld->path);
    if (!path)
        return schema_fail_oom(ld, node);
    ld->placed[ld->n_placed++] = (placed_t){path, node};
    return 0;
}

const ynode_t *schema_node_at(const loader_t *ld, const char *path)
{
    for (size_t i = 0; i < ld->n_placed; i++)
        if (!strcmp(ld->placed[i].path, path))
            return ld->placed[i].node;
    return NULL;
}

const ynode_t *schema_nearest_node(const loader_t *ld, const char *path)
{
    char buf[sizeof ld->path];
    snprintf(buf, sizeof buf, "%s", path);
    for (;;) {
        const ynode_t *n = schema_node_at(ld, buf);
        if (n)
            return n;
        char *cut = strrchr(buf, '.');
        if (!cut)
            return ld->root;
        *cut = '\0';
    }
}

void schema_loader_free(loader_t *ld)
{
    for (size_t i = 0; i < ld->n_placed; i++)
        free(ld->placed[i].path);
    free(ld->placed);
    free(ld->dir);
    SSL_CTX_free(ld->tls_probe);
}

int schema_fail_at_path(loader_t *ld, const char *path, const char *fmt, ...)
{
    char problem[CONFIG_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return schema_fail(ld, schema_nearest_node(ld, path), path, "%s", problem);
}

/* A plain scalar's type follows the YAML 1.2 core schema, which ydoc
 * implements; a quoted one is a string. */
typedef enum { SCALAR_STRING, SCALAR_NULL, SCALAR_BOOL, SCALAR_NUMBER } scalar_type_t;

static scalar_type_t scalar_type(const ynode_t *n)
{
    if (!n->plain)
        return SCALAR_STRING;
    json_t *j = ynode_to_json(n, NULL, 0);
    scalar_type_t t = !j                 ? SCALAR_STRING
                      : json_is_null(j)    ? SCALAR_NULL
                      : json_is_boolean(j) ? SCALAR_BOOL
                      : json_is_number(j)  ? SCALAR_NUMBER
                                           : SCALAR_STRING;
    json_decref(j);
    return t;
}

/* "a mapping", "a boolean", ...: for "expected X, got Y". */
static const char *describe(const ynode_t *n)
{
    static const char *const scalar_names[] = {
        [SCALAR_STRING] = "a string",
        [SCALAR_NULL] = "null (remove the key to use the default)",
        [SCALAR_BOOL] = "a boolean",
        [SCALAR_NUMBER] = "a number",
    };
    if (n->kind == YNODE_MAP)
        return "a mapping";
    if (n->kind == YNODE_SEQ)
        return "a list";
    return scalar_names[scalar_type(n)];
}

int schema_fail_expected(loader_t *ld, const ynode_t *node, const char *expected)
{
    return schema_fail(ld, node, ld->path, "expected %s, got %s", expected, describe(node));
}

const char *schema_scalar_text(loader_t *ld, const ynode_t *node, const char *expected)
{
    if (node->kind != YNODE_SCALAR || scalar_type(node) == SCALAR_NULL) {
        schema_fail_expected(ld, node, expected);
        return NULL;
    }
    if (strlen(node->value) != node->len) {
        schema_fail(ld, node, ld->path, "must not contain NUL characters");
        return NULL;
    }
    return node->value;
}

const char *schema_string_text(loader_t *ld, const ynode_t *node)
{
    const char *s = schema_scalar_text(ld, node, "a string");
    if (s && scalar_type(node) != SCALAR_STRING) {
        schema_fail(ld, node, ld->path, "expected a string, got %s (quote it if a string is meant)",
                    describe(node));
        return NULL;
    }
    return s;
}

int schema_set_string(loader_t *ld, const ynode_t *node, char **dst, const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        return schema_fail_oom(ld, node);
    free(*dst);
    *dst = copy;
    return 0;
}

/* Case-insensitive optimal string alignment distance, for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return MAX;
    size_t d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

static const char *closest_key(const char *key, const schema_t *schema)
{
    const char *best = NULL;
    size_t best_distance = SIZE_MAX;
    for (size_t i = 0; i < schema->n; i++) {
        const char *candidate = schema->fields[i].key;
        size_t allowed = strlen(candidate) <= 4 ? 1 : 2;
        size_t d = edit_distance(key, candidate);
        if (d <= allowed && d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

static int fail_unknown_key(loader_t *ld, const ynode_t *key, const schema_t *schema)
{
    const char *suggestion = closest_key(key->value, schema);
    if (suggestion)
        return schema_fail(ld, key, ld->path, "unknown key; did you mean \"%s\"?", suggestion);
    char known[CONFIG_ERR_LEN / 2] = "";
    for (size_t i = 0; i < schema->n; i++) {
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", schema->fields[i].key);
    }
    return schema_fail(ld, key, ld->path, "unknown key (known keys here: %s)", known);
}

static const field_t *find_field(const schema_t *schema, const ynode_t *key)
{
    for (size_t i = 0; i < schema->n; i++)
        if (strlen(schema->fields[i].key) == key->len && !strcmp(schema->fields[i].key, key->value))
            return &schema->fields[i];
    return NULL;
}

int schema_read_map(loader_t *ld, const ynode_t *node, const schema_t *schema, void *base)
{
    if (node->kind != YNODE_MAP)
        return schema_fail_expected(ld, node, "a mapping");
    size_t before = ld->n_errors;
    for (size_t i = 0; i < node->n && !ld->stop; i++) {
        const ynode_t *key = node->pairs[i].key;
        const ynode_t *value = node->pairs[i].value;
        if (key->kind != YNODE_SCALAR) {
            schema_fail(ld, key, ld->path, "a key must be a string, not %s", describe(key));
            continue;
        }
        size_t saved = path_push_key(ld, key->value);
        const field_t *f = find_field(schema, key);
        size_t errors = ld->n_errors;
        if (!f)
            fail_unknown_key(ld, key, schema);
        else if (schema_place(ld, value) == 0 && f->read(ld, value, f, (char *)base + f->offset) < 0 &&
                 ld->n_errors == errors)
            schema_fail(ld, value, ld->path, "invalid value");   /* a reader's -1 is never silent */
        schema_path_pop(ld, saved);
    }
    return ld->n_errors > before ? -1 : 0;
}

int schema_read_submap(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    return schema_read_map(ld, node, f->spec, dst);
}

int schema_read_bool(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    bool *out = dst;
    if (node->kind == YNODE_SCALAR && node->plain && !strcmp(node->value, "true"))
        *out = true;
    else if (node->kind == YNODE_SCALAR && node->plain && !strcmp(node->value, "false"))
        *out = false;
    else
        return schema_fail_expected(ld, node, "true or false");
    return 0;
}

static int check_range(loader_t *ld, const ynode_t *node, uint64_t v, const range_t *r,
                       void (*format)(uint64_t, char *, size_t))
{
    char lo[32], hi[32];
    format(r->min, lo, sizeof lo);
    format(r->max, hi, sizeof hi);
    if (v < r->min && r->min == 1)
        return schema_fail(ld, node, ld->path, "must be greater than 0");
    if (v < r->min || v > r->max)
        return schema_fail(ld, node, ld->path, "must be from %s to %s", lo, hi);
    return 0;
}

static void format_count(uint64_t n, char *buf, size_t len)
{
    snprintf(buf, len, "%llu", (unsigned long long)n);
}

int schema_read_duration(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const char *s = schema_scalar_text(ld, node, "a duration such as 10s");
    const char *why;
    uint64_t ms;
    if (!s)
        return -1;
    if (grammar_duration(s, &ms, &why) < 0)
        return schema_fail(ld, node, ld->path, "invalid duration \"%s\": %s", s, why);
    if (check_range(ld, node, ms, f->spec, grammar_format_duration) < 0)
        return -1;
    *(uint64_t *)dst = ms;
    return 0;
}

int schema_read_size(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const char *s = schema_scalar_text(ld, node, "a size such as 16KiB");
    const char *why;
    uint64_t bytes;
    if (!s)
        return -1;
    if (grammar_size(s, &bytes, &why) < 0)
        return schema_fail(ld, node, ld->path, "invalid size \"%s\": %s", s, why);
    if (check_range(ld, node, bytes, f->spec, grammar_format_size) < 0)
        return -1;
    *(uint32_t *)dst = (uint32_t)bytes;
    return 0;
}

int schema_read_count(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const range_t *r = f->spec;
    const char *p = node->value;
    uint64_t n;
    bool overflow;
    if (node->kind != YNODE_SCALAR || !node->plain || !grammar_decimal(&p, &n, &overflow) || *p) {
        char expected[64];
        snprintf(expected, sizeof expected, "a whole number from %llu to %llu",
                 (unsigned long long)r->min, (unsigned long long)r->max);
        return schema_fail_expected(ld, node, expected);
    }
    if (check_range(ld, node, n, r, format_count) < 0)
        return -1;
    *(uint32_t *)dst = (uint32_t)n;
    return 0;
}

int schema_read_enum(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const enum_value_t *values = f->spec;
    char expected[128] = "one of ";
    for (const enum_value_t *v = values; v->name; v++) {
        size_t used = strlen(expected);
        snprintf(expected + used, sizeof expected - used, "%s%s", v == values ? "" : ", ", v->name);
    }
    const char *s = schema_scalar_text(ld, node, expected);
    if (!s)
        return -1;
    for (const enum_value_t *v = values; v->name; v++) {
        if (!strcmp(s, v->name)) {
            *(int *)dst = v->value;
            return 0;
        }
    }
    return schema_fail(ld, node, ld->path, "invalid value \"%s\": expected %s", s, expected);
}

int schema_read_addr(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const addr_rules_t *rules = f->spec;
    const char *s = schema_scalar_text(ld, node, "an address IP:PORT");
    const char *why;
    config_addr_t a;
    if (!s)
        return -1;
    if (grammar_addr(s, &a, &why) < 0)
        return schema_fail(ld, node, ld->path, "invalid address \"%s\": %s", s, why);
    if (!rules->port_zero && addr_port(&a.ss) == 0)
        return schema_fail(ld, node, ld->path, "invalid address \"%s\": port 0 cannot be connected to", s);
    if (rules->loopback_only && !grammar_addr_is_loopback(&a))
        return schema_fail(ld, node, ld->path,
                           "address \"%s\" is not loopback: the admin API can override the verdict, so it "
                           "listens on 127.0.0.0/8 or [::1] only", s);
    if (!rules->wildcard && grammar_addr_is_wildcard(&a))
        return schema_fail(ld, node, ld->path, "invalid address \"%s\": name a specific IP, not a wildcard", s);
    *(config_addr_t *)dst = a;
    return 0;
}

int schema_read_string(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_string_text(ld, node);
    return s ? schema_set_string(ld, node, dst, s) : -1;
}

/* Remembers in the config where the key being read was written. */
static int schema_note_origin(loader_t *ld, const ynode_t *node)
{
    config_t *cfg = ld->cfg;
    config_origin_t *grown = realloc(cfg->origins, (cfg->n_origins + 1) * sizeof *grown);
    if (!grown)
        return schema_fail_oom(ld, node);
    cfg->origins = grown;
    char *key = strdup(ld->path);
    if (!key)
        return schema_fail_oom(ld, node);
    cfg->origins[cfg->n_origins++] = (config_origin_t){key, node->line, node->col};
    return 0;
}

int schema_read_path(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = schema_string_text(ld, node);
    if (!s)
        return -1;
    if (!*s)
        return schema_fail(ld, node, ld->path, "must name a file (remove the key to use the default)");
    if (schema_note_origin(ld, node) < 0)
        return -1;
    if (s[0] == '/' || !ld->dir)
        return schema_set_string(ld, node, dst, s);
    char *joined;
    if (asprintf(&joined, "%s/%s", ld->dir, s) < 0)
        return schema_fail_oom(ld, node);
    free(*(char **)dst);
    *(char **)dst = joined;
    return 0;
}
