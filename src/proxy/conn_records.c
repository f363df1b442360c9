/* What the held table (proxy/held.h) learns of a connection's requests
 * (proxy/conn_held.h). */
#include "core/clock.h"
#include "http/accept.h"
#include "conn_held.h"

/* The request's client, as the held table keys and describes it. */
static held_client_t conn_held_client(const conn_t *c, const http_header_t *accept)
{
    return (held_client_t){
        .addr = &c->peer,
        .pool = c->log.pool,
        .user_agent = c->log.ua_len ? c->ibuf + c->log.ua_off : NULL,
        .user_agent_len = c->log.ua_len,
        .accept = accept ? c->ibuf + accept->value.off : NULL,
        .accept_len = accept ? accept->value.len : 0,
        .mcs_family = c->env->snapshot ? c->env->snapshot->mcs_family : MCS_FAMILY_NEWEST,
    };
}

/* The held-nodes hook (proxy/held.h): every path that rejects a gated
 * request calls it once, with its reason's name ("OutOfSkew", ...), while
 * the request's head is being dispatched (the pool is known and the head
 * is in the buffer). */
void conn_record_held(conn_t *c, const char *reason, int status)
{
    const http_header_t *accept = http_headers_get(&c->env->conns.req.headers, HTTP_HDR_ACCEPT);
    held_client_t client = conn_held_client(c, accept);
    held_record(&c->env->held, &client, reason, status, clock_wall_coarse_ms());
}

/* An admission policy's refusal: recorded apart, by address (held.h). */
void conn_record_refused(conn_t *c, admission_result_t why)
{
    const http_header_t *accept = http_headers_get(&c->env->conns.req.headers, HTTP_HDR_ACCEPT);
    held_client_t client = conn_held_client(c, accept);
    held_record_refusal(&c->env->held, &client, admission_reason_name(why), admission_reason_status(why),
                        clock_wall_coarse_ms());
}

/* A gated request that got its config ends its client's hold, if any:
 * an admitted GET whose 2xx went out whole (EXCHANGE_END_COMPLETE, shared
 * or relayed). One cut short (the MCS closed early, the client stalled or
 * left) is logged with its 200 all the same, yet the node has no config
 * and retries: it stays held, and skewgate_admitted_after_hold_total
 * (nodes that "got their config") does not count it. */
void conn_end_hold(conn_t *c, exchange_end_t how)
{
    conn_env_t *env = c->env;
    if (how != EXCHANGE_END_COMPLETE || c->log.decision != REQUEST_ADMIT || c->log.status < 200 ||
        c->log.status >= 300 || c->is_head || !c->ibuf)
        return;
    held_client_t client = conn_held_client(c, NULL);
    held_admit(&env->held, env->held_peers, env->n_held_peers, &client, clock_wall_coarse_ms());
}
