/* pace: the room where a scale-up waits its turn (DESIGN 1.9). At most
 * pace.max_joining nodes are admitted and not yet joined; the others wait
 * in one line, gate-wide, in the order they were first paced, and a free
 * slot is the first waiting node's. A node is its client address (after
 * the PROXY protocol); the pool it asks for is only shown.
 *
 * A node joins from its first admitted fetch (its retries inside its slot
 * are admitted again, Ignition may fetch twice) until pace.join_timeout;
 * a node of the line that has not asked for pace.head_hold (a few of
 * Ignition's 5 s retries) keeps no free slot from those behind it, so one
 * that went away does not block the line, yet it keeps its place should
 * it come back. pace.per_minute, when set, caps the admissions of any
 * minute.
 *
 * The room is the gate's, shared by the workers under one mutex, taken
 * only by gated requests while pace.enabled (never on the held path of a
 * gate that does not pace). It outlives reloads: each call reads the
 * configuration it is given, so a reload never forgets who is joining or
 * the order of the line. The decision itself stays in policy_decide,
 * which reads what pace_look saw (policy_pace_t); pace_join then
 * commits it, and refuses when another worker took the slot in between. */
#ifndef SKEWGATE_PACE_H
#define SKEWGATE_PACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "core/addrset.h"
#include "policy/decide.h"

#define PACE_POOL_LEN 64

typedef struct pace_node {
    addrset_key_t key;
    char pool[PACE_POOL_LEN];       /* of its latest request */
    uint64_t first_ms;              /* wall clock: first paced (its place in line) */
    uint64_t seen_ms;               /* its latest request */
    uint64_t admitted_ms;           /* 0: waiting */
    struct pace_node *prev, *next;  /* the line (waiting) or the joining list, oldest first */
    struct pace_node *chain;        /* its hash bucket */
} pace_node_t;

typedef struct pace_list {
    pace_node_t *head, *tail;
    uint32_t n;
} pace_list_t;

typedef struct pace_room {
    pthread_mutex_t lock;
    pace_node_t **buckets;
    uint32_t mask;
    uint32_t n_nodes, max_nodes;    /* nodes known; past max_nodes a new one is paced unrecorded */
    pace_list_t line;               /* waiting, in the order they were first paced */
    pace_list_t joining;            /* admitted, oldest admission first */
    uint64_t recent[64];            /* the latest admissions (ring), for per_minute up to 64 */
    uint32_t recent_at;
    uint64_t admitted_total, timed_out_total, unrecorded_total;
} pace_room_t;

/* Room for max_nodes nodes (waiting and joining). 0, or -1 out of memory. */
int pace_room_init(pace_room_t *r, uint32_t max_nodes);
void pace_room_destroy(pace_room_t *r);

/* What the room makes of addr now, for policy_decide. */
policy_pace_t pace_look(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, uint64_t now_ms);
/* policy_decide admitted addr: it joins (true), or another worker took
 * its slot since pace_look (false: it is paced after all). */
bool pace_join(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms);
/* policy_decide paced addr: it takes its place at the end of the line
 * when new, and is seen now. */
void pace_wait(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr, const char *pool,
               uint64_t now_ms);

/* The room for reports: the counts, and the waiting nodes in line order
 * (at most max of them into out: address, pool, waited). */
typedef struct pace_waiter {
    addrset_key_t key;
    char pool[PACE_POOL_LEN];
    uint64_t first_ms, seen_ms;
    bool present;                   /* asked within head_hold: it keeps its turn */
} pace_waiter_t;

typedef struct pace_stats {
    uint32_t joining, waiting, present;
    uint64_t longest_wait_ms;       /* of the nodes present in line (the first of them); 0: none */
    uint64_t admitted_total, timed_out_total, unrecorded_total;
} pace_stats_t;

size_t pace_report(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, pace_stats_t *stats,
                   pace_waiter_t *out, size_t max);

#endif
