/* conn_held: the connection's records in the held table (proxy/held.h),
 * private to src/proxy/: each called while the request's head is in the
 * connection's buffer, from conn.c's dispatch and exchange callbacks. */
#ifndef SKEWGATE_CONN_HELD_H
#define SKEWGATE_CONN_HELD_H

#include "policy/admission.h"
#include "proxy/conn.h"
#include "proxy/exchange.h"

/* A gated request held (503) or rejected with reason's name. */
void conn_record_held(conn_t *c, const char *reason, int status);
/* An admission policy's refusal: recorded apart, by address. */
void conn_record_refused(conn_t *c, admission_result_t why);
/* The request's exchange ended how: an admitted 2xx that went out whole
 * ends its client's hold. */
void conn_end_hold(conn_t *c, exchange_end_t how);

#endif
