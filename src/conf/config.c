/* config: loads the YAML configuration through ydoc and walks it against a
 * schema table. Every key is optional except listeners (and the few a
 * chosen feature needs); defaults are set first and the file overlays them.
 * Errors name file:line:column of the offending node and its key path. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "conf/config.h"
#include "core/ydoc.h"
#include "core/addr.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A configuration is a page of YAML; anything far larger is a wrong path. */
#define CONFIG_MAX_FILE_BYTES (1u << 20)
/* A year: longer timeouts are typos, and the cap keeps "now + timeout"
 * arithmetic in the other modules far from overflow. */
#define DURATION_MAX_MS (365ull * 24 * 3600 * 1000)
#define MAX_WORKERS 256
#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* OpenShift's "Intermediate" TLS security profile. */
static const char default_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
static const char default_ciphersuites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
static const char default_groups[] = "X25519:prime256v1:secp384r1";

/* Enum-typed fields are written through int *. */
_Static_assert(sizeof(reject_mode_t) == sizeof(int), "enum size");
_Static_assert(sizeof(source_kind_t) == sizeof(int), "enum size");
_Static_assert(sizeof(log_level_t) == sizeof(int), "enum size");
_Static_assert(sizeof(decision_t) == sizeof(int), "enum size");

/* ---------------------------------------------------------------------------
 * Scalar grammars: durations, sizes, addresses. Each internal parser says
 * why a value is wrong; the public ones only say whether.
 * ------------------------------------------------------------------------- */

/* Reads a run of decimal digits; false on none or on uint64 overflow. */
static bool read_decimal(const char **p, uint64_t *out, bool *overflow)
{
    const char *s = *p;
    uint64_t n = 0;
    *overflow = false;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            *overflow = true;
        else
            n = n * 10 + d;
        s++;
    }
    if (s == *p || *overflow)
        return false;
    *p = s;
    *out = n;
    return true;
}

/* Largest first; "ms" is matched before "m". */
static const struct duration_unit {
    const char *suffix;
    uint64_t ms;
} duration_units[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

static const char duration_syntax[] =
    "expected a whole number and a unit (h, m, s, ms), e.g. 250ms, 10s, 5m, 1h30m";

/* The index of the unit at p, or -1. */
static int duration_unit_at(const char *p)
{
    if (p[0] == 'm' && p[1] == 's')
        return 3;
    for (int i = 0; i < 3; i++)
        if (*p == duration_units[i].suffix[0])
            return i;
    return -1;
}

static int parse_duration(const char *s, uint64_t *ms, const char **why)
{
    static const char overflow_msg[] = "duration out of range";
    uint64_t total = 0;
    int next_unit = 0;  /* units go largest first, each once: one spelling per value */
    const char *p = s;
    if (*p == '-') {
        *why = "a duration cannot be negative";
        return -1;
    }
    do {
        uint64_t n;
        bool overflow;
        if (!read_decimal(&p, &n, &overflow)) {
            *why = overflow ? overflow_msg : duration_syntax;
            return -1;
        }
        int unit = duration_unit_at(p);
        if (unit < next_unit) {
            *why = duration_syntax;
            return -1;
        }
        p += strlen(duration_units[unit].suffix);
        next_unit = unit + 1;
        uint64_t scale = duration_units[unit].ms;
        if (n > (UINT64_MAX - total) / scale) {
            *why = overflow_msg;
            return -1;
        }
        total += n * scale;
    } while (*p);
    *ms = total;
    return 0;
}

int config_parse_duration(const char *s, uint64_t *ms)
{
    const char *why;
    return parse_duration(s, ms, &why);
}

static int parse_size(const char *s, uint64_t *bytes, const char **why)
{
    static const struct { const char *suffix; unsigned shift; } units[] = {
        {"", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}};
    const char *p = s;
    uint64_t n;
    bool overflow;
    if (!read_decimal(&p, &n, &overflow)) {
        *why = overflow ? "size out of range" : "expected bytes or a number with KiB, MiB or GiB, e.g. 16384, 16KiB, 1MiB";
        return -1;
    }
    for (size_t i = 0; i < ARRAY_LEN(units); i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (n > (UINT64_MAX >> units[i].shift)) {
            *why = "size out of range";
            return -1;
        }
        *bytes = n << units[i].shift;
        return 0;
    }
    *why = "expected bytes or a number with KiB, MiB or GiB, e.g. 16384, 16KiB, 1MiB";
    return -1;
}

int config_parse_size(const char *s, uint64_t *bytes)
{
    const char *why;
    return parse_size(s, bytes, &why);
}

static int parse_port(const char *s, uint16_t *port)
{
    const char *p = s;
    uint64_t n;
    bool overflow;
    if (!read_decimal(&p, &n, &overflow) || *p || n > 65535)
        return -1;
    *port = (uint16_t)n;
    return 0;
}

/* Splits "IP:PORT" or "[IPv6]:PORT" into host and port text. */
static int split_host_port(const char *s, char *host, size_t hostlen, const char **port,
                           int *family, const char **why)
{
    const char *host_start = s, *host_end;
    if (s[0] == '[') {
        host_start = s + 1;
        host_end = strchr(s, ']');
        if (!host_end) {
            *why = "missing ']' after the IPv6 address";
            return -1;
        }
        if (host_end[1] != ':') {
            *why = "missing port (expected [IPv6]:PORT)";
            return -1;
        }
        *port = host_end + 2;
        *family = AF_INET6;
    } else {
        host_end = strrchr(s, ':');
        if (!host_end) {
            *why = "missing port (expected IP:PORT, e.g. 0.0.0.0:22623 or [::]:22623)";
            return -1;
        }
        if (strchr(s, ':') != host_end) {
            *why = "an IPv6 address must be in brackets, e.g. [::1]:8443";
            return -1;
        }
        *port = host_end + 1;
        *family = AF_INET;
    }
    size_t n = (size_t)(host_end - host_start);
    if (n >= hostlen) {
        *why = "not an IP address (hostnames are not accepted)";
        return -1;
    }
    memcpy(host, host_start, n);
    host[n] = '\0';
    return 0;
}

static int parse_addr(const char *s, config_addr_t *out, const char **why)
{
    char host[INET6_ADDRSTRLEN];
    const char *port_text;
    int family;
    uint16_t port;
    if (strlen(s) >= sizeof out->text) {
        *why = "address too long";
        return -1;
    }
    if (split_host_port(s, host, sizeof host, &port_text, &family, why) < 0)
        return -1;
    if (parse_port(port_text, &port) < 0) {
        *why = "the port must be a number from 0 to 65535";
        return -1;
    }
    config_addr_t a;
    memset(&a, 0, sizeof a);
    if (family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        if (!*host)
            sin->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
            goto not_ip;
        a.len = sizeof *sin;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a.ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
            goto not_ip;
        a.len = sizeof *sin6;
    }
    snprintf(a.text, sizeof a.text, "%s", s);
    *out = a;
    return 0;
not_ip:
    *why = "not an IP address (hostnames are not accepted)";
    return -1;
}

int config_parse_addr(const char *s, config_addr_t *out)
{
    const char *why;
    return parse_addr(s, out, &why);
}

static bool addr_is_wildcard(const config_addr_t *a)
{
    if (a->ss.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
}

static bool addr_is_loopback(const config_addr_t *a)
{
    if (a->ss.ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr) >> 24) == 127;
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr);
}

static bool addr_same_ip(const config_addr_t *a, const config_addr_t *b)
{
    if (a->ss.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&b->ss)->sin_addr.s_addr;
    return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr,
                              &((const struct sockaddr_in6 *)&b->ss)->sin6_addr);
}

/* Whether two sockets would claim the same port, or a connection to one
 * would land on the other. Families are kept apart: the gate's IPv6
 * listeners are v6-only, so [::] and 0.0.0.0 on one port may coexist.
 * Port 0 never clashes: the kernel picks a free port. */
static bool addrs_overlap(const config_addr_t *a, const config_addr_t *b)
{
    if (a->ss.ss_family != b->ss.ss_family || addr_port(&a->ss) == 0 || addr_port(&a->ss) != addr_port(&b->ss))
        return false;
    return addr_is_wildcard(a) || addr_is_wildcard(b) || addr_same_ip(a, b);
}

/* ---------------------------------------------------------------------------
 * The loader: walks the document, remembers where each key path was
 * written (for cross-field errors), and formats errors.
 * ------------------------------------------------------------------------- */

typedef struct placed {
    char *path;
    const ynode_t *node;
} placed_t;

typedef struct loader {
    config_t *cfg;
    const char *name;       /* the file name errors begin with */
    char *dir;              /* relative paths are resolved against it; NULL: as written */
    char *err;
    size_t errlen;
    const ynode_t *root;
    char path[256];         /* key path of the node being read: "listeners[0].tls.key" */
    placed_t *placed;
    size_t n_placed, cap_placed;
    SSL_CTX *tls_probe;     /* tries cipher and group names; made on first use */
} loader_t;

__attribute__((format(printf, 4, 5)))
static int fail(loader_t *ld, const ynode_t *at, const char *path, const char *fmt, ...)
{
    if (!ld->err || !ld->errlen)
        return -1;
    char problem[CONFIG_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    snprintf(ld->err, ld->errlen, "%s:%d:%d: %s%s%s", ld->name, at->line, at->col, path,
             *path ? ": " : "", problem);
    return -1;
}

static int fail_oom(loader_t *ld, const ynode_t *at)
{
    return fail(ld, at, ld->path, "out of memory");
}

static size_t path_push_key(loader_t *ld, const char *key)
{
    size_t old = strlen(ld->path);
    snprintf(ld->path + old, sizeof ld->path - old, "%s%s", old ? "." : "", key);
    return old;
}

static size_t path_push_index(loader_t *ld, size_t i)
{
    size_t old = strlen(ld->path);
    snprintf(ld->path + old, sizeof ld->path - old, "[%zu]", i);
    return old;
}

static void path_pop(loader_t *ld, size_t old) { ld->path[old] = '\0'; }

static int place(loader_t *ld, const ynode_t *node)
{
    if (ld->n_placed == ld->cap_placed) {
        size_t cap = ld->cap_placed ? ld->cap_placed * 2 : 64;
        placed_t *grown = realloc(ld->placed, cap * sizeof *grown);
        if (!grown)
            return fail_oom(ld, node);
        ld->placed = grown;
        ld->cap_placed = cap;
    }
    char *path = strdup(ld->path);
    if (!path)
        return fail_oom(ld, node);
    ld->placed[ld->n_placed++] = (placed_t){path, node};
    return 0;
}

/* The node written at a key path, or NULL when the key was absent. */
static const ynode_t *node_at(const loader_t *ld, const char *path)
{
    for (size_t i = 0; i < ld->n_placed; i++)
        if (!strcmp(ld->placed[i].path, path))
            return ld->placed[i].node;
    return NULL;
}

/* The node written at a key path or, when the key is absent, at its
 * nearest written parent: where to point for a missing key. */
static const ynode_t *nearest_node(const loader_t *ld, const char *path)
{
    char buf[sizeof ld->path];
    snprintf(buf, sizeof buf, "%s", path);
    for (;;) {
        const ynode_t *n = node_at(ld, buf);
        if (n)
            return n;
        char *cut = strrchr(buf, '.');
        if (!cut)
            return ld->root;
        *cut = '\0';
    }
}

static void loader_free(loader_t *ld)
{
    for (size_t i = 0; i < ld->n_placed; i++)
        free(ld->placed[i].path);
    free(ld->placed);
    free(ld->dir);
    SSL_CTX_free(ld->tls_probe);
}

/* ---------------------------------------------------------------------------
 * Scalar access with YAML types: a plain scalar's type follows the YAML 1.2
 * core schema, which ydoc implements.
 * ------------------------------------------------------------------------- */

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

static int fail_expected(loader_t *ld, const ynode_t *node, const char *expected)
{
    return fail(ld, node, ld->path, "expected %s, got %s", expected, describe(node));
}

/* Any scalar with a value: its text. Numbers are fine here, as the reader
 * checks the text's own grammar ("9.2", "16384"). */
static const char *scalar_text(loader_t *ld, const ynode_t *node, const char *expected)
{
    if (node->kind != YNODE_SCALAR || scalar_type(node) == SCALAR_NULL) {
        fail_expected(ld, node, expected);
        return NULL;
    }
    if (strlen(node->value) != node->len) {
        fail(ld, node, ld->path, "must not contain NUL characters");
        return NULL;
    }
    return node->value;
}

/* A scalar that YAML reads as a string: a plain true or 42 is a typo or
 * needs quotes. */
static const char *string_text(loader_t *ld, const ynode_t *node)
{
    const char *s = scalar_text(ld, node, "a string");
    if (s && scalar_type(node) != SCALAR_STRING) {
        fail(ld, node, ld->path, "expected a string, got %s (quote it if a string is meant)",
             describe(node));
        return NULL;
    }
    return s;
}

static int set_string(loader_t *ld, const ynode_t *node, char **dst, const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        return fail_oom(ld, node);
    free(*dst);
    *dst = copy;
    return 0;
}

/* ---------------------------------------------------------------------------
 * The schema: each mapping is a table of fields; a field's reader parses
 * the value node into base + offset.
 * ------------------------------------------------------------------------- */

typedef struct field field_t;
typedef int (*read_fn)(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);

struct field {
    const char *key;
    read_fn read;
    size_t offset;
    const void *spec;       /* what the reader needs: range, enum values, sub-schema */
};

typedef struct schema {
    const field_t *fields;
    size_t n;
} schema_t;

#define SCHEMA(fields) {fields, ARRAY_LEN(fields)}

typedef struct range {
    uint64_t min, max;
} range_t;

typedef struct enum_value {
    const char *name;       /* NULL ends the table */
    int value;
} enum_value_t;

typedef struct addr_rules {
    bool port_zero;         /* listeners: the kernel picks a port and the gate reports it */
    bool wildcard;          /* 0.0.0.0 / [::] */
    bool loopback_only;
} addr_rules_t;

static int read_map(loader_t *ld, const ynode_t *node, const schema_t *schema, void *base);

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
        return fail(ld, key, ld->path, "unknown key; did you mean \"%s\"?", suggestion);
    char known[CONFIG_ERR_LEN / 2] = "";
    for (size_t i = 0; i < schema->n; i++) {
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", schema->fields[i].key);
    }
    return fail(ld, key, ld->path, "unknown key (known keys here: %s)", known);
}

static const field_t *find_field(const schema_t *schema, const ynode_t *key)
{
    for (size_t i = 0; i < schema->n; i++)
        if (strlen(schema->fields[i].key) == key->len && !strcmp(schema->fields[i].key, key->value))
            return &schema->fields[i];
    return NULL;
}

static int read_map(loader_t *ld, const ynode_t *node, const schema_t *schema, void *base)
{
    if (node->kind != YNODE_MAP)
        return fail_expected(ld, node, "a mapping");
    for (size_t i = 0; i < node->n; i++) {
        const ynode_t *key = node->pairs[i].key;
        const ynode_t *value = node->pairs[i].value;
        if (key->kind != YNODE_SCALAR)
            return fail(ld, key, ld->path, "a key must be a string, not %s", describe(key));
        size_t saved = path_push_key(ld, key->value);
        const field_t *f = find_field(schema, key);
        int rc = !f ? fail_unknown_key(ld, key, schema) : place(ld, value);
        if (rc == 0)
            rc = f->read(ld, value, f, (char *)base + f->offset);
        if (rc < 0)
            return -1;
        path_pop(ld, saved);
    }
    return 0;
}

static int read_submap(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    return read_map(ld, node, f->spec, dst);
}

static int read_bool(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    bool *out = dst;
    if (node->kind == YNODE_SCALAR && node->plain && !strcmp(node->value, "true"))
        *out = true;
    else if (node->kind == YNODE_SCALAR && node->plain && !strcmp(node->value, "false"))
        *out = false;
    else
        return fail_expected(ld, node, "true or false");
    return 0;
}

static int check_range(loader_t *ld, const ynode_t *node, uint64_t v, const range_t *r,
                       void (*format)(uint64_t, char *, size_t))
{
    char lo[32], hi[32];
    format(r->min, lo, sizeof lo);
    format(r->max, hi, sizeof hi);
    if (v < r->min && r->min == 1)
        return fail(ld, node, ld->path, "must be greater than 0");
    if (v < r->min || v > r->max)
        return fail(ld, node, ld->path, "must be from %s to %s", lo, hi);
    return 0;
}

/* 5400000 -> "1h30m": the inverse of parse_duration, for messages. */
static void format_duration(uint64_t ms, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ARRAY_LEN(duration_units); i++) {
        uint64_t n = ms / duration_units[i].ms;
        ms %= duration_units[i].ms;
        if (n && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%llu%s", (unsigned long long)n,
                                     duration_units[i].suffix);
    }
    if (!used)
        snprintf(buf, len, "0s");
}

static void format_size(uint64_t bytes, char *buf, size_t len)
{
    if (bytes && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%lluMiB", (unsigned long long)(bytes >> 20));
    else if (bytes && bytes % 1024 == 0)
        snprintf(buf, len, "%lluKiB", (unsigned long long)(bytes >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

static void format_count(uint64_t n, char *buf, size_t len)
{
    snprintf(buf, len, "%llu", (unsigned long long)n);
}

static int read_duration(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const char *s = scalar_text(ld, node, "a duration such as 10s");
    const char *why;
    uint64_t ms;
    if (!s)
        return -1;
    if (parse_duration(s, &ms, &why) < 0)
        return fail(ld, node, ld->path, "invalid duration \"%s\": %s", s, why);
    if (check_range(ld, node, ms, f->spec, format_duration) < 0)
        return -1;
    *(uint64_t *)dst = ms;
    return 0;
}

static int read_size(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const char *s = scalar_text(ld, node, "a size such as 16KiB");
    const char *why;
    uint64_t bytes;
    if (!s)
        return -1;
    if (parse_size(s, &bytes, &why) < 0)
        return fail(ld, node, ld->path, "invalid size \"%s\": %s", s, why);
    if (check_range(ld, node, bytes, f->spec, format_size) < 0)
        return -1;
    *(uint32_t *)dst = (uint32_t)bytes;
    return 0;
}

static int read_count(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const range_t *r = f->spec;
    const char *p = node->value;
    uint64_t n;
    bool overflow;
    if (node->kind != YNODE_SCALAR || !node->plain || !read_decimal(&p, &n, &overflow) || *p) {
        char expected[64];
        snprintf(expected, sizeof expected, "a whole number from %llu to %llu",
                 (unsigned long long)r->min, (unsigned long long)r->max);
        return fail_expected(ld, node, expected);
    }
    if (check_range(ld, node, n, r, format_count) < 0)
        return -1;
    *(uint32_t *)dst = (uint32_t)n;
    return 0;
}

static int read_enum(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const enum_value_t *values = f->spec;
    char expected[128] = "one of ";
    for (const enum_value_t *v = values; v->name; v++) {
        size_t used = strlen(expected);
        snprintf(expected + used, sizeof expected - used, "%s%s", v == values ? "" : ", ", v->name);
    }
    const char *s = scalar_text(ld, node, expected);
    if (!s)
        return -1;
    for (const enum_value_t *v = values; v->name; v++) {
        if (!strcmp(s, v->name)) {
            *(int *)dst = v->value;
            return 0;
        }
    }
    return fail(ld, node, ld->path, "invalid value \"%s\": expected %s", s, expected);
}

static int read_addr(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    const addr_rules_t *rules = f->spec;
    const char *s = scalar_text(ld, node, "an address IP:PORT");
    const char *why;
    config_addr_t a;
    if (!s)
        return -1;
    if (parse_addr(s, &a, &why) < 0)
        return fail(ld, node, ld->path, "invalid address \"%s\": %s", s, why);
    if (!rules->port_zero && addr_port(&a.ss) == 0)
        return fail(ld, node, ld->path, "invalid address \"%s\": port 0 cannot be connected to", s);
    if (rules->loopback_only && !addr_is_loopback(&a))
        return fail(ld, node, ld->path,
                    "address \"%s\" is not loopback: the admin API can override the verdict, so it "
                    "listens on 127.0.0.0/8 or [::1] only", s);
    if (!rules->wildcard && addr_is_wildcard(&a))
        return fail(ld, node, ld->path, "invalid address \"%s\": name a specific IP, not a wildcard", s);
    *(config_addr_t *)dst = a;
    return 0;
}

static int read_string(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = string_text(ld, node);
    return s ? set_string(ld, node, dst, s) : -1;
}

/* A file named in the config: relative to the config file's directory, so
 * that a config and its certificates move together. */
static int read_path(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = string_text(ld, node);
    if (!s)
        return -1;
    if (!*s)
        return fail(ld, node, ld->path, "must name a file (remove the key to use the default)");
    if (s[0] == '/' || !ld->dir)
        return set_string(ld, node, dst, s);
    char *joined;
    if (asprintf(&joined, "%s/%s", ld->dir, s) < 0)
        return fail_oom(ld, node);
    free(*(char **)dst);
    *(char **)dst = joined;
    return 0;
}

static int read_workers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    static const range_t workers_range = {1, MAX_WORKERS};
    static const field_t as_count = {"workers", read_count, 0, &workers_range};
    (void)f;
    if (node->kind == YNODE_SCALAR && node->len == 4 && !strcmp(node->value, "auto"))
        return 0;   /* the default, resolved once loading ends */
    if (node->kind == YNODE_SCALAR && node->plain && node->len && strspn(node->value, "0123456789") == node->len)
        return read_count(ld, node, &as_count, dst);
    return fail_expected(ld, node, "auto or a whole number from 1 to 256");
}

/* "4.13.0" or "9.2": exactly n dot-separated decimal components. */
static int parse_version(const char *s, uint32_t *parts, size_t n)
{
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        bool overflow;
        if (i && *p++ != '.')
            return -1;
        if (!read_decimal(&p, &v, &overflow) || v > UINT32_MAX)
            return -1;
        parts[i] = (uint32_t)v;
    }
    return *p ? -1 : 0;
}

static int read_ocp_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = scalar_text(ld, node, "an OCP version such as \"4.13.0\"");
    uint32_t parts[3];
    if (!s)
        return -1;
    if (parse_version(s, parts, 3) < 0)
        return fail(ld, node, ld->path, "invalid OCP version \"%s\": expected MAJOR.MINOR.PATCH, e.g. 4.13.0", s);
    *(ocp_version_t *)dst = (ocp_version_t){parts[0], parts[1], parts[2]};
    return 0;
}

static int read_rhel_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = scalar_text(ld, node, "a RHEL version such as \"9.2\"");
    uint32_t parts[2];
    if (!s)
        return -1;
    if (parse_version(s, parts, 2) < 0)
        return fail(ld, node, ld->path, "invalid RHEL version \"%s\": expected MAJOR.MINOR, e.g. 9.2", s);
    *(rhel_version_t *)dst = (rhel_version_t){parts[0], parts[1]};
    return 0;
}

/* The name goes into the API path; a DNS-1123 subdomain, as Kubernetes
 * requires of object names. */
static bool is_dns_subdomain(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
        bool edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (!alnum && (edge || (s[i] != '-' && s[i] != '.')))
            return false;
    }
    return true;
}

static int read_kube_name(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = string_text(ld, node);
    if (!s)
        return -1;
    if (!is_dns_subdomain(s))
        return fail(ld, node, ld->path, "invalid object name \"%s\": expected lowercase letters, digits, '-' and '.'", s);
    return set_string(ld, node, dst, s);
}

/* "" = in-cluster; http:// serves kubectl proxy, which holds the credentials. */
static int read_kube_server(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    const char *s = string_text(ld, node);
    if (!s)
        return -1;
    const char *rest = !strncmp(s, "https://", 8) ? s + 8 : !strncmp(s, "http://", 7) ? s + 7 : NULL;
    if (*s && (!rest || !*rest || strpbrk(s, " \t\r\n")))
        return fail(ld, node, ld->path, "invalid server \"%s\": expected https://HOST[:PORT], or \"\" for in-cluster", s);
    return set_string(ld, node, dst, s);
}

/* Requests are matched after percent-decoding and cleaning (as the MCS
 * routes them), so a prefix that is not itself clean could never match. */
static bool is_clean_prefix(const char *s)
{
    if (s[0] != '/' || strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../"))
        return false;
    size_t len = strlen(s);
    if ((len >= 2 && !strcmp(s + len - 2, "/.")) || (len >= 3 && !strcmp(s + len - 3, "/..")))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == '%' || *p == '?' || *p == '#')
            return false;
    return true;
}

static int read_prefixes(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_gate_t *gate = dst;
    if (node->kind != YNODE_SEQ)
        return fail_expected(ld, node, "a list of path prefixes");
    if (node->n == 0)
        return fail(ld, node, ld->path, "at least one prefix is required");
    if (node->n > CONFIG_MAX_PREFIXES)
        return fail(ld, node->items[CONFIG_MAX_PREFIXES], ld->path, "at most %d prefixes", CONFIG_MAX_PREFIXES);
    for (size_t i = 0; i < gate->n_prefixes; i++) {
        free(gate->prefixes[i]);
        gate->prefixes[i] = NULL;
    }
    gate->n_prefixes = 0;
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = path_push_index(ld, i);
        const char *s = string_text(ld, node->items[i]);
        if (!s)
            return -1;
        if (!is_clean_prefix(s))
            return fail(ld, node->items[i], ld->path,
                        "prefix \"%s\" must be a clean absolute path (no //, /./, /../, %%, ? or #): "
                        "requests are matched after decoding and cleaning", s);
        if (set_string(ld, node->items[i], &gate->prefixes[i], s) < 0)
            return -1;
        gate->n_prefixes = i + 1;
        path_pop(ld, saved);
    }
    return 0;
}

/* --- TLS lists: OpenSSL is asked, so a typo is caught with its position. */

static SSL_CTX *tls_probe(loader_t *ld)
{
    if (!ld->tls_probe)
        ld->tls_probe = SSL_CTX_new(TLS_server_method());
    return ld->tls_probe;
}

static int probe_ciphers(SSL_CTX *ctx, const char *list) { return SSL_CTX_set_cipher_list(ctx, list); }
static int probe_ciphersuites(SSL_CTX *ctx, const char *list) { return SSL_CTX_set_ciphersuites(ctx, list); }
static int probe_groups(SSL_CTX *ctx, const char *list) { return (int)SSL_CTX_set1_groups_list(ctx, list); }

typedef struct tls_list_kind {
    const char *what;                       /* "TLS 1.2 cipher" */
    int (*probe)(SSL_CTX *, const char *);
    const char *separators;
    const char *operators;                  /* leading characters of non-name elements */
} tls_list_kind_t;

static const tls_list_kind_t cipher_list = {"TLS 1.2 cipher", probe_ciphers, ":, ", "!-+@"};
static const tls_list_kind_t ciphersuite_list = {"TLS 1.3 ciphersuite", probe_ciphersuites, ":", ""};
static const tls_list_kind_t group_list = {"key exchange group", probe_groups, ":", ""};

/* OpenSSL skips unknown names as long as one name in a list is known, so
 * each name is also tried alone; operators only mean something in a list. */
static int check_tls_list(loader_t *ld, const ynode_t *node, const char *list, const tls_list_kind_t *kind)
{
    SSL_CTX *ctx = tls_probe(ld);
    if (!ctx)
        return fail_oom(ld, node);
    char *copy = strdup(list);
    if (!copy)
        return fail_oom(ld, node);
    int rc = 0;
    char *save = NULL;
    for (char *name = strtok_r(copy, kind->separators, &save); name && rc == 0;
         name = strtok_r(NULL, kind->separators, &save)) {
        if (!strchr(kind->operators, name[0]) && !kind->probe(ctx, name))
            rc = fail(ld, node, ld->path, "unknown %s \"%s\"", kind->what, name);
    }
    free(copy);
    if (rc == 0 && (!*list || !kind->probe(ctx, list)))
        rc = fail(ld, node, ld->path, "\"%s\" selects no %s", list, kind->what);
    ERR_clear_error();
    return rc;
}

static int read_tls_list(loader_t *ld, const ynode_t *node, void *dst, const tls_list_kind_t *kind)
{
    const char *s = string_text(ld, node);
    if (!s || check_tls_list(ld, node, s, kind) < 0)
        return -1;
    return set_string(ld, node, dst, s);
}

static int read_ciphers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &cipher_list);
}

static int read_ciphersuites(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &ciphersuite_list);
}

static int read_groups(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    return read_tls_list(ld, node, dst, &group_list);
}

/* --- The tables. */

static const range_t positive_duration = {1, DURATION_MAX_MS};
static const range_t any_duration = {0, DURATION_MAX_MS};
/* A watch's timeoutSeconds is whole seconds; 0 would mean the server's own. */
static const range_t watch_duration = {1000, DURATION_MAX_MS};
static const range_t header_size = {1024, 1u << 20};
static const range_t uri_size = {256, 1u << 20};
static const range_t connections_count = {1, 1000000};
static const range_t headers_count = {1, 10000};
static const range_t idle_count = {0, 10000};
static const range_t concurrent_count = {1, 100000};
static const range_t queue_count = {0, 1000000};

static const addr_rules_t listen_rules = {.port_zero = true, .wildcard = true};
static const addr_rules_t upstream_rules = {0};
static const addr_rules_t admin_rules = {.port_zero = true, .loopback_only = true};

static const enum_value_t tls_versions[] = {
    {"TLSv1.2", TLS1_2_VERSION}, {"TLSv1.3", TLS1_3_VERSION}, {NULL, 0}};
static const enum_value_t reject_modes[] = {
    {"hold", REJECT_HOLD}, {"deny", REJECT_DENY}, {"explain", REJECT_EXPLAIN}, {NULL, 0}};
static const enum_value_t source_kinds[] = {
    {"kubernetes", SOURCE_KIND_KUBERNETES}, {"file", SOURCE_KIND_FILE}, {NULL, 0}};
static const enum_value_t decisions[] = {
    {"admit", DECISION_ADMIT}, {"reject", DECISION_REJECT}, {NULL, 0}};
static const enum_value_t log_levels[] = {
    {"debug", LOG_DEBUG}, {"info", LOG_INFO}, {"warn", LOG_WARN}, {"error", LOG_ERROR}, {NULL, 0}};

#define TLS_FIELD(name) offsetof(config_tls_server_t, name)
static const field_t tls_server_fields[] = {
    {"certificate", read_path, TLS_FIELD(certificate), NULL},
    {"key", read_path, TLS_FIELD(key), NULL},
    {"min_version", read_enum, TLS_FIELD(min_version), tls_versions},
    {"ciphers", read_ciphers, TLS_FIELD(ciphers), NULL},
    {"ciphersuites", read_ciphersuites, TLS_FIELD(ciphersuites), NULL},
    {"groups", read_groups, TLS_FIELD(groups), NULL},
    {"session_tickets", read_bool, TLS_FIELD(session_tickets), NULL},
};
static const schema_t tls_server_schema = SCHEMA(tls_server_fields);

/* A tls mapping turns TLS on; its absence means a plain listener. */
static int read_tls_server(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_tls_server_t *tls = dst;
    if (node->kind != YNODE_MAP)
        return fail_expected(ld, node, "a mapping of TLS settings (omit tls for a plain listener)");
    tls->enabled = true;
    tls->min_version = TLS1_2_VERSION;
    tls->session_tickets = true;
    if (set_string(ld, node, &tls->ciphers, default_ciphers) < 0 ||
        set_string(ld, node, &tls->ciphersuites, default_ciphersuites) < 0 ||
        set_string(ld, node, &tls->groups, default_groups) < 0)
        return -1;
    if (read_map(ld, node, &tls_server_schema, tls) < 0)
        return -1;
    if (!tls->certificate)
        return fail(ld, node, ld->path, "missing required key \"certificate\"");
    if (!tls->key)
        return fail(ld, node, ld->path, "missing required key \"key\"");
    return 0;
}

static const field_t listener_fields[] = {
    {"address", read_addr, offsetof(config_listener_t, addr), &listen_rules},
    {"tls", read_tls_server, offsetof(config_listener_t, tls), NULL},
};
static const schema_t listener_schema = SCHEMA(listener_fields);

static int read_listener(loader_t *ld, const ynode_t *node, config_listener_t *l)
{
    if (read_map(ld, node, &listener_schema, l) < 0)
        return -1;
    if (l->addr.len == 0)
        return fail(ld, node, ld->path, "missing required key \"address\"");
    return 0;
}

static int read_listeners(loader_t *ld, const ynode_t *node, const field_t *f, void *dst)
{
    (void)f;
    config_listener_t *listeners = dst;
    if (node->kind != YNODE_SEQ)
        return fail_expected(ld, node, "a list of listeners");
    if (node->n == 0)
        return fail(ld, node, ld->path, "at least one listener is required");
    if (node->n > CONFIG_MAX_LISTENERS)
        return fail(ld, node->items[CONFIG_MAX_LISTENERS], ld->path, "at most %d listeners", CONFIG_MAX_LISTENERS);
    for (size_t i = 0; i < node->n; i++) {
        size_t saved = path_push_index(ld, i);
        ld->cfg->n_listeners = i + 1;   /* from here on config_free owns its strings */
        if (place(ld, node->items[i]) < 0 || read_listener(ld, node->items[i], &listeners[i]) < 0)
            return -1;
        path_pop(ld, saved);
    }
    return 0;
}

#define UPSTREAM_FIELD(name) offsetof(config_upstream_t, name)
static const field_t upstream_fields[] = {
    {"address", read_addr, UPSTREAM_FIELD(addr), &upstream_rules},
    {"tls", read_bool, UPSTREAM_FIELD(tls), NULL},
    {"ca_file", read_path, UPSTREAM_FIELD(ca_file), NULL},
    {"server_name", read_string, UPSTREAM_FIELD(server_name), NULL},
    {"insecure_skip_verify", read_bool, UPSTREAM_FIELD(insecure_skip_verify), NULL},
    {"connect_timeout", read_duration, UPSTREAM_FIELD(connect_timeout_ms), &positive_duration},
    {"response_timeout", read_duration, UPSTREAM_FIELD(response_timeout_ms), &positive_duration},
    {"idle_timeout", read_duration, UPSTREAM_FIELD(idle_timeout_ms), &positive_duration},
    {"max_idle", read_count, UPSTREAM_FIELD(max_idle), &idle_count},
    {"max_concurrent", read_count, UPSTREAM_FIELD(max_concurrent), &concurrent_count},
    {"max_queue", read_count, UPSTREAM_FIELD(max_queue), &queue_count},
    {"queue_timeout", read_duration, UPSTREAM_FIELD(queue_timeout_ms), &positive_duration},
};
static const schema_t upstream_schema = SCHEMA(upstream_fields);

static const field_t gate_fields[] = {
    {"prefixes", read_prefixes, 0, NULL},
};
static const schema_t gate_schema = SCHEMA(gate_fields);

static const field_t reject_fields[] = {
    {"mode", read_enum, 0, reject_modes},
};
static const schema_t reject_schema = SCHEMA(reject_fields);

#define KUBE_FIELD(name) offsetof(config_source_kube_t, name)
static const field_t kube_fields[] = {
    {"server", read_kube_server, KUBE_FIELD(server), NULL},
    {"ca_file", read_path, KUBE_FIELD(ca_file), NULL},
    {"token_file", read_path, KUBE_FIELD(token_file), NULL},
    {"insecure_skip_tls_verify", read_bool, KUBE_FIELD(insecure_skip_tls_verify), NULL},
    {"name", read_kube_name, KUBE_FIELD(name), NULL},
    {"watch_timeout", read_duration, KUBE_FIELD(watch_timeout_ms), &watch_duration},
};
static const schema_t kube_schema = SCHEMA(kube_fields);

static const field_t file_source_fields[] = {
    {"path", read_path, offsetof(config_source_file_t, path), NULL},
    {"poll_interval", read_duration, offsetof(config_source_file_t, poll_interval_ms), &positive_duration},
};
static const schema_t file_source_schema = SCHEMA(file_source_fields);

static const field_t skew_limit_fields[] = {
    {"ocp_version", read_ocp_version, offsetof(verdict_limits_t, ocp), NULL},
    {"rhel_version", read_rhel_version, offsetof(verdict_limits_t, rhel), NULL},
};
static const schema_t skew_limit_schema = SCHEMA(skew_limit_fields);

#define ENFORCEMENT_FIELD(name) offsetof(config_enforcement_t, name)
static const field_t enforcement_fields[] = {
    {"source", read_enum, ENFORCEMENT_FIELD(source), source_kinds},
    {"kubernetes", read_submap, ENFORCEMENT_FIELD(kubernetes), &kube_schema},
    {"file", read_submap, ENFORCEMENT_FIELD(file), &file_source_schema},
    {"limits", read_submap, ENFORCEMENT_FIELD(limits), &skew_limit_schema},
    {"when_unknown", read_enum, ENFORCEMENT_FIELD(policy.when_unknown), decisions},
    {"when_unparseable", read_enum, ENFORCEMENT_FIELD(policy.when_unparseable), decisions},
    {"max_staleness", read_duration, ENFORCEMENT_FIELD(max_staleness_ms), &positive_duration},
};
static const schema_t enforcement_schema = SCHEMA(enforcement_fields);

#define LIMITS_FIELD(name) offsetof(config_limits_t, name)
static const field_t limits_fields[] = {
    {"max_connections", read_count, LIMITS_FIELD(max_connections), &connections_count},
    {"max_header_bytes", read_size, LIMITS_FIELD(max_header_bytes), &header_size},
    {"max_headers", read_count, LIMITS_FIELD(max_headers), &headers_count},
    {"max_uri_bytes", read_size, LIMITS_FIELD(max_uri_bytes), &uri_size},
    {"header_timeout", read_duration, LIMITS_FIELD(header_timeout_ms), &positive_duration},
    {"idle_timeout", read_duration, LIMITS_FIELD(idle_timeout_ms), &positive_duration},
    {"send_timeout", read_duration, LIMITS_FIELD(send_timeout_ms), &positive_duration},
    {"drain_timeout", read_duration, LIMITS_FIELD(drain_timeout_ms), &any_duration},
};
static const schema_t limits_schema = SCHEMA(limits_fields);

static const field_t admin_fields[] = {
    {"enabled", read_bool, offsetof(config_admin_t, enabled), NULL},
    {"address", read_addr, offsetof(config_admin_t, addr), &admin_rules},
};
static const schema_t admin_schema = SCHEMA(admin_fields);

static const field_t log_fields[] = {
    {"level", read_enum, offsetof(config_log_t, level), log_levels},
    {"access", read_bool, offsetof(config_log_t, access), NULL},
};
static const schema_t log_schema = SCHEMA(log_fields);

#define CONFIG_FIELD(name) offsetof(config_t, name)
static const field_t root_fields[] = {
    {"workers", read_workers, CONFIG_FIELD(workers), NULL},
    {"listeners", read_listeners, CONFIG_FIELD(listeners), NULL},
    {"upstream", read_submap, CONFIG_FIELD(upstream), &upstream_schema},
    {"gate", read_submap, CONFIG_FIELD(gate), &gate_schema},
    {"reject", read_submap, CONFIG_FIELD(gate.reject_mode), &reject_schema},
    {"enforcement", read_submap, CONFIG_FIELD(enforcement), &enforcement_schema},
    {"limits", read_submap, CONFIG_FIELD(limits), &limits_schema},
    {"admin", read_submap, CONFIG_FIELD(admin), &admin_schema},
    {"log", read_submap, CONFIG_FIELD(log), &log_schema},
};
static const schema_t root_schema = SCHEMA(root_fields);

/* ---------------------------------------------------------------------------
 * Defaults, cross-field rules, and what is derived once the file is read.
 * ------------------------------------------------------------------------- */

static int set_defaults(loader_t *ld, config_t *cfg)
{
    const char *why;
    parse_addr("127.0.0.1:22633", &cfg->upstream.addr, &why);
    cfg->upstream.connect_timeout_ms = 5000;
    cfg->upstream.response_timeout_ms = 60000;
    cfg->upstream.idle_timeout_ms = 60000;
    cfg->upstream.max_idle = 16;
    cfg->upstream.max_concurrent = 64;
    cfg->upstream.max_queue = 256;
    cfg->upstream.queue_timeout_ms = 10000;

    cfg->gate.reject_mode = REJECT_HOLD;

    config_enforcement_t *e = &cfg->enforcement;
    e->source = SOURCE_KIND_KUBERNETES;
    e->kubernetes.watch_timeout_ms = 5 * 60000;
    e->file.poll_interval_ms = 1000;
    e->limits = (verdict_limits_t){.ocp = {4, 13, 0}, .rhel = {9, 2}};
    e->policy = (verdict_policy_t){.when_unknown = DECISION_ADMIT, .when_unparseable = DECISION_ADMIT};
    e->max_staleness_ms = 5 * 60000;

    cfg->limits = (config_limits_t){
        .max_connections = 10000,
        .max_header_bytes = 16 * 1024,
        .max_headers = 100,
        .max_uri_bytes = 8 * 1024,
        .header_timeout_ms = 10000,
        .idle_timeout_ms = 120000,
        .send_timeout_ms = 60000,
        .drain_timeout_ms = 30000,
    };

    cfg->admin.enabled = true;
    parse_addr("127.0.0.1:22625", &cfg->admin.addr, &why);
    cfg->log = (config_log_t){.level = LOG_INFO, .access = true};

    cfg->gate.n_prefixes = 1;
    if (set_string(ld, ld->root, &cfg->gate.prefixes[0], "/config/") < 0 ||
        set_string(ld, ld->root, &e->kubernetes.server, "") < 0 ||
        set_string(ld, ld->root, &e->kubernetes.ca_file, SERVICE_ACCOUNT_DIR "/ca.crt") < 0 ||
        set_string(ld, ld->root, &e->kubernetes.token_file, SERVICE_ACCOUNT_DIR "/token") < 0 ||
        set_string(ld, ld->root, &e->kubernetes.name, "cluster") < 0)
        return -1;
    return 0;
}

/* An error about the key at path, pointing at it if it was written, else
 * at its nearest written parent. */
__attribute__((format(printf, 3, 4)))
static int fail_at_path(loader_t *ld, const char *path, const char *fmt, ...)
{
    char problem[CONFIG_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return fail(ld, nearest_node(ld, path), path, "%s", problem);
}

static int validate_listeners(loader_t *ld)
{
    const config_t *cfg = ld->cfg;
    if (cfg->n_listeners == 0)
        return fail(ld, ld->root, "", "missing required key \"listeners\"");
    for (size_t j = 1; j < cfg->n_listeners; j++) {
        for (size_t i = 0; i < j; i++) {
            if (!addrs_overlap(&cfg->listeners[i].addr, &cfg->listeners[j].addr))
                continue;
            char path[64];
            snprintf(path, sizeof path, "listeners[%zu].address", j);
            return fail(ld, nearest_node(ld, path), "", "%s \"%s\" and listeners[%zu].address \"%s\" overlap",
                        path, cfg->listeners[j].addr.text, i, cfg->listeners[i].addr.text);
        }
    }
    return 0;
}

/* An address the gate connects to or serves the admin API on must not be
 * one of its listeners: for the upstream a proxy loop, for the admin API a
 * port clash. Blames the address if written, else the listener. */
static int validate_not_a_listener(loader_t *ld, const config_addr_t *addr, const char *path, const char *why)
{
    const config_t *cfg = ld->cfg;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        if (!addrs_overlap(addr, &cfg->listeners[i].addr))
            continue;
        char listener_path[64];
        snprintf(listener_path, sizeof listener_path, "listeners[%zu].address", i);
        return fail(ld, nearest_node(ld, node_at(ld, path) ? path : listener_path), "",
                    "%s \"%s\" and listeners[%zu].address \"%s\" overlap: %s", path, addr->text, i,
                    cfg->listeners[i].addr.text, why);
    }
    return 0;
}

/* Settings that only mean something over TLS are refused without it, so
 * that nobody believes the upstream is verified when it is not. */
static int validate_upstream_tls(loader_t *ld)
{
    const config_upstream_t *u = &ld->cfg->upstream;
    if (!u->tls) {
        if (u->ca_file)
            return fail_at_path(ld, "upstream.ca_file", "only applies with upstream.tls: true");
        if (u->server_name)
            return fail_at_path(ld, "upstream.server_name", "only applies with upstream.tls: true");
        if (u->insecure_skip_verify)
            return fail_at_path(ld, "upstream.insecure_skip_verify", "only applies with upstream.tls: true");
        return 0;
    }
    if (!u->ca_file && !u->insecure_skip_verify)
        return fail_at_path(ld, "upstream",
                            "missing required key \"ca_file\": the MCS certificate is issued by the "
                            "cluster's own CA (or set insecure_skip_verify: true)");
    if (u->ca_file && u->insecure_skip_verify)
        return fail_at_path(ld, "upstream.insecure_skip_verify", "contradicts upstream.ca_file; set one of them");
    return 0;
}

static int validate_upstream(loader_t *ld)
{
    const config_t *cfg = ld->cfg;
    if (validate_upstream_tls(ld) < 0 ||
        validate_not_a_listener(ld, &cfg->upstream.addr, "upstream.address", "requests would loop") < 0)
        return -1;
    if (cfg->admin.enabled && addrs_overlap(&cfg->upstream.addr, &cfg->admin.addr))
        return fail(ld, nearest_node(ld, node_at(ld, "upstream.address") ? "upstream.address" : "admin.address"),
                    "", "upstream.address \"%s\" and admin.address \"%s\" overlap",
                    cfg->upstream.addr.text, cfg->admin.addr.text);
    return 0;
}

static int validate_admin(loader_t *ld)
{
    if (!ld->cfg->admin.enabled)
        return 0;
    return validate_not_a_listener(ld, &ld->cfg->admin.addr, "admin.address", "they cannot share a port");
}

static int validate_enforcement(loader_t *ld)
{
    const config_enforcement_t *e = &ld->cfg->enforcement;
    if (e->source != SOURCE_KIND_FILE || e->file.path)
        return 0;
    if (node_at(ld, "enforcement.file"))
        return fail_at_path(ld, "enforcement.file", "missing required key \"path\" (enforcement.source is file)");
    return fail_at_path(ld, "enforcement", "missing required key \"file.path\" (enforcement.source is file)");
}

static int validate_limits(loader_t *ld)
{
    const config_limits_t *l = &ld->cfg->limits;
    if (l->max_uri_bytes > l->max_header_bytes)
        return fail_at_path(ld, "limits.max_uri_bytes",
                            "must not exceed limits.max_header_bytes (the request line is part of the header)");
    return 0;
}

static int (*const validators[])(loader_t *) = {
    validate_listeners, validate_upstream, validate_admin, validate_enforcement, validate_limits,
};

/* CPUs this process may run on (cpusets, taskset), not all online ones. */
static uint32_t usable_cpus(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > MAX_WORKERS ? MAX_WORKERS : (uint32_t)n;
}

static int derive(loader_t *ld)
{
    config_t *cfg = ld->cfg;
    if (cfg->workers == 0)
        cfg->workers = usable_cpus();
    if (!cfg->upstream.server_name) {
        char ip[ADDR_IP_TEXT_LEN];
        addr_ip_text(&cfg->upstream.addr.ss, ip, sizeof ip);
        return set_string(ld, ld->root, &cfg->upstream.server_name, ip);
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Entry points.
 * ------------------------------------------------------------------------- */

/* The directory part of name, or NULL when it has none (paths stay as written). */
static int config_dir(const char *name, char **dir)
{
    const char *slash = strrchr(name, '/');
    *dir = NULL;
    if (!slash)
        return 0;
    *dir = slash == name ? strdup("/") : strndup(name, (size_t)(slash - name));
    return *dir ? 0 : -1;
}

static int load_document(loader_t *ld, const char *text, size_t len)
{
    char yerr[CONFIG_ERR_LEN];
    ydoc_t *doc = ydoc_parse(text, len, yerr, sizeof yerr);
    if (!doc) {
        if (ld->err && ld->errlen)
            snprintf(ld->err, ld->errlen, "%s:%s", ld->name, yerr);
        return -1;
    }
    ld->root = ydoc_root(doc);
    int rc = set_defaults(ld, ld->cfg);
    if (rc == 0 && ld->root->kind != YNODE_MAP)
        rc = fail_expected(ld, ld->root, "a mapping of settings");
    if (rc == 0)
        rc = read_map(ld, ld->root, &root_schema, ld->cfg);
    for (size_t i = 0; rc == 0 && i < ARRAY_LEN(validators); i++)
        rc = validators[i](ld);
    if (rc == 0)
        rc = derive(ld);
    ydoc_free(doc);
    return rc;
}

config_t *config_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    loader_t ld = {.name = name, .err = err, .errlen = errlen};
    config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->path = strdup(name)) || config_dir(name, &ld.dir) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name);
        config_free(cfg);
        return NULL;
    }
    ld.cfg = cfg;
    int rc = load_document(&ld, text, len);
    loader_free(&ld);
    if (rc < 0) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* Reads a whole file, refusing one too large to be a configuration. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_MAX_FILE_BYTES + 1);
    size_t used = 0;
    ssize_t n = 0;
    while (buf && used <= CONFIG_MAX_FILE_BYTES &&
           (n = read(fd, buf + used, CONFIG_MAX_FILE_BYTES + 1 - used)) > 0)
        used += (size_t)n;
    int read_errno = errno;
    close(fd);
    const char *problem = !buf                          ? "out of memory"
                          : n < 0                       ? strerror(read_errno)
                          : used > CONFIG_MAX_FILE_BYTES ? "too large to be a configuration file"
                                                        : NULL;
    if (problem) {
        snprintf(err, errlen, "%s: cannot read: %s", path, problem);
        free(buf);
        return NULL;
    }
    *len = used;
    return buf;
}

config_t *config_load(const char *path, char *err, size_t errlen)
{
    char scratch[1];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof scratch;
    }
    size_t len;
    char *text = read_file(path, &len, err, errlen);
    if (!text)
        return NULL;
    config_t *cfg = config_parse(text, len, path, err, errlen);
    free(text);
    return cfg;
}

void config_free(config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        config_tls_server_t *tls = &cfg->listeners[i].tls;
        free(tls->certificate);
        free(tls->key);
        free(tls->ciphers);
        free(tls->ciphersuites);
        free(tls->groups);
    }
    free(cfg->upstream.ca_file);
    free(cfg->upstream.server_name);
    config_source_kube_t *k = &cfg->enforcement.kubernetes;
    free(k->server);
    free(k->ca_file);
    free(k->token_file);
    free(k->name);
    free(cfg->enforcement.file.path);
    for (size_t i = 0; i < cfg->gate.n_prefixes; i++)
        free(cfg->gate.prefixes[i]);
    free(cfg->path);
    free(cfg);
}
