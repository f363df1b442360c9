/* http_field: field lines (RFC 9112 5, RFC 9110 5), shared by requests and
 * responses, and the small grammars inside field values they act on. */
#include <string.h>
#include <strings.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "internal.h"

http_header_id_t http_header_id(const char *name, size_t len)
{
    /* The length picks at most two candidates; one compare settles it. */
    switch (len) {
    case 2:
        if (HTTP_TOKEN_EQ(name, len, "te"))
            return HTTP_HDR_TE;
        break;
    case 4:
        if (HTTP_TOKEN_EQ(name, len, "host"))
            return HTTP_HDR_HOST;
        break;
    case 6:
        if (HTTP_TOKEN_EQ(name, len, "accept"))
            return HTTP_HDR_ACCEPT;
        if (HTTP_TOKEN_EQ(name, len, "expect"))
            return HTTP_HDR_EXPECT;
        break;
    case 7:
        if (HTTP_TOKEN_EQ(name, len, "trailer"))
            return HTTP_HDR_TRAILER;
        if (HTTP_TOKEN_EQ(name, len, "upgrade"))
            return HTTP_HDR_UPGRADE;
        break;
    case 10:
        if (HTTP_TOKEN_EQ(name, len, "connection"))
            return HTTP_HDR_CONNECTION;
        if (HTTP_TOKEN_EQ(name, len, "user-agent"))
            return HTTP_HDR_USER_AGENT;
        if (HTTP_TOKEN_EQ(name, len, "keep-alive"))
            return HTTP_HDR_KEEP_ALIVE;
        break;
    case 13:
        if (HTTP_TOKEN_EQ(name, len, "authorization"))
            return HTTP_HDR_AUTHORIZATION;
        break;
    case 14:
        if (HTTP_TOKEN_EQ(name, len, "content-length"))
            return HTTP_HDR_CONTENT_LENGTH;
        break;
    case 15:
        if (HTTP_TOKEN_EQ(name, len, "x-forwarded-for"))
            return HTTP_HDR_X_FORWARDED_FOR;
        break;
    case 16:
        if (HTTP_TOKEN_EQ(name, len, "proxy-connection"))
            return HTTP_HDR_PROXY_CONNECTION;
        break;
    case 17:
        if (HTTP_TOKEN_EQ(name, len, "transfer-encoding"))
            return HTTP_HDR_TRANSFER_ENCODING;
        break;
    }
    return HTTP_HDR_OTHER;
}

bool http_header_is_hop_by_hop(http_header_id_t id)
{
    return id >= HTTP_HDR_CONNECTION && id < HTTP_HDR__KNOWN;
}

const http_header_t *http_headers_get(const http_headers_t *h, http_header_id_t id)
{
    if (id >= HTTP_HDR__KNOWN || h->first[id] < 0)
        return NULL;
    return &h->list[h->first[id]];
}

void http_headers_clear(http_headers_t *h)
{
    h->count = 0;
    h->repeated = 0;
    for (int i = 0; i < HTTP_HDR__KNOWN; i++)
        h->first[i] = -1;
}

/* Values are most of a head: skip them eight bytes at a time to the first
 * byte below 0x20 (CR, HTAB, other CTLs) or 0x7f, found exactly: per byte,
 * (b & 0x7f) + 1 is 0x80 for 0x7f and 1..0x20 for a CTL, so after & 0x7f
 * both are at most 0x20, and + 0x5f leaves their high bit clear, and only
 * theirs (no byte carries into the next). Bytes >= 0x80 (obs-text) are
 * never flagged, as | x sets their high bit. The byte loop after it goes on
 * past an HTAB and stops at the CR. */
static uint32_t skip_value_words(const unsigned char *b, uint32_t p, uint32_t end)
{
#ifdef __SSE2__
    /* Sixteen at a time where the target has SSE2 (every x86-64): a byte
     * is a CTL iff min(b, 0x1f) == b, unsigned. */
    const __m128i c1f = _mm_set1_epi8(0x1f), c7f = _mm_set1_epi8(0x7f);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(b + p));
        __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, c1f), x), _mm_cmpeq_epi8(x, c7f));
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m)
            return p + (uint32_t)__builtin_ctz(m);
        p += 16;
    }
#endif
    const uint64_t ones = 0x0101010101010101u, low7 = 0x7f7f7f7f7f7f7f7fu, highs = 0x8080808080808080u;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, b + p, 8);
        uint64_t flag = ~(((((x & low7) + ones) & low7) + 0x5f * ones) | x) & highs;
        if (flag) {
            /* The first flagged byte in memory order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (uint32_t)(__builtin_ctzll(flag) >> 3);
#else
            return p + (uint32_t)(__builtin_clzll(flag) >> 3);
#endif
        }
        p += 8;
    }
    return p;
}

static inline uint64_t load8(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t load4(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t load2(const void *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The names nearly every request has (Host, Accept, User-Agent,
 * Connection), followed by their ':', compared a word at a time, each
 * letter's byte or-ed with 0x20 (exact for any byte: only 'X' and 'x'
 * give 'x'), the '-' exactly: then they are tchars, as the byte loop would
 * have found, and the id is known. The name's length, or 0 (the byte loop
 * and http_header_id then run). room: the bytes from s to the end of the
 * head, its last CRLF included. The loads of literals fold to constants. */
static uint32_t known_name(const unsigned char *s, uint32_t room, http_header_id_t *id)
{
    switch (s[0] | 0x20) {
    case 'h':
        if (room > 4 && s[4] == ':' && (load4(s) | 0x20202020u) == load4("host")) {
            *id = HTTP_HDR_HOST;
            return 4;
        }
        break;
    case 'a':
        if (room > 6 && s[6] == ':' && (load4(s) | 0x20202020u) == load4("acce") &&
            (load2(s + 4) | 0x2020u) == load2("pt")) {
            *id = HTTP_HDR_ACCEPT;
            return 6;
        }
        break;
    case 'u':
        if (room > 10 && s[10] == ':' &&
            (load8(s) | load8("\x20\x20\x20\x20\x00\x20\x20\x20")) == load8("user-age") &&
            (load2(s + 8) | 0x2020u) == load2("nt")) {
            *id = HTTP_HDR_USER_AGENT;
            return 10;
        }
        break;
    case 'c':
        if (room > 10 && s[10] == ':' && (load8(s) | 0x2020202020202020u) == load8("connecti") &&
            (load2(s + 8) | 0x2020u) == load2("on")) {
            *id = HTTP_HDR_CONNECTION;
            return 10;
        }
        break;
    }
    return 0;
}

static int field_error(const char **error, const char *why)
{
    *error = why;
    return -400;
}

int http_fields_parse(const char *buf, uint32_t off, uint32_t end, http_headers_t *h,
                      const char **error)
{
    const unsigned char *b = (const unsigned char *)buf;
    uint32_t p = off;

    /* The head ends with an empty line, and the scan has checked that every
     * LF follows a CR: each loop below stops at a CR before end - 2. */
    while (p < end - 2) {
        if (b[p] == ' ' || b[p] == '\t')
            return field_error(error, "obs-fold or whitespace before a field name");
        uint32_t name = p;
        http_header_id_t id = HTTP_HDR_OTHER;
        uint32_t known = known_name(b + p, end - p, &id);
        p += known;
        while (!known && http_is(b[p], HTTP_C_TOKEN))
            p++;
        if (b[p] != ':') {
            if (b[p] == ' ' || b[p] == '\t')
                return field_error(error, "whitespace between field name and colon");
            if (b[p] == '\r')
                return field_error(error, "field line without a colon");
            return field_error(error, "invalid character in field name");
        }
        if (p == name)
            return field_error(error, "empty field name");
        uint32_t name_len = p - name;

        p++;
        while (b[p] == ' ' || b[p] == '\t')
            p++;
        uint32_t value = p;
        p = skip_value_words(b, p, end);
        while (http_is(b[p], HTTP_C_VALUE))
            p++;
        if (b[p] != '\r')
            return field_error(error, "control character in field value");
        if (b[p + 1] != '\n')
            return field_error(error, "bare CR");
        uint32_t value_end = p;
        while (value_end > value && (b[value_end - 1] == ' ' || b[value_end - 1] == '\t'))
            value_end--;
        p += 2;

        /* The scan has enforced max_headers; this is the caller's storage. */
        if (h->count >= h->cap) {
            *error = "too many header fields";
            return -431;
        }
        http_header_t *f = &h->list[h->count];
        f->name = (http_slice_t){name, name_len};
        f->value = (http_slice_t){value, value_end - value};
        f->id = known ? id : http_header_id(buf + name, name_len);
        if (f->id != HTTP_HDR_OTHER) {
            if (h->first[f->id] < 0)
                h->first[f->id] = (int16_t)h->count;
            else
                h->repeated |= 1u << f->id;
        }
        h->count++;
    }
    return 0;
}

bool http_list_next(http_list_t *it, char sep, const char **elem, size_t *len)
{
    while (it->p < it->end && (*it->p == ' ' || *it->p == '\t' || *it->p == sep))
        it->p++;
    if (it->p == it->end)
        return false;
    const char *s = it->p;
    while (it->p < it->end && *it->p != sep)
        it->p++;
    const char *e = it->p;
    http_trim_ows(&s, &e);
    *elem = s;
    *len = (size_t)(e - s);
    return true;
}

int http_parse_length(const char *s, size_t n, int64_t *out)
{
    if (n == 0)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

void http_field_elements_init(http_field_elements_t *e, const char *buf, const http_headers_t *h,
                              http_header_id_t id)
{
    *e = (http_field_elements_t){.buf = buf, .h = h, .id = id, .next = h->count};
    if (h->first[id] >= 0)
        e->next = (uint32_t)h->first[id];
}

bool http_field_elements_next(http_field_elements_t *e, const char **elem, size_t *len)
{
    for (;;) {
        if (e->it.p && http_list_next(&e->it, ',', elem, len))
            return true;
        while (e->next < e->h->count && e->h->list[e->next].id != e->id)
            e->next++;
        if (e->next >= e->h->count)
            return false;
        const http_header_t *f = &e->h->list[e->next++];
        e->it = (http_list_t){e->buf + f->value.off, e->buf + f->value.off + f->value.len};
    }
}

bool http_connection_lists(const char *buf, const http_headers_t *h, const char *name, size_t len)
{
    if (h->first[HTTP_HDR_CONNECTION] < 0)
        return false;
    http_field_elements_t e;
    http_field_elements_init(&e, buf, h, HTTP_HDR_CONNECTION);
    const char *t;
    size_t n;
    /* Both sides are tokens of any case: a symmetric compare. */
    while (http_field_elements_next(&e, &t, &n))
        if (n == len && strncasecmp(t, name, len) == 0)
            return true;
    return false;
}

bool http_keep_alive(const char *buf, const http_headers_t *h, unsigned version_minor)
{
    bool keep = version_minor >= 1;
    if (h->first[HTTP_HDR_CONNECTION] < 0)
        return keep;
    bool close = false;
    http_field_elements_t e;
    http_field_elements_init(&e, buf, h, HTTP_HDR_CONNECTION);
    const char *t;
    size_t n;
    while (http_field_elements_next(&e, &t, &n)) {
        if (HTTP_TOKEN_EQ(t, n, "close"))
            close = true;
        else if (HTTP_TOKEN_EQ(t, n, "keep-alive"))
            keep = true;
    }
    return keep && !close;
}
