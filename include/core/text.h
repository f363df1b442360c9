/* text: bounded strings that are safe to show. Text that ends up in JSON and
 * in front of an administrator, and partly comes from outside (an API
 * object), is kept valid UTF-8 without control characters, whatever a
 * bound cut off. */
#ifndef SKEWGATE_TEXT_H
#define SKEWGATE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* In place, up to the NUL: control characters (C0, DEL and C1) become a
 * space each, bytes that are not part of a valid UTF-8 sequence (overlong,
 * surrogate, above U+10FFFF, stray or missing continuation, so a lone
 * 0x80..0x9F too) become '?' each, and a character cut short by the end of
 * the string is dropped, as truncation leaves one. Never longer after. */
void text_sanitize(char *s);

/* Copies src (NULL counts as "") into dst[cap], cap > 0, truncated to fit,
 * then text_sanitize. */
void text_copy(char *dst, size_t cap, const char *src);

/* Whether s is a plain identifier of 1..max bytes: an ASCII letter or '_',
 * then letters, digits and '_'. What may be spliced into a command
 * language (an nftables table name) without quoting. */
bool text_is_identifier(const char *s, size_t max);

#endif
