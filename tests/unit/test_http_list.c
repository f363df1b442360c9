/* The one list tokenizer, http_list_next, with both of its separators. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../src/http/internal.h"

/* The elements of s cut on sep, joined with '|'. */
static void cut(const char *s, size_t len, char sep, char *out, size_t cap)
{
    http_list_t it = {s, s + len};
    const char *e;
    size_t n;
    out[0] = '\0';
    while (http_list_next(&it, sep, &e, &n)) {
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%.*s", used ? "|" : "", (int)n, e);
    }
}

Test(http_list, cuts_trims_and_skips_empty_elements)
{
    static const struct {
        const char *in;
        char sep;
        const char *want;
    } cases[] = {
        {"", ',', ""},
        {" \t , ,\t", ',', ""},
        {"close", ',', "close"},
        {"close, keep-alive", ',', "close|keep-alive"},
        {" \tclose \t,\t keep-alive \t", ',', "close|keep-alive"},
        {",,a,,b,,", ',', "a|b"},
        {"a b , c\td", ',', "a b|c\td"},
        {"a;b, c", ',', "a;b|c"},
        {"version=3.1.0 ; q=0.5 ;; x", ';', "version=3.1.0|q=0.5|x"},
        {"a, b; c", ';', "a, b|c"},
        /* quotes are not looked into */
        {"v=\"a,b\"", ',', "v=\"a|b\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char got[128];
        cut(cases[i].in, strlen(cases[i].in), cases[i].sep, got, sizeof got);
        cr_expect_str_eq(got, cases[i].want, "\"%s\" on '%c'", cases[i].in, cases[i].sep);
    }
}

Test(http_list, stops_at_the_end_it_is_given)
{
    static const char s[] = "a, b, c";
    char got[32];
    cut(s, 4, ',', got, sizeof got);
    cr_expect_str_eq(got, "a|b");
    cut(s, 0, ',', got, sizeof got);
    cr_expect_str_eq(got, "");
}

Test(http_list, trim_ows_trims_both_ends_only)
{
    static const char s[] = " \t a \t b\t ";
    const char *p = s, *e = s + strlen(s);
    http_trim_ows(&p, &e);
    cr_expect_eq(p, s + 3);
    cr_expect_eq((size_t)(e - p), 5, "\"%.*s\"", (int)(e - p), p);
    const char *blank = "  \t";
    p = blank;
    e = blank + 3;
    http_trim_ows(&p, &e);
    cr_expect_eq(p, e);
}
