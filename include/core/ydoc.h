/* ydoc: a YAML document as a tree of nodes that remember where they stand
 * in the source (1-based line and column), so that every consumer can name
 * file:line:column in its errors. Built on libyaml's document loader. */
#ifndef SKEWGATE_YDOC_H
#define SKEWGATE_YDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

typedef enum { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ } ynode_kind_t;

typedef struct ynode ynode_t;

typedef struct ynode_pair {
    const ynode_t *key;
    const ynode_t *value;
} ynode_pair_t;

struct ynode {
    ynode_kind_t kind;
    int line, col;              /* 1-based position of the node's start */
    /* YNODE_SCALAR */
    const char *value;          /* NUL-terminated; may hold embedded NULs up to len */
    size_t len;
    bool plain;                 /* unquoted: subject to int/bool/null resolution */
    /* YNODE_SEQ: items[n]; YNODE_MAP: pairs[n] in source order */
    const ynode_t **items;
    ynode_pair_t *pairs;
    size_t n;
};

typedef struct ydoc ydoc_t;

/* Parses exactly one YAML document. On error returns NULL and writes
 * "LINE:COL: problem" to err. An empty input is an error. */
ydoc_t *ydoc_parse(const char *buf, size_t len, char *err, size_t errlen);
const ynode_t *ydoc_root(const ydoc_t *doc);
void ydoc_free(ydoc_t *doc);

/* Looks a key up in a mapping node; NULL when absent or not a mapping. */
const ynode_t *ynode_get(const ynode_t *map, const char *key);

/* Converts a node to JSON with the YAML 1.2 core schema for plain scalars
 * (null, true/false, integers, floats; anything else a string). Quoted
 * scalars are always strings. Returns NULL with "LINE:COL: problem" in err
 * (non-scalar keys, nesting deeper than 64). */
json_t *ynode_to_json(const ynode_t *node, char *err, size_t errlen);

#endif
