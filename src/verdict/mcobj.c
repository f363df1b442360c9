#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/mcobj.h"
#include "core/ydoc.h"

#define MC_API_VERSION "operator.openshift.io/v1"
#define MC_KIND "MachineConfiguration"
#define MC_NAME "cluster"

/* A node of the input: its JSON value and, for YAML input, the YAML node it
 * was converted from, which knows where it stands in the text. jansson keeps
 * no positions, so errors about JSON input name only the file. */
typedef struct mcnode {
    json_t *json;
    const ynode_t *yaml;
} mcnode_t;

typedef struct mcctx {
    const char *name;
    bool is_json;
    char *err;
    size_t errlen;
} mcctx_t;

static void mc_error(const mcctx_t *c, const ynode_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mc_error(const mcctx_t *c, const ynode_t *at, const char *fmt, ...)
{
    if (!c->err || !c->errlen)
        return;
    char problem[MCOBJ_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->name, at->line, at->col, problem);
    else
        snprintf(c->err, c->errlen, "%s: %s", c->name, problem);
}

static mcnode_t mc_get(mcnode_t map, const char *key)
{
    return (mcnode_t){json_object_get(map.json, key), ynode_get(map.yaml, key)};
}

static mcnode_t mc_item(mcnode_t seq, size_t i)
{
    const ynode_t *y = seq.yaml && seq.yaml->kind == YNODE_SEQ && i < seq.yaml->n ? seq.yaml->items[i] : NULL;
    return (mcnode_t){json_array_get(seq.json, i), y};
}

/* In the words of the input's own format. */
static const char *mc_type_name(const mcctx_t *c, const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return c->is_json ? "an object" : "a mapping";
    case JSON_ARRAY: return c->is_json ? "an array" : "a sequence";
    case JSON_STRING: return "a string";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    default: return "a number";
    }
}

/* map[key] as a string; NULL, with the error written, when absent or not a
 * string. where prefixes the problem ("items[2]: ") for list members. */
static const char *mc_string_field(const mcctx_t *c, mcnode_t map, const char *key, const char *where)
{
    mcnode_t v = mc_get(map, key);
    if (!v.json) {
        mc_error(c, map.yaml, "%smissing %s", where, key);
        return NULL;
    }
    if (!json_is_string(v.json)) {
        mc_error(c, v.yaml, "%s%s must be a string, found %s", where, key, mc_type_name(c, v.json));
        return NULL;
    }
    return json_string_value(v.json);
}

/* Kind first: for a wrong object, its kind says best what it is. */
static bool mc_is_machineconfiguration(const mcctx_t *c, mcnode_t obj, const char *where)
{
    if (!json_is_object(obj.json)) {
        mc_error(c, obj.yaml, "%sexpected a " MC_KIND ", found %s", where, mc_type_name(c, obj.json));
        return false;
    }
    const char *kind = mc_string_field(c, obj, "kind", where);
    if (!kind)
        return false;
    if (strcmp(kind, MC_KIND)) {
        mc_error(c, mc_get(obj, "kind").yaml, "%s%.128s: expected kind " MC_KIND " (apiVersion " MC_API_VERSION ")",
                 where, kind);
        return false;
    }
    const char *api_version = mc_string_field(c, obj, "apiVersion", where);
    if (!api_version)
        return false;
    if (strcmp(api_version, MC_API_VERSION)) {
        mc_error(c, mc_get(obj, "apiVersion").yaml, "%sapiVersion %.128s: expected " MC_API_VERSION " for kind " MC_KIND,
                 where, api_version);
        return false;
    }
    return true;
}

static bool mc_is_list_kind(const char *kind)
{
    size_t n = strlen(kind);
    return n >= 4 && !strcmp(kind + n - 4, "List");
}

static bool mc_is_named_cluster(mcnode_t obj)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj.json, "metadata"), "name"));
    return name && !strcmp(name, MC_NAME);
}

/* kubectl get -o json|yaml wraps what it found in a List. The object is a
 * singleton named "cluster"; a lone item is taken whatever its name, as
 * `kubectl get machineconfigurations` lists only that one. */
static json_t *mc_from_list(const mcctx_t *c, mcnode_t list, const char *list_kind)
{
    mcnode_t items = mc_get(list, "items");
    if (items.json && !json_is_null(items.json) && !json_is_array(items.json)) {
        mc_error(c, items.yaml, "%.128s items must be %s, found %s", list_kind, c->is_json ? "an array" : "a sequence",
                 mc_type_name(c, items.json));
        return NULL;
    }
    const ynode_t *items_at = items.yaml ? items.yaml : list.yaml;
    size_t n = json_array_size(items.json);
    if (n == 0) {
        mc_error(c, items_at, "%.128s holds no items; expected the " MC_KIND " \"" MC_NAME "\"", list_kind);
        return NULL;
    }
    size_t chosen = 0;
    if (n > 1) {
        size_t named = 0;
        for (size_t i = 0; i < n; i++) {
            if (!mc_is_named_cluster(mc_item(items, i)))
                continue;
            if (named++) {
                mc_error(c, mc_item(items, i).yaml,
                         "%.128s holds several items named \"" MC_NAME "\" (items[%zu] and items[%zu])",
                         list_kind, chosen, i);
                return NULL;
            }
            chosen = i;
        }
        if (!named) {
            mc_error(c, items_at, "%.128s holds %zu items and none is named \"" MC_NAME "\"", list_kind, n);
            return NULL;
        }
    }
    char where[32];
    snprintf(where, sizeof where, "items[%zu]: ", chosen);
    mcnode_t item = mc_item(items, chosen);
    return mc_is_machineconfiguration(c, item, where) ? json_incref(item.json) : NULL;
}

static json_t *mc_select(const mcctx_t *c, mcnode_t root)
{
    if (!json_is_object(root.json)) {
        mc_error(c, root.yaml, "expected a " MC_KIND " or a List holding it, found %s", mc_type_name(c, root.json));
        return NULL;
    }
    const char *kind = mc_string_field(c, root, "kind", "");
    if (!kind)
        return NULL;
    if (mc_is_list_kind(kind))
        return mc_from_list(c, root, kind);
    return mc_is_machineconfiguration(c, root, "") ? json_incref(root.json) : NULL;
}

static json_t *mc_parse_json(const mcctx_t *c, const char *text, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        ynode_t at = {.line = jerr.line, .col = jerr.column};
        mc_error(c, &at, "%s", jerr.text);
        return NULL;
    }
    json_t *mc = mc_select(c, (mcnode_t){root, NULL});
    json_decref(root);
    return mc;
}

static json_t *mc_parse_yaml(const mcctx_t *c, const char *text, size_t len)
{
    char yerr[MCOBJ_ERR_LEN] = "";
    ydoc_t *doc = ydoc_parse(text, len, yerr, sizeof yerr);
    json_t *root = doc ? ynode_to_json(ydoc_root(doc), yerr, sizeof yerr) : NULL;
    json_t *mc = NULL;
    if (root)
        mc = mc_select(c, (mcnode_t){root, ydoc_root(doc)});
    else if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "%s:%s", c->name, yerr);   /* yerr is "LINE:COL: problem" */
    json_decref(root);
    ydoc_free(doc);
    return mc;
}

json_t *mcobj_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    mcctx_t c = {.name = name, .err = err, .errlen = errlen};
    if (len > MCOBJ_MAX_BYTES) {
        mc_error(&c, NULL, "input is larger than %u MiB", MCOBJ_MAX_BYTES >> 20);
        return NULL;
    }
    size_t start = 0;
    while (start < len && (text[start] == ' ' || text[start] == '\t' || text[start] == '\r' || text[start] == '\n'))
        start++;
    if (start == len) {
        mc_error(&c, NULL, "empty input");
        return NULL;
    }
    c.is_json = text[start] == '{' || text[start] == '[';
    return c.is_json ? mc_parse_json(&c, text, len) : mc_parse_yaml(&c, text, len);
}

/* Reads at most limit bytes: a longer input shows as len == limit, and is
 * refused without being read to its end. */
static char *mc_read_at_most(FILE *f, size_t limit, size_t *len)
{
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= limit)
                break;
            size_t bigger = cap * 2 < limit ? cap * 2 : limit;
            char *grown = realloc(buf, bigger);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap = bigger;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    *len = n;
    return buf;
}

json_t *mcobj_load(const char *path, char *err, size_t errlen)
{
    bool from_stdin = !strcmp(path, "-");
    mcctx_t c = {.name = from_stdin ? "<stdin>" : path, .err = err, .errlen = errlen};
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        mc_error(&c, NULL, "%s", strerror(errno));
        return NULL;
    }
    size_t len;
    errno = 0;
    char *text = mc_read_at_most(f, (size_t)MCOBJ_MAX_BYTES + 1, &len);
    int read_errno = errno;
    bool read_failed = !text || ferror(f);
    if (!from_stdin)
        fclose(f);
    if (read_failed) {
        mc_error(&c, NULL, "read error: %s", text ? strerror(read_errno) : "out of memory");
        free(text);
        return NULL;
    }
    json_t *mc = mcobj_parse(text, len, c.name, err, errlen);
    free(text);
    return mc;
}
