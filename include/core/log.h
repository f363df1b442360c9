/* log: one JSON object per line on stderr. Thread-safe: each line is built
 * in a local buffer and written with a single write(2). */
#ifndef SKEWGATE_LOG_H
#define SKEWGATE_LOG_H

#include <jansson.h>
#include <stdbool.h>

typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;

void log_set_level(log_level_t level);
bool log_enabled(log_level_t level);

/* {"time":..., "level":..., "event": event, "msg": printf-formatted} */
void log_msg(log_level_t level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds time, level, event to fields (which it steals) and writes the line. */
void log_json(log_level_t level, const char *event, json_t *fields);

#endif
