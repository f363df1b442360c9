/* The MCS release the gate fronts (verdict/mcs_release.h). */
#include <string.h>

#include "verdict/mcs_release.h"

const char *mcs_release_from_name(mcs_release_from_t from)
{
    switch (from) {
    case MCS_RELEASE_FROM_CONFIG:
        return "config";
    case MCS_RELEASE_FROM_CLUSTER:
        return "cluster";
    case MCS_RELEASE_FROM_DEFAULT:
    default:
        return "default";
    }
}

mcs_release_t mcs_release_configured(unsigned minor)
{
    mcs_release_from_t from = minor ? MCS_RELEASE_FROM_CONFIG : MCS_RELEASE_FROM_DEFAULT;
    if (!minor)
        minor = MCS_RELEASE_DEFAULT;
    return (mcs_release_t){minor, mcs_family_of_release(minor), from};
}

int mcs_release_parse(const char *s, unsigned *minor)
{
    if (strncmp(s, "4.", 2) != 0)
        return -1;
    s += 2;
    if (*s < '1' || *s > '9')
        return -1;
    unsigned n = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (unsigned)(*s - '0');
        if (n > MCS_RELEASE_MAX)
            return -1;
    }
    if (*s || n < MCS_RELEASE_OLDEST)
        return -1;
    *minor = n;
    return 0;
}

bool mcs_release_newer_than_known(const mcs_release_t *r)
{
    return r->minor > MCS_RELEASE_NEWEST;
}

bool mcs_release_equal(const mcs_release_t *a, const mcs_release_t *b)
{
    return a->minor == b->minor && a->family == b->family && a->from == b->from;
}
