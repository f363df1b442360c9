/* pace_shared: the shared line as the pace-line Leases show it
 * (docs/internals.md, "The shared line"): what source/pace_line.c builds
 * on the main thread and the room (proxy/pace.h) decides on. Immutable
 * once handed over, but for the turns the room marks under its lock. */
#ifndef SKEWGATE_PACE_SHARED_H
#define SKEWGATE_PACE_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addrset.h"
#include "core/pace_view.h"

/* A writer that failed (conflicts unsettled, errors) leaves the room
 * counting blind this long, then it claims again; the writer runs again
 * at its end (source/pace_line.c), to write what was admitted blind. */
#define PACE_WRITE_FALLBACK_MS 5000

/* The joining set and the line as the skewgate.openshift.io/pace-line
 * Leases show them: built on the main thread (source/pace_line.c), handed
 * over with pace_room_set_shared. Times on the room's clock
 * (clock_coarse_ms) and, for the writer, the wall's. */
#define PACE_GATE_LEN 64
typedef struct pace_shared_joiner {
    addrset_key_t key;
    uint64_t admitted_ms;       /* the room's clock */
    int64_t admitted_wall;      /* unix ms, as written */
    char gate[PACE_GATE_LEN];
} pace_shared_joiner_t;

typedef struct pace_shared_waiter {
    addrset_key_t key;
    int64_t acquire_wall;       /* unix ms: first asked any gate */
    uint64_t turn_ms;           /* the room's: when this gate first saw its turn come (0: not yet) */
} pace_shared_waiter_t;

typedef struct pace_shared {
    /* listed: the Leases listed since the start (else the gate syncs);
     * failing: the reflector cannot confirm them (the fallback). */
    bool listed, failing;
    char why[PACE_VIEW_WHY_LEN];
    pace_shared_joiner_t *joining;  /* sorted by key */
    size_t n_joining;
    pace_shared_waiter_t *line;     /* in line order: acquireTime, then name */
    size_t n_line;
} pace_shared_t;

void pace_shared_free(pace_shared_t *s);

/* One entry of the joining Lease. */
typedef struct pace_line_entry {
    addrset_key_t key;
    int64_t admitted_wall;
    char gate[PACE_GATE_LEN];
} pace_line_entry_t;

/* Sorts s->joining by key (the room finds entries by bsearch). */
void pace_shared_sort(pace_shared_t *s);

/* The joining Lease's annotation: one line per entry, "ADDRESS
 * ADMITTED_UNIX_MS GATE". Parsing skips malformed lines (*bad counts
 * them); out holds as many entries as the text has lines. */
size_t pace_shared_parse_joining(const char *text, pace_line_entry_t *out, size_t cap, size_t *bad);
/* Its text for entries (malloc'ed; NULL out of memory). */
char *pace_shared_format_joining(const pace_line_entry_t *e, size_t n);

#endif
