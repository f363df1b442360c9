#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* C0, DEL, and C1 (U+0080..U+009F, 0xC2 0x80..0x9F): a terminal acts on
 * them (U+009B is CSI on many), so none may reach one. n: the length of
 * the valid sequence at s. */
static bool is_control(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0] < 0x20 || s[0] == 0x7f;
    return n == 2 && s[0] == 0xC2 && s[1] <= 0x9F;
}

void text_sanitize(char *s)
{
    /* Written behind where it reads: a C1 control's two bytes give one
     * space, so the text never grows and may shrink. */
    const unsigned char *r = (const unsigned char *)s;
    unsigned char *w = (unsigned char *)s;
    while (*r) {
        size_t n = utf8_sequence_len(r);
        if (n == 0 && utf8_cut_short(r))
            break;
        if (n == 0) {
            *w++ = '?';
            r++;
        } else if (is_control(r, n)) {
            *w++ = ' ';
            r += n;
        } else {
            memmove(w, r, n);
            w += n;
            r += n;
        }
    }
    *w = '\0';
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
