/* token_watch: keeps the workers' token set (token_set.h) in step with
 * admission.token.files, on the main thread: it loads the set at start
 * and then checks the files' identity (device, inode, size, mtime) every
 * TOKEN_WATCH_INTERVAL_MS; a change loads all of them again and publishes
 * the new set. A file that cannot be used then (deleted, empty,
 * unreadable, too long) is left out: its token is refused from that check
 * on (fail closed: the others stay accepted, and with none left every
 * gated request is refused), and it is logged by name, once per change;
 * no log line holds a token. */
#ifndef SKEWGATE_TOKEN_WATCH_H
#define SKEWGATE_TOKEN_WATCH_H

#include <stddef.h>
#include <event2/event.h>

#include "conf/config.h"
#include "policy/token_set.h"

/* A rotation overlaps for minutes at least; a second is prompt, and a
 * stat(2) per file and second costs nothing. */
#define TOKEN_WATCH_INTERVAL_MS 1000

/* Hands a set to whoever uses it: the callee takes the reference. */
typedef void (*token_publish_fn)(token_set_t *set, void *arg);

typedef struct token_watch token_watch_t;

/* Loads the files and publishes the first set before returning. NULL with
 * "token file FILE: problem" in err when a file cannot be used, or when
 * out of memory. */
token_watch_t *token_watch_start(struct event_base *base, const config_admission_token_t *cfg,
                                 token_publish_fn publish, void *arg, char *err, size_t errlen);
void token_watch_free(token_watch_t *tw);

#endif
