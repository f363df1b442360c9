#include <stdio.h>
#include <time.h>

#include "core/clock.h"
#include "source/source.h"

void source_init(source_t *src, const source_ops_t *ops, struct event_base *base,
                 source_update_fn update, void *arg)
{
    *src = (source_t){.ops = ops, .base = base, .update = update, .arg = arg};
}

void source_set_update(source_t *src, source_update_fn update, void *arg)
{
    src->update = update;
    src->arg = arg;
}

int source_start(source_t *src) { return src->ops->start(src); }

void source_free(source_t *src)
{
    if (src)
        src->ops->destroy(src);
}

const char *source_kind(const source_t *src) { return src->ops->kind; }

double source_last_sync(const source_t *src) { return src->last_sync; }

uint64_t source_last_sync_monotonic_ms(const source_t *src) { return src->last_sync_ms; }

uint64_t source_reconnects(const source_t *src)
{
    return src->ops->reconnects ? src->ops->reconnects(src) : 0;
}

int source_files_changed(const source_t *src, char *err, size_t errlen)
{
    return src->ops->files_changed ? src->ops->files_changed(src, err, errlen) : 0;
}

const char *source_last_error(const source_t *src, double *at)
{
    *at = src->last_error_at;
    return src->last_error[0] ? src->last_error : NULL;
}

static double wall_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

void source_error(source_t *src, const char *why)
{
    snprintf(src->last_error, sizeof src->last_error, "%s", why);
    src->last_error_at = wall_now();
}

void source_synced(source_t *src)
{
    src->last_sync = wall_now();
    src->last_sync_ms = clock_monotonic_ns() / 1000000;
}

void source_report(source_t *src, source_state_t state, json_t *object)
{
    if (state == SOURCE_PRESENT || state == SOURCE_ABSENT)
        source_synced(src);
    src->update(state, object, src->arg);
}
