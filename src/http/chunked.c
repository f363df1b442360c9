/* http_chunked: the chunked transfer coding as a byte state machine. Data
 * bytes are skipped in bulk and never looked at; framing bytes (size lines,
 * CRLFs, trailers) are few and checked one by one.
 *
 *   chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   last-chunk = 1*"0" [ chunk-ext ] CRLF
 *   trailers   = *( field-line CRLF ) CRLF
 *
 * Strict where laxity has been exploited for smuggling: CRLF only, no
 * whitespace after the size unless an extension follows, hex overflow is
 * an error, the size line and the trailers are bounded. Trailers are
 * validated and dropped (the relay forwards them as they are). */
#include "http/chunked.h"
#include "internal.h"

enum {
    CH_SIZE_FIRST,      /* the first hex digit */
    CH_SIZE,            /* more hex digits */
    CH_SIZE_WS,         /* BWS before a ';' */
    CH_EXT,             /* extension bytes up to the CR */
    CH_SIZE_LF,
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER_FIRST,   /* a field name or the final CR */
    CH_TRAILER_NAME,
    CH_TRAILER_VALUE,
    CH_TRAILER_LF,
    CH_END_LF,
    CH_DONE,
    CH_ERROR,
};

void http_chunked_init(http_chunked_t *c)
{
    c->remaining = 0;
    c->line_len = 0;
    c->trailer_len = 0;
    c->state = CH_SIZE_FIRST;
    c->error = NULL;
}

bool http_chunked_done(const http_chunked_t *c) { return c->state == CH_DONE; }

static int chunked_error(http_chunked_t *c, const char *why)
{
    c->state = CH_ERROR;
    c->error = why;
    return -1;
}

static int size_line_byte(http_chunked_t *c, unsigned char ch)
{
    if (ch != '\r' && ++c->line_len > HTTP_CHUNK_LINE_MAX)
        return chunked_error(c, "chunk-size line too long");
    switch (c->state) {
    case CH_SIZE_FIRST:
    case CH_SIZE:
        if (http_is(ch, HTTP_C_HEX)) {
            if (c->remaining > (uint64_t)INT64_MAX >> 4)
                return chunked_error(c, "chunk size overflow");
            c->remaining = c->remaining << 4 | (uint64_t)http_hex_value(ch);
            c->state = CH_SIZE;
            return 0;
        }
        if (c->state == CH_SIZE_FIRST)
            return chunked_error(c, "missing chunk size");
        if (ch == '\r')
            c->state = CH_SIZE_LF;
        else if (ch == ';')
            c->state = CH_EXT;
        else if (ch == ' ' || ch == '\t')
            c->state = CH_SIZE_WS;
        else
            return chunked_error(c, "invalid chunk size");
        return 0;
    case CH_SIZE_WS:
        if (ch == ';')
            c->state = CH_EXT;
        else if (ch != ' ' && ch != '\t')
            return chunked_error(c, "whitespace after chunk size");
        return 0;
    default: /* CH_EXT */
        if (ch == '\r')
            c->state = CH_SIZE_LF;
        else if (!http_is(ch, HTTP_C_VALUE))
            return chunked_error(c, "invalid chunk extension");
        return 0;
    }
}

static int trailer_byte(http_chunked_t *c, unsigned char ch)
{
    if (++c->trailer_len > HTTP_CHUNK_TRAILER_MAX)
        return chunked_error(c, "trailer section too large");
    switch (c->state) {
    case CH_TRAILER_FIRST:
        if (ch == '\r')
            c->state = CH_END_LF;
        else if (http_is(ch, HTTP_C_TOKEN))
            c->state = CH_TRAILER_NAME;
        else
            return chunked_error(c, "invalid trailer field");
        return 0;
    case CH_TRAILER_NAME:
        if (ch == ':')
            c->state = CH_TRAILER_VALUE;
        else if (!http_is(ch, HTTP_C_TOKEN))
            return chunked_error(c, "invalid trailer field name");
        return 0;
    case CH_TRAILER_VALUE:
        if (ch == '\r')
            c->state = CH_TRAILER_LF;
        else if (!http_is(ch, HTTP_C_VALUE))
            return chunked_error(c, "invalid trailer field value");
        return 0;
    default: /* CH_TRAILER_LF, CH_END_LF */
        if (ch != '\n')
            return chunked_error(c, "bare CR in trailer section");
        c->state = c->state == CH_END_LF ? CH_DONE : CH_TRAILER_FIRST;
        return 0;
    }
}

static int framing_byte(http_chunked_t *c, unsigned char ch)
{
    switch (c->state) {
    case CH_SIZE_FIRST:
    case CH_SIZE:
    case CH_SIZE_WS:
    case CH_EXT:
        return size_line_byte(c, ch);
    case CH_SIZE_LF:
        if (ch != '\n')
            return chunked_error(c, "bare CR after chunk size");
        c->state = c->remaining ? CH_DATA : CH_TRAILER_FIRST;
        return 0;
    case CH_DATA_CR:
        if (ch != '\r')
            return chunked_error(c, "chunk data longer than its size");
        c->state = CH_DATA_LF;
        return 0;
    case CH_DATA_LF:
        if (ch != '\n')
            return chunked_error(c, "bare CR after chunk data");
        c->state = CH_SIZE_FIRST;
        c->line_len = 0;
        return 0;
    default:
        return trailer_byte(c, ch);
    }
}

ssize_t http_chunked_step(http_chunked_t *c, const char *buf, size_t len, http_slice_t *data)
{
    *data = (http_slice_t){0, 0};
    if (c->state == CH_ERROR)
        return -1;
    size_t i = 0;
    while (i < len && c->state != CH_DONE) {
        if (c->state == CH_DATA) {
            size_t avail = len - i;
            size_t n = c->remaining < avail ? (size_t)c->remaining : avail;
            /* Callers feed buffers far below 4 GiB; a slice holds 32 bits. */
            if (n > UINT32_MAX)
                n = UINT32_MAX;
            *data = (http_slice_t){(uint32_t)i, (uint32_t)n};
            c->remaining -= n;
            if (c->remaining == 0)
                c->state = CH_DATA_CR;
            return (ssize_t)(i + n);
        }
        if (framing_byte(c, (unsigned char)buf[i]) < 0)
            return -1;
        i++;
    }
    return (ssize_t)i;
}

ssize_t http_chunked_scan(http_chunked_t *c, const char *buf, size_t len)
{
    size_t done = 0;
    http_slice_t data;
    while (done < len && c->state != CH_DONE) {
        ssize_t n = http_chunked_step(c, buf + done, len - done, &data);
        if (n < 0)
            return -1;
        done += (size_t)n;
    }
    return c->state == CH_ERROR ? -1 : (ssize_t)done;
}
