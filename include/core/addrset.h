/* addrset: an immutable set of IP addresses (IPv4 and IPv6), each with a
 * class, looked up by hash in O(1). The verdict thread builds one from what
 * it watches and publishes it to the workers, which only read it, so no
 * lock is needed; the last reference frees it.
 *
 * An IPv4 address and its IPv4-mapped IPv6 form (::ffff:a.b.c.d, what a
 * dual-stack listener reports) are the same key. */
#ifndef SKEWGATE_ADDRSET_H
#define SKEWGATE_ADDRSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Ordered: an address put in twice keeps the higher class. */
typedef enum {
    ADDRSET_UNKNOWN = 0,        /* not in the set */
    ADDRSET_PENDING = 1,        /* a Machine without a Node yet */
    ADDRSET_ACTIVE = 2,         /* a Node's, or a Machine's that has a nodeRef */
} addrset_class_t;

typedef struct addrset_key {
    uint8_t b[16];              /* IPv6, or IPv4-mapped */
} addrset_key_t;

/* "10.0.0.5", "fd00::5": 0 with *key, -1 when text is not an IP literal. */
int addrset_key_parse(const char *text, addrset_key_t *key);
/* The key as text into buf[cap] (INET6_ADDRSTRLEN): an IPv4-mapped one
 * as IPv4 ("10.0.0.5"). */
void addrset_key_text(const addrset_key_t *key, char *buf, size_t cap);
/* An AF_INET or AF_INET6 socket address: 0, or -1 for another family. */
int addrset_key_from_sockaddr(const struct sockaddr_storage *ss, addrset_key_t *key);

typedef struct addrset addrset_t;

/* Collects entries before the set is built; grows as needed. */
typedef struct addrset_builder {
    struct addrset_entry *v;
    size_t n, cap;
    bool failed;                /* out of memory: addrset_build says NULL */
} addrset_builder_t;

void addrset_builder_add(addrset_builder_t *b, const addrset_key_t *key, addrset_class_t cls);
/* The set of what was added (one allocation, one reference), or NULL when
 * out of memory. The builder is emptied either way. */
addrset_t *addrset_build(addrset_builder_t *b);
void addrset_builder_free(addrset_builder_t *b);

/* ADDRSET_UNKNOWN for an address not in s (or another family). */
addrset_class_t addrset_lookup(const addrset_t *s, const struct sockaddr_storage *ss);
addrset_class_t addrset_lookup_key(const addrset_t *s, const addrset_key_t *key);
/* Distinct addresses of each class; cls ADDRSET_UNKNOWN: all of them. */
size_t addrset_count(const addrset_t *s, addrset_class_t cls);
/* The most slots a member's lookup looks at: the hash's quality, logged
 * with each set (1 or 2 for a good one; hosts of one subnet must not
 * collide). */
size_t addrset_longest_probe(const addrset_t *s);

addrset_t *addrset_ref(addrset_t *s);
/* Frees the set with its last reference; NULL is ignored. Any thread. */
void addrset_unref(addrset_t *s);

#endif
