/* pace: the room where a scale-up waits its turn (DESIGN 1.9). At most
 * pace.max_joining nodes are admitted and not yet joined; the others wait
 * in one line, gate-wide, in the order they were first paced, and a free
 * slot is the first waiting node's. A node is its client address (after
 * the PROXY protocol); the pool it asks for is only shown.
 *
 * A node joins from its first admitted fetch (its retries inside its slot
 * are admitted again, Ignition may fetch twice) until a Node born for it
 * is Ready (below), or pace.join_timeout; a node of the line that has not
 * asked for pace.head_hold (a few of Ignition's 5 s retries) keeps no free
 * slot from those behind it, so one that went away does not block the
 * line, yet it keeps its place should it come back. pace.per_minute, when
 * set, caps the admissions of any minute.
 *
 * One call decides (pace_decide): under the room's one lock it frees what
 * join_timeout ended, counts the slots, finds the node's place, and
 * either admits it (it joins) or paces it with the cause. policy_decide
 * leaves the whole outcome to it (POLICY_PACE), so nothing is decided
 * twice and no other worker can take the slot in between.
 *
 * Who fits in the room: the joining nodes always (their number is bounded
 * by the budget); the line up to the room's size (held.max_clients at
 * start). A newcomer that finds the line full makes the node of the line
 * absent longest (unseen for more than head_hold) leave; if every node of
 * the line is present, the newcomer is not recorded, yet it is still
 * admitted when free slots exceed the present nodes of the line (all of
 * them are ahead of it): a full room never refuses a free slot. Waiting
 * nodes unseen for join_timeout are forgotten.
 *
 * The room is the gate's, shared by the workers, taken only by gated
 * requests the other rules admit while pace.enabled. It outlives reloads:
 * each call reads the configuration it is given, so a reload never
 * forgets who is joining or the order of the line.
 *
 * With a view of the cluster (pace_room_set_view: source/pace_watch.h on
 * the main thread, enforcement.source kubernetes) that can be trusted, a
 * joining node has registered when a Node of its address was created
 * after its admission (less PACE_NODE_SKEW_MS, the API server's clock
 * against ours), and joined when that Node is Ready: its slot frees at
 * once, and the seconds from its admission are observed. An older Node
 * on its address (a stale NotReady one, a re-imaged host's surviving
 * Node) is not its Node: it neither frees nor skips a slot. The budget
 * is then the cluster's, shared by pace.replicas gates that share no
 * memory:
 *   used = V + replicas x O, a node admitted when V + replicas x (O+1)
 *   <= max_joining, where
 *   V = Nodes not Ready created within join_timeout + pending node-
 *       bootstrapper client CSRs (no Approved, Denied or Failed
 *       condition) created within join_timeout (every replica's
 *       admissions, once the API shows them), and
 *   O = this gate's joining nodes no Node born for them shows yet (its
 *       own admissions the API does not show; each replica counts its own
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
#include "core/pace_shared.h"
#include "core/pace_view.h"
#include "os/wakeup.h"

#define PACE_POOL_LEN 64

/* skewgate_pace_join_seconds's buckets: from a fast cloud boot (about
 * 2 minutes to a Ready Node) to join_timeout's default and beyond. */
#define PACE_JOIN_BUCKETS 9
extern const unsigned PACE_JOIN_BUCKETS_S[PACE_JOIN_BUCKETS];

/* The API server's clock may be this far behind ours: a Node created up
 * to this long before a node's admission is still taken as born for it
 * (cluster-machine-approver allows the same 10 s, maxMachineClockSkew). */
#define PACE_NODE_SKEW_MS 10000

/* A link of one of the room's intrusive lists (order, or seen). */
typedef struct pace_link {
    struct pace_link *prev, *next;
} pace_link_t;

typedef struct pace_list {
    pace_link_t *head, *tail;
    uint32_t n;
} pace_list_t;

typedef struct pace_node {
    addrset_key_t key;
    char pool[PACE_POOL_LEN];       /* of its latest request */
    uint64_t first_ms;              /* wall clock: first paced (its place in line) */
    uint64_t seen_ms;               /* its latest request */
    uint64_t admitted_ms;           /* 0: waiting */
    bool is_node;                   /* joining, and a Node born for it is in the view (not in O) */
    bool blind;                     /* admitted by a room on the shared line counting blind (fallback, settle) */
    uint32_t ticket;                /* waiting: its index in the room's place tree (places) */
    pace_link_t order;              /* the line (waiting) or the joining list, oldest first */
    pace_link_t seen;               /* waiting: the line by latest request, least recent first */
    struct pace_node *chain;        /* its hash bucket */
} pace_node_t;

typedef struct pace_room {
    pthread_mutex_t lock;
    pace_node_t **buckets;
    uint32_t mask;
    uint32_t max_line;              /* waiting nodes kept; past it the longest absent leaves */
    /* A node's place in line, in O(log n): a Fenwick tree over tickets
     * handed out in line order (1 a waiting node's), renumbered when the
     * tickets run out (every places_cap / 2 newcomers at least). */
    uint32_t *places;
    uint32_t places_cap, next_ticket;
    pace_list_t line;               /* waiting, in the order they were first paced */
    pace_list_t seen;               /* the same nodes, least recently seen first */
    pace_list_t joining;            /* admitted, oldest admission first */
    uint64_t free_since_ms;         /* slots free since (0: none free at the last decision) */
    uint64_t recent[64];            /* the latest admissions (ring), for per_minute up to 64 */
    uint32_t recent_at;
    uint64_t admitted_total, timed_out_total;
    uint64_t unrecorded_total;      /* paced without a place: the line full of present nodes */
    uint64_t evicted_total;         /* absent nodes of a full line that made way for a newcomer */
    uint64_t forgotten_total;       /* waiting nodes unseen for join_timeout */
    uint64_t paced_total[8];        /* by pace_cause_t */
    /* The cluster as the API shows it (owned; NULL: no watch), the
     * joining nodes no Node born for them shows yet (O), and admitted ->
     * Ready (join_buckets: one count per bucket of PACE_JOIN_BUCKETS_S,
     * then +Inf; not cumulative). */
    pace_view_t *view;
    uint32_t unseen;
    uint64_t joined_total;
    uint64_t join_buckets[PACE_JOIN_BUCKETS + 1];
    uint64_t join_sum_ms;
    uint64_t hash_key[2];           /* hash_seeded's key, per room */
    /* The shared line (pace.line api, source/pace_line.h): the joining
     * set and the line as the Leases show them (owned; NULL: none yet),
     * this gate's claims and new waiters for the main thread's writer,
     * and the writer's failure (the fallback). */
    bool line_api;
    struct pace_shared *shared;
    struct pace_claim *claims;
    uint32_t n_claims, cap_claims;
    struct pace_claim *waiters;     /* new in the line: wait Leases to create */
    uint32_t n_waiters, cap_waiters;
    wakeup_t *bell;                 /* the writer's doorbell (NULL: nobody listens) */
    bool write_failing;             /* until write_fail_ms + PACE_WRITE_FALLBACK_MS, or a write succeeds */
    uint64_t write_fail_ms;
    char write_why[PACE_VIEW_WHY_LEN];
    uint64_t settle_until_ms;       /* back from a fallback: its own share until then (PACE_SETTLE_MS) */
    uint64_t shared_since_ms;       /* on the shared line since (pace_room_use_shared) */
} pace_room_t;

/* Back on the shared line after a fallback, a room keeps to its share
 * this long: by then the other gates blind through the same outage are
 * back and have written what they admitted blind (until then the set
 * lacks it): a failing Leases list is retried every 2 s at most, a list
 * may hang 30 s before it is given up (the reflector's LIST_IDLE_MS),
 * and a write in flight 10 s (PACE_LINE_IDLE_MS): 42 s at worst
 * (docs/internals.md, "The way back"). */
#define PACE_SETTLE_MS 45000
/* A claim or a wait Lease written that the Leases do not show this long
 * after is dropped (its node claims again, or is queued again). */
#define PACE_CLAIM_STALE_MS 30000

/* A line of max_line waiting nodes (the joining ones come on top). 0, or
 * -1 out of memory. */
int pace_room_init(pace_room_t *r, uint32_t max_line);
void pace_room_destroy(pace_room_t *r);

/* The cluster as the pace watch sees it now, taken over (the old one is
 * freed); NULL: no watch (enforcement.source is not kubernetes, or pacing
 * off). With a trusted view, the joining nodes whose Node (born for them)
 * is Ready have joined: their slots free now. */
void pace_room_set_view(pace_room_t *r, pace_view_t *view, uint64_t now_ms);

/* Why a node is paced: the order of the checks in pace_decide. */
typedef enum {
    PACE_ADMITTED = 0,  /* not paced: it joins (or is joining: a retry in its slot) */
    PACE_CEILING,       /* the node CSRs the approver counts are at pace.max_pending_csrs */
    PACE_BUDGET,        /* no slot free: max_joining nodes are joining */
    PACE_RATE,          /* slots are free but pace.per_minute were admitted this minute */
    PACE_TURN,          /* slots are free, and present nodes ahead of it take them */
    PACE_ROOM,          /* a newcomer the full line of present nodes has no place for */
    PACE_CLAIM,         /* the shared line: its turn, claimed in the joining Lease; admitted at its next retry */
    PACE_SYNC,          /* the shared line: not listed yet since the gate started, everyone waits */
} pace_cause_t;
#define PACE_CAUSES 8

/* "ceiling", "budget", ...; "" for PACE_ADMITTED. */
const char *pace_cause_name(pace_cause_t cause);

typedef struct pace_decision {
    pace_cause_t cause;
    bool rejoined;      /* PACE_ADMITTED: a retry within its slot, not a new admission */
    uint32_t place;     /* paced: its place in line, from 1 (0: none, PACE_ROOM) */
} pace_decision_t;

/* The one decision for a request from addr naming pool, at now_ms. */
pace_decision_t pace_decide(pace_room_t *r, const config_pace_t *cfg, const struct sockaddr_storage *addr,
                            const char *pool, uint64_t now_ms);

/* A node as reports show it (waiting, or joining). */
typedef struct pace_entry {
    addrset_key_t key;
    char pool[PACE_POOL_LEN];
    uint64_t first_ms, seen_ms;
    uint64_t admitted_ms;           /* joining: when; 0 waiting */
    bool present;                   /* waiting: asked within head_hold, it keeps its turn */
    bool registered;                /* joining: a Node born for it is in the view (not Ready yet) */
} pace_entry_t;

typedef struct pace_stats {
    uint32_t joining, waiting, present;
    uint32_t max_line;
    uint64_t longest_wait_ms;       /* of the nodes present in line (the first of them); 0: none */
    /* When the first present node of the line can be admitted at the
     * soonest: now when its turn has come; else when this gate's oldest
     * admission reaches join_timeout (sooner if a Node turns Ready, or
     * other replicas' nodes join); 0: nobody present, or nothing of ours
     * to free (the ceiling, or other replicas' nodes fill the budget). */
    uint64_t head_earliest_ms;
    uint64_t admitted_total, timed_out_total;
    uint64_t unrecorded_total, evicted_total, forgotten_total;
    uint64_t paced_total[PACE_CAUSES];
    /* How the budget is counted: by the API view (api), or by join_timeout
     * alone, and why. */
    bool api;
    char why[PACE_VIEW_WHY_LEN];
    uint32_t young_not_ready;       /* Nodes not Ready created within join_timeout */
    uint32_t young_csrs;            /* pending bootstrapper client CSRs created within join_timeout */
    uint32_t pending_csrs;          /* the node CSRs the approver counts now (pace_view_approver_count) */
    uint32_t approver_limit;        /* past which it approves nothing: max(Machines, Nodes) + 100 */
    bool machines_counted;          /* the limit counted Machines (admission.machines watches them) */
    uint32_t unseen;                /* O: joining nodes no Node born for them shows yet */
    uint64_t used;                  /* of max_joining, as the counting mode counts it */
    uint32_t free;                  /* slots free now (budget and per_minute) */
    bool ceiling;                   /* pending_csrs >= max_pending_csrs: nobody is admitted */
    uint64_t joined_total;          /* joining nodes whose Node turned Ready */
    uint64_t join_buckets[PACE_JOIN_BUCKETS + 1];
    uint64_t join_sum_ms;
    uint64_t join_timeout_ms;
    uint32_t max_joining, max_pending_csrs, replicas;  /* the configuration it was counted with */
    /* The line: shared (the Leases: line_api and usable), or local, and
     * why local when the shared line is configured (fallback or sync). */
    bool line_configured, line_shared;
    char line_why[PACE_VIEW_WHY_LEN];
    uint32_t shared_joining, shared_waiting, claims;
} pace_stats_t;

/* The room for reports, copied out under its lock: the counts, and, with
 * lists, every waiting node in line order and every joining node, oldest
 * admission first, each list sized to what it holds. */
typedef struct pace_report {
    pace_stats_t stats;
    pace_entry_t *line, *joining;
    size_t n_line, n_joining;
} pace_report_t;

/* 0, or -1 out of memory (the stats are filled either way). */
int pace_report(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool lists, pace_report_t *out);
void pace_report_release(pace_report_t *rep);

/* ---- the shared line (docs/internals.md, "The shared line") ------------ */

/* A claim or a new waiter queued for the writer. */
typedef enum { PACE_CLAIM_PENDING, PACE_CLAIM_WRITING, PACE_CLAIM_WRITTEN } pace_claim_state_t;
typedef struct pace_claim {
    addrset_key_t key;
    int64_t wall;               /* claimed, or first paced (unix ms) */
    uint64_t at_ms;             /* the room's clock: when queued or written */
    pace_claim_state_t state;
} pace_claim_t;

/* Shared mode on (the room starts in sync) and the doorbell the room
 * rings when it queues something for the writer. */
void pace_room_use_shared(pace_room_t *r, wakeup_t *bell);
/* Taken over; the turns seen so far are kept for the nodes still in line. */
void pace_room_set_shared(pace_room_t *r, pace_shared_t *s, uint64_t now_ms);
/* The writer's failure (why) or success (NULL): the fallback while it fails. */
void pace_room_write_failing(pace_room_t *r, const char *why);

/* The writer's plan on the joining Lease as read (in, n_in): the live
 * entries kept (departed ones dropped: a Node born for it Ready, or
 * join_timeout), then this gate's blind admissions the set lacks (up to
 * max_joining of them: they are admitted already, so whatever the set
 * holds), then the pending claims added while the set stays within
 * max_joining (those become WRITING), never more than out_cap (>= n_in:
 * the writer sized it on the max_joining it started with, and a reload
 * may raise the room's). Returns the entries in out; *added what it
 * added. */
size_t pace_shared_plan(pace_room_t *r, const config_pace_t *cfg, const char *gate, const pace_line_entry_t *in,
                        size_t n_in, int64_t now_wall, uint64_t now_ms, pace_line_entry_t *out, size_t out_cap,
                        size_t *added);
/* The update's outcome: written (the claims stay counted until the
 * Leases show them), or not (they are dropped: their nodes claim again). */
void pace_shared_written(pace_room_t *r, bool ok, uint64_t now_ms);
/* Takes the waiters queued (the caller frees *out); their number. */
uint32_t pace_shared_take_waiters(pace_room_t *r, pace_claim_t **out);
/* Whether claims, or blind admissions the set lacks, wait for a write. */
bool pace_shared_pending(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);

#endif
