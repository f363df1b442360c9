/* kube_api: the CA file is pinned by its contents when the API context is
 * made, so that a reload can tell a rotated CA (new bytes at the same
 * path) from the same file written again, and a failed connection can
 * follow a rotated CA without a reload. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/kube/reflector.h"

static char dir[64], ca[128], err[512];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/skewgate-kube-api-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    char cmd[PATH_MAX + 128];
    /* Two CAs of their own: a and b. */
    snprintf(cmd, sizeof cmd, "'%1$s/tools/mkcert.sh' '%2$s/a' && '%1$s/tools/mkcert.sh' '%2$s/b'", SRCDIR, dir);
    cr_assert_eq(system(cmd), 0, "tools/mkcert.sh failed");
    err[0] = '\0';
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_kube_api: could not remove %s\n", dir);
}

/* As a rotation writes it: a new file renamed over ca_file. */
static void put_ca(const char *which)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s/%s/ca.crt' '%s.new' && mv '%s.new' '%s'", dir, which, ca, ca, ca);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(kube_api, .init = setup, .fini = teardown);

Test(kube_api, a_ca_file_is_told_by_its_bytes_not_its_name_or_inode)
{
    put_ca("a");
    config_source_kube_t cfg = {.server = "https://127.0.0.1:6443", .ca_file = ca, .token_file = "/nonexistent"};
    kube_api_t api;
    cr_assert_eq(kube_api_init(&api, &cfg, err, sizeof err), 0, "%s", err);
    cr_expect(api.ca_pinned);
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0, "%s", err);
    put_ca("a");   /* the same bytes, a new inode and mtime */
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0, "%s", err);
    put_ca("b");
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 1);
    put_ca("a");   /* back: what the context holds again */
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0, "%s", err);
    cr_assert_eq(unlink(ca), 0);
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), -1);
    char want[256];
    snprintf(want, sizeof want, "tls: kubernetes ca_file %s: cannot read: No such file or directory", ca);
    cr_expect_str_eq(err, want);
    kube_api_destroy(&api);
}

/* Plain http:// loads no CA and the system store (ca_file "") is nobody's
 * to follow: nothing is pinned, nothing ever "changes". */
Test(kube_api, nothing_is_pinned_without_a_ca_file_in_use)
{
    config_source_kube_t plain = {.server = "http://127.0.0.1:8080", .ca_file = ca};
    kube_api_t api;
    cr_assert_eq(kube_api_init(&api, &plain, err, sizeof err), 0, "%s", err);
    cr_expect_not(api.ca_pinned);
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0);
    kube_api_destroy(&api);
    config_source_kube_t system_store = {.server = "https://127.0.0.1:6443", .ca_file = ""};
    cr_assert_eq(kube_api_init(&api, &system_store, err, sizeof err), 0, "%s", err);
    cr_expect_not(api.ca_pinned);
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0);
    kube_api_destroy(&api);
}

/* A CA file that cannot be read makes no API context (the gate's start
 * and a reload refuse it). */
Test(kube_api, an_unreadable_ca_file_is_an_error)
{
    config_source_kube_t cfg = {.server = "https://127.0.0.1:6443", .ca_file = ca};
    kube_api_t api;
    cr_expect_eq(kube_api_init(&api, &cfg, err, sizeof err), -1);
    cr_expect(strstr(err, "cannot read") != NULL, "%s", err);
    kube_api_destroy(&api);
}

/* Followed after a failed connection: other bytes make a new context and
 * become the pinned ones; the same bytes, or a file that is not a CA,
 * leave the context as it is (the latter says why). */
Test(kube_api, a_rotated_ca_is_followed_and_a_bad_file_keeps_the_old_trust)
{
    put_ca("a");
    config_source_kube_t cfg = {.server = "https://127.0.0.1:6443", .ca_file = ca, .token_file = "/nonexistent"};
    kube_api_t api;
    cr_assert_eq(kube_api_init(&api, &cfg, err, sizeof err), 0, "%s", err);
    SSL_CTX *first = api.tls;
    put_ca("a");
    cr_expect_eq(kube_api_follow_ca(&api, err, sizeof err), 0, "%s", err);
    cr_expect_eq(api.tls, first, "the same bytes made a new context");
    put_ca("b");
    cr_expect_eq(kube_api_follow_ca(&api, err, sizeof err), 1, "%s", err);
    cr_expect_neq(api.tls, first, "other bytes kept the old context");
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 0, "the new bytes are not the pinned ones");
    SSL_CTX *second = api.tls;
    FILE *f = fopen(ca, "w");
    cr_assert_not_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    cr_expect_eq(kube_api_follow_ca(&api, err, sizeof err), -1);
    cr_expect(strstr(err, ca) != NULL, "the error does not name the file: %s", err);
    cr_expect_eq(api.tls, second, "a file that is not a CA replaced the context");
    cr_expect_eq(kube_api_ca_changed(&api, err, sizeof err), 1, "the bad bytes were pinned");
    put_ca("b");
    cr_expect_eq(kube_api_follow_ca(&api, err, sizeof err), 0, "%s", err);
    cr_expect_eq(api.tls, second);
    kube_api_destroy(&api);
}
