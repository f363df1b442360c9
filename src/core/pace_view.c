#include <stdlib.h>

#include "core/pace_view.h"

size_t pace_view_after(const int64_t *t, size_t n, int64_t from)
{
    size_t lo = 0, hi = n;          /* the first index whose time is after from */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] > from)
            hi = mid;
        else
            lo = mid + 1;
    }
    return n - lo;
}

void pace_view_free(pace_view_t *v)
{
    if (!v)
        return;
    addrset_unref(v->nodes);
    free(v->not_ready_created);
    free(v->csr_created);
    free(v);
}
