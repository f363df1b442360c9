/* libFuzzer target: path normalisation. A clean path is rooted, has no
 * empty, "." or ".." segment, and cleaning it again changes nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool clean(const char *p, size_t n)
{
    if (n == 0 || p[0] != '/')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '/')
            continue;
        size_t j = i + 1;
        while (j < n && p[j] != '/')
            j++;
        size_t seg = j - i - 1;
        if (seg == 0 && j < n)
            return false;                       /* "//" */
        if ((seg == 1 && p[i + 1] == '.') || (seg == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *raw = (const char *)data;
    char *out = malloc(size + 1), *again = malloc(size + 2);
    size_t n, m;
    int rc = http_path_normalize(raw, size, out, size + 1, &n);
    if (rc == HTTP_PATH_OK) {
        if (n > size + 1 || !clean(out, n))
            abort();
        if (!memchr(out, '%', n)) {
            if (http_path_normalize(out, n, again, n + 1, &m) != HTTP_PATH_OK || m != n ||
                memcmp(out, again, n) != 0)
                abort();
        }
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
                abort();
        http_slice_t s = http_path_last_segment(out, n);
        if (s.off + s.len > n || memchr(out + s.off, '/', s.len))
            abort();
        http_path_has_prefix(out, n, "/config/");
    } else if (rc != HTTP_PATH_BAD_ESCAPE && rc != HTTP_PATH_BAD_CHAR && rc != HTTP_PATH_AMBIGUOUS) {
        abort();
    }
    if (size > 0 && http_path_normalize(raw, size, out, size, &n) != HTTP_PATH_NO_SPACE)
        abort();
    free(out);
    free(again);
    return 0;
}
