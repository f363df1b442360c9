#include <criterion/criterion.h>
#include <stdint.h>

#include "core/backoff.h"

Test(backoff, doubles_from_200ms_to_30s_within_the_jitter_range)
{
    backoff_t b;
    backoff_init(&b, 200, 30000);
    uint64_t ceiling = 200;
    for (int i = 0; i < 20; i++) {
        uint64_t lo = backoff_next(&(backoff_t){b.initial_ms, b.max_ms, b.ceiling_ms}, 0);
        uint64_t hi = backoff_next(&(backoff_t){b.initial_ms, b.max_ms, b.ceiling_ms}, UINT32_MAX);
        uint64_t mid = backoff_next(&b, UINT32_MAX / 2);
        cr_assert_eq(lo, ceiling / 2, "step %d", i);
        cr_assert_eq(hi, ceiling, "step %d", i);
        cr_assert(mid >= lo && mid <= hi);
        ceiling = ceiling * 2 > 30000 ? 30000 : ceiling * 2;
    }
    cr_assert_eq(b.ceiling_ms, 30000);
}

Test(backoff, reset_starts_over)
{
    backoff_t b;
    backoff_init(&b, 200, 30000);
    for (int i = 0; i < 10; i++)
        backoff_next(&b, 12345);
    backoff_reset(&b);
    cr_assert_leq(backoff_next(&b, UINT32_MAX), 200);
}
