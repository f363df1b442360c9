#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/kube/token.h"

static char dir[64], path[128];
static kube_token_t tok;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/skewgate-token-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/token", dir);
    cr_assert_eq(kube_token_init(&tok, path), 0);
}

static void teardown(void)
{
    kube_token_free(&tok);
    unlink(path);
    rmdir(dir);
}

/* As kubelet rotates a projected token: a new file renamed over the old. */
static void write_token(const char *text)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
}

TestSuite(kube_token, .init = setup, .fini = teardown);

Test(kube_token, read_trimmed_then_reread_only_when_it_changes)
{
    char err[256];
    write_token("first-token\n");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), 1);
    cr_assert_str_eq(tok.value, "first-token");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), 0);
    write_token("second-token");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), 1);
    cr_assert_str_eq(tok.value, "second-token");
    /* A new file with the same token is no change. */
    write_token("second-token\n");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), 0);
}

Test(kube_token, unusable_files_keep_the_last_token_and_never_show_it)
{
    char err[256];
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), -1);
    cr_assert(strstr(err, "No such file"), "%s", err);
    write_token("good-token");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), 1);
    write_token("  \n");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), -1);
    cr_assert(strstr(err, "empty"), "%s", err);
    cr_assert_str_eq(tok.value, "good-token");
    write_token("bad\r\nX-Injected: 1");
    cr_assert_eq(kube_token_refresh(&tok, err, sizeof err), -1);
    cr_assert_null(strstr(err, "bad"), "%s", err);
    cr_assert_str_eq(tok.value, "good-token");
}
