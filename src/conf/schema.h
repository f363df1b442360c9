/* schema: the engine that reads a YAML document into a struct, private to
 * conf. Each mapping is a table of fields; a field's reader parses its
 * value node into base + offset. The loader remembers where each key path
 * was written, so that errors, cross-field ones included, name the file,
 * line and column of the offending node and its key path.
 *
 * Readers and schema_fail* return 0, or -1 with the message already in
 * ld->err (the first error's) and handed to ld->each. The walk goes on past
 * a bad key or value to the next key (schema_read_map) or list item (the
 * lists of mappings), so that one `skewgate check` names every error it
 * can; a reader whose value has an error returns -1 and skips the checks it
 * makes over its keys together ("missing required key"), and the rules
 * across fields (validate.c) run only when the keys read without one. */
#ifndef SKEWGATE_CONF_SCHEMA_H
#define SKEWGATE_CONF_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/types.h>

#include "conf/config_types.h"
#include "core/ydoc.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

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
    size_t n_errors;        /* every error found so far */
    bool stop;              /* out of memory: the walk reads nothing more */
    void (*each)(const char *msg, void *arg);  /* NULL, or told each error */
    void *each_arg;
} loader_t;

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

/* --- Errors: "file:LINE:COL: key.path: problem". Each is counted and
 * handed to ld->each; the first is kept in ld->err. */

__attribute__((format(printf, 4, 5)))
int schema_fail(loader_t *ld, const ynode_t *at, const char *path, const char *fmt, ...);
int schema_fail_oom(loader_t *ld, const ynode_t *at);
/* "expected X, got a mapping" (or a list, a string, ...) */
int schema_fail_expected(loader_t *ld, const ynode_t *node, const char *expected);
/* An error about the key at path, pointing at it if it was written, else
 * at its nearest written parent. */
__attribute__((format(printf, 3, 4)))
int schema_fail_at_path(loader_t *ld, const char *path, const char *fmt, ...);

/* --- Where things were written. */

/* Appends "[i]" to ld->path; returns what schema_path_pop restores. */
size_t schema_path_push_index(loader_t *ld, size_t i);
void schema_path_pop(loader_t *ld, size_t old);
/* Records that node was written at the current key path. */
int schema_place(loader_t *ld, const ynode_t *node);
/* The node written at a key path, or NULL when the key was absent. */
const ynode_t *schema_node_at(const loader_t *ld, const char *path);
/* The node written at a key path or, when the key is absent, at its
 * nearest written parent: where to point for a missing key. */
const ynode_t *schema_nearest_node(const loader_t *ld, const char *path);
void schema_loader_free(loader_t *ld);

/* --- Scalars. */

/* Any scalar with a value: its text, or NULL after an error naming what
 * was expected. Numbers are fine here, as the caller checks the text's own
 * grammar ("9.2", "16384"). */
const char *schema_scalar_text(loader_t *ld, const ynode_t *node, const char *expected);
/* A scalar that YAML reads as a string: a plain true or 42 is a typo or
 * needs quotes. */
const char *schema_string_text(loader_t *ld, const ynode_t *node);
/* Replaces *dst with a copy of value. */
int schema_set_string(loader_t *ld, const ynode_t *node, char **dst, const char *value);

/* --- Readers. */

/* Walks a mapping against a schema: unknown keys are errors with a "did
 * you mean" when one key is close. Every key is read, whatever errors came
 * before it; -1 when any of them had one. */
int schema_read_map(loader_t *ld, const ynode_t *node, const schema_t *schema, void *base);

/* Field readers; f->spec is what the comment names. */
int schema_read_submap(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);   /* schema_t */
int schema_read_bool(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);     /* - */
int schema_read_duration(loader_t *ld, const ynode_t *node, const field_t *f, void *dst); /* range_t, uint64_t ms */
int schema_read_size(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);     /* range_t, uint32_t */
int schema_read_count(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);    /* range_t, uint32_t */
int schema_read_enum(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);     /* enum_value_t[], int */
int schema_read_addr(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);     /* addr_rules_t */
int schema_read_string(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);   /* -, char * */
/* A file named in the config: relative to the config file's directory, so
 * that a config and its certificates move together. */
int schema_read_path(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);     /* -, char * */

#endif
