#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "core/hash.h"

void hash_random_key(uint64_t key[2])
{
    if (getrandom(key, 2 * sizeof key[0], GRND_NONBLOCK) == (ssize_t)(2 * sizeof key[0]))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] = hash_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32));
    key[1] = hash_mix64(key[0] ^ (uint64_t)(uintptr_t)key);
}

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIP_ROUND(v0, v1, v2, v3)                                                                                  \
    do {                                                                                                           \
        v0 += v1;                                                                                                  \
        v1 = rotl(v1, 13) ^ v0;                                                                                    \
        v0 = rotl(v0, 32);                                                                                         \
        v2 += v3;                                                                                                  \
        v3 = rotl(v3, 16) ^ v2;                                                                                    \
        v0 += v3;                                                                                                  \
        v3 = rotl(v3, 21) ^ v0;                                                                                    \
        v2 += v1;                                                                                                  \
        v1 = rotl(v1, 17) ^ v2;                                                                                    \
        v2 = rotl(v2, 32);                                                                                         \
    } while (0)

uint64_t hash_seeded16(const uint64_t key[2], const uint8_t b[16])
{
    uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
    uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
    uint64_t m[3];
    memcpy(&m[0], b, 8);
    memcpy(&m[1], b + 8, 8);
    m[2] = (uint64_t)16 << 56;      /* the length byte, no tail */
    for (int i = 0; i < 3; i++) {
        v3 ^= m[i];
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m[i];
    }
    v2 ^= 0xff;
    for (int i = 0; i < 3; i++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}
