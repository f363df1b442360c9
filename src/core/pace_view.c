#include <stdlib.h>
#include <string.h>

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

static int pace_view_addr_cmp(const void *a, const void *b)
{
    return memcmp(((const pace_view_addr_t *)a)->key.b, ((const pace_view_addr_t *)b)->key.b, sizeof(addrset_key_t));
}

void pace_view_sort_addrs(pace_view_t *v)
{
    if (v->n_addrs > 1)
        qsort(v->addrs, v->n_addrs, sizeof *v->addrs, pace_view_addr_cmp);
}

const pace_view_addr_t *pace_view_newest(const pace_view_t *v, const addrset_key_t *key)
{
    size_t lo = 0, hi = v->n_addrs;     /* the first entry not below key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(v->addrs[mid].key.b, key->b, sizeof key->b) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const pace_view_addr_t *newest = NULL;
    for (size_t i = lo; i < v->n_addrs && !memcmp(v->addrs[i].key.b, key->b, sizeof key->b); i++)
        if (!newest || v->addrs[i].created > newest->created)
            newest = &v->addrs[i];
    return newest;
}

void pace_view_free(pace_view_t *v)
{
    if (!v)
        return;
    free(v->addrs);
    free(v->not_ready_created);
    free(v->csr_created);
    free(v);
}
