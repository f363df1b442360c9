/* libFuzzer target: the kube API client's response reading. The first
 * byte picks is_head (bit 0) and the read size (the rest); the others are
 * the bytes the API server sends. As src/source/kube/client.c does, the
 * head is parsed as it grows, interim (1xx) heads are dropped, and a
 * chunked body is decoded with http_chunked_step until done or error.
 * Checks: a head length and its slices lie inside the bytes; a HEAD
 * answer has no body; every step consumes bytes it was given (and some,
 * unless done), every data slice lies inside what that step consumed, and
 * the payload is never longer than the body. */
// sources: src/http/*.c
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/chunked.h"
#include "http/response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIELDS 64

static void inside(http_slice_t s, size_t len)
{
    if ((uint64_t)s.off + s.len > (uint64_t)len)
        abort();
}

/* Decodes body in reads of at most piece bytes; returns false on a
 * framing error. */
static bool decode(const char *body, size_t len, size_t piece, size_t *payload)
{
    http_chunked_t c;
    http_chunked_init(&c);
    size_t off = 0;
    *payload = 0;
    while (off < len && !http_chunked_done(&c)) {
        size_t n = len - off < piece ? len - off : piece;
        const char *p = body + off;
        /* The client's loop over one read. */
        while (n > 0 && !http_chunked_done(&c)) {
            http_slice_t d;
            ssize_t used = http_chunked_step(&c, p, n, &d);
            if (used < 0) {
                if (!c.error || http_chunked_done(&c))
                    abort();
                return false;
            }
            if ((size_t)used > n || (used == 0 && !http_chunked_done(&c)))
                abort();
            inside(d, (size_t)used);
            *payload += d.len;
            if (used == 0)
                break;
            p += used;
            n -= (size_t)used;
            off += (size_t)used;
        }
    }
    if (*payload > len)
        abort();
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static http_header_t fields[FIELDS];
    const http_limits_t lim = {64u << 10, FIELDS, 0};
    if (size < 1 || size > (1u << 20))
        return 0;
    bool is_head = data[0] & 1;
    size_t piece = (size_t)(data[0] >> 1) * 7 + 1;
    size_t len = size - 1;
    char *buf = malloc(len ? len : 1);      /* exact size: ASan sees over-reads */
    memcpy(buf, data + 1, len);

    http_response_t resp;
    http_response_init(&resp, fields, FIELDS);
    size_t start = 0, have = len < piece ? len : piece;
    int rc;
    /* The head arrives piece by piece; each 1xx head is dropped. */
    for (;;) {
        rc = http_response_parse(buf + start, have - start, &lim, is_head, &resp);
        if (rc < 0) {
            if (!resp.error)
                abort();
            goto out;
        }
        if (rc == 0) {
            if (have == len)
                goto out;
            have = len - have < piece ? len : have + piece;
            continue;
        }
        if ((size_t)rc > have - start || resp.status < 100 || resp.status > 599)
            abort();
        inside(resp.reason, (size_t)rc);
        for (uint32_t i = 0; i < resp.headers.count; i++) {
            inside(resp.headers.list[i].name, (size_t)rc);
            inside(resp.headers.list[i].value, (size_t)rc);
        }
        if (is_head && resp.body != HTTP_BODY_NONE)
            abort();
        if (resp.body == HTTP_BODY_LENGTH && resp.content_length < 0)
            abort();
        start += (size_t)rc;
        if (resp.status >= 200)
            break;
        http_response_reset(&resp);
    }
    if (resp.body == HTTP_BODY_CHUNKED) {
        size_t p1, p2;
        bool ok1 = decode(buf + start, len - start, len - start + 1, &p1);
        bool ok2 = decode(buf + start, len - start, piece, &p2);
        if (ok1 != ok2 || (ok1 && p1 != p2))
            abort();
    }
out:
    free(buf);
    return 0;
}
