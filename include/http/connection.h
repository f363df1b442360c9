/* http/connection: what a response says of its connection (RFC 9112
 * 9.3, 9.6). Every response the gate writes, relayed, rendered once per
 * verdict or per process, takes its Connection line from here. */
#ifndef SKEWGATE_HTTP_CONNECTION_H
#define SKEWGATE_HTTP_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    HTTP_CONN_KEEP_ALIVE,       /* HTTP/1.1 persistent: no Connection line */
    HTTP_CONN_CLOSE,            /* "Connection: close" */
    HTTP_CONN_KEEP_ALIVE_10,    /* HTTP/1.0 persistent: "Connection: keep-alive" */
    HTTP_CONN__COUNT
} http_conn_variant_t;

/* The variant for a response to a request of that version. */
static inline http_conn_variant_t http_conn_variant(bool keep_alive, bool http10)
{
    return !keep_alive ? HTTP_CONN_CLOSE : http10 ? HTTP_CONN_KEEP_ALIVE_10 : HTTP_CONN_KEEP_ALIVE;
}

/* The header line, CRLF included ("" for HTTP_CONN_KEEP_ALIVE); its
 * length in *len when len is not NULL. */
const char *http_connection_line(http_conn_variant_t v, size_t *len);

#endif
