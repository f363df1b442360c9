#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/log.h"
#include "proxy/token_watch.h"

/* What stat(2) said of a file: a change of any field means a new read.
 * The ctime and mode too: a chmod that makes a file unreadable changes
 * neither its size nor its mtime. */
typedef struct file_id {
    int err;                    /* errno of a failed stat, else 0 */
    dev_t dev;
    ino_t ino;
    mode_t mode;
    off_t size;
    struct timespec mtim, ctim;
} file_id_t;

struct token_watch {
    /* Its own copy of the file names: a reload frees the configuration
     * they came from. */
    config_admission_token_t files;
    const config_admission_token_t *cfg;    /* &files */
    token_publish_fn publish;
    void *arg;
    struct event *timer;
    file_id_t ids[CONFIG_MAX_TOKEN_FILES];
};

static file_id_t file_id_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return (file_id_t){.err = errno ? errno : EIO};
    return (file_id_t){0, st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtim, st.st_ctim};
}

static bool file_id_equal(const file_id_t *a, const file_id_t *b)
{
    return a->err == b->err && a->dev == b->dev && a->ino == b->ino && a->mode == b->mode &&
           a->size == b->size && a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

/* Reads what ids[] names now; false when nothing changed since. */
static bool token_watch_changed(token_watch_t *tw)
{
    bool changed = false;
    for (size_t i = 0; i < tw->cfg->n_files; i++) {
        file_id_t now = file_id_of(tw->cfg->files[i]);
        changed |= !file_id_equal(&now, &tw->ids[i]);
        tw->ids[i] = now;
    }
    return changed;
}

static token_set_t *token_watch_load(const token_watch_t *tw, char *err, size_t errlen)
{
    return token_set_load((const char *const *)tw->cfg->files, tw->cfg->n_files, err, errlen);
}

static void token_watch_left_out(size_t file, const char *problem, void *arg)
{
    (void)file;
    (void)arg;
    log_msg(LOG_WARN, "admission_tokens", "%s: its token is refused until the file is usable again", problem);
}

/* After the start, a file that cannot be used (deleted, emptied,
 * unreadable, malformed) revokes its token rather than keeping the last
 * one read: deleting or emptying the file is how an operator withdraws a
 * leaked token, and a token the gate cannot read now is one it cannot
 * vouch for. The other files' tokens stay accepted; with none left, every
 * gated request is refused (fail closed), never admitted. */
static void token_watch_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    token_watch_t *tw = arg;
    if (!token_watch_changed(tw))
        return;
    token_set_t *set = token_set_load_usable((const char *const *)tw->cfg->files, tw->cfg->n_files,
                                             token_watch_left_out, tw);
    if (!set) {
        /* Out of memory: nothing was read, so nothing is known to be revoked. */
        log_msg(LOG_ERROR, "admission_tokens", "token files: out of memory; the tokens last loaded stay");
        return;
    }
    if (set->n == 0)
        log_msg(LOG_ERROR, "admission_tokens",
                "none of the %zu token files is usable: every gated request is refused (403) until one is",
                tw->cfg->n_files);
    else
        log_msg(LOG_INFO, "admission_tokens", "%zu of %zu token files read again after a change", set->n,
                tw->cfg->n_files);
    tw->publish(set, tw->arg);
}

token_watch_t *token_watch_start(struct event_base *base, const config_admission_token_t *cfg,
                                 token_publish_fn publish, void *arg, char *err, size_t errlen)
{
    token_watch_t *tw = calloc(1, sizeof *tw);
    if (!tw) {
        snprintf(err, errlen, "admission.token: out of memory");
        return NULL;
    }
    *tw = (token_watch_t){.publish = publish, .arg = arg};
    tw->cfg = &tw->files;
    for (size_t i = 0; i < cfg->n_files; i++, tw->files.n_files++)
        if (!(tw->files.files[i] = strdup(cfg->files[i]))) {
            snprintf(err, errlen, "admission.token: out of memory");
            token_watch_free(tw);
            return NULL;
        }
    /* The identities first: a change while reading is seen at the next tick. */
    token_watch_changed(tw);
    token_set_t *set = token_watch_load(tw, err, errlen);
    struct timeval every = clock_timeval(TOKEN_WATCH_INTERVAL_MS);
    if (!set || !(tw->timer = event_new(base, -1, EV_PERSIST, token_watch_tick, tw)) ||
        event_add(tw->timer, &every) < 0) {
        if (set) {
            snprintf(err, errlen, "admission.token: cannot start the file check");
            token_set_unref(set);
        }
        token_watch_free(tw);
        return NULL;
    }
    log_msg(LOG_INFO, "admission_tokens", "token policy on: %zu token files", set->n);
    publish(set, arg);
    return tw;
}

void token_watch_free(token_watch_t *tw)
{
    if (!tw)
        return;
    if (tw->timer)
        event_free(tw->timer);
    for (size_t i = 0; i < tw->files.n_files; i++)
        free(tw->files.files[i]);
    free(tw);
}
