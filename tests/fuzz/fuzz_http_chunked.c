/* libFuzzer target: the chunked decoder. Decoding in pieces of every size
 * the input picks must give the same payload and end as decoding whole,
 * and the relay scan must agree with the decoder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes buf in pieces of at most piece bytes into out; returns the end of
 * the message (bytes consumed) or -1. */
static ssize_t decode(const char *buf, size_t len, size_t piece, char *out, size_t *outlen, bool *done)
{
    http_chunked_t c;
    http_chunked_init(&c);
    size_t off = 0;
    *outlen = 0;
    while (off < len && !http_chunked_done(&c)) {
        size_t end = len - off < piece ? len : off + piece;
        while (off < end && !http_chunked_done(&c)) {
            http_slice_t d;
            ssize_t r = http_chunked_step(&c, buf + off, end - off, &d);
            if (r < 0)
                return -1;
            if (r == 0 || (size_t)r > end - off || (uint64_t)d.off + d.len > (uint64_t)r)
                abort();
            memcpy(out + *outlen, buf + off + d.off, d.len);
            *outlen += d.len;
            off += (size_t)r;
        }
    }
    *done = http_chunked_done(&c);
    return (ssize_t)off;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    size_t piece = (size_t)data[0] % 17 + 1;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    char *o1 = malloc(len + 1), *o2 = malloc(len + 1);
    size_t n1, n2;
    bool d1, d2;

    ssize_t r1 = decode(buf, len, len + 1, o1, &n1, &d1);
    ssize_t r2 = decode(buf, len, piece, o2, &n2, &d2);
    if (r1 != r2)
        abort();
    if (r1 >= 0 && (n1 != n2 || d1 != d2 || memcmp(o1, o2, n1) != 0 || n1 > (size_t)r1))
        abort();

    http_chunked_t c;
    http_chunked_init(&c);
    ssize_t r3 = http_chunked_scan(&c, buf, len);
    if (r3 != r1 || (r3 >= 0 && http_chunked_done(&c) != d1))
        abort();
    free(o1);
    free(o2);
    return 0;
}
