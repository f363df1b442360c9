/* libFuzzer target: the request head parser. Beyond not crashing, checks
 * that feeding the same bytes in two pieces gives the same answer as in
 * one, and that every slice of an accepted head lies inside it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/request.h"
#include "http/path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(http_slice_t s, int head)
{
    if ((uint64_t)s.off + s.len > (uint64_t)head)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static http_header_t h1[16], h2[16];
    http_limits_t lim = {.max_header_bytes = 2048, .max_headers = 12, .max_uri_bytes = 256};
    if (size < 1)
        return 0;
    size_t cut = data[0] % (size);   /* split point for the second pass */
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;

    http_request_t a, b;
    http_request_init(&a, h1, 16);
    int ra = http_request_parse(buf, len, &lim, &a);

    http_request_init(&b, h2, 16);
    int rb = http_request_parse(buf, cut < len ? cut : len, &lim, &b);
    if (rb == 0)
        rb = http_request_parse(buf, len, &lim, &b);
    if (ra != rb)
        abort();

    if (ra > 0) {
        if ((size_t)ra > len || (uint32_t)ra > lim.max_header_bytes)
            abort();
        inside(a.method_name, ra);
        inside(a.target, ra);
        inside(a.path, ra);
        inside(a.query, ra);
        inside(a.authority, ra);
        if (a.headers.count > lim.max_headers)
            abort();
        for (uint32_t i = 0; i < a.headers.count; i++) {
            inside(h1[i].name, ra);
            inside(h1[i].value, ra);
            if (h1[i].id != h2[i].id || h1[i].value.off != h2[i].value.off)
                abort();
        }
        if (a.keep_alive != b.keep_alive || a.content_length != b.content_length ||
            a.path.off != b.path.off || a.path.len != b.path.len)
            abort();
        if (a.has_body != (a.chunked || a.content_length > 0))
            abort();
        char clean[300];
        size_t n;
        if (a.form != HTTP_TARGET_ASTERISK &&
            http_path_normalize(buf + a.path.off, a.path.len, clean, sizeof clean, &n) == HTTP_PATH_OK) {
            http_slice_t seg = http_path_last_segment(clean, n);
            if (seg.off + seg.len > n)
                abort();
        }
    } else if (ra < 0 && !a.error) {
        abort();
    }
    return 0;
}
