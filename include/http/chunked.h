/* http_chunked: an incremental decoder of the chunked transfer coding
 * (RFC 9112 7.1), zero-copy.
 *
 * Two ways to use it, on the same state:
 *  - relay: http_chunked_scan() walks the bytes the proxy forwards verbatim
 *    and says where the message ends (a pipelined next message may follow);
 *  - decode: http_chunked_step() returns, call by call, where the payload
 *    lies inside the buffer, for a consumer of the data itself (the
 *    Kubernetes watch stream).
 * Neither keeps any byte: the buffer may be discarded after each call. */
#ifndef SKEWGATE_HTTP_CHUNKED_H
#define SKEWGATE_HTTP_CHUNKED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/message.h"

/* A chunk-size line, extensions included, its CRLF excluded. */
#define HTTP_CHUNK_LINE_MAX 256
/* The whole trailer section, its final CRLF included. */
#define HTTP_CHUNK_TRAILER_MAX 4096

typedef struct http_chunked {
    uint64_t remaining;         /* data bytes left in the current chunk */
    uint32_t line_len;          /* chunk-size line so far */
    uint32_t trailer_len;       /* trailer section so far */
    uint8_t state;
    const char *error;          /* static text once it failed */
} http_chunked_t;

void http_chunked_init(http_chunked_t *c);

/* Consumes framing from buf until it reaches chunk data or the end of the
 * message, then at most one run of data. Returns the bytes consumed (> 0
 * unless len == 0 or the message is done) or -1 on a framing error, which
 * is final. *data is the payload run inside buf; its len is 0 when the call
 * consumed framing only. */
ssize_t http_chunked_step(http_chunked_t *c, const char *buf, size_t len, http_slice_t *data);

/* Consumes everything up to the end of the message. Returns the bytes
 * consumed: len while the message goes on, fewer when it ended inside buf;
 * -1 on a framing error. */
ssize_t http_chunked_scan(http_chunked_t *c, const char *buf, size_t len);

/* The last chunk and the trailer section have been consumed. */
bool http_chunked_done(const http_chunked_t *c);

#endif
