#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

/* Set by the main thread (start-up, a reload), read by every thread. */
static atomic_int log_threshold = LOG_INFO;

static const char *const log_level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(log_level_t level) { atomic_store_explicit(&log_threshold, (int)level, memory_order_relaxed); }

bool log_enabled(log_level_t level)
{
    return (int)level >= atomic_load_explicit(&log_threshold, memory_order_relaxed);
}

static void log_time(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void log_json(log_level_t level, const char *event, json_t *fields)
{
    if (!log_enabled(level)) {
        json_decref(fields);
        return;
    }
    char when[40];
    log_time(when, sizeof when);
    json_t *line = json_object();
    json_object_set_new(line, "time", json_string(when));
    json_object_set_new(line, "level", json_string(log_level_names[level]));
    json_object_set_new(line, "event", json_string(event));
    if (fields)
        json_object_update(line, fields);
    json_decref(fields);
    /* One write(2) per line so that threads never interleave within a line. */
    char buf[4096];
    size_t n = json_dumpb(line, buf, sizeof buf - 1, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (n > 0 && n < sizeof buf - 1) {
        buf[n++] = '\n';
        ssize_t w = write(STDERR_FILENO, buf, n);
        (void)w;
    } else {
        char *big = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (big) {
            size_t bl = strlen(big);
            big[bl] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
            ssize_t w = write(STDERR_FILENO, big, bl + 1);
            (void)w;
            free(big);
        }
    }
    json_decref(line);
}

void log_msg(log_level_t level, const char *event, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *fields = json_object();
    json_object_set_new(fields, "msg", json_string(msg));
    log_json(level, event, fields);
}
