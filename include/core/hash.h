/* hash: MurmurHash3's 64-bit finalizer, for the hash tables of core
 * (ydoc's duplicate-key check, addrset), and a keyed hash for the tables
 * whose keys a stranger picks (the pace room, the client table).
 *
 * The finalizer: every input bit reaches every output bit, which a plain
 * multiply does not do (it carries only upwards): keys that differ in
 * their last bytes, as the hosts of one subnet do, still spread over the
 * low bits a table masks. It is invertible and unkeyed, so whoever picks
 * the keys can pick them to share one bucket: 4,096 addresses of one /64
 * that fall into one chain take a fraction of a second to find. The
 * tables a client's address keys use hash_seeded instead: SipHash-1-3
 * (Aumasson and Bernstein's construction, one compression round a word,
 * three to finish) under a random 128-bit key of the table's own, so no
 * address can be chosen for its bucket. */
#ifndef SKEWGATE_HASH_H
#define SKEWGATE_HASH_H

#include <stdint.h>

static inline uint64_t hash_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* A random key (getrandom; the clock and the address of key, mixed, if
 * the kernel has no entropy to give yet, which a table survives: only
 * its chains' lengths depend on it). */
void hash_random_key(uint64_t key[2]);

/* SipHash-1-3 of the 16 bytes b under key. */
uint64_t hash_seeded16(const uint64_t key[2], const uint8_t b[16]);

#endif
