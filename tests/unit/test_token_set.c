#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/query.h"
#include "http/request.h"
#include "policy/admission_token.h"
#include "policy/token_set.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/skewgate-tokens-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *write_file(const char *name, const char *text)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

TestSuite(token_set, .init = setup, .fini = teardown);

Test(token_set, tokens_of_several_files_are_accepted_at_once)
{
    char err[256];
    const char *paths[] = {write_file("current", "tok-new-0123\n"), write_file("previous", "tok-old-4567\r\n")};
    token_set_t *s = token_set_load(paths, 2, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert(token_set_contains(s, "tok-new-0123", 12));
    cr_assert(token_set_contains(s, "tok-old-4567", 12));
    cr_assert_not(token_set_contains(s, "tok-new-012", 11));      /* a prefix */
    cr_assert_not(token_set_contains(s, "tok-new-01234", 13));    /* longer */
    cr_assert_not(token_set_contains(s, "tok-new-0123\n", 13));
    cr_assert_not(token_set_contains(s, "", 0));
    char huge[TOKEN_MAX + 1];
    memset(huge, 'a', sizeof huge);
    cr_assert_not(token_set_contains(s, huge, sizeof huge));
    token_set_unref(token_set_ref(s));
    token_set_unref(s);
}

Test(token_set, unusable_files_are_errors_naming_the_file_not_the_token)
{
    char err[256], big[TOKEN_MAX + 2];
    memset(big, 'b', TOKEN_MAX + 1);
    big[TOKEN_MAX + 1] = '\0';
    struct {
        const char *text, *why;
    } cases[] = {
        {"", "is empty"},
        {"\n", "is empty"},
        {"two words\n", "not a visible ASCII"},
        {"tab\there", "not a visible ASCII"},
        {"line1\nline2\n", "not a visible ASCII"},
        {big, "longer than"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = write_file("t", cases[i].text);
        token_set_t *s = token_set_load(&p, 1, err, sizeof err);
        cr_assert_null(s, "%s", cases[i].text);
        cr_assert(strstr(err, cases[i].why), "%s", err);
        cr_assert(strstr(err, p), "%s", err);
        cr_assert_null(strstr(err, "words"));
        cr_assert_null(strstr(err, "line2"));
        cr_assert_null(strstr(err, "bbbb"));
    }
    char missing[160];
    snprintf(missing, sizeof missing, "%s/absent", dir);
    const char *p = missing;
    cr_assert_null(token_set_load(&p, 1, err, sizeof err));
    cr_assert(strstr(err, "No such file"), "%s", err);
    /* A token exactly TOKEN_MAX long is fine. */
    big[TOKEN_MAX] = '\0';
    p = write_file("max", big);
    token_set_t *s = token_set_load(&p, 1, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert(token_set_contains(s, big, TOKEN_MAX));
    token_set_unref(s);
}

/* After the start: a file that cannot be used is left out and reported, the
 * others stay; none usable is an empty set (every token refused), not NULL. */
typedef struct problems {
    size_t n, files[8];
    char last[TOKEN_PROBLEM_LEN];
} problems_t;

static void note_problem(size_t file, const char *problem, void *arg)
{
    problems_t *p = arg;
    p->files[p->n++] = file;
    snprintf(p->last, sizeof p->last, "%s", problem);
}

Test(token_set, usable_load_leaves_out_each_unusable_file)
{
    char absent[160];
    snprintf(absent, sizeof absent, "%s/absent", dir);
    struct {
        const char *text;           /* NULL: the file does not exist */
        const char *why;
    } cases[] = {
        {NULL, "No such file"},
        {"", "is empty"},
        {"two words\n", "not a visible ASCII"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *paths[] = {write_file("good", "tok-good\n"), cases[i].text ? write_file("bad", cases[i].text)
                                                                             : absent};
        problems_t pr = {0};
        token_set_t *s = token_set_load_usable(paths, 2, note_problem, &pr);
        cr_assert_not_null(s);
        cr_assert_eq(s->n, 1);
        cr_assert(token_set_contains(s, "tok-good", 8));
        cr_assert_eq(pr.n, 1);
        cr_assert_eq(pr.files[0], 1);
        cr_assert(strstr(pr.last, cases[i].why), "%s", pr.last);
        cr_assert(strstr(pr.last, paths[1]), "%s", pr.last);
        token_set_unref(s);
        unlink(paths[1]);
    }
    const char *none[] = {absent, write_file("empty", "")};
    problems_t pr = {0};
    token_set_t *s = token_set_load_usable(none, 2, note_problem, &pr);
    cr_assert_not_null(s);
    cr_assert_eq(s->n, 0);
    cr_assert_eq(pr.n, 2);
    cr_assert_not(token_set_contains(s, "tok-good", 8));
    token_set_unref(s);
}

/* The policy on parsed requests: the header first, then the parameter. */
static admission_result_t judge(const token_set_t *s, const char *head)
{
    static http_header_t fields[32];
    http_request_t req;
    http_limits_t lim = {16384, 32, 8192};
    http_request_init(&req, fields, 32);
    cr_assert_gt(http_request_parse(head, strlen(head), &lim, &req), 0, "%s", head);
    return admission_token_judge(s, head, &req);
}

Test(token_set, admission_reads_bearer_or_query)
{
    char err[256];
    const char *p = write_file("current", "Tok_1.2~3-x\n");
    token_set_t *s = token_set_load(&p, 1, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_TOKEN_MISSING);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer Tok_1.2~3-x\r\n\r\n"),
                 ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nauthorization: bearer   Tok_1.2~3-x\r\n\r\n"),
                 ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer wrong\r\n\r\n"),
                 ADMISSION_TOKEN_INVALID);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer\r\n\r\n"),
                 ADMISSION_TOKEN_MISSING);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAuthorization: Basic eDp5\r\n\r\n"),
                 ADMISSION_TOKEN_MISSING);
    cr_assert_eq(judge(s, "GET /config/worker?token=Tok_1.2~3-x HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?a=1&token=Tok_1.2~3-x&b HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?token=nope HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_TOKEN_INVALID);
    cr_assert_eq(judge(s, "GET /config/worker?token= HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_TOKEN_MISSING);
    cr_assert_eq(judge(s, "GET /config/worker?xtoken=Tok_1.2~3-x HTTP/1.1\r\nHost: a\r\n\r\n"),
                 ADMISSION_TOKEN_MISSING);
    /* The parameter as Go reads it: decoded, a '+' a space, a pair with a
     * ';' or a bad escape no parameter at all. */
    cr_assert_eq(judge(s, "GET /config/worker?to%6Ben=Tok_1.2~3-x HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?token=Tok%5F1%2E2%7e3-x HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?a;token=Tok_1.2~3-x HTTP/1.1\r\nHost: a\r\n\r\n"),
                 ADMISSION_TOKEN_MISSING);
    cr_assert_eq(judge(s, "GET /config/worker?token=Tok_1.2~3-x;x HTTP/1.1\r\nHost: a\r\n\r\n"),
                 ADMISSION_TOKEN_MISSING);
    char longer[TOKEN_MAX + 64];
    snprintf(longer, sizeof longer, "GET /config/worker?token=%0*d HTTP/1.1\r\nHost: a\r\n\r\n", TOKEN_MAX + 1, 0);
    cr_assert_eq(judge(s, longer), ADMISSION_TOKEN_INVALID);
    /* Another scheme in the header: the parameter still counts. */
    cr_assert_eq(judge(s, "GET /config/worker?token=Tok_1.2~3-x HTTP/1.1\r\nHost: a\r\nAuthorization: Basic eDp5\r\n\r\n"),
                 ADMISSION_PASS);
    token_set_unref(s);
}

/* A '+' in a token travels as %2B; a raw '+' is a space, which no token holds. */
Test(token_set, a_plus_in_a_token_is_read_as_go_reads_it)
{
    char err[256];
    const char *p = write_file("current", "a+b\n");
    token_set_t *s = token_set_load(&p, 1, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(judge(s, "GET /config/worker?token=a%2Bb HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?token=a%2bb HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_PASS);
    cr_assert_eq(judge(s, "GET /config/worker?token=a+b HTTP/1.1\r\nHost: a\r\n\r\n"), ADMISSION_TOKEN_INVALID);
    cr_assert_eq(judge(s, "GET /config/worker HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a+b\r\n\r\n"),
                 ADMISSION_PASS);
    token_set_unref(s);
}
