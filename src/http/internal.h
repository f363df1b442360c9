/* http_internal: what the HTTP parsing files share and nobody else needs. */
#ifndef SKEWGATE_HTTP_INTERNAL_H
#define SKEWGATE_HTTP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http/message.h"

/* Character classes, one table lookup per byte (http_chars.c). */
enum {
    HTTP_C_TOKEN  = 1,   /* tchar (RFC 9110 5.6.2) */
    HTTP_C_VALUE  = 2,   /* field-vchar, SP, HTAB, obs-text */
    HTTP_C_TARGET = 4,   /* visible ASCII but '#' */
    HTTP_C_HEX    = 8,
    HTTP_C_HOST   = 16,  /* reg-name, IP-literal and port characters */
};

extern const uint8_t http_ctype[256];

static inline bool http_is(unsigned char c, unsigned cls) { return http_ctype[c] & cls; }

static inline int http_hex_value(unsigned char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Case-insensitive comparison with a lowercase literal of letters, digits
 * and '-'. s must hold no CTL but HTAB, as parsed names and values do: then
 * only a letter of either case can equal a letter after c | 0x20, and only
 * '-' itself can equal '-'. */
static inline bool http_token_eq(const char *s, size_t n, const char *lower, size_t lower_len)
{
    if (n != lower_len)
        return false;
    /* The same | 0x20 on eight (then four) bytes at once: the literal's
     * length is known here, so this is a compare or two per name. */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        memcpy(&a, s + i, 8);
        memcpy(&b, lower + i, 8);
        if ((a | 0x2020202020202020u) != b)
            return false;
    }
    if (i + 4 <= n) {
        uint32_t a, b;
        memcpy(&a, s + i, 4);
        memcpy(&b, lower + i, 4);
        if ((a | 0x20202020u) != b)
            return false;
        i += 4;
    }
    for (; i < n; i++)
        if ((s[i] | 0x20) != lower[i])
            return false;
    return true;
}

#define HTTP_TOKEN_EQ(s, n, lit) http_token_eq((s), (n), lit, sizeof(lit) - 1)

/* Finds the end of a head (http_scan.c): the first empty line after the
 * line starting at s->line, within len. > 0 head length, 0 not yet, -400
 * bare LF or an empty first line, -431 more than max_fields field lines.
 * Errors are found in the order of the bytes, so that a head gets the same
 * answer whatever the pieces it arrives in. */
void http_scan_init(http_scan_t *s);
/* Starts the search after a first line its caller has already found. */
void http_scan_init_fields(http_scan_t *s, uint32_t first_end);
int http_scan_head(const char *buf, size_t len, http_scan_t *s, uint32_t max_fields,
                   const char **error);

/* Parses the field lines in buf[off, end), end being the end of a head
 * the scan has found (http_field.c). 0, -400 malformed, -431 more fields
 * than h->cap. */
void http_headers_clear(http_headers_t *h);
int http_fields_parse(const char *buf, uint32_t off, uint32_t end, http_headers_t *h,
                      const char **error);

/* [*s, *e) without the OWS (SP, HTAB) at either end. */
static inline void http_trim_ows(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

/* The one list tokenizer: the elements of [p, end) separated by sep, ','
 * for a list (RFC 9110 5.6.1) and ';' for the parameters after a media
 * type (RFC 9110 5.6.6). Each element comes without the OWS around it;
 * empty elements are skipped. Quoted strings are not recognised: a
 * separator inside quotes splits like any other. */
typedef struct http_list {
    const char *p;
    const char *end;
} http_list_t;

bool http_list_next(http_list_t *it, char sep, const char **elem, size_t *len);

/* The elements of every field line with one name, in order: fields of one
 * name make one list (RFC 9110 5.3). */
typedef struct http_field_elements {
    const char *buf;
    const http_headers_t *h;
    http_header_id_t id;
    uint32_t next;              /* the field line to look at after this one */
    http_list_t it;
} http_field_elements_t;

void http_field_elements_init(http_field_elements_t *e, const char *buf, const http_headers_t *h,
                              http_header_id_t id);
bool http_field_elements_next(http_field_elements_t *e, const char **elem, size_t *len);

/* 1*DIGIT -> value; -1 on anything else or above INT64_MAX. */
int http_parse_length(const char *s, size_t n, int64_t *out);

/* The tokens of every Connection field: close wins over keep-alive. */
bool http_keep_alive(const char *buf, const http_headers_t *h, unsigned version_minor);

#endif
