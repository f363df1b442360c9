/* hash: MurmurHash3's 64-bit finalizer, for the hash tables of core
 * (ydoc's duplicate-key check, addrset). Every input bit reaches every
 * output bit, which a plain multiply does not do (it carries only
 * upwards): keys that differ in their last bytes, as the hosts of one
 * subnet do, still spread over the low bits a table masks. */
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

#endif
