/* status_text: the human summary `skewgate status` prints (private to
 * src/cli/): the decision and its reason in words, the MCO-style message,
 * mode and boot image against the limit, source health and last sync, the
 * admission.machines watch (when on), the override and when it lapses,
 * and the held nodes as an aligned table. */
#ifndef SKEWGATE_CLI_STATUS_TEXT_H
#define SKEWGATE_CLI_STATUS_TEXT_H

#include <stdio.h>
#include <time.h>
#include <jansson.h>

/* verdict: GET /verdict's object; not_ready: NULL if /readyz said ready,
 * else why not (the machines watch's reason, MACHINES_NOT_READY_PREFIX,
 * is left to its own line); held: GET /held's object (NULL: the gate did
 * not say). */
void status_print_text(FILE *out, const json_t *verdict, const char *not_ready, const json_t *held, time_t now);
/* The same, with the hints that change the gate (undo: skewgate override
 * clear ...) printed with how_flags: the flags that reach its admin
 * listener as the user gave them ("-c FILE", "--admin SOCKET"; NULL:
 * none). */
void status_print_text_with(FILE *out, const json_t *verdict, const char *not_ready, const json_t *held,
                            time_t now, const char *how_flags);

/* A reason's name in words: "OutOfSkew" -> "the boot images are older
 * than the release supports"; NULL for a name it does not know. */
const char *status_reason_words(const char *reason);

/* An age as people read it: "12s", "3m12s", "2h05m", "3d04h". */
void status_age(long long seconds, char *buf, size_t cap);

#endif
