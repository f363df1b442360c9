#include <stddef.h>

#include "core/clock.h"
#include "core/log.h"
#include "exchange_reader.h"

void exchange_read_clock(exchange_t *x, bool behind, uint64_t total)
{
    if (!behind && !x->read_clock_on)
        return;
    uint64_t now = clock_coarse_ms();
    if (x->read_clock_on)
        x->read_used_ms += now - x->read_since_ms;
    x->read_since_ms = now;
    if (!behind) {
        x->read_clock_on = false;
        x->ops->deadline(x->owner, EXCHANGE_WAIT_NONE, 0);
        return;
    }
    const config_t *cfg = x->gen ? x->gen->cfg : x->ctx->cfg;
    uint64_t allowed = cfg->limits.send_timeout_ms + total * 1000 / cfg->coalesce.min_read_rate;
    x->read_clock_on = true;
    x->ops->deadline(x->owner, EXCHANGE_WAIT_READ, allowed > x->read_used_ms ? allowed - x->read_used_ms : 0);
}

/* ---- the store's budgets ---------------------------------------------- */

/* The worker's share of limits.max_buffered, and an address's. */
static uint64_t exchange_keep_budget(const exchange_ctx_t *ctx)
{
    return (ctx->cfg->limits.max_buffered + ctx->n_workers - 1) / ctx->n_workers;
}

static bool exchange_client_full(const exchange_t *x, size_t more)
{
    return x->client->kept + more > x->ctx->cfg->limits.max_buffered_per_client;
}

void exchange_keep_end(exchange_t *x)
{
    dlist_remove(&x->ctx->keepers, &x->keep_link);
}

static char *exchange_store_get(void *arg)
{
    exchange_t *x = arg;
    exchange_ctx_t *ctx = x->ctx;
    size_t size = ctx->bufs.size;
    if (ctx->kept + size > exchange_keep_budget(ctx) || exchange_client_full(x, size))
        return NULL;
    char *chunk = buf_pool_get(&ctx->bufs);
    if (!chunk)
        return NULL;
    ctx->kept += size;
    x->client->kept += size;
    metrics_add(&ctx->metrics->buffered_bytes, size);
    dlist_push(&ctx->keepers, &x->keep_link);
    return chunk;
}

static void exchange_store_put(void *arg, char *chunk)
{
    exchange_t *x = arg;
    exchange_ctx_t *ctx = x->ctx;
    ctx->kept -= ctx->bufs.size;
    x->client->kept -= ctx->bufs.size;
    metrics_sub(&ctx->metrics->buffered_bytes, ctx->bufs.size);
    buf_pool_put(&ctx->bufs, chunk);
    if (x->relay.store.n == 0)
        exchange_keep_end(x);
}

static const relay_store_ops_t exchange_store_ops = {
    .get = exchange_store_get,
    .put = exchange_store_put,
};

void exchange_keep(exchange_t *x)
{
    x->body_since_ms = clock_coarse_ms();
    if (x->client)
        relay_keep(&x->relay, &exchange_store_ops, x, x->ctx->bufs.size);
}

/* ---- when the budget is full: the slowest goes ------------------------ */

/* Bytes a second the reader took since its body began, over at least
 * 100 ms: a reader a few milliseconds in has not shown its pace yet. */
static uint64_t exchange_read_rate(const exchange_t *k, uint64_t now)
{
    uint64_t ms = now - k->body_since_ms;
    return k->relay.sent * 1000 / (ms < 100 ? 100 : ms);
}

/* Whether k reads slower than the slowest so far (rate, held). */
static bool exchange_slower(const exchange_t *k, uint64_t rate, const exchange_t *slowest, uint64_t slowest_rate)
{
    return !slowest || rate < slowest_rate ||
           (rate == slowest_rate && relay_held(&k->relay) > relay_held(&slowest->relay));
}

/* The slowest of the list's exchanges (of `only`'s address, when set),
 * starting from `slowest` (NULL: none yet); its rate in *rate. */
static exchange_t *exchange_slowest(dlist_link_t *list, size_t link_off, const client_share_t *only,
                                    exchange_t *slowest, uint64_t *rate, uint64_t now)
{
    const exchange_t *first = slowest;
    for (dlist_link_t *l = list; l; l = l->next) {
        exchange_t *k = dlist_owner(l, link_off);
        if (k == first || (only && k->client != only))
            continue;
        uint64_t r = exchange_read_rate(k, now);
        if (exchange_slower(k, r, slowest, *rate)) {
            slowest = k;
            *rate = r;
        }
    }
    return slowest;
}

exchange_room_t exchange_keep_room(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    /* When x's address is over its share, only its own readers stand in
     * its way: cutting another address's would free nothing it may use. */
    const client_share_t *only = exchange_client_full(x, ctx->bufs.size) ? x->client : NULL;
    uint64_t now = clock_coarse_ms();
    /* x is a candidate too, keeping already or not: a new client that
     * reads nothing is no reason to cut one that reads. */
    uint64_t slowest_rate = exchange_read_rate(x, now);
    exchange_t *slowest =
        exchange_slowest(ctx->keepers, offsetof(exchange_t, keep_link), only, x, &slowest_rate, now);
    if (slowest == x) {
        if (ctx->slots.len)
            return EXCHANGE_ROOM_CUT_X;
        dlist_push(&ctx->holders, &x->hold_link);
        return EXCHANGE_ROOM_WAIT;
    }
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "client_over_budget", "the slowest reader (%llu B/s) is cut to make room",
                (unsigned long long)slowest_rate);
    ctx->core->cut(slowest, GATE_REASON_CLIENT_OVER_BUDGET, false);
    return EXCHANGE_ROOM_MADE;
}

void exchange_hold_end(exchange_t *x)
{
    dlist_remove(&x->ctx->holders, &x->hold_link);
}

void exchange_holders_yield(exchange_ctx_t *ctx)
{
    if (!ctx->holders)
        return;
    uint64_t rate = 0;
    exchange_t *slowest =
        exchange_slowest(ctx->holders, offsetof(exchange_t, hold_link), NULL, NULL, &rate, clock_coarse_ms());
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "client_over_budget",
                "a request waits for the slot of a full store's reader (%llu B/s): it is cut",
                (unsigned long long)rate);
    ctx->core->cut(slowest, GATE_REASON_CLIENT_OVER_BUDGET, false);
}
