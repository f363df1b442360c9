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

/* Strictly between from and to, as Go's t.After(from) && t.Before(to). */
static int in_span(int64_t t, int64_t from, int64_t to)
{
    return t > from && t < to;
}

size_t pace_view_approver_count(const pace_view_t *v, int64_t now_ms)
{
    int64_t from = now_ms - PACE_APPROVER_WINDOW_MS, to = now_ms + PACE_APPROVER_SKEW_MS;
    /* Times are whole ms: t < to is t <= to - 1, so the ones at or after
     * to are those after to - 1. */
    size_t n = pace_view_after(v->approver_created, v->n_approver, from) -
               pace_view_after(v->approver_created, v->n_approver, to - 1);
    for (size_t i = 0; i < v->n_approved_other; i++) {
        const pace_view_approved_t *a = &v->approved_other[i];
        n += in_span(a->created, from, to) && in_span(a->approved_at, now_ms - PACE_APPROVER_APPROVED_MS, to);
    }
    return n;
}

size_t pace_view_approver_limit(const pace_view_t *v)
{
    size_t most = v->n_nodes;
    if (v->n_machines >= 0 && (uint64_t)v->n_machines > most)
        most = (size_t)v->n_machines;
    return most + PACE_APPROVER_MARGIN;
}

void pace_view_free(pace_view_t *v)
{
    if (!v)
        return;
    free(v->addrs);
    free(v->not_ready_created);
    free(v->csr_created);
    free(v->approver_created);
    free(v->approved_other);
    free(v);
}
