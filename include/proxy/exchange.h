/* proxy: the upstream exchange of an admitted request: an upstream slot
 * (cap + bounded queue), a pooled or new upstream connection, the request
 * sent with hop-by-hop headers dropped, the response head checked and
 * rewritten, the body streamed with backpressure both ways. */
#ifndef SKEWGATE_PROXY_H
#define SKEWGATE_PROXY_H

#include "proxy/conn.h"

/* The request head is c->ibuf[0..c->head_len) parsed into c->w->req. */
void proxy_start(conn_t *c);
/* The client connection goes away mid-exchange: release the upstream. */
void proxy_abort(conn_t *c);
/* The client became writable while relaying. */
void proxy_on_client_writable(conn_t *c);
/* An event on the upstream connection of a request (upstream.c). */
struct upstream_conn;
void proxy_on_upstream(struct upstream_conn *u, short what);
/* Queue timer expired for a queued connection. */
void proxy_queue_timeout(conn_t *c);

#endif
