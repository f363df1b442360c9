/* The query read as Go's url.ParseQuery (1.17+) reads it: every row's
 * expectation is what Go 1.19's url.ParseQuery(q).Get("token") and its
 * map say of the same query (checked with /usr/lib/go-1.19/bin/go). */
#include <criterion/criterion.h>
#include <string.h>

#include "http/query.h"

/* q -> the value of Values.Get("token"), or NULL when Go has no "token" key. */
static const struct {
    const char *q, *token;
} GET[] = {
    {"token=T", "T"},
    {"to%6Ben=T", "T"},                 /* a percent-encoded key */
    {"tok%65n=%54", "T"},               /* both */
    {"%74oken=T&token=U", "T"},         /* the first of two spellings */
    {"token=a%2Bb", "a+b"},             /* %2B is a '+' */
    {"token=a+b", "a b"},               /* a raw '+' is a space */
    {"token=%7e%7E", "~~"},             /* either case of hex */
    {"a=1&token=T&b", "T"},
    {"a=1&&token=T", "T"},              /* an empty pair is skipped */
    {"token", ""},
    {"token=&token=T", ""},             /* Get is the first value */
    {"token=%zz&token=T", "T"},         /* a bad escape drops its pair only */
    {"%=1&token=T", "T"},
    {";token=T", NULL},                 /* a ';' drops the pair (Go 1.17) */
    {"x;token=T", NULL},
    {"token=T;x", NULL},
    {"token=a%", NULL},
    {"token=a%4", NULL},
    {"token%3DT", NULL},                /* the key is "token=T" */
    {"TOKEN=T", NULL},                  /* keys are case-sensitive */
    {"token+=T", NULL},                 /* the key is "token " */
    {"tokens=T", NULL},
    {"xtoken=T", NULL},
    {"", NULL},
    {"&", NULL},
};

Test(http_query, values_are_read_as_go_reads_them)
{
    for (size_t i = 0; i < sizeof GET / sizeof GET[0]; i++) {
        char out[16];
        int n = http_query_get(GET[i].q, strlen(GET[i].q), "token", out, sizeof out);
        if (!GET[i].token) {
            cr_expect_eq(n, HTTP_QUERY_NONE, "%s: %d", GET[i].q, n);
            continue;
        }
        cr_expect_geq(n, 0, "%s: %d", GET[i].q, n);
        if (n >= 0)
            cr_expect(n == (int)strlen(GET[i].token) && !memcmp(out, GET[i].token, (size_t)n), "%s: %.*s", GET[i].q,
                      n, out);
    }
}

Test(http_query, a_value_longer_than_the_buffer_is_too_long)
{
    char out[4];
    cr_assert_eq(http_query_get("token=abcd", 10, "token", out, sizeof out), 4);
    cr_assert_eq(http_query_get("token=abcde", 11, "token", out, sizeof out), HTTP_QUERY_TOO_LONG);
    cr_assert_eq(http_query_get("token=%41%42%43%44", 18, "token", out, sizeof out), 4);
    cr_assert_eq(http_query_get("token=%41%42%43%44%45", 21, "token", out, sizeof out), HTTP_QUERY_TOO_LONG);
}

/* target -> what the gate forwards and logs: no pair Go reads as "token",
 * no pair Go refuses, the others as sent. */
static const struct {
    const char *target, *stripped;
} STRIP[] = {
    {"/config/worker", "/config/worker"},
    {"/config/worker?token=s3cret", "/config/worker"},
    {"/config/worker?a=1&token=s3cret&b=2", "/config/worker?a=1&b=2"},
    {"/config/worker?token=x&token=y", "/config/worker"},
    {"/config/worker?token", "/config/worker"},
    {"/config/worker?to%6Ben=s3cret", "/config/worker"},
    {"/config/worker?a=%41&%74oken=s3cret&TOK%45N=1", "/config/worker?a=%41&TOK%45N=1"},
    {"/config/worker?token=a+b&x=a+b", "/config/worker?x=a+b"},
    {"/config/worker?a;token=s3cret", "/config/worker"},
    {"/config/worker?x=1&;token=s3cret&y=2", "/config/worker?x=1&y=2"},
    {"/config/worker?token=%zz&x", "/config/worker?x"},
    {"/config/worker?x=%&y", "/config/worker?y"},
    {"/config/worker?tokens=1&a", "/config/worker?tokens=1&a"},
    {"/config/worker?token%3Ds3cret", "/config/worker?token%3Ds3cret"},   /* Go's key "token=s3cret" */
    {"/config/worker?", "/config/worker?"},
    {"/config/worker?a&&b", "/config/worker?a&&b"},
    {"http://h/config/worker?b&token=1", "http://h/config/worker?b"},
};

Test(http_query, token_pairs_and_refused_pairs_are_cut_from_targets)
{
    for (size_t i = 0; i < sizeof STRIP / sizeof STRIP[0]; i++) {
        const char *t = STRIP[i].target;
        char out[256];
        size_t n = http_target_without_param(t, strlen(t), "token", out, sizeof out - 1);
        out[n] = '\0';
        cr_expect_str_eq(out, STRIP[i].stripped, "%s", t);
        cr_expect_eq(http_target_strips(t, strlen(t), "token"), strcmp(t, STRIP[i].stripped) != 0, "%s", t);
    }
    char small[8];
    cr_assert_eq(http_target_without_param("/config/worker", 14, "token", small, sizeof small), 0);
}
