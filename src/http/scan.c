/* http_scan: finds where a message head ends, resumably.
 *
 * Line endings are CRLF only. RFC 9112 2.2 lets a recipient accept a bare
 * LF, but a proxy that reads "\n" as a line end while the upstream reads
 * only "\r\n" (or the other way round) frames messages differently from it:
 * the classic request smuggling setup. Our clients (Go's net/http in
 * Ignition, curl) always send CRLF, so a bare LF is refused (400) the
 * moment it arrives. A bare CR inside a line is refused by the line
 * parsers, which see every byte anyway. */
#include <string.h>

#include "internal.h"

void http_scan_init(http_scan_t *s)
{
    s->pos = 0;
    s->line = 0;
    s->lines = 0;
    s->first_end = 0;
}

void http_scan_init_fields(http_scan_t *s, uint32_t first_end)
{
    s->pos = s->line = first_end + 2;
    s->lines = 1;
    s->first_end = first_end;
}

int http_scan_head(const char *buf, size_t len, http_scan_t *s, uint32_t max_fields,
                   const char **error)
{
    while (s->pos < len) {
        const char *lf = memchr(buf + s->pos, '\n', len - s->pos);
        if (!lf) {
            s->pos = (uint32_t)len;
            return 0;
        }
        uint32_t at = (uint32_t)(lf - buf);
        if (at == s->line || buf[at - 1] != '\r') {
            *error = "bare LF";
            return -400;
        }
        if (at - 1 == s->line) {
            if (s->lines == 0) {
                *error = "empty line instead of the start line";
                return -400;
            }
            return (int)(at + 1);
        }
        if (s->lines++ == 0)
            s->first_end = at - 1;
        else if (s->lines - 1 > max_fields) {
            *error = "too many header fields";
            return -431;
        }
        s->line = at + 1;
        s->pos = at + 1;
    }
    return 0;
}
