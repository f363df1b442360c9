/* local_response: the errors the gate answers itself (400, 405, 408, 431,
 * 502, 503, 504, ...), rendered once per process for each way the
 * connection goes on. They carry an empty body: Go's client (Ignition)
 * retries a 5xx on the same keep-alive connection only when the body is
 * empty. */
#ifndef SKEWGATE_LOCAL_RESPONSE_H
#define SKEWGATE_LOCAL_RESPONSE_H

#include <stddef.h>

#include "http/connection.h"
#include "proxy/reason.h"

/* The response for status (one the gate answers; anything else becomes
 * 400), into *status as answered; static, never freed. */
const char *local_response(int *status, http_conn_variant_t v, size_t *len);

/* An admission policy's refusal: its status with the reason in a
 * Skewgate-Reason field, empty body; static, never freed. */
const char *local_response_admission(admission_result_t r, http_conn_variant_t v, int *status, size_t *len);

#endif
