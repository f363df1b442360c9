#include <string.h>

#include "core/release.h"

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
