#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/token_set.h"

/* One token from path into e; 0, or -1 with err. */
static int token_read(const char *path, token_entry_t *e, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "token file %s: %s", path, strerror(errno));
        return -1;
    }
    /* Room for a token, a CRLF and one byte more to tell "too long". */
    unsigned char buf[TOKEN_MAX + 3];
    size_t got = 0;
    ssize_t n = 0;
    while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    int read_errno = errno;
    close(fd);
    int rc = -1;
    size_t len = got;
    if (len && buf[len - 1] == '\n')
        len--;
    if (len && buf[len - 1] == '\r')
        len--;
    if (n < 0)
        snprintf(err, errlen, "token file %s: %s", path, strerror(read_errno));
    else if (len == 0)
        snprintf(err, errlen, "token file %s is empty", path);
    else if (len > TOKEN_MAX)
        snprintf(err, errlen, "token file %s: the token is longer than %d bytes", path, TOKEN_MAX);
    else {
        rc = 0;
        for (size_t i = 0; i < len; i++)
            if (buf[i] <= ' ' || buf[i] >= 0x7f) {
                snprintf(err, errlen,
                         "token file %s: byte %zu is not a visible ASCII character (one token per file, "
                         "without spaces; only a trailing newline is trimmed)", path, i + 1);
                rc = -1;
                break;
            }
    }
    if (rc == 0) {
        memset(e, 0, sizeof *e);
        memcpy(e->words, buf, len);
        e->len = len;
    }
    explicit_bzero(buf, sizeof buf);
    return rc;
}

/* The set of paths[0..n)'s tokens; a file that cannot be used fails the
 * whole load (strict) or is left out and reported (!strict). */
static token_set_t *token_set_read(const char *const *paths, size_t n, bool strict, token_problem_fn problem,
                                   void *arg, char *err, size_t errlen)
{
    token_set_t *s = calloc(1, sizeof *s + n * sizeof s->tokens[0]);
    if (!s) {
        snprintf(err, errlen, "token files: out of memory");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    for (size_t i = 0; i < n; i++) {
        if (token_read(paths[i], &s->tokens[s->n], err, errlen) == 0) {
            s->n++;
        } else if (strict) {
            token_set_unref(s);
            return NULL;
        } else {
            problem(i, err, arg);
        }
    }
    return s;
}

token_set_t *token_set_load(const char *const *paths, size_t n, char *err, size_t errlen)
{
    return token_set_read(paths, n, true, NULL, NULL, err, errlen);
}

token_set_t *token_set_load_usable(const char *const *paths, size_t n, token_problem_fn problem, void *arg)
{
    char err[TOKEN_PROBLEM_LEN];
    return token_set_read(paths, n, false, problem, arg, err, sizeof err);
}

token_set_t *token_set_ref(token_set_t *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void token_set_unref(token_set_t *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    explicit_bzero(s->tokens, s->n * sizeof s->tokens[0]);
    free(s);
}

/* Zero only when a and b hold the same token. Every word is looked at and
 * the loop has no branch on the data; the empty asm keeps the compiler from
 * ending it early once diff is non-zero. Why not CRYPTO_memcmp: it is a
 * byte loop, 1,802 instructions per 256-byte token under callgrind (two
 * tokens were 3,600 of a held request's 8,080); this is about 130. */
static uint64_t token_diff(const token_entry_t *a, const token_entry_t *b)
{
    uint64_t diff = a->len ^ b->len;
    for (size_t i = 0; i < TOKEN_WORDS; i++) {
        diff |= a->words[i] ^ b->words[i];
        __asm__ volatile("" : "+r"(diff));
    }
    return diff;
}

bool token_set_contains(const token_set_t *s, const char *tok, size_t len)
{
    if (len == 0 || len > TOKEN_MAX)
        return false;
    token_entry_t probe = {.len = len};
    memcpy(probe.words, tok, len);
    uint64_t found = 0;
    for (size_t i = 0; i < s->n; i++)
        found |= token_diff(&probe, &s->tokens[i]) == 0;
    explicit_bzero(&probe, sizeof probe);
    return found != 0;
}
