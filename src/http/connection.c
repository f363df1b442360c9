#include "http/connection.h"

#define LINE(s) {s, sizeof s - 1}

static const struct {
    const char *text;
    size_t len;
} connection_lines[HTTP_CONN__COUNT] = {
    [HTTP_CONN_KEEP_ALIVE] = LINE(""),
    [HTTP_CONN_CLOSE] = LINE("Connection: close\r\n"),
    [HTTP_CONN_KEEP_ALIVE_10] = LINE("Connection: keep-alive\r\n"),
};

const char *http_connection_line(http_conn_variant_t v, size_t *len)
{
    if ((unsigned)v >= HTTP_CONN__COUNT)
        v = HTTP_CONN_CLOSE;
    if (len)
        *len = connection_lines[v].len;
    return connection_lines[v].text;
}
