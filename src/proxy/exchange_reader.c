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

static void exchange_keepers_add(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    x->keeping = true;
    x->keep_prev = NULL;
    x->keep_next = ctx->keepers;
    if (ctx->keepers)
        ctx->keepers->keep_prev = x;
    ctx->keepers = x;
}

void exchange_keep_end(exchange_t *x)
{
    if (!x->keeping)
        return;
    x->keeping = false;
    if (x->keep_prev)
        x->keep_prev->keep_next = x->keep_next;
    else
        x->ctx->keepers = x->keep_next;
    if (x->keep_next)
        x->keep_next->keep_prev = x->keep_prev;
    x->keep_prev = x->keep_next = NULL;
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
    if (!x->keeping)
        exchange_keepers_add(x);
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

exchange_room_t exchange_keep_room(exchange_t *x)
{
    exchange_ctx_t *ctx = x->ctx;
    /* When x's address is over its share, only its own readers stand in
     * its way: cutting another address's would free nothing it may use. */
    const client_share_t *only = exchange_client_full(x, ctx->bufs.size) ? x->client : NULL;
    uint64_t now = clock_coarse_ms();
    /* x is a candidate too, keeping already or not: a new client that
     * reads nothing is no reason to cut one that reads. */
    exchange_t *slowest = x;
    uint64_t slowest_rate = exchange_read_rate(x, now);
    for (exchange_t *k = ctx->keepers; k; k = k->keep_next) {
        if (k == x || (only && k->client != only))
            continue;
        uint64_t rate = exchange_read_rate(k, now);
        if (exchange_slower(k, rate, slowest, slowest_rate)) {
            slowest = k;
            slowest_rate = rate;
        }
    }
    if (slowest == x)
        return ctx->slots.len ? EXCHANGE_ROOM_CUT_X : EXCHANGE_ROOM_WAIT;
    if (log_enabled(LOG_DEBUG))
        log_msg(LOG_DEBUG, "client_over_budget", "the slowest reader (%llu B/s) is cut to make room",
                (unsigned long long)slowest_rate);
    ctx->core->cut(slowest, GATE_REASON_CLIENT_OVER_BUDGET, false);
    return EXCHANGE_ROOM_MADE;
}
