/* token_set: the provisioning tokens the gate accepts (admission.token),
 * one per file, as an immutable, refcounted set: the main thread loads a
 * new one when a file changes and publishes it to the workers through an
 * atomic slot; a worker only reads it. The token values never leave this
 * module: no error or log line names one, only files. */
#ifndef SKEWGATE_TOKEN_SET_H
#define SKEWGATE_TOKEN_SET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest token: a generated one is 32 to 64 bytes (openssl rand -hex
 * 32 is 64); the bound keeps the constant-time compare at 256 bytes per
 * accepted token. */
#define TOKEN_MAX 256
#define TOKEN_WORDS (TOKEN_MAX / 8)

typedef struct token_entry {
    uint64_t len;
    uint64_t words[TOKEN_WORDS];        /* the token's bytes, zero past len */
} token_entry_t;

typedef struct token_set {
    _Atomic uint32_t refs;
    size_t n;
    token_entry_t tokens[];
} token_set_t;

/* Reads paths[0..n): each holds one token, a trailing newline (LF or
 * CRLF) trimmed; it must be 1..TOKEN_MAX visible ASCII characters (no
 * space: it travels in a header field and a query). The set, refcount 1,
 * or NULL with "FILE: problem" in err (a file missing, unreadable, empty,
 * too long or with other characters). */
token_set_t *token_set_load(const char *const *paths, size_t n, char *err, size_t errlen);

/* Told of each file token_set_load_usable leaves out: its index in paths
 * and "token file FILE: problem" (never the token). */
typedef void (*token_problem_fn)(size_t file, const char *problem, void *arg);
#define TOKEN_PROBLEM_LEN 512

/* As token_set_load, but a file that cannot be used is left out of the set
 * (its token is no longer accepted) and reported to problem: the set of the
 * usable files, maybe none, or NULL when out of memory. A token is a secret
 * the operator withdraws by deleting or emptying its file, so a file that
 * cannot be read now must not leave its last token in force. */
token_set_t *token_set_load_usable(const char *const *paths, size_t n, token_problem_fn problem, void *arg);
token_set_t *token_set_ref(token_set_t *s);
void token_set_unref(token_set_t *s);

/* Is tok[0..len) one of the set's? Constant time in the token and in the
 * accepted ones: every accepted token is compared over all TOKEN_MAX bytes
 * with the lengths folded in and no branch on their contents, so neither
 * a prefix nor a length is learnt from timing. Longer than TOKEN_MAX:
 * false at once, which says nothing about the accepted tokens. */
bool token_set_contains(const token_set_t *s, const char *tok, size_t len);

#endif
