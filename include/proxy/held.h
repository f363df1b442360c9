/* held: which nodes the gate is holding (issue 11.2). Each worker owns one
 * bounded table of the clients it rejected recently: what they asked for,
 * since when, how often, why, and whether they were admitted since. It has
 * two parts (issue 20.5): the nodes the verdict (or evidence) holds and
 * the clients an admission policy (token, machines) refused, the latter in
 * a smaller part of their own, so that refusals, which anyone can cause
 * from many addresses, never take a held node's room. Both are keyed by
 * the client address alone: a node is its address (DESIGN 1.9, issue 26).
 * The pool a request names is the last segment of a path the client
 * chooses; kept as an attribute (the latest request's), it cannot
 * multiply one address into many entries. The worker is the table's only writer;
 * the admin thread reads it without a lock through a sequence counter per
 * slot (a seqlock whose data words are relaxed atomics, so that a reader
 * racing a write retries instead of reading a torn entry, and the writer
 * never waits for anyone).
 *
 * The hot path allocates nothing: the slots are allocated once, at start.
 * A client absent from the table costs a hash and a bounded probe. */
#ifndef SKEWGATE_HELD_H
#define SKEWGATE_HELD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http/accept.h"

#define HELD_POOL_LEN 64
#define HELD_UA_LEN 64
#define HELD_REASON_LEN 32
/* Slots looked at for one key: a client beyond them is not recorded (and
 * counted as overflow), so a full table never costs a scan of all slots.
 * With HELD_SLOTS_PER_CLIENT slots per client the table is at most 2/3
 * full, where linear probing from a mixed home slot stores 99.97 % of a
 * full share within 32 (4,096 clients, sequential or random; 16 probes:
 * 99.5 %, too close to the 99 % asked). */
#define HELD_MAX_PROBES 32
/* Slots per client, as a fraction: 3/2. */
#define HELD_SLOTS_NUM 3
#define HELD_SLOTS_DEN 2
/* When the part has its share of clients, a new one first looks at this
 * many slots, from a hand that goes round, for clients forgotten since
 * (their room is given back): the bound stays exact and the work per
 * request bounded (probes + sweep). */
#define HELD_SWEEP 32
/* The refusals' part: a quarter as many clients as the held part. */
#define HELD_REFUSED_DIV 4

/* One client. The fields a repeated attempt changes come first, so that
 * publishing an attempt writes a few words, not the whole entry. */
typedef struct held_entry {
    uint64_t last_seen_ms;          /* wall clock, ms since the epoch: the latest event */
    uint32_t attempts;              /* rejected requests seen */
    /* What its latest rejection was answered: 503 (reject.mode hold, or a
     * policy's hold such as UnknownMachine), the one answer a node
     * retries, so the one that makes it held now; 403 (deny, a refused
     * token), 200 or 400 (explain): turned away, listed but not held. */
    uint16_t status;
    uint16_t pad_status;
    /* The latest event wins (issue 20.3): a client is admitted when its
     * latest admission is later than its latest hold, whichever worker saw
     * each. The admitting worker reads the hold, and writes the admission
     * 1 ms after it if the clock has not moved; a hold is written no
     * earlier than the latest admission of the process (held.c), and wins
     * a tie: the order is never lost to the coarse clock's tick. */
    uint64_t held_ms;               /* its latest hold */
    uint64_t admitted_ms;           /* its latest admission; 0: none. In a view: 0 while held */
    char reason[HELD_REASON_LEN];   /* of the latest hold: "OutOfSkew", "TokenMissing", ... */
    /* Set when the client is first recorded. */
    uint64_t first_seen_ms;
    uint8_t family;                 /* AF_INET or AF_INET6; 0: a slot never used */
    uint8_t spec;                   /* ignition_spec_t of its Accept header */
    uint8_t refused;                /* 1: an admission policy's refusal (no pool) */
    uint8_t pad;
    uint32_t pad_addr;
    uint8_t addr[16];               /* IPv4 in the first 4 bytes */
    /* The pool its latest held request asked for (its latest hold's, in a
     * view): an attribute, not part of the key; "" in the refusals' part. */
    char pool[HELD_POOL_LEN];
    char user_agent[HELD_UA_LEN];   /* as sent, truncated; not sanitised (readers escape it) */
} held_entry_t;

#define HELD_ENTRY_WORDS (sizeof(held_entry_t) / sizeof(uint64_t))
_Static_assert(sizeof(held_entry_t) % sizeof(uint64_t) == 0, "entry is whole words");

typedef struct held_slot {
    _Atomic uint64_t seq;           /* odd while the owner writes */
    _Atomic uint64_t words[HELD_ENTRY_WORDS];
} held_slot_t;

/* The owner's own notes on a slot, never read by others. */
typedef struct held_own {
    const char *reason_of;          /* the name the entry's reason was copied from */
    bool counted;                   /* the entry counts against max_clients */
} held_own_t;

typedef struct held_part {
    uint32_t cap;                   /* slots */
    uint32_t max_clients;           /* entries counted at most */
    uint32_t n_counted;             /* owner-only */
    uint32_t hand;                  /* owner-only: where the next sweep starts */
    held_entry_t *mine;             /* the owner's plain copy of every slot */
    held_slot_t *slots;             /* what readers see */
    held_own_t *own;
    _Atomic uint32_t n_used;        /* slots ever used: 0 lets admitted requests skip the lookup */
} held_part_t;

typedef struct held_table {
    held_part_t held;               /* verdict and evidence holds, by address */
    held_part_t refused;            /* admission policies' refusals, by address */
    uint64_t forget_after_ms;
    _Atomic uint64_t admitted_after_hold;   /* counters, owner-written */
    _Atomic uint64_t overflow;
} held_table_t;

/* What the hook needs of a request: slices of the head as read. */
typedef struct held_client {
    const struct sockaddr_storage *addr;
    const char *pool;               /* NUL-terminated */
    const char *user_agent;         /* NULL: none */
    size_t user_agent_len;
    const char *accept;             /* NULL: none; parsed only when the client is new */
    size_t accept_len;
    mcs_family_t mcs_family;        /* how the MCS reads accept (the snapshot's) */
} held_client_t;

/* Room for max_clients (>= 1) held clients and a quarter as many refused
 * ones (at least 1), allocated now. 0, or -1 when out of memory. */
int held_table_init(held_table_t *t, uint32_t max_clients, uint64_t forget_after_ms);
void held_table_destroy(held_table_t *t);

/* The hook every reject path calls: client c was rejected for `reason`
 * at now_ms (wall clock) and answered `status` (503: held). reason is a name that lives as long as the process
 * (verdict_reason_name's, gate_reason_name's, a literal): it is copied
 * when it differs, by address, from the entry's last one. Owner thread
 * only. */
void held_record(held_table_t *t, const held_client_t *c, const char *reason, int status, uint64_t now_ms);
/* The same for a refusal by an admission policy: recorded in the
 * refusals' part, by address alone. The pool is left out of the key and
 * of what is shown: it is the last segment of a path the policy did not
 * accept, the client's word only; kept, it would let one address fill
 * the part, one entry per pool, and mint a skewgate_held_clients series
 * per name. The address is what the operator looks a node up by (its
 * Machine, its console). */
void held_record_refusal(held_table_t *t, const held_client_t *c, const char *reason, int status, uint64_t now_ms);

/* Client c got its config at now_ms. If this table or one of peers[] (the
 * other workers' tables, read only: a node's retries may have come on
 * another worker's connection) holds or refuses its address now, whatever
 * pool that asked for, the owner's table records the admission (ending
 * both); true when that is news. It counts in admitted_after_hold when the rejection it ends
 * held the node (a 503; not a 403 or an explain answer). Owner thread
 * only. */
bool held_admit(held_table_t *t, const held_table_t *const *peers, size_t n_peers, const held_client_t *c,
                uint64_t now_ms);

/* A consistent copy of every table, for the admin thread: entries not yet
 * forgotten, one per client (a client seen by two workers is merged:
 * attempts summed, earliest first seen, latest last seen, the reason and
 * status of the latest rejection, and admitted when its latest admission is not older
 * than its latest hold), oldest first. Of an address's hold and its
 * refusal by a policy (one node, whatever pools they named), only the one
 * with the later event is in it (the hold on a tie). */
typedef struct held_view {
    held_entry_t *entries;
    size_t n;
    size_t n_held;                  /* of them, held now: answered 503 last, not admitted since */
    uint64_t admitted_after_hold;   /* counters summed over the tables */
    uint64_t overflow;
    uint64_t forget_after_ms;
    uint32_t max_clients;           /* held clients over all tables (refusals aside) */
} held_view_t;

/* The answer a node retries, and so the one that holds it. */
#define HELD_STATUS 503
/* Whether a view's entry is held now: answered HELD_STATUS last, and not
 * admitted since (a view's admitted_ms is 0 while it is not). */
bool held_now(const held_entry_t *e);
/* A view's entry in a word: "admitted", "held" (held_now), "denied" (403)
 * or "explained" (reject.mode explain's 200, or its 400 for a spec it
 * cannot write). */
const char *held_state_name(const held_entry_t *e);

/* 0, or -1 when out of memory (*out then empty). */
int held_collect(const held_table_t *const *tables, size_t n_tables, uint64_t now_ms, held_view_t *out);
void held_view_release(held_view_t *v);

/* "3.4.0": the spec an entry asked for; "unsupported" for none we know. */
const char *held_spec_name(uint8_t spec);
/* The entry's address as text into buf (ADDR_IP_TEXT_LEN bytes). */
void held_addr_text(const held_entry_t *e, char *buf, size_t cap);

#endif
