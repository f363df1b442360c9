/* http_path: decoding and cleaning a request path as Go's ServeMux does;
 * the reasons and the worked examples are in http_path.h. */
#include <string.h>

#include "internal.h"
#include "http/path.h"

/* Does the segment written last, out[.., w), read "." or ".."? */
static bool dot_segment_ends(const char *out, size_t w)
{
    size_t start = w;
    while (start > 0 && out[start - 1] != '/')
        start--;
    size_t n = w - start;
    return (n == 1 || n == 2) && out[start] == '.' && out[w - 1] == '.';
}

/* Decodes raw into out, rooting it. Returns the decoded length or an error.
 * An encoded '/' is taken only as the path's last character, ending a
 * segment that is not "." or ".." (http_path.h says why). */
static long path_decode(const char *raw, size_t len, char *out)
{
    size_t w = 0;
    if (len == 0 || raw[0] != '/')
        out[w++] = '/';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            if (len - i < 3 || !http_is((unsigned char)raw[i + 1], HTTP_C_HEX) ||
                !http_is((unsigned char)raw[i + 2], HTTP_C_HEX))
                return HTTP_PATH_BAD_ESCAPE;
            c = (unsigned char)(http_hex_value((unsigned char)raw[i + 1]) << 4 |
                                http_hex_value((unsigned char)raw[i + 2]));
            if (c == '.' || (c == '/' && !(i + 3 == len && !dot_segment_ends(out, w))))
                return HTTP_PATH_AMBIGUOUS;
            i += 2;
        }
        if (c < 0x20 || c == 0x7f)
            return HTTP_PATH_BAD_CHAR;
        out[w++] = (char)c;
    }
    return (long)w;
}

/* Go's path.Clean for a rooted path, in place: each element is read before
 * anything is written over it, as writes never pass reads. */
static size_t path_clean(char *p, size_t n)
{
    size_t r = 1, w = 1;
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            /* Back to the previous '/'; ".." at the root stays there. */
            if (w > 1) {
                w--;
                while (w > 1 && p[w] != '/')
                    w--;
            }
        } else {
            if (w != 1)
                p[w++] = '/';
            while (r < n && p[r] != '/')
                p[w++] = p[r++];
        }
    }
    return w;
}

/* Whether raw is its own decoded, cleaned form: rooted, nothing to decode
 * ('%'), no control character, and no empty, "." or ".." segment (no '/'
 * followed by '/' or '.'; a segment that only starts with '.' goes the
 * long way too). Nearly every request's path is; the check reads each
 * byte once, where decoding and cleaning read and wrote it twice. */
static bool path_is_clean(const char *raw, size_t len)
{
    if (len == 0 || raw[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        /* '%', '.', '/' and the control characters are all below 0x30. */
        if (c >= 0x30 && c != 0x7f)
            continue;
        if (c < 0x20 || c == 0x7f || c == '%')
            return false;
        if (c == '/' && i + 1 < len && (raw[i + 1] == '/' || raw[i + 1] == '.'))
            return false;
    }
    return true;
}

int http_path_normalize(const char *raw, size_t len, char *out, size_t outcap, size_t *outlen)
{
    if (outcap < len + 1)
        return HTTP_PATH_NO_SPACE;
    if (path_is_clean(raw, len)) {
        memcpy(out, raw, len);
        *outlen = len;
        return HTTP_PATH_OK;
    }
    long n = path_decode(raw, len, out);
    if (n < 0)
        return (int)n;
    bool trailing = out[n - 1] == '/';
    size_t w = path_clean(out, (size_t)n);
    /* ServeMux's cleanPath puts back the trailing slash path.Clean drops. */
    if (trailing && w > 1)
        out[w++] = '/';
    *outlen = w;
    return HTTP_PATH_OK;
}

const char *http_path_strerror(int err)
{
    switch (err) {
    case HTTP_PATH_OK:
        return "ok";
    case HTTP_PATH_BAD_ESCAPE:
        return "invalid percent-encoding in path";
    case HTTP_PATH_BAD_CHAR:
        return "control character in path";
    case HTTP_PATH_AMBIGUOUS:
        return "encoded '/' or '.' in path";
    case HTTP_PATH_NO_SPACE:
        return "path buffer too small";
    }
    return "unknown path error";
}

http_slice_t http_path_last_segment(const char *clean, size_t len)
{
    size_t end = len;
    if (end > 1 && clean[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && clean[start - 1] != '/')
        start--;
    return (http_slice_t){(uint32_t)start, (uint32_t)(end - start)};
}

bool http_path_has_prefix(const char *clean, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (len < n || memcmp(clean, prefix, n) != 0)
        return false;
    if (n == 0 || prefix[n - 1] == '/' || len == n)
        return true;
    return clean[n] == '/';
}
