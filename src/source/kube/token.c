#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "source/kube/token.h"

int kube_token_init(kube_token_t *t, const char *path)
{
    *t = (kube_token_t){0};
    t->path = strdup(path ? path : "");
    return t->path ? 0 : -1;
}

void kube_token_free(kube_token_t *t)
{
    free(t->path);
    t->path = NULL;
    explicit_bzero(t->value, sizeof t->value);
}

static bool same_file(const kube_token_t *t, const struct stat *st)
{
    return t->loaded && t->dev == st->st_dev && t->ino == st->st_ino && t->size == st->st_size &&
           t->mtim.tv_sec == st->st_mtim.tv_sec && t->mtim.tv_nsec == st->st_mtim.tv_nsec;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

int kube_token_refresh(kube_token_t *t, char *err, size_t errlen)
{
    struct stat st;
    if (stat(t->path, &st) != 0) {
        snprintf(err, errlen, "token file %s: %s", t->path, strerror(errno));
        return -1;
    }
    if (same_file(t, &st))
        return 0;
    int fd = open(t->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "token file %s: %s", t->path, strerror(errno));
        return -1;
    }
    char buf[KUBE_TOKEN_MAX + 1];
    size_t got = 0;
    ssize_t n = 0;
    while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    int read_errno = errno;
    /* The identity of what was read, not of what was stat'ed before: a
     * rotation in between is then seen at the next request. */
    struct stat read_st;
    bool have_st = fstat(fd, &read_st) == 0;
    close(fd);
    int rc = -1;
    if (n < 0) {
        snprintf(err, errlen, "token file %s: %s", t->path, strerror(read_errno));
        goto done;
    }
    size_t start = 0, end = got;
    while (start < end && is_space(buf[start]))
        start++;
    while (end > start && is_space(buf[end - 1]))
        end--;
    if (got == sizeof buf) {
        snprintf(err, errlen, "token file %s: larger than %d bytes", t->path, KUBE_TOKEN_MAX);
        goto done;
    }
    if (start == end) {
        snprintf(err, errlen, "token file %s is empty", t->path);
        goto done;
    }
    /* It goes into a header field: nothing that could end or fold it. */
    for (size_t i = start; i < end; i++)
        if ((unsigned char)buf[i] < ' ' || (unsigned char)buf[i] == 0x7f) {
            snprintf(err, errlen, "token file %s holds control characters", t->path);
            goto done;
        }
    const struct stat *id = have_st ? &read_st : &st;
    rc = t->loaded && strlen(t->value) == end - start && !memcmp(t->value, buf + start, end - start) ? 0 : 1;
    memcpy(t->value, buf + start, end - start);
    t->value[end - start] = '\0';
    t->loaded = true;
    t->dev = id->st_dev;
    t->ino = id->st_ino;
    t->size = id->st_size;
    t->mtim = id->st_mtim;
done:
    explicit_bzero(buf, sizeof buf);
    return rc;
}

const char *kube_token_current(kube_token_t *t)
{
    char err[256];
    bool had = t->loaded;
    int rc = kube_token_refresh(t, err, sizeof err);
    if (rc < 0) {
        if (strcmp(err, t->error) != 0)
            log_msg(LOG_WARN, "source_token", "%s%s", err,
                    had ? "; keeping the previous token" : "; sending no token");
        snprintf(t->error, sizeof t->error, "%s", err);
        return had ? t->value : NULL;
    }
    t->error[0] = '\0';
    if (rc == 1 && had)
        log_msg(LOG_INFO, "source_token", "token file %s changed: using the new token", t->path);
    return t->value;
}
