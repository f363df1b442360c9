#include <criterion/criterion.h>
#include <string.h>

#include "core/text.h"

Test(text, sanitize_keeps_valid_text_and_mends_the_rest)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"", ""},
        {"plain ASCII ~", "plain ASCII ~"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"},
        /* control characters, DEL included, become spaces */
        {"a\tb\nc\rd\x1b[0m\x7f" "e", "a b c d [0m e"},
        /* so do C1 controls (U+0080..U+009F; U+009B is CSI), one space
         * for the character's two bytes; U+00A0 on is text */
        {"a\xc2\x9b" "31mb\xc2\x80\xc2\x9f" "c", "a 31mb  c"},
        {"\xc2\x9b\xc2\x9b\xc2\x9b", "   "},
        {"nbsp\xc2\xa0\xc3\xbf.", "nbsp\xc2\xa0\xc3\xbf."},
        {"\xc2\x85 cut \xe2\x82", "  cut "},
        /* invalid bytes become '?', one per byte */
        {"overlong \xc0\xaf \xe0\x80\xaf.", "overlong ?? ???."},
        {"surrogate \xed\xa0\x80.", "surrogate ???."},
        {"above U+10FFFF \xf4\x90\x80\x80.", "above U+10FFFF ????."},
        {"stray \x80 continuation", "stray ? continuation"},
        /* a C1 control's code as a lone byte is not UTF-8: no raw CSI */
        {"lone \x9b[31m\x85\x9f.", "lone ?[31m??."},
        {"missing \xe2\x82 continuation", "missing ?? continuation"},
        {"\xff\xfe.", "??."},
        /* a character cut short by the end is dropped */
        {"cut \xe2\x82", "cut "},
        {"cut \xf0\x9f\x98", "cut "},
        {"cut \xc3", "cut "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[64];
        strcpy(buf, cases[i].in);
        text_sanitize(buf);
        cr_expect_str_eq(buf, cases[i].want, "case %zu", i);
    }
}

Test(text, copy_truncates_to_valid_text)
{
    char buf[6];
    text_copy(buf, sizeof buf, NULL);
    cr_expect_str_eq(buf, "");
    text_copy(buf, sizeof buf, "abcdefgh");
    cr_expect_str_eq(buf, "abcde");
    /* "ab" and a euro sign cut after its second byte: the half goes. */
    text_copy(buf, sizeof buf, "ab\xe2\x82\xac\xe2\x82\xac");
    cr_expect_str_eq(buf, "ab\xe2\x82\xac");
    text_copy(buf, sizeof buf, "abcd\xe2\x82\xac");
    cr_expect_str_eq(buf, "abcd");
    text_copy(buf, sizeof buf, "a\nb");
    cr_expect_str_eq(buf, "a b");
    /* A C1 control cut off by the bound is dropped, a whole one is a space. */
    text_copy(buf, sizeof buf, "abcd\xc2\x9b");
    cr_expect_str_eq(buf, "abcd");
    text_copy(buf, sizeof buf, "ab\xc2\x9b" "cdef");
    cr_expect_str_eq(buf, "ab c");
}

Test(text, identifier_is_a_letter_or_underscore_then_word_characters)
{
    cr_expect(text_is_identifier("skewgate", 255));
    cr_expect(text_is_identifier("_x9", 255));
    cr_expect(text_is_identifier("A", 1));
    cr_expect(text_is_identifier("ab", 2));
    cr_expect_not(text_is_identifier("abc", 2));
    cr_expect_not(text_is_identifier("", 255));
    cr_expect_not(text_is_identifier("9x", 255));
    cr_expect_not(text_is_identifier("a b", 255));
    cr_expect_not(text_is_identifier("a-b", 255));
    cr_expect_not(text_is_identifier("a;b", 255));
    cr_expect_not(text_is_identifier("a\nb", 255));
    cr_expect_not(text_is_identifier("\"q\"", 255));
    cr_expect_not(text_is_identifier("caf\xc3\xa9", 255));
}
