/* The byte class table of the HTTP parsers, checked entry by entry against
 * the grammar's character sets written out as strings. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/http/internal.h"

static bool in(const char *set, int c) { return c != 0 && strchr(set, c) != NULL; }

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

Test(http_chars, table_matches_the_grammar)
{
    for (int c = 0; c < 256; c++) {
        bool token = in(ALNUM "!#$%&'*+-.^_`|~", c);
        bool value = c == '\t' || (c >= 0x20 && c != 0x7f);
        bool target = c > 0x20 && c < 0x7f && c != '#';
        bool hex = in("0123456789abcdefABCDEF", c);
        bool host = in(ALNUM "-._~!$&'()*+,;=:[]%", c);
        cr_expect_eq(http_is((unsigned char)c, HTTP_C_TOKEN), token, "token %#x", c);
        cr_expect_eq(http_is((unsigned char)c, HTTP_C_VALUE), value, "value %#x", c);
        cr_expect_eq(http_is((unsigned char)c, HTTP_C_TARGET), target, "target %#x", c);
        cr_expect_eq(http_is((unsigned char)c, HTTP_C_HEX), hex, "hex %#x", c);
        cr_expect_eq(http_is((unsigned char)c, HTTP_C_HOST), host, "host %#x", c);
        if (hex)
            cr_expect_eq(http_hex_value((unsigned char)c), (int)strtol((char[]){(char)c, 0}, NULL, 16));
    }
}
