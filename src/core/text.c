#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/text.h"

/* Length of the valid UTF-8 sequence at s, or 0 when it is not one
 * (overlong, surrogate, above U+10FFFF, stray or missing continuation). */
static size_t utf8_sequence_len(const unsigned char *s)
{
    static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        len = 2;
        cp = s[0] & 0x1F;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        cp = s[0] & 0x0F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    /* A NUL is not a continuation byte, so this never reads past the end. */
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < smallest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A lead byte whose continuation bytes run into the end of the string: what
 * truncating in the middle of a character leaves behind. */
static bool utf8_cut_short(const unsigned char *s)
{
    size_t want = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    size_t i = 1;
    while (i < want && (s[i] & 0xC0) == 0x80)
        i++;
    return want > 0 && i < want && s[i] == '\0';
}

void text_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_sequence_len(p);
        if (n == 0 && utf8_cut_short(p)) {
            *p = '\0';
        } else if (n == 0) {
            *p++ = '?';
        } else if (n == 1 && (*p < 0x20 || *p == 0x7f)) {
            *p++ = ' ';
        } else {
            p += n;
        }
    }
}

void text_copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
    text_sanitize(dst);
}

bool text_is_identifier(const char *s, size_t max)
{
    size_t i = 0;
    for (; s[i]; i++) {
        char c = s[i];
        bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (i == max || !(letter || (i > 0 && c >= '0' && c <= '9')))
            return false;
    }
    return i > 0;
}
