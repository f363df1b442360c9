/* pace: the room where a scale-up waits its turn (DESIGN 1.9). At most
 * pace.max_joining nodes are admitted and not yet joined; the others wait
 * in one line, gate-wide, in the order they were first paced, and a free
 * slot is the first waiting node's. A node is its client address (after
 * the PROXY protocol); the pool it asks for is only shown.
 *
 * A node joins from its first admitted fetch (its retries inside its slot
 * are admitted again, Ignition may fetch twice) until a Node of its
 * address is Ready (below), or pace.join_timeout;
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
 * commits it, and refuses when another worker took the slot in between.
 *
 * With a view of the cluster (pace_room_set_view: source/pace_watch.h on
 * the main thread, enforcement.source kubernetes) that can be trusted, a
 * joining node whose address is a Ready Node has joined: its slot frees
 * at once, and the seconds from its admission are observed. The budget
 * is then the cluster's, shared by pace.replicas gates that share no
 * memory:
 *   used = V + replicas x O, a node admitted when V + replicas x (O+1)
 *   <= max_joining, where
 *   V = Nodes not Ready created within join_timeout + pending node-
 *       bootstrapper client CSRs (no Approved, Denied or Failed
 *       condition) created within join_timeout (every replica's
 *       admissions, once the API shows them), and
 *   O = this gate's joining nodes whose address is no Node yet (its own
 *       admissions the API does not show; each replica counts its own
 *       replicas times, so the sum over replicas stays within the budget
 *       when their views agree: docs/pacing.md).
 * While the node CSRs cluster-machine-approver counts reach
 * pace.max_pending_csrs, nobody new is admitted: both kinds (node-
 * bootstrapper client CSRs, serving CSRs of group system:nodes) created
 * within (now - 1 h, now + 10 s) without an Approved condition, Denied
 * and Failed included, and those another controller approved within
 * 30 s (core/pace_view.h, pace_view_approver_count). Without a trusted view
 * (no watch, not listed yet, a collection failing) the room cannot see:
 * used = replicas x its joining nodes, and a slot frees at join_timeout
 * only. */
#ifndef SKEWGATE_PACE_H
#define SKEWGATE_PACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "core/addrset.h"
#include "core/pace_view.h"
#include "policy/decide.h"

#define PACE_POOL_LEN 64

/* skewgate_pace_join_seconds's buckets: from a fast cloud boot (about
 * 2 minutes to a Ready Node) to join_timeout's default and beyond. */
#define PACE_JOIN_BUCKETS 9
extern const unsigned PACE_JOIN_BUCKETS_S[PACE_JOIN_BUCKETS];

typedef struct pace_node {
    addrset_key_t key;
    char pool[PACE_POOL_LEN];       /* of its latest request */
    uint64_t first_ms;              /* wall clock: first paced (its place in line) */
    uint64_t seen_ms;               /* its latest request */
    uint64_t admitted_ms;           /* 0: waiting */
    bool is_node;                   /* joining, and its address is a Node's in the view (not in O) */
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
    /* The cluster as the API shows it (owned; NULL: no watch), the
     * joining nodes no Node has the address of (O), and admitted -> Ready
     * (join_buckets: one count per bucket of PACE_JOIN_BUCKETS_S, then
     * +Inf; not cumulative). */
    pace_view_t *view;
    uint32_t unseen;
    uint64_t joined_total;
    uint64_t join_buckets[PACE_JOIN_BUCKETS + 1];
    uint64_t join_sum_ms;
} pace_room_t;

/* Room for max_nodes nodes (waiting and joining). 0, or -1 out of memory. */
int pace_room_init(pace_room_t *r, uint32_t max_nodes);
void pace_room_destroy(pace_room_t *r);

/* The cluster as the pace watch sees it now, taken over (the old one is
 * freed); NULL: no watch (enforcement.source is not kubernetes, or pacing
 * off). With a trusted view, the joining nodes whose address is a Ready
 * Node have joined: their slots free now. */
void pace_room_set_view(pace_room_t *r, pace_view_t *view, uint64_t now_ms);

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
    /* How the budget is counted: by the API view (api), or by join_timeout
     * alone, and why. */
    bool api;
    char why[PACE_VIEW_WHY_LEN];
    uint32_t young_not_ready;       /* Nodes not Ready created within join_timeout */
    uint32_t young_csrs;            /* pending bootstrapper client CSRs created within join_timeout */
    uint32_t pending_csrs;          /* the node CSRs the approver counts now (pace_view_approver_count) */
    uint32_t approver_limit;        /* past which it approves nothing: max(Machines, Nodes) + 100 */
    bool machines_counted;          /* the limit counted Machines (admission.machines watches them) */
    uint32_t unseen;                /* O: joining nodes whose address is no Node yet */
    uint64_t used;                  /* of max_joining, as the counting mode counts it */
    bool ceiling;                   /* pending_csrs >= max_pending_csrs: nobody is admitted */
    uint64_t joined_total;          /* joining nodes whose Node turned Ready */
    uint64_t join_buckets[PACE_JOIN_BUCKETS + 1];
    uint64_t join_sum_ms;
    uint32_t max_joining, max_pending_csrs, replicas;  /* the configuration it was counted with */
} pace_stats_t;

size_t pace_report(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, pace_stats_t *stats,
                   pace_waiter_t *out, size_t max);

#endif
