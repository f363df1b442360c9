/* The file source: the MachineConfiguration kept in a file, for clusters
 * where something else (a sidecar, an admin) writes it, and for tests. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/log.h"
#include "verdict/mcobj.h"
#include "source/source.h"
#include "core/clock.h"

/* A burst of events (an editor's create, write, delete) settles for this
 * long before the file is looked at, so that a file that is half written or
 * briefly missing in between is not reported.
 *
 * What is read is believed only when it is whole:
 * - a rename onto the name, or in its directory (an atomic replace, a
 *   ConfigMap's "..data" swap), installs a finished file: believed at once,
 *   which keeps a verdict flip within milliseconds;
 * - anything else (a close after writing, a change the poll notices, the
 *   first read) is a candidate, believed only when a second read at least
 *   SETTLE_MS later finds the same inode, size, mtime, ctime and content
 *   hash, with no event naming the file (a write, IN_MODIFY) in between;
 *   or at once when its mtime and ctime are already SETTLE_MS old (the
 *   same proof, taken from the file: the object the gate starts with is
 *   then its verdict before the listeners open, as it always was).
 *   An in-place rewrite made of several write() calls, or of several
 *   open-write-close steps, thus waits until the file has stopped changing.
 * With inotify, a file written to and not yet closed by its writer is not
 * believed either, for up to WRITER_MAX_MS.
 * Until then the last good view stands and nothing is reported: a file cut
 * short that parses (e.g. a status missing) is never a verdict. A stable
 * file that does not parse, or names another object, is an error (the last
 * good view is kept, as for any source failure). */
#define SETTLE_MS 100

/* With inotify, a write to the name is also awaited until its writer closes
 * the file (a writer pausing mid-file), but not longer than this: a writer
 * may keep the file open for good. */
#define WRITER_MAX_MS 5000

/* The object the gate enforces, as for the kube source's default. */
#define FILE_OBJECT_NAME "cluster"

/* Any change in the directory may change the file: its name may be a
 * symlink through a sibling (a ConfigMap volume swaps "..data"), so every
 * event leads to a stat, and the stat decides. IN_MODIFY tells that a
 * write is under way. */
#define WATCH_MASK                                                                          \
    (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |     \
     IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

typedef struct file_identity {
    bool exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
} file_identity_t;

typedef struct source_file {
    source_t base;
    char *path;
    char *dir;              /* watched, so that replacing the file is seen */
    const char *name;       /* within path */
    uint64_t poll_ms;
    int inotify_fd;         /* -1: polling only */
    int watch;              /* -1 while the directory cannot be watched */
    bool name_touched;      /* an event named the file: read it even if stat looks the same */
    bool write_complete;    /* a rename or close-after-write: look at once */
    bool renamed;           /* a rename onto the name since the last look */
    bool renamed_beside;    /* a rename of a sibling: whole if the name is a symlink */
    bool writing;           /* a write to the name not yet followed by its close */
    uint64_t writing_since_ns;
    struct {                /* a read not yet believed (see SETTLE_MS) */
        bool has;
        file_identity_t id;
        uint64_t hash;
        uint64_t at_ns;
    } candidate;
    struct event *inotify_ev, *settle_ev, *poll_ev;
    file_identity_t seen;   /* the file as last read */
    source_state_t state;   /* as last reported */
    json_t *object;         /* the last good object */
    char error[MCOBJ_ERR_LEN];  /* the error last logged, "" while healthy */
} source_file_t;

static file_identity_t identity_of(const struct stat *st)
{
    return (file_identity_t){true, st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim};
}

static bool timespec_equal(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool identity_equal(const file_identity_t *a, const file_identity_t *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           timespec_equal(a->mtim, b->mtim) && timespec_equal(a->ctim, b->ctim);
}

static void fail(source_file_t *f, const char *why)
{
    /* Polling meets the same broken file every second: say it once. */
    if (strcmp(why, f->error) == 0)
        return;
    snprintf(f->error, sizeof f->error, "%s", why);
    log_msg(LOG_WARN, "source_error", "%s (keeping the last good view)", why);
    source_error(&f->base, why);
    f->state = SOURCE_FAILING;
    source_report(&f->base, SOURCE_FAILING, f->object);
}

static void become_absent(source_file_t *f)
{
    f->seen = (file_identity_t){.exists = false};
    f->error[0] = '\0';
    if (f->state == SOURCE_ABSENT) {
        source_synced(&f->base);
        return;
    }
    log_msg(LOG_WARN, "source_absent", "%s does not exist: the MachineConfiguration is absent",
            f->path);
    json_decref(f->object);
    f->object = NULL;
    f->state = SOURCE_ABSENT;
    source_report(&f->base, SOURCE_ABSENT, NULL);
}

static uint64_t content_hash(const char *text, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void arm_settle(source_file_t *f)
{
    if (!evtimer_pending(f->settle_ev, NULL)) {
        struct timeval settle = {0, SETTLE_MS * 1000};
        evtimer_add(f->settle_ev, &settle);
    }
}

/* Reads the whole file into *text (NUL-terminated) and the identity it had
 * throughout; 1 when it changed while being read, 0, or -1 with why. */
static int read_whole(const char *path, char **text, size_t *len, file_identity_t *id, char *why,
                      size_t whylen)
{
    *text = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat before, after;
    if (fd < 0 || fstat(fd, &before) != 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t cap = (size_t)before.st_size + 1, n = 0;
    if ((size_t)before.st_size > MCOBJ_MAX_BYTES) {
        snprintf(why, whylen, "%s: larger than %u bytes", path, MCOBJ_MAX_BYTES);
        close(fd);
        return -1;
    }
    char *buf = malloc(cap + 1);
    for (ssize_t r = 1; buf && r > 0;) {
        if (n == cap) {   /* grew since the fstat: read on, then call it changed */
            char *bigger = cap > MCOBJ_MAX_BYTES ? NULL : realloc(buf, 2 * cap + 1);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r < 0) {
            snprintf(why, whylen, "%s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        } else
            n += (size_t)r;
    }
    int rc = fstat(fd, &after);
    close(fd);
    if (!buf || rc != 0) {
        snprintf(why, whylen, "%s: %s", path, !buf ? "out of memory" : strerror(errno));
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    *id = identity_of(&after);
    file_identity_t was = identity_of(&before);
    return identity_equal(&was, id) && (off_t)n == after.st_size ? 0 : 1;
}

/* A believed read: report it (or the error it holds). */
static void take(source_file_t *f, const file_identity_t *id, const char *text, size_t len)
{
    f->seen = *id;
    char err[MCOBJ_ERR_LEN];
    json_t *object = mcobj_parse(text, len, f->path, err, sizeof err);
    if (!object) {
        fail(f, err);
        return;
    }
    const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    if (!name || strcmp(name, FILE_OBJECT_NAME) != 0) {
        snprintf(err, sizeof err, "%s: the MachineConfiguration is named \"%.100s\", expected \"%s\"",
                 f->path, name ? name : "", FILE_OBJECT_NAME);
        json_decref(object);
        fail(f, err);
        return;
    }
    f->error[0] = '\0';
    if (f->state == SOURCE_PRESENT && json_equal(object, f->object)) {
        json_decref(object);
        source_synced(&f->base);
        return;
    }
    json_decref(f->object);
    f->object = object;
    f->state = SOURCE_PRESENT;
    const char *rv = json_string_value(
        json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
    log_msg(LOG_INFO, "source_loaded", "%s: MachineConfiguration read (resourceVersion %s)",
            f->path, rv ? rv : "unset");
    source_report(&f->base, SOURCE_PRESENT, object);
}

/* The file's last change (data or inode) lies SETTLE_MS or more behind. */
static bool quiet_for_settle(const file_identity_t *id)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const struct timespec *last = id->ctim.tv_sec > id->mtim.tv_sec ||
                                          (id->ctim.tv_sec == id->mtim.tv_sec && id->ctim.tv_nsec > id->mtim.tv_nsec)
                                      ? &id->ctim
                                      : &id->mtim;
    int64_t age_ms = ((int64_t)now.tv_sec - (int64_t)last->tv_sec) * 1000 +
                     ((int64_t)now.tv_nsec - (int64_t)last->tv_nsec) / 1000000;
    return age_ms >= SETTLE_MS;
}

static void check(source_file_t *f, bool force)
{
    struct stat st;
    bool renamed = f->renamed || (f->renamed_beside && lstat(f->path, &st) == 0 && S_ISLNK(st.st_mode));
    f->renamed = f->renamed_beside = false;
    if (stat(f->path, &st) != 0) {
        f->candidate.has = false;
        if (errno == ENOENT || errno == ENOTDIR) {
            become_absent(f);
        } else {
            char why[MCOBJ_ERR_LEN];
            snprintf(why, sizeof why, "%s: %s", f->path, strerror(errno));
            fail(f, why);
        }
        return;
    }
    file_identity_t id = identity_of(&st);
    if (!force && !f->candidate.has && f->state != SOURCE_NO_DATA && identity_equal(&id, &f->seen)) {
        if (f->state != SOURCE_FAILING)
            source_synced(&f->base);
        return;
    }
    char *text;
    size_t len;
    char why[MCOBJ_ERR_LEN];
    int changing = read_whole(f->path, &text, &len, &id, why, sizeof why);
    if (changing < 0) {
        f->candidate.has = false;
        if (errno == ENOENT)
            become_absent(f);
        else
            fail(f, why);
        return;
    }
    uint64_t hash = content_hash(text, len);
    uint64_t now = clock_monotonic_ns();
    if (changing) {
        f->candidate.has = false;     /* written while read: look again */
        arm_settle(f);
    } else if (renamed) {
        f->candidate.has = false;     /* renamed into place: whole */
        take(f, &id, text, len);
    } else if (!f->writing && quiet_for_settle(&id)) {
        f->candidate.has = false;     /* not changed for SETTLE_MS: whole */
        take(f, &id, text, len);
    } else if (f->candidate.has && identity_equal(&f->candidate.id, &id) && f->candidate.hash == hash &&
               now - f->candidate.at_ns >= (uint64_t)SETTLE_MS * 1000000u &&
               (!f->writing || now - f->writing_since_ns >= (uint64_t)WRITER_MAX_MS * 1000000u)) {
        f->candidate.has = false;     /* unchanged for SETTLE_MS: whole */
        take(f, &id, text, len);
    } else {
        if (!f->candidate.has || !identity_equal(&f->candidate.id, &id) || f->candidate.hash != hash) {
            f->candidate.has = true;
            f->candidate.id = id;
            f->candidate.hash = hash;
            f->candidate.at_ns = now;
        }
        arm_settle(f);
    }
    free(text);
}

static void watch_dir(source_file_t *f, bool log_failure)
{
    f->watch = inotify_add_watch(f->inotify_fd, f->dir, WATCH_MASK);
    if (f->watch < 0 && log_failure)
        log_msg(LOG_WARN, "source_watch", "cannot watch %s: %s; polling every %llu ms only",
                f->dir, strerror(errno), (unsigned long long)f->poll_ms);
}

static void rewatch_if_lost(source_file_t *f)
{
    if (f->inotify_fd >= 0 && f->watch < 0)
        watch_dir(f, false);
}

static void note_event(source_file_t *f, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW)
        f->name_touched = true;
    if (ev->wd == f->watch && (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))) {
        /* A moved directory keeps its watch: drop it, the path is what counts. */
        if (ev->mask & IN_MOVE_SELF)
            inotify_rm_watch(f->inotify_fd, f->watch);
        f->watch = -1;
    }
    bool ours = ev->len > 0 && strcmp(ev->name, f->name) == 0;
    if (ours)
        f->name_touched = true;
    if (ours && (ev->mask & IN_MODIFY))
        f->candidate.has = false;   /* a write under way: what was read is not whole */
    if (ours && (ev->mask & IN_MODIFY) && !f->writing) {
        f->writing = true;
        f->writing_since_ns = clock_monotonic_ns();
    }
    if (ours && (ev->mask & IN_CLOSE_WRITE))
        f->writing = false;
    if (ev->mask & IN_MOVED_TO) {
        if (ours)
            f->renamed = true;
        else
            f->renamed_beside = true;
    }
    if (ev->mask & (IN_MOVED_TO | IN_CLOSE_WRITE))
        f->write_complete = true;
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    source_file_t *f = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            note_event(f, ev);
            p += sizeof *ev + ev->len;
        }
    }
    if (f->write_complete) {
        struct timeval now = {0, 0};
        evtimer_add(f->settle_ev, &now);
    } else if (!evtimer_pending(f->settle_ev, NULL)) {
        struct timeval settle = {0, SETTLE_MS * 1000};
        evtimer_add(f->settle_ev, &settle);
    }
}

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    source_file_t *f = arg;
    rewatch_if_lost(f);
    /* An event naming the file forces a read even if stat looks the same;
     * a candidate being confirmed is read anyway. */
    bool force = f->name_touched && !f->candidate.has;
    f->name_touched = false;
    f->write_complete = false;
    check(f, force);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    source_file_t *f = arg;
    rewatch_if_lost(f);
    check(f, false);
}

static int file_start(source_t *src)
{
    source_file_t *f = (source_file_t *)src;
    f->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (f->inotify_fd < 0) {
        log_msg(LOG_WARN, "source_watch", "inotify: %s; polling %s every %llu ms only",
                strerror(errno), f->path, (unsigned long long)f->poll_ms);
    } else {
        watch_dir(f, true);
        f->inotify_ev = event_new(src->base, f->inotify_fd, EV_READ | EV_PERSIST, on_inotify, f);
        if (!f->inotify_ev || event_add(f->inotify_ev, NULL) != 0)
            return -1;
    }
    f->settle_ev = evtimer_new(src->base, on_settle, f);
    if (!f->settle_ev)
        return -1;
    if (f->poll_ms > 0) {
        struct timeval every = clock_timeval(f->poll_ms);
        f->poll_ev = event_new(src->base, -1, EV_PERSIST, on_poll, f);
        if (!f->poll_ev || event_add(f->poll_ev, &every) != 0)
            return -1;
    }
    check(f, true);
    return 0;
}

static void file_destroy(source_t *src)
{
    source_file_t *f = (source_file_t *)src;
    if (f->inotify_ev)
        event_free(f->inotify_ev);
    if (f->settle_ev)
        event_free(f->settle_ev);
    if (f->poll_ev)
        event_free(f->poll_ev);
    if (f->inotify_fd >= 0)
        close(f->inotify_fd);
    json_decref(f->object);
    free(f->path);
    free(f->dir);
    free(f);
}

/* Its file is watched, not read once: nothing for files_changed. */
static const source_ops_t file_ops = {"file", file_start, file_destroy, NULL, NULL};

source_t *source_file_new(struct event_base *base, const config_source_file_t *cfg,
                          source_update_fn update, void *arg)
{
    source_file_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    source_init(&f->base, &file_ops, base, update, arg);
    f->inotify_fd = -1;
    f->watch = -1;
    f->state = SOURCE_NO_DATA;
    f->poll_ms = cfg->poll_interval_ms;
    f->path = strdup(cfg->path ? cfg->path : "");
    const char *slash = f->path ? strrchr(f->path, '/') : NULL;
    f->dir = !f->path ? NULL
             : !slash ? strdup(".")
             : strndup(f->path, slash == f->path ? 1 : (size_t)(slash - f->path));
    if (!f->path || !f->dir) {
        file_destroy(&f->base);
        return NULL;
    }
    f->name = slash ? slash + 1 : f->path;
    return &f->base;
}
