/* nftables: the node-local redirect's table (nftables.h). The scripts are
 * nft's own language, run through libnftables in one buffer each (one
 * buffer is one transaction); listings are read in libnftables' JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <nftables/libnftables.h>

#include "os/nftables.h"
#include "core/text.h"

/* The chain install writes, as nft lists it: "priority dstnat" is -100. */
#define CHAIN_NAME "prerouting"
#define CHAIN_PRIO_DSTNAT (-100)

/* --- Pure: rendering. */

bool nftables_redirect_valid(const nftables_redirect_t *r, char *why, size_t whylen)
{
    if (!r->table || !text_is_identifier(r->table, NFTABLES_TABLE_MAX)) {
        snprintf(why, whylen, "table name \"%s\" is not an identifier (a letter or '_', then letters, digits and '_', "
                 "at most %d)", r->table ? r->table : "", NFTABLES_TABLE_MAX);
        return false;
    }
    if (r->n_ports == 0 || r->n_ports > NFTABLES_MAX_PORTS) {
        snprintf(why, whylen, "%zu port pairs: 1 to %d are needed", r->n_ports, NFTABLES_MAX_PORTS);
        return false;
    }
    for (size_t i = 0; i < r->n_ports; i++) {
        if (!r->ports[i].from || !r->ports[i].to) {
            snprintf(why, whylen, "port pair %zu: port 0 cannot be redirected nor be a target", i + 1);
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (r->ports[j].from == r->ports[i].from) {
                snprintf(why, whylen, "port %u is redirected twice", (unsigned)r->ports[i].from);
                return false;
            }
        }
    }
    return true;
}

static void format_rule(const nftables_port_t *p, char *buf, size_t len)
{
    snprintf(buf, len, "iifname != \"lo\" tcp dport %u redirect to :%u", (unsigned)p->from, (unsigned)p->to);
}

char *nftables_install_script(const nftables_redirect_t *r)
{
    char why[256];
    if (!nftables_redirect_valid(r, why, sizeof why))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f,
            "add table inet %s\n"
            "delete table inet %s\n"
            "add table inet %s {\n"
            "\tchain " CHAIN_NAME " {\n"
            "\t\ttype nat hook prerouting priority dstnat; policy accept;\n",
            r->table, r->table, r->table);
    for (size_t i = 0; i < r->n_ports; i++) {
        char rule[96];
        format_rule(&r->ports[i], rule, sizeof rule);
        fprintf(f, "\t\t%s\n", rule);
    }
    fprintf(f, "\t}\n}\n");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *nftables_remove_script(const char *table)
{
    if (!table || !text_is_identifier(table, NFTABLES_TABLE_MAX))
        return NULL;
    char *text = NULL;
    if (asprintf(&text, "add table inet %s\ndelete table inet %s\n", table, table) < 0)
        return NULL;
    return text;
}

/* --- Pure: reading listings. */

/* The objects of a listing: {"nftables": [{KIND: {...}}, ...]}. */
static json_t *listing_items(json_t *root)
{
    json_t *items = json_object_get(root, "nftables");
    return json_is_array(items) ? items : NULL;
}

/* The one key of a listing item and its value; NULL when it is not one. */
static const char *item_kind(json_t *item, json_t **value)
{
    if (!json_is_object(item) || json_object_size(item) != 1)
        return NULL;
    void *it = json_object_iter(item);
    *value = json_object_iter_value(it);
    return json_is_object(*value) ? json_object_iter_key(it) : NULL;
}

static bool string_is(json_t *obj, const char *key, const char *want)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s && !strcmp(s, want);
}

int nftables_listing_has_table(const char *json, const char *table)
{
    json_t *root = json_loads(json, 0, NULL);
    json_t *items = listing_items(root);
    int found = items ? 0 : -1;
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        json_t *v = NULL;
        const char *kind = item_kind(item, &v);
        if (kind && !strcmp(kind, "table") && string_is(v, "family", "inet") && string_is(v, "name", table))
            found = 1;
    }
    json_decref(root);
    return found;
}

/* A listing object without its handle (which the kernel assigns). */
static json_t *without_handle(json_t *v)
{
    json_t *copy = json_copy(v);
    if (copy)
        json_object_del(copy, "handle");
    return copy;
}

/* Compact JSON of v for a message, cut to fit. */
static void describe_json(json_t *v, char *buf, size_t len)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    text_copy(buf, len, s ? s : "?");
    free(s);
}

/* The expressions of `iifname != "lo" tcp dport FROM redirect to :TO`, as
 * libnftables lists them. */
static json_t *rule_expr(json_int_t from, json_int_t to)
{
    return json_pack("[{s:{s:s, s:{s:{s:s}}, s:s}}, {s:{s:s, s:{s:{s:s, s:s}}, s:I}}, {s:{s:I}}]",
                     "match", "op", "!=", "left", "meta", "key", "iifname", "right", "lo",
                     "match", "op", "==", "left", "payload", "protocol", "tcp", "field", "dport", "right", from,
                     "redirect", "port", to);
}

/* A listed rule's redirect: true with *from, *to when its expressions are
 * exactly those install writes for some pair of ports. */
static bool rule_ports(json_t *expr, json_int_t *from, json_int_t *to)
{
    json_t *f = json_object_get(json_object_get(json_array_get(expr, 1), "match"), "right");
    json_t *t = json_object_get(json_object_get(json_array_get(expr, 2), "redirect"), "port");
    if (!json_is_integer(f) || !json_is_integer(t))
        return false;
    *from = json_integer_value(f);
    *to = json_integer_value(t);
    json_t *want = rule_expr(*from, *to);
    bool same = want && json_equal(expr, want);
    json_decref(want);
    return same;
}

/* The chain install writes, as libnftables lists it (without handle). */
static json_t *chain_expected(const char *table)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "family", "inet", "table", table, "name", CHAIN_NAME,
                     "type", "nat", "hook", "prerouting", "prio", CHAIN_PRIO_DSTNAT, "policy", "accept");
}

/* Whether listed chain v is the one install writes in table. */
static bool chain_is_ours(json_t *v, const char *table)
{
    json_t *want = chain_expected(table);
    json_t *have = without_handle(v);
    bool same = want && have && json_equal(want, have);
    json_decref(want);
    json_decref(have);
    return same;
}

/* Whether a listed rule (without its handle) is a redirect install writes,
 * for some pair of ports (*from, *to), in the chain it writes. */
static bool rule_shaped(json_t *have, const char *table, json_int_t *from, json_int_t *to)
{
    return have && json_object_size(have) == 4 && string_is(have, "family", "inet") &&
           string_is(have, "table", table) && string_is(have, "chain", CHAIN_NAME) &&
           rule_ports(json_object_get(have, "expr"), from, to);
}

static bool rule_is_ours(json_t *v, const char *table)
{
    json_t *have = without_handle(v);
    json_int_t from, to;
    bool ours = rule_shaped(have, table, &from, &to);
    json_decref(have);
    return ours;
}

typedef struct listing {
    size_t tables;
    json_t *chain;              /* borrowed: the one chain, if there is one */
    size_t chains;
    json_t *rules;              /* borrowed values, listing order */
} listing_t;

/* Sorts the items of a listing of one table; DIFFERS with why for an item
 * install never writes (a set, a map, another table's object...). */
static nftables_state_t listing_read(json_t *items, const char *table, listing_t *l, char *why, size_t whylen)
{
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        json_t *v = NULL;
        const char *kind = item_kind(item, &v);
        if (kind && !strcmp(kind, "metainfo"))
            continue;
        bool ours = v && string_is(v, "family", "inet") &&
                    (kind && !strcmp(kind, "table") ? string_is(v, "name", table) : string_is(v, "table", table));
        if (!kind || !ours) {
            char seen[160];
            describe_json(item, seen, sizeof seen);
            snprintf(why, whylen, "the listing holds %s, which is not part of table inet %s", seen, table);
            return NFTABLES_DIFFERS;
        }
        if (!strcmp(kind, "table")) {
            l->tables++;
        } else if (!strcmp(kind, "chain")) {
            l->chains++;
            l->chain = v;
        } else if (!strcmp(kind, "rule")) {
            json_array_append(l->rules, v);
        } else {
            const char *name = json_string_value(json_object_get(v, "name"));
            snprintf(why, whylen, "the table holds a %s%s%s%s, which install does not write", kind,
                     name ? " \"" : "", name ? name : "", name ? "\"" : "");
            return NFTABLES_DIFFERS;
        }
    }
    return NFTABLES_INSTALLED;
}

static nftables_state_t compare_chain(const listing_t *l, const char *table, char *why, size_t whylen)
{
    if (l->tables != 1) {
        snprintf(why, whylen, "the listing holds %zu tables named inet %s", l->tables, table);
        return NFTABLES_DIFFERS;
    }
    if (l->chains != 1) {
        snprintf(why, whylen, "the table holds %zu chains; install writes one, " CHAIN_NAME, l->chains);
        return NFTABLES_DIFFERS;
    }
    json_t *want = chain_expected(table);
    json_t *have = without_handle(l->chain);
    bool same = want && have && json_equal(want, have);
    if (!same) {
        char seen[200];
        describe_json(have, seen, sizeof seen);
        snprintf(why, whylen, "the chain is %s; install writes chain " CHAIN_NAME
                 " { type nat hook prerouting priority dstnat; policy accept; }", seen);
    }
    json_decref(want);
    json_decref(have);
    return same ? NFTABLES_INSTALLED : NFTABLES_DIFFERS;
}

/* Rule i of the listing against pair i of r; NULL p: the config has no
 * more pairs. */
static nftables_state_t compare_rule(json_t *rule, size_t i, const nftables_port_t *p, const char *table, char *why,
                                     size_t whylen)
{
    char want[96] = "";
    if (p)
        format_rule(p, want, sizeof want);
    json_t *have = without_handle(rule);
    json_int_t from = 0, to = 0;
    bool shaped = rule_shaped(have, table, &from, &to);
    nftables_state_t st = NFTABLES_DIFFERS;
    if (!shaped) {
        char seen[200];
        describe_json(have, seen, sizeof seen);
        snprintf(why, whylen, "rule %zu is not a redirect install writes: %s%s%s", i + 1, seen,
                 p ? "; the config says: " : "", want);
    } else if (!p) {
        snprintf(why, whylen, "rule %zu redirects %lld to :%lld, which the config does not", i + 1,
                 (long long)from, (long long)to);
    } else if (from != p->from || to != p->to) {
        snprintf(why, whylen, "rule %zu redirects %lld to :%lld; the config says: %s", i + 1, (long long)from,
                 (long long)to, want);
    } else {
        st = NFTABLES_INSTALLED;
    }
    json_decref(have);
    return st;
}

nftables_state_t nftables_compare(const char *json, const nftables_redirect_t *r, char *why, size_t whylen)
{
    if (!nftables_redirect_valid(r, why, whylen))
        return NFTABLES_DIFFERS;
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    json_t *items = listing_items(root);
    listing_t l = {.rules = json_array()};
    nftables_state_t st = NFTABLES_DIFFERS;
    if (!items) {
        snprintf(why, whylen, "not a listing of libnftables' JSON output%s%s", root ? "" : ": ",
                 root ? "" : jerr.text);
    } else if (l.rules) {
        st = listing_read(items, r->table, &l, why, whylen);
        if (st == NFTABLES_INSTALLED)
            st = compare_chain(&l, r->table, why, whylen);
        size_t n = json_array_size(l.rules);
        for (size_t i = 0; st == NFTABLES_INSTALLED && i < n; i++)
            st = compare_rule(json_array_get(l.rules, i), i, i < r->n_ports ? &r->ports[i] : NULL, r->table, why,
                              whylen);
        if (st == NFTABLES_INSTALLED && n < r->n_ports) {
            char want[96];
            format_rule(&r->ports[n], want, sizeof want);
            snprintf(why, whylen, "the table has %zu rules; the config also says: %s", n, want);
            st = NFTABLES_DIFFERS;
        }
    } else {
        snprintf(why, whylen, "out of memory");
    }
    json_decref(l.rules);
    json_decref(root);
    return st;
}

/* "set \"blocked\"", "chain \"input\"", "a rule in chain \"input\"": one
 * object of a listing, for a person. */
static void describe_object(const char *kind, json_t *v, char *buf, size_t len)
{
    const char *name = json_string_value(json_object_get(v, "name"));
    const char *chain = json_string_value(json_object_get(v, "chain"));
    if (!strcmp(kind, "rule"))
        snprintf(buf, len, "a rule in chain \"%s\"", chain ? chain : "?");
    else if (name)
        snprintf(buf, len, "%s \"%s\"", kind, name);
    else
        snprintf(buf, len, "a %s", kind);
}

int nftables_listing_foreign(const char *json, const char *table, char *what, size_t whatlen)
{
    json_t *root = json_loads(json, 0, NULL);
    json_t *items = listing_items(root);
    if (!items) {
        json_decref(root);
        return -1;
    }
    /* Rules count as ours only in our chain, so the chain is judged first. */
    bool our_chain = false;
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        json_t *v = NULL;
        const char *kind = item_kind(item, &v);
        if (kind && !strcmp(kind, "chain") && chain_is_ours(v, table))
            our_chain = true;
    }
    int n = 0;
    size_t at = 0;
    bool chain_seen = false;
    what[0] = '\0';
    json_array_foreach(items, i, item) {
        json_t *v = NULL;
        const char *kind = item_kind(item, &v);
        if (kind && !strcmp(kind, "metainfo"))
            continue;
        bool ours = false;
        if (kind && !strcmp(kind, "table"))
            ours = string_is(v, "family", "inet") && string_is(v, "name", table);
        else if (kind && !strcmp(kind, "chain") && !chain_seen && chain_is_ours(v, table))
            ours = chain_seen = true;   /* one chain of that name; a second is not install's */
        else if (kind && !strcmp(kind, "rule"))
            ours = our_chain && rule_is_ours(v, table);
        if (ours)
            continue;
        char one[160];
        if (kind)
            describe_object(kind, v, one, sizeof one);
        else
            describe_json(item, one, sizeof one);
        /* The first few by name; the count says the rest. */
        if (n < 4 && at < whatlen)
            at += (size_t)snprintf(what + at, whatlen - at, "%s%s", n ? ", " : "", one);
        else if (n == 4 && at < whatlen)
            at += (size_t)snprintf(what + at, whatlen - at, ", ...");
        n++;
    }
    text_sanitize(what);
    json_decref(root);
    return n;
}

/* --- The kernel. */

/* libnftables' error text ("Error: ...\nCOMMAND\n^^^^\n", once per failed
 * command) as one line: its Error lines, each once, joined by "; " (up to
 * the first syntax error), else errno's text, with what the usual causes
 * mean. */
static void describe_nft_error(const char *text, int errnum, const char *table, char *err, size_t errlen)
{
    size_t at = (size_t)snprintf(err, errlen, "nftables: ");
    const char *first = err + (at < errlen ? at : errlen);
    for (const char *line = text ? text : ""; *line && at < errlen;) {
        const char *end = strchrnul(line, '\n');
        if (!strncmp(line, "Error: ", 7)) {
            int n = (int)(end - line - 7);
            char one[256];
            snprintf(one, sizeof one, "%.*s", n, line + 7);
            if (!strstr(first, one))
                at += (size_t)snprintf(err + at, errlen - at, "%s%s", err + at == first ? "" : "; ", one);
            /* After a syntax error the parser only stumbles on. */
            if (strstr(one, "syntax error"))
                break;
        }
        line = *end ? end + 1 : end;
    }
    if (at < errlen && err + at == first)
        at += (size_t)snprintf(err + at, errlen - at, "%s", errnum ? strerror(errnum) : "the command failed and said nothing");
    if (at < errlen && strstr(first, "Operation not permitted"))
        at += (size_t)snprintf(err + at, errlen - at,
                               " (managing the redirect needs CAP_NET_ADMIN in this network namespace: run as root "
                               "or with that capability)");
    if (at < errlen && strstr(first, "syntax error"))
        snprintf(err + at, errlen - at, " (\"%s\" may be a keyword of nft, which cannot name a table: choose "
                 "another redirect.table)", table);
    text_sanitize(err);
}

static struct nft_ctx *nft_open(char *err, size_t errlen)
{
    struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!ctx) {
        snprintf(err, errlen, "nftables: cannot create a libnftables context");
        return NULL;
    }
    if (nft_ctx_buffer_output(ctx) != 0 || nft_ctx_buffer_error(ctx) != 0) {
        snprintf(err, errlen, "nftables: cannot buffer libnftables' output");
        nft_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Runs one script; with json, its output is JSON. The output (valid until
 * the next run on ctx), or NULL with err. */
static const char *nft_run(struct nft_ctx *ctx, const char *script, bool json, const char *table, char *err,
                           size_t errlen)
{
    nft_ctx_output_set_flags(ctx, json ? NFT_CTX_OUTPUT_JSON : 0);
    errno = 0;
    if (nft_run_cmd_from_buffer(ctx, script) != 0) {
        int errnum = errno;
        describe_nft_error(nft_ctx_get_error_buffer(ctx), errnum, table, err, errlen);
        return NULL;
    }
    const char *out = nft_ctx_get_output_buffer(ctx);
    return out ? out : "";
}

/* 1 the table exists, 0 it does not, -1 with err. */
static int table_present(struct nft_ctx *ctx, const char *table, char *err, size_t errlen)
{
    const char *out = nft_run(ctx, "list tables inet", true, table, err, errlen);
    if (!out)
        return -1;
    int has = nftables_listing_has_table(out, table);
    if (has < 0)
        snprintf(err, errlen, "nftables: `list tables inet` gave no JSON listing");
    return has;
}

static nftables_state_t status_on(struct nft_ctx *ctx, const nftables_redirect_t *r, char *why, size_t whylen)
{
    int has = table_present(ctx, r->table, why, whylen);
    if (has <= 0) {
        if (has == 0)
            snprintf(why, whylen, "table inet %s is not installed", r->table);
        return has == 0 ? NFTABLES_ABSENT : NFTABLES_FAILED;
    }
    char cmd[32 + NFTABLES_TABLE_MAX];
    snprintf(cmd, sizeof cmd, "list table inet %s", r->table);
    const char *out = nft_run(ctx, cmd, true, r->table, why, whylen);
    if (!out)
        return NFTABLES_FAILED;
    return nftables_compare(out, r, why, whylen);
}

int nftables_foreign(const char *table, char *what, size_t whatlen, char *err, size_t errlen)
{
    what[0] = '\0';
    if (!table || !text_is_identifier(table, NFTABLES_TABLE_MAX)) {
        snprintf(err, errlen, "nftables: table name \"%s\" is not an identifier", table ? table : "");
        return -1;
    }
    struct nft_ctx *ctx = nft_open(err, errlen);
    if (!ctx)
        return -1;
    int n = table_present(ctx, table, err, errlen);
    if (n == 1) {
        char cmd[32 + NFTABLES_TABLE_MAX];
        snprintf(cmd, sizeof cmd, "list table inet %s", table);
        const char *out = nft_run(ctx, cmd, true, table, err, errlen);
        n = out ? nftables_listing_foreign(out, table, what, whatlen) : -1;
        if (out && n < 0)
            snprintf(err, errlen, "nftables: `%s` gave no JSON listing", cmd);
    }
    nft_ctx_free(ctx);
    return n;
}

nftables_state_t nftables_status(const nftables_redirect_t *r, char *why, size_t whylen)
{
    if (!nftables_redirect_valid(r, why, whylen))
        return NFTABLES_FAILED;
    struct nft_ctx *ctx = nft_open(why, whylen);
    if (!ctx)
        return NFTABLES_FAILED;
    nftables_state_t st = status_on(ctx, r, why, whylen);
    nft_ctx_free(ctx);
    return st;
}

int nftables_install(const nftables_redirect_t *r, char *err, size_t errlen)
{
    char why[512];
    if (!nftables_redirect_valid(r, why, sizeof why)) {
        snprintf(err, errlen, "nftables: %s", why);
        return -1;
    }
    char *script = nftables_install_script(r);
    struct nft_ctx *ctx = script ? nft_open(err, errlen) : NULL;
    if (!script)
        snprintf(err, errlen, "nftables: out of memory");
    int rc = -1;
    if (ctx && nft_run(ctx, script, false, r->table, err, errlen)) {
        nftables_state_t st = status_on(ctx, r, why, sizeof why);
        if (st == NFTABLES_INSTALLED)
            rc = 0;
        else
            snprintf(err, errlen, "nftables: the table was written but does not read back as written: %s", why);
    }
    if (ctx)
        nft_ctx_free(ctx);
    free(script);
    return rc;
}

int nftables_remove(const char *table, bool *was_present, char *err, size_t errlen)
{
    *was_present = false;
    char *script = nftables_remove_script(table);
    if (!script) {
        snprintf(err, errlen, "nftables: table name \"%s\" is not an identifier", table ? table : "");
        return -1;
    }
    struct nft_ctx *ctx = nft_open(err, errlen);
    int rc = -1;
    int has = ctx ? table_present(ctx, table, err, errlen) : -1;
    if (has == 0)
        rc = 0;
    else if (has == 1 && nft_run(ctx, script, false, table, err, errlen)) {
        *was_present = true;
        rc = 0;
    }
    if (ctx)
        nft_ctx_free(ctx);
    free(script);
    return rc;
}
