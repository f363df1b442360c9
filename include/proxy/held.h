/* held: which nodes the gate is holding (issue 11.2). Each worker owns one
 * bounded table of the clients it rejected recently, keyed by client
 * address and pool: what they asked for, since when, how often, why, and
 * whether they were admitted since. The worker is the table's only
 * writer; the admin thread reads it without a lock through a sequence
 * counter per slot (a seqlock whose data words are relaxed atomics, so
 * that a reader racing a write retries instead of reading a torn entry,
 * and the writer never waits for anyone).
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

#define HELD_POOL_LEN 64
#define HELD_UA_LEN 64
#define HELD_REASON_LEN 32
/* Slots looked at for one key: a client beyond them is not recorded (and
 * counted as overflow), so a full table never costs a scan of all slots. */
#define HELD_MAX_PROBES 16

/* One client. The fields a repeated attempt changes come first, so that
 * publishing an attempt writes a few words, not the whole entry. */
typedef struct held_entry {
    uint64_t last_seen_ms;          /* wall clock, ms since the epoch */
    uint64_t attempts;              /* held requests seen */
    uint64_t admitted_ms;           /* when it got its config; 0: still held */
    char reason[HELD_REASON_LEN];   /* of the latest hold: "OutOfSkew", "TokenMissing", ... */
    /* Set when the client is first recorded. */
    uint64_t first_seen_ms;
    uint8_t family;                 /* AF_INET or AF_INET6; 0: a slot never used */
    uint8_t spec;                   /* ignition_spec_t of its Accept header */
    uint8_t pad[6];
    uint8_t addr[16];               /* IPv4 in the first 4 bytes */
    char pool[HELD_POOL_LEN];
    char user_agent[HELD_UA_LEN];   /* as sent, truncated; not sanitised (readers escape it) */
} held_entry_t;

#define HELD_ENTRY_WORDS (sizeof(held_entry_t) / sizeof(uint64_t))
_Static_assert(sizeof(held_entry_t) % sizeof(uint64_t) == 0, "entry is whole words");

typedef struct held_slot {
    _Atomic uint64_t seq;           /* odd while the owner writes */
    _Atomic uint64_t words[HELD_ENTRY_WORDS];
} held_slot_t;

typedef struct held_table {
    uint32_t cap;
    uint64_t forget_after_ms;
    held_entry_t *mine;             /* the owner's plain copy of every slot */
    held_slot_t *slots;             /* what readers see */
    const char **reason_of;         /* the owner's: the name each entry's reason was copied from */
    _Atomic uint32_t n_used;        /* slots ever used: 0 lets admitted requests skip the lookup */
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
} held_client_t;

/* cap slots (>= 1), allocated now. 0, or -1 when out of memory. */
int held_table_init(held_table_t *t, uint32_t cap, uint64_t forget_after_ms);
void held_table_destroy(held_table_t *t);

/* The hook every reject path calls: client c was held for `reason` at
 * now_ms (wall clock). reason is a name that lives as long as the process
 * (verdict_reason_name's, gate_reason_name's, a literal): it is copied
 * when it differs, by address, from the entry's last one. Owner thread
 * only. */
void held_record(held_table_t *t, const held_client_t *c, const char *reason, uint64_t now_ms);

/* Client c got its config at now_ms. If this table or one of peers[] (the
 * other workers' tables, read only: a node's retries may have come on
 * another worker's connection) holds it, the owner's table marks it
 * admitted; true when that is news (and counted). Owner thread only. */
bool held_admit(held_table_t *t, const held_table_t *const *peers, size_t n_peers, const held_client_t *c,
                uint64_t now_ms);

/* A consistent copy of every table, for the admin thread: entries not yet
 * forgotten, one per client (a client held by two workers is merged:
 * attempts summed, earliest first seen, latest last seen and reason,
 * admitted if either says so), oldest first. */
typedef struct held_view {
    held_entry_t *entries;
    size_t n;
    size_t n_held;                  /* of them, not admitted */
    uint64_t admitted_after_hold;   /* counters summed over the tables */
    uint64_t overflow;
    uint64_t forget_after_ms;
    uint32_t max_clients;           /* slots over all tables */
} held_view_t;

/* 0, or -1 when out of memory (*out then empty). */
int held_collect(const held_table_t *const *tables, size_t n_tables, uint64_t now_ms, held_view_t *out);
void held_view_release(held_view_t *v);

/* "3.4.0": the spec an entry asked for; "unsupported" for none we know. */
const char *held_spec_name(uint8_t spec);
/* The entry's address as text into buf (ADDR_IP_TEXT_LEN bytes). */
void held_addr_text(const held_entry_t *e, char *buf, size_t cap);

#endif
