/* The chunked decoder in both modes, split at every byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "http/chunked.h"

static http_chunked_t ch;

/* Decodes s fed in pieces of at most piece bytes; returns the bytes
 * consumed (== where the message ended) or -1; the payload goes to out. */
static ssize_t decode(const char *s, size_t n, size_t piece, char *out, size_t *outlen)
{
    http_chunked_init(&ch);
    size_t off = 0;
    *outlen = 0;
    while (off < n && !http_chunked_done(&ch)) {
        size_t avail = n - off < piece ? n - off : piece;
        size_t used = 0;
        while (used < avail && !http_chunked_done(&ch)) {
            http_slice_t d;
            ssize_t r = http_chunked_step(&ch, s + off + used, avail - used, &d);
            if (r < 0)
                return -1;
            cr_assert_gt(r, 0, "no progress");
            memcpy(out + *outlen, s + off + used + d.off, d.len);
            *outlen += d.len;
            used += (size_t)r;
        }
        off += used;
    }
    return (ssize_t)off;
}

static ssize_t scan_all(const char *s, size_t n)
{
    http_chunked_init(&ch);
    return http_chunked_scan(&ch, s, n);
}

static void rejected_n(const char *s, size_t n, const char *why)
{
    cr_assert_eq(scan_all(s, n), -1, "%s", s);
    cr_assert_str_eq(ch.error, why, "%s", s);
    http_slice_t d;
    cr_assert_eq(http_chunked_step(&ch, "0\r\n\r\n", 5, &d), -1, "errors are final");
}

static void rejected(const char *s, const char *why) { rejected_n(s, strlen(s), why); }

static const char BODY[] =
    "5\r\nhello\r\n"
    "1;ext=1;q=\"a b\"\r\n,\r\n"
    "A \t;x\r\n world of \r\n"
    "000\r\n"
    "Trailer-One: 1\r\nX: \r\n"
    "\r\n";

Test(http_chunked, decode_whole)
{
    char out[64];
    size_t n;
    cr_assert_eq(decode(BODY, strlen(BODY), SIZE_MAX, out, &n), (ssize_t)strlen(BODY));
    cr_assert(http_chunked_done(&ch));
    cr_assert_eq(n, 16);
    cr_assert_eq(memcmp(out, "hello, world of ", 16), 0);
}

Test(http_chunked, split_at_every_position)
{
    size_t len = strlen(BODY);
    for (size_t cut = 1; cut <= len; cut++) {
        char out[64];
        http_chunked_init(&ch);
        http_slice_t d;
        size_t off = 0, got = 0;
        /* two pieces: [0, cut) then the rest */
        size_t ends[2] = {cut, len};
        for (int part = 0; part < 2; part++) {
            while (off < ends[part] && !http_chunked_done(&ch)) {
                ssize_t r = http_chunked_step(&ch, BODY + off, ends[part] - off, &d);
                cr_assert_gt(r, 0, "cut %zu", cut);
                memcpy(out + got, BODY + off + d.off, d.len);
                got += d.len;
                off += (size_t)r;
            }
        }
        cr_assert(http_chunked_done(&ch), "cut %zu", cut);
        cr_assert_eq(off, len);
        cr_assert_eq(got, 16, "cut %zu", cut);
        cr_assert_eq(memcmp(out, "hello, world of ", 16), 0);
    }
}

Test(http_chunked, byte_by_byte)
{
    char out[64];
    size_t n;
    cr_assert_eq(decode(BODY, strlen(BODY), 1, out, &n), (ssize_t)strlen(BODY));
    cr_assert(http_chunked_done(&ch));
    cr_assert_eq(n, 16);
}

Test(http_chunked, scan_split_at_every_position)
{
    size_t len = strlen(BODY);
    for (size_t cut = 0; cut <= len; cut++) {
        http_chunked_init(&ch);
        cr_assert_eq(http_chunked_scan(&ch, BODY, cut), (ssize_t)cut);
        cr_assert_eq(http_chunked_done(&ch), cut == len, "cut %zu", cut);
        cr_assert_eq(http_chunked_scan(&ch, BODY + cut, len - cut), (ssize_t)(len - cut));
        cr_assert(http_chunked_done(&ch));
    }
}

Test(http_chunked, scan_stops_at_the_end_of_the_message)
{
    const char *s = "3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n";
    cr_assert_eq(scan_all(s, strlen(s)), 13);
    cr_assert(http_chunked_done(&ch));
    cr_assert_eq(http_chunked_scan(&ch, s + 13, 5), 0);
}

Test(http_chunked, large_chunk_skipped_without_looking)
{
    static char s[70000];
    size_t w = (size_t)sprintf(s, "10000\r\n");
    memset(s + w, '\r', 0x10000);   /* data is opaque, CRs included */
    w += 0x10000;
    w += (size_t)sprintf(s + w, "\r\n0\r\n\r\n");
    http_chunked_init(&ch);
    http_slice_t d;
    cr_assert_eq(http_chunked_step(&ch, s, w, &d), 7 + 0x10000);
    cr_assert_eq(d.off, 7);
    cr_assert_eq(d.len, 0x10000);
    cr_assert_eq(http_chunked_scan(&ch, s + 7 + 0x10000, 7), 7);
    cr_assert(http_chunked_done(&ch));
}

Test(http_chunked, hex_digits)
{
    char out[64];
    size_t n;
    const char *s = "0000A\r\n0123456789\r\n0\r\n\r\n";
    cr_assert_eq(decode(s, strlen(s), SIZE_MAX, out, &n), (ssize_t)strlen(s));
    cr_assert_eq(n, 10);
    s = "a\r\n0123456789\r\n0\r\n\r\n";
    cr_assert_eq(decode(s, strlen(s), SIZE_MAX, out, &n), (ssize_t)strlen(s));
}

Test(http_chunked, largest_size_accepted)
{
    const char *s = "7fffffffffffffff\r\nabc";
    cr_assert_eq(scan_all(s, strlen(s)), (ssize_t)strlen(s));
    cr_assert_eq(ch.remaining, (uint64_t)INT64_MAX - 3);
}

Test(http_chunked, size_overflow)
{
    rejected("8000000000000000\r\n", "chunk size overflow");
    rejected("fffffffffffffffff\r\n", "chunk size overflow");
}

Test(http_chunked, bad_hex)
{
    rejected("zz\r\n", "missing chunk size");
    rejected("5z\r\nhello\r\n", "invalid chunk size");
    rejected("-5\r\n", "missing chunk size");
    rejected("0x5\r\n", "invalid chunk size");
    rejected("\r\n", "missing chunk size");
    rejected(" 5\r\n", "missing chunk size");
}

Test(http_chunked, whitespace_after_size_only_before_extension)
{
    rejected("5 \r\nhello\r\n", "whitespace after chunk size");
    rejected("5 x\r\nhello\r\n", "whitespace after chunk size");
}

Test(http_chunked, bare_line_endings)
{
    rejected("5\nhello\r\n", "invalid chunk size");
    rejected("5\rhello\r\n", "bare CR after chunk size");
    rejected("5\r\nhello\n0\r\n\r\n", "chunk data longer than its size");
    rejected("5\r\nhello\r0\r\n\r\n", "bare CR after chunk data");
    rejected("0\r\n\r0", "bare CR in trailer section");
}

Test(http_chunked, data_longer_than_size)
{
    rejected("3\r\nhello\r\n0\r\n\r\n", "chunk data longer than its size");
}

Test(http_chunked, extension_limits)
{
    char s[600];
    int w = sprintf(s, "5;");
    memset(s + w, 'e', HTTP_CHUNK_LINE_MAX - 2);
    sprintf(s + w + HTTP_CHUNK_LINE_MAX - 2, "\r\nhello\r\n0\r\n\r\n");
    cr_assert_eq(scan_all(s, strlen(s)), (ssize_t)strlen(s));    /* exactly the limit */
    sprintf(s + w + HTTP_CHUNK_LINE_MAX - 2, "e\r\nhello\r\n0\r\n\r\n");
    rejected(s, "chunk-size line too long");
}

Test(http_chunked, long_run_of_zeros_is_bounded)
{
    char s[600];
    memset(s, '0', 400);
    strcpy(s + 400, "5\r\nhello\r\n");
    rejected(s, "chunk-size line too long");
}

Test(http_chunked, control_character_in_extension)
{
    rejected("5;a\x01\r\nhello\r\n", "invalid chunk extension");
    rejected("5;a\nb\r\nhello\r\n", "invalid chunk extension");
}

Test(http_chunked, trailers)
{
    const char *s = "0\r\nExpires: never\r\nX-Checksum: abc\r\n\r\n";
    cr_assert_eq(scan_all(s, strlen(s)), (ssize_t)strlen(s));
    cr_assert(http_chunked_done(&ch));
}

Test(http_chunked, invalid_trailers)
{
    rejected("0\r\nX: a\r\n folded\r\n\r\n", "invalid trailer field");
    rejected("0\r\nNo colon\r\n\r\n", "invalid trailer field name");
    rejected("0\r\nX : a\r\n\r\n", "invalid trailer field name");
    static const char nul[] = "0\r\nX: a\0b\r\n\r\n";
    rejected_n(nul, sizeof nul - 1, "invalid trailer field value");
    rejected("0\r\nX: a\x7f\r\n\r\n", "invalid trailer field value");
}

Test(http_chunked, trailer_section_bounded)
{
    static char s[HTTP_CHUNK_TRAILER_MAX + 64];
    int w = sprintf(s, "0\r\nX: ");
    size_t fill = HTTP_CHUNK_TRAILER_MAX - 3 - 4;   /* "X: " + CRLF + CRLF */
    memset(s + w, 'v', fill);
    strcpy(s + w + fill, "\r\n\r\n");
    cr_assert_eq(scan_all(s, strlen(s)), (ssize_t)strlen(s));
    memset(s + w, 'v', fill + 1);
    strcpy(s + w + fill + 1, "\r\n\r\n");
    rejected(s, "trailer section too large");
}

Test(http_chunked, incomplete_message_is_not_done)
{
    const char *s = "5\r\nhello\r\n0\r\n";
    cr_assert_eq(scan_all(s, strlen(s)), (ssize_t)strlen(s));
    cr_assert_not(http_chunked_done(&ch));
}

Test(http_chunked, empty_input)
{
    http_chunked_init(&ch);
    http_slice_t d;
    cr_assert_eq(http_chunked_step(&ch, "", 0, &d), 0);
    cr_assert_eq(d.len, 0);
    cr_assert_eq(http_chunked_scan(&ch, "", 0), 0);
}
