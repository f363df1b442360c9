/* libFuzzer target: Accept -> Ignition spec (http_accept_ignition_spec).
 * Checks, for every family of MCS releases: the answer is a valid ignition_spec_t (never the __COUNT
 * sentinel); a header without the Ignition subtype anywhere (the MCS
 * matches it case-sensitively) answers IGNITION_SPEC_2_2, as no header
 * does; a spec other than 2.2.0 comes with a version asked for; the
 * answer depends on the bytes given only (the same text at another
 * address, with other bytes after it, answers the same). */
// sources: src/http/*.c
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/accept.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_ignition_type(const char *p, size_t n)
{
    static const char t[] = "/vnd.coreos.ignition+json";
    size_t tl = sizeof t - 1;
    for (size_t i = 0; i + tl <= n; i++)
        if (memcmp(p + i, t, tl) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    char *a = malloc(size ? size : 1);     /* exact size: ASan sees over-reads */
    memcpy(a, data, size);
    char *b = malloc(size + 8);
    memcpy(b, data, size);
    memcpy(b + size, ";q=0, *\0", 8);
    for (int f = 0; f < MCS_FAMILY__COUNT; f++) {   /* every family's reading */
        ignition_spec_t s = http_accept_ignition_spec((mcs_family_t)f, a, size);
        if ((unsigned)s >= IGNITION_SPEC__COUNT)
            abort();
        if (!has_ignition_type(a, size) && s != IGNITION_SPEC_2_2)
            abort();
        ignition_version_t v;
        if (s != IGNITION_SPEC_2_2 && !http_accept_ignition_version((mcs_family_t)f, a, size, &v))
            abort();
        if (http_accept_ignition_spec((mcs_family_t)f, b, size) != s)
            abort();
        if (http_accept_ignition_spec((mcs_family_t)f, NULL, 0) != IGNITION_SPEC_2_2)
            abort();
    }
    free(a);
    free(b);
    return 0;
}
