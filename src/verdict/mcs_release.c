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

bool mcs_release_newer_than_known(const mcs_release_t *r)
{
    return r->minor > MCS_RELEASE_NEWEST;
}

bool mcs_release_equal(const mcs_release_t *a, const mcs_release_t *b)
{
    return a->minor == b->minor && a->family == b->family && a->from == b->from;
}
