#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "proxy/client_table.h"

/* Grows past this many entries a bucket: a worker sees a few thousand
 * addresses at most (limits.max_connections), so chains stay short. */
#define CLIENT_TABLE_LOAD 2
#define CLIENT_TABLE_FIRST 64

int client_table_init(client_table_t *t)
{
    t->buckets = calloc(CLIENT_TABLE_FIRST, sizeof *t->buckets);
    t->mask = CLIENT_TABLE_FIRST - 1;
    t->n = 0;
    hash_random_key(t->hash_key);
    return t->buckets ? 0 : -1;
}

void client_table_destroy(client_table_t *t)
{
    for (uint32_t i = 0; t->buckets && i <= t->mask; i++)
        while (t->buckets[i]) {
            client_share_t *c = t->buckets[i];
            t->buckets[i] = c->next;
            free(c);
        }
    free(t->buckets);
    t->buckets = NULL;
}

static uint32_t client_table_slot(const client_table_t *t, const addrset_key_t *k)
{
    return (uint32_t)hash_seeded16(t->hash_key, k->b) & t->mask;
}

/* Twice the buckets; out of memory, the chains just grow longer. */
static void client_table_grow(client_table_t *t)
{
    uint32_t n = (t->mask + 1) * 2;
    client_share_t **old = t->buckets, **b = calloc(n, sizeof *b);
    if (!b)
        return;
    uint32_t old_n = t->mask + 1;
    t->buckets = b;
    t->mask = n - 1;
    for (uint32_t i = 0; i < old_n; i++)
        while (old[i]) {
            client_share_t *c = old[i];
            old[i] = c->next;
            uint32_t s = client_table_slot(t, &c->key);
            c->next = b[s];
            b[s] = c;
        }
    free(old);
}

client_share_t *client_table_get(client_table_t *t, const struct sockaddr_storage *peer)
{
    addrset_key_t k;
    if (addrset_key_from_sockaddr(peer, &k) < 0)
        memset(&k, 0, sizeof k);
    uint32_t s = client_table_slot(t, &k);
    for (client_share_t *c = t->buckets[s]; c; c = c->next)
        if (memcmp(&c->key, &k, sizeof k) == 0) {
            c->refs++;
            return c;
        }
    client_share_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->key = k;
    c->refs = 1;
    c->next = t->buckets[s];
    t->buckets[s] = c;
    if (++t->n > (t->mask + 1) * CLIENT_TABLE_LOAD)
        client_table_grow(t);
    return c;
}

void client_table_put(client_table_t *t, client_share_t *c)
{
    if (--c->refs)
        return;
    client_share_t **at = &t->buckets[client_table_slot(t, &c->key)];
    while (*at != c)
        at = &(*at)->next;
    *at = c->next;
    t->n--;
    free(c);
}
