/* libFuzzer target: the response head parser, whole and in two pieces. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static http_header_t h1[16], h2[16];
    http_limits_t lim = {.max_header_bytes = 2048, .max_headers = 12, .max_uri_bytes = 0};
    if (size < 1)
        return 0;
    bool is_head = data[0] & 1;
    size_t cut = (data[0] >> 1) % size;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;

    http_response_t a, b;
    http_response_init(&a, h1, 16);
    int ra = http_response_parse(buf, len, &lim, is_head, &a);
    http_response_init(&b, h2, 16);
    int rb = http_response_parse(buf, cut < len ? cut : len, &lim, is_head, &b);
    if (rb == 0)
        rb = http_response_parse(buf, len, &lim, is_head, &b);
    if (ra != rb)
        abort();
    if (ra > 0) {
        if ((size_t)ra > len || a.status < 100 || a.status > 599)
            abort();
        if (a.body != b.body || a.content_length != b.content_length || a.keep_alive != b.keep_alive)
            abort();
        if (a.body == HTTP_BODY_LENGTH && a.content_length < 0)
            abort();
        if (a.body == HTTP_BODY_UNTIL_CLOSE && a.keep_alive)
            abort();
        if (is_head && a.body != HTTP_BODY_NONE)
            abort();
    } else if (ra < 0 && (ra != -502 || !a.error)) {
        abort();
    }
    return 0;
}
