#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/hash.h"
#include "core/ydoc.h"

/* Bounds against hostile input: nesting depth, and the number of nodes an
 * alias-heavy document may expand to when converted ("billion laughs"). */
#define YDOC_MAX_DEPTH 64
#define YDOC_MAX_EXPANDED_NODES 1000000

struct ydoc {
    yaml_document_t doc;
    ynode_t *nodes;             /* parallel to doc.nodes; index i <-> node id i+1 */
    const ynode_t **item_refs;  /* storage for every sequence's items */
    ynode_pair_t *pair_refs;    /* storage for every mapping's pairs */
    const ynode_t *root;
};

static void ydoc_error(char *err, size_t errlen, int line, int col, const char *problem)
{
    if (err && errlen)
        snprintf(err, errlen, "%d:%d: %s", line, col, problem);
}

/* --- libyaml's errors in words. libyaml names what its parser met ("did
 * not find expected key"); what a person did wrong (a tab, a line indented
 * off its mapping's keys, an unclosed quote) is read from the text around
 * the marks. Positions are 0-based here, as libyaml's marks are. */

typedef struct ysrc {
    const char *buf;
    size_t len;
} ysrc_t;

/* The byte offset where 0-based line starts, or len when there is none. */
static size_t ysrc_line_start(const ysrc_t *s, size_t line)
{
    size_t off = 0;
    for (size_t l = 0; l < line && off < s->len; off++)
        if (s->buf[off] == '\n')
            l++;
    return off;
}

static size_t ysrc_line_end(const ysrc_t *s, size_t start)
{
    while (start < s->len && s->buf[start] != '\n' && s->buf[start] != '\r')
        start++;
    return start;
}

/* The byte at 0-based line and column (columns count characters, as
 * libyaml's do), or -1 past the line's end. */
static int ysrc_char_at(const ysrc_t *s, size_t line, size_t col)
{
    size_t off = ysrc_line_start(s, line), end = ysrc_line_end(s, off);
    for (size_t c = 0; off < end; c++) {
        if (c == col)
            return (unsigned char)s->buf[off];
        off++;
        while (off < end && ((unsigned char)s->buf[off] & 0xc0) == 0x80)
            off++;
    }
    return -1;
}

/* A line's indentation in spaces, and where its content starts when it is
 * a list item ("  - key: v": the dash at 2, the key at 4). false for a
 * line with nothing to read (blank, a comment). */
typedef struct yline {
    size_t indent;          /* the first non-space column */
    size_t content;         /* past "- " markers: where a key would be */
} yline_t;

static bool ysrc_line(const ysrc_t *s, size_t line, yline_t *out)
{
    size_t start = ysrc_line_start(s, line), end = ysrc_line_end(s, start), off = start;
    if (start >= s->len)
        return false;
    while (off < end && s->buf[off] == ' ')
        off++;
    if (off == end || s->buf[off] == '#')
        return false;
    out->indent = off - start;
    while (off + 1 < end && s->buf[off] == '-' && s->buf[off + 1] == ' ') {
        off += 2;
        while (off < end && s->buf[off] == ' ')
            off++;
    }
    out->content = off - start;
    return true;
}

/* The nearest line above line with something to read; false at the top. */
static bool ysrc_line_above(const ysrc_t *s, size_t line, size_t *above, yline_t *out)
{
    while (line-- > 0)
        if (ysrc_line(s, line, out)) {
            *above = line;
            return true;
        }
    return false;
}

/* Does the line hold ": " (or a ':' ending it) before 0-based col? */
static bool ysrc_colon_before(const ysrc_t *s, size_t line, size_t col)
{
    for (size_t c = 0; c < col; c++) {
        int ch = ysrc_char_at(s, line, c);
        int next = ysrc_char_at(s, line, c + 1);
        if (ch < 0)
            return false;
        if (ch == ':' && (next == ' ' || next == '\t' || next < 0))
            return true;
    }
    return false;
}

/* "column 5 (line 4), column 3 (line 2) or column 1 (line 1)": where the
 * lines above line start (a list item's dash and what follows it), each
 * block still open there, innermost first. true when col is one of them. */
static bool ysrc_open_columns(const ysrc_t *s, size_t line, size_t col, char *out, size_t outlen)
{
    enum { MAX_OPEN = 4 };
    size_t cols[MAX_OPEN], lines[MAX_OPEN], found = 0, limit = SIZE_MAX, at = line;
    bool matched = false;
    yline_t l;
    while (found < MAX_OPEN && limit > 0 && ysrc_line_above(s, at, &at, &l)) {
        size_t starts[2] = {l.content, l.indent};
        for (size_t i = 0; i < 2 && found < MAX_OPEN; i++) {
            if (starts[i] >= limit)
                continue;
            limit = starts[i];
            matched |= starts[i] == col;
            cols[found] = starts[i];
            lines[found++] = at;
        }
    }
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < found; i++) {
        int n = snprintf(out + used, outlen - used, "%scolumn %zu (line %zu)",
                         i == 0 ? "" : i + 1 == found ? " or " : ", ", cols[i] + 1, lines[i] + 1);
        if (n < 0 || (size_t)n >= outlen - used)
            break;
        used += (size_t)n;
    }
    return matched;
}

/* Words for what libyaml found, or NULL for its own text. *line and *col
 * may move to where the problem is (an unclosed quote's opening). */
static const char *ydoc_words(const yaml_parser_t *p, const ysrc_t *s, size_t *line, size_t *col,
                              char *words, size_t len)
{
    const char *problem = p->problem ? p->problem : "";
    const char *context = p->context ? p->context : "";
    size_t cline = p->context_mark.line, ccol = p->context_mark.column;
    int ch = ysrc_char_at(s, *line, *col);
    yline_t here = {0}, above_l;
    size_t above;
    bool line_start = ysrc_line(s, *line, &here) && (here.indent == *col || here.content == *col);

    if ((!strcmp(problem, "found character that cannot start any token") && ch == '\t') ||
        strstr(problem, "tab character"))
        return "a tab character: YAML indents with spaces only";
    if (!strcmp(problem, "found character that cannot start any token")) {
        if (ch > ' ' && ch < 0x7f)
            snprintf(words, len, "'%c' cannot start a value: put the value in quotes", ch);
        else
            snprintf(words, len, "this character cannot start a value: put the value in quotes");
        return words;
    }
    if (!strcmp(problem, "found unexpected end of stream") && strstr(context, "quoted scalar")) {
        int q = ysrc_char_at(s, cline, ccol);
        *line = cline;
        *col = ccol;
        snprintf(words, len, "unclosed quote: the string that starts here has no closing %s",
                 q == '\'' ? "'" : "\"");
        return words;
    }
    if (!strcmp(problem, "found unknown escape character"))
        return "unknown escape in a double-quoted string: write \\\\ for a backslash, or use single quotes";
    if (!strncmp(problem, "did not find expected ',' or ", 29) && strstr(context, "flow")) {
        int open = ysrc_char_at(s, cline, ccol);
        bool map = strstr(context, "mapping") != NULL;
        *line = cline;
        *col = ccol;
        snprintf(words, len, "this '%c' has no closing '%c' (or two of its entries lack a ',' between them)",
                 open == '{' || open == '[' ? open : map ? '{' : '[', map ? '}' : ']');
        return words;
    }
    if (!strcmp(problem, "did not find expected node content"))
        return "a value is missing here (a list or mapping left open, or a line cut short)";
    if (!strcmp(problem, "found undefined alias"))
        return "'*' starts an alias, and no anchor '&' of that name comes before it: put the value in quotes";
    if (!strcmp(problem, "block sequence entries are not allowed in this context"))
        return "a list item ('- ') cannot follow a key on its line: start the list on the next line, indented";
    if (!strcmp(problem, "could not find expected ':'") && strstr(context, "simple key")) {
        *line = cline;
        *col = ccol;
        return "this line has no ':': a mapping's lines are KEY: VALUE (or indent the line deeper to continue "
               "the value above)";
    }
    if (!strcmp(problem, "mapping values are not allowed in this context")) {
        if (ysrc_colon_before(s, *line, *col))
            return "a second ': ' on this line: a value holding ': ' must be in quotes";
        if (ysrc_line_above(s, *line, &above, &above_l) && here.indent > above_l.indent) {
            *col = here.indent;
            snprintf(words, len, "bad indentation: this line is indented deeper than the line above (line %zu), "
                     "so it reads as the rest of that line's value; align its key with the keys above", above + 1);
            return words;
        }
        return "a ':' where no key can start: put the value in quotes";
    }
    if (!strcmp(problem, "did not find expected key") || !strcmp(problem, "did not find expected '-' indicator")) {
        if (!line_start) {
            int prev = *col ? ysrc_char_at(s, *line, *col - 1) : -1;
            if (prev == '"' || prev == '\'')
                return "text after the end of a quoted string: a quote is missing or one too many, here or on a "
                       "line above";
            return "text after the end of a value, where a new line with a key was expected";
        }
        char open[200];
        bool matched = ysrc_open_columns(s, *line, here.indent, open, sizeof open);
        if (ch == '-' && here.indent == *col && matched)
            return "a list item ('- ') where the mapping above expects a key: a list goes under a key ending in "
                   "':', indented deeper than it";
        *col = here.indent;
        snprintf(words, len, "bad indentation: this line starts at column %zu, %s%s", here.indent + 1,
                 *open ? "and the lines above start at " : "which does not match the lines above", open);
        return words;
    }
    return NULL;
}

static void ydoc_parser_error(const yaml_parser_t *p, const char *buf, size_t len, char *err, size_t errlen)
{
    char what[512];
    if (p->error == YAML_READER_ERROR) {
        /* The reader's position is a byte offset: make it a line and column. */
        size_t off = p->problem_offset < len ? p->problem_offset : len, line = 1, start = 0;
        for (size_t i = 0; i < off; i++)
            if (buf[i] == '\n')
                line++, start = i + 1;
        const char *problem = p->problem ? p->problem : "invalid text";
        if (strstr(problem, "control characters"))
            snprintf(what, sizeof what, "a control character (byte 0x%02x): only text may be in YAML",
                     (unsigned)(p->problem_value & 0xff));
        else
            snprintf(what, sizeof what, "not UTF-8 text (byte 0x%02x: %s)", (unsigned)(unsigned char)buf[off < len ? off : 0],
                     problem);
        ydoc_error(err, errlen, (int)line, (int)(off - start) + 1, what);
        return;
    }
    const yaml_mark_t *m = &p->problem_mark;
    ysrc_t s = {buf, len};
    size_t line = m->line, col = m->column;
    char words[400];
    const char *said = ydoc_words(p, &s, &line, &col, words, sizeof words);
    if (said)
        snprintf(what, sizeof what, "%s", said);
    else if (p->context)
        snprintf(what, sizeof what, "%s %s", p->problem ? p->problem : "invalid YAML", p->context);
    else
        snprintf(what, sizeof what, "%s", p->problem ? p->problem : "invalid YAML");
    ydoc_error(err, errlen, (int)line + 1, (int)col + 1, what);
}

static bool ydoc_scalar_eq(const ynode_t *a, const ynode_t *b)
{
    return a->kind == YNODE_SCALAR && b->kind == YNODE_SCALAR && a->len == b->len &&
           memcmp(a->value, b->value, a->len) == 0;
}

/* A key's hash: FNV-1a over its bytes (embedded NULs included), from a
 * basis mixed with the document's address, so that the slots keys land in
 * cannot be planned from outside, then a final avalanche (MurmurHash3's
 * fmix64) so that the low bits, which pick the slot, depend on every byte. */
static uint64_t ydoc_key_hash(const ynode_t *key, uint64_t basis)
{
    uint64_t h = basis;
    for (size_t i = 0; i < key->len; i++) {
        h ^= (unsigned char)key->value[i];
        h *= 0x100000001b3ull;
    }
    return hash_mix64(h);
}

/* YAML forbids duplicate keys; libyaml leaves them to the application.
 * Runs once every node is built, as a key may come later in the array.
 * Linear: one open-addressing hash set per mapping, in a table allocated
 * once for the document (sized for its largest mapping, at most half full)
 * and freed before returning; each mapping clears only the slots it owns.
 * Reports the first key, in source order, equal to an earlier one of its
 * mapping, in the first mapping (in node order) that has one. */
static int ydoc_check_duplicate_keys(const ydoc_t *d, size_t count, char *err, size_t errlen)
{
    size_t largest = 0;
    for (size_t i = 0; i < count; i++)
        if (d->nodes[i].kind == YNODE_MAP && d->nodes[i].n > largest)
            largest = d->nodes[i].n;
    if (largest < 2)
        return 0;
    size_t cap = 4;
    while (cap < 2 * largest)
        cap *= 2;
    const ynode_t **slots = calloc(cap, sizeof *slots);
    if (!slots) {
        ydoc_error(err, errlen, 1, 1, "out of memory");
        return -1;
    }
    uint64_t basis = 0xcbf29ce484222325ull ^ ((uint64_t)(uintptr_t)d * 0x9e3779b97f4a7c15ull);
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const ynode_t *n = &d->nodes[i];
        if (n->kind != YNODE_MAP || n->n < 2)
            continue;
        size_t mask = 4;
        while (mask < 2 * n->n)
            mask *= 2;
        mask -= 1;
        for (size_t j = 0; j < n->n; j++) {
            const ynode_t *key = n->pairs[j].key;
            if (key->kind != YNODE_SCALAR)
                continue;   /* never equal to another key here */
            size_t s = (size_t)ydoc_key_hash(key, basis) & mask;
            while (slots[s] && !ydoc_scalar_eq(slots[s], key))
                s = (s + 1) & mask;
            if (slots[s]) {
                char what[160];
                snprintf(what, sizeof what, "duplicate key \"%.100s\"", key->value);
                ydoc_error(err, errlen, key->line, key->col, what);
                rc = -1;
                break;
            }
            slots[s] = key;
        }
        memset(slots, 0, (mask + 1) * sizeof *slots);
    }
    free(slots);
    return rc;
}

/* Mirrors libyaml's node arrays into ynodes; ids index doc.nodes from 1. */
static int ydoc_build(ydoc_t *d, char *err, size_t errlen)
{
    size_t count = (size_t)(d->doc.nodes.top - d->doc.nodes.start);
    size_t n_items = 0, n_pairs = 0;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *yn = d->doc.nodes.start + i;
        if (yn->type == YAML_SEQUENCE_NODE)
            n_items += (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);
        else if (yn->type == YAML_MAPPING_NODE)
            n_pairs += (size_t)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
    }
    d->nodes = calloc(count ? count : 1, sizeof *d->nodes);
    d->item_refs = calloc(n_items ? n_items : 1, sizeof *d->item_refs);
    d->pair_refs = calloc(n_pairs ? n_pairs : 1, sizeof *d->pair_refs);
    if (!d->nodes || !d->item_refs || !d->pair_refs) {
        ydoc_error(err, errlen, 1, 1, "out of memory");
        return -1;
    }
    const ynode_t **item = d->item_refs;
    ynode_pair_t *pair = d->pair_refs;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *yn = d->doc.nodes.start + i;
        ynode_t *n = &d->nodes[i];
        n->line = (int)yn->start_mark.line + 1;
        n->col = (int)yn->start_mark.column + 1;
        switch (yn->type) {
        case YAML_SCALAR_NODE:
            n->kind = YNODE_SCALAR;
            n->value = (const char *)yn->data.scalar.value;
            n->len = yn->data.scalar.length;
            n->plain = yn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            break;
        case YAML_SEQUENCE_NODE:
            n->kind = YNODE_SEQ;
            n->items = item;
            for (yaml_node_item_t *it = yn->data.sequence.items.start; it < yn->data.sequence.items.top; it++)
                item[n->n++] = &d->nodes[*it - 1];
            item += n->n;
            break;
        case YAML_MAPPING_NODE:
            n->kind = YNODE_MAP;
            n->pairs = pair;
            for (yaml_node_pair_t *p = yn->data.mapping.pairs.start; p < yn->data.mapping.pairs.top; p++) {
                pair[n->n].key = &d->nodes[p->key - 1];
                pair[n->n].value = &d->nodes[p->value - 1];
                n->n++;
            }
            pair += n->n;
            break;
        default:
            ydoc_error(err, errlen, n->line, n->col, "unsupported YAML node");
            return -1;
        }
    }
    return ydoc_check_duplicate_keys(d, count, err, errlen);
}

ydoc_t *ydoc_parse(const char *buf, size_t len, char *err, size_t errlen)
{
    ydoc_t *d = calloc(1, sizeof *d);
    if (!d) {
        ydoc_error(err, errlen, 1, 1, "out of memory");
        return NULL;
    }
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &d->doc)) {
        ydoc_parser_error(&parser, buf, len, err, errlen);
        yaml_parser_delete(&parser);
        free(d);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&d->doc);
    if (!root) {
        ydoc_error(err, errlen, 1, 1, "empty document");
        goto fail;
    }
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        ydoc_parser_error(&parser, buf, len, err, errlen);
        goto fail;
    }
    bool more = yaml_document_get_root_node(&extra) != NULL;
    int more_line = more ? (int)extra.start_mark.line + 1 : 0;
    yaml_document_delete(&extra);
    if (more) {
        ydoc_error(err, errlen, more_line, 1, "more than one YAML document; expected exactly one");
        goto fail;
    }
    yaml_parser_delete(&parser);
    if (ydoc_build(d, err, errlen) < 0) {
        ydoc_free(d);
        return NULL;
    }
    d->root = &d->nodes[root - d->doc.nodes.start];
    return d;
fail:
    yaml_parser_delete(&parser);
    yaml_document_delete(&d->doc);
    free(d);
    return NULL;
}

const ynode_t *ydoc_root(const ydoc_t *doc) { return doc->root; }

void ydoc_free(ydoc_t *doc)
{
    if (!doc)
        return;
    yaml_document_delete(&doc->doc);
    free(doc->nodes);
    free(doc->item_refs);
    free(doc->pair_refs);
    free(doc);
}

const ynode_t *ynode_get(const ynode_t *map, const char *key)
{
    if (!map || map->kind != YNODE_MAP)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        const ynode_t *k = map->pairs[i].key;
        if (k->kind == YNODE_SCALAR && k->len == klen && memcmp(k->value, key, klen) == 0)
            return map->pairs[i].value;
    }
    return NULL;
}

static bool ydoc_is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (!strcmp(s, *words))
            return true;
    return false;
}

static bool ydoc_all_digits(const char *s, int (*isdig)(int))
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdig((unsigned char)*s))
            return false;
    return true;
}

static int ydoc_isdec(int c) { return c >= '0' && c <= '9'; }
static int ydoc_isoct(int c) { return c >= '0' && c <= '7'; }
static int ydoc_ishex(int c)
{
    return ydoc_isdec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool ydoc_is_float(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    bool digits = false;
    while (ydoc_isdec(*p)) { p++; digits = true; }
    if (*p == '.') {
        p++;
        while (ydoc_isdec(*p)) { p++; digits = true; }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!ydoc_isdec(*p))
            return false;
        while (ydoc_isdec(*p))
            p++;
    }
    return *p == '\0';
}

/* The YAML 1.2 core schema for a plain scalar. */
static json_t *ydoc_plain_scalar(const ynode_t *n, char *err, size_t errlen)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    const char *s = n->value;
    if (ydoc_is_one_of(s, nulls))
        return json_null();
    if (ydoc_is_one_of(s, trues))
        return json_true();
    if (ydoc_is_one_of(s, falses))
        return json_false();
    int base = 0;
    const char *digits = s;
    if (*s == '+' || *s == '-')
        digits = s + 1, base = ydoc_all_digits(digits, ydoc_isdec) ? 10 : 0;
    else if (s[0] == '0' && s[1] == 'o')
        digits = s + 2, base = ydoc_all_digits(digits, ydoc_isoct) ? 8 : 0;
    else if (s[0] == '0' && s[1] == 'x')
        digits = s + 2, base = ydoc_all_digits(digits, ydoc_ishex) ? 16 : 0;
    else
        base = ydoc_all_digits(s, ydoc_isdec) ? 10 : 0;
    if (base) {
        errno = 0;
        char *end;
        long long v = strtoll(base == 10 ? s : digits, &end, base);
        if (errno == ERANGE) {
            ydoc_error(err, errlen, n->line, n->col, "integer out of range");
            return NULL;
        }
        return json_integer(v);
    }
    if (ydoc_is_float(s))
        return json_real(strtod(s, NULL));
    return json_stringn(s, n->len);
}

static json_t *ydoc_to_json(const ynode_t *n, int depth, size_t *budget, char *err, size_t errlen)
{
    if (depth > YDOC_MAX_DEPTH) {
        ydoc_error(err, errlen, n->line, n->col, "nesting too deep");
        return NULL;
    }
    if ((*budget)-- == 0) {
        ydoc_error(err, errlen, n->line, n->col, "document too large once aliases are expanded");
        return NULL;
    }
    json_t *out = NULL;
    switch (n->kind) {
    case YNODE_SCALAR:
        out = n->plain ? ydoc_plain_scalar(n, err, errlen) : json_stringn(n->value, n->len);
        if (!out && err && !*err)
            ydoc_error(err, errlen, n->line, n->col, "string is not valid UTF-8");
        return out;
    case YNODE_SEQ:
        out = json_array();
        for (size_t i = 0; i < n->n; i++) {
            json_t *v = ydoc_to_json(n->items[i], depth + 1, budget, err, errlen);
            if (!v) {
                json_decref(out);
                return NULL;
            }
            json_array_append_new(out, v);
        }
        return out;
    case YNODE_MAP:
        out = json_object();
        for (size_t i = 0; i < n->n; i++) {
            const ynode_t *k = n->pairs[i].key;
            if (k->kind != YNODE_SCALAR) {
                ydoc_error(err, errlen, k->line, k->col, "mapping key must be a scalar");
                json_decref(out);
                return NULL;
            }
            json_t *v = ydoc_to_json(n->pairs[i].value, depth + 1, budget, err, errlen);
            if (!v || json_object_setn_new(out, k->value, k->len, v) < 0) {
                if (v) {
                    json_decref(v);
                    ydoc_error(err, errlen, k->line, k->col, "invalid mapping key");
                }
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    return NULL;
}

json_t *ynode_to_json(const ynode_t *node, char *err, size_t errlen)
{
    size_t budget = YDOC_MAX_EXPANDED_NODES;
    if (err && errlen)
        err[0] = '\0';
    return ydoc_to_json(node, 0, &budget, err, errlen);
}
