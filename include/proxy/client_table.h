/* client_table: what each client address holds on one worker, so that
 * one address cannot take more than its share while others wait: the
 * upstream slots its requests hold (queue.h grants a free slot to another
 * address's waiter first) and the response bytes kept for it while it
 * reads slower than the MCS sends (relay.h's store). An address is the
 * client's after the PROXY protocol; an IPv4 address and its mapped IPv6
 * form are one. An entry lives while an exchange holds it. One worker's
 * thread only: no lock. */
#ifndef SKEWGATE_CLIENT_TABLE_H
#define SKEWGATE_CLIENT_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/addrset.h"
#include "proxy/queue.h"

typedef struct client_share {
    addrset_key_t key;
    uint32_t refs;              /* exchanges holding it */
    slot_share_t slots;         /* upstream slots its requests hold, and its waiters */
    uint64_t kept;              /* bytes kept for its slow readers */
    struct client_share *next;  /* in its bucket */
} client_share_t;

typedef struct client_table {
    client_share_t **buckets;
    uint32_t mask;              /* buckets - 1, a power of two */
    uint64_t hash_key[2];       /* hash_seeded16's, random per table: no address picks its bucket */
    uint32_t n;
} client_table_t;

/* 0, or -1 when out of memory. */
int client_table_init(client_table_t *t);
void client_table_destroy(client_table_t *t);
/* The entry of peer's address, with a reference of the caller's; one
 * entry shared by every address of another family (a unix socket).
 * NULL when out of memory. */
client_share_t *client_table_get(client_table_t *t, const struct sockaddr_storage *peer);
/* Another reference to an entry the caller holds one of. */
static inline void client_table_hold(client_share_t *c)
{
    c->refs++;
}
/* Gives the reference back: the last one frees the entry. */
void client_table_put(client_table_t *t, client_share_t *c);

#endif
