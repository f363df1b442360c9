/* The kubeconfig reader of `skewgate override --cluster`: the current
 * context's cluster and user, paths resolved against the file's
 * directory, the CA data decoded, and errors that name file:line:col. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/kubeconfig.h"

static char dir[64], path[128], err[512];
static kube_credentials_t cr;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/skewgate-kc-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config", dir);
}

static void teardown(void)
{
    kube_credentials_free(&cr);
    unlink(path);
    rmdir(dir);
}

static void write_kc(const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

#define CONTEXTS "current-context: b\ncontexts:\n- name: a\n  context: {cluster: c1, user: u1}\n" \
                 "- name: b\n  context: {cluster: c2, user: u2}\n"

TestSuite(kubeconfig, .init = setup, .fini = teardown);

Test(kubeconfig, current_context_picks_cluster_and_user_and_resolves_paths)
{
    write_kc(CONTEXTS "clusters:\n- name: c1\n  cluster: {server: https://one:6443}\n"
                      "- name: c2\n  cluster:\n    server: https://two:6443\n    certificate-authority: pki/ca.crt\n"
                      "    insecure-skip-tls-verify: true\n"
                      "users:\n- name: u1\n  user: {token: one}\n- name: u2\n  user: {tokenFile: tok}\n");
    cr_assert_eq(kube_credentials_from_kubeconfig(path, &cr, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(cr.server, "https://two:6443");
    char want[192];
    snprintf(want, sizeof want, "%s/pki/ca.crt", dir);
    cr_expect_str_eq(cr.ca_file, want);
    snprintf(want, sizeof want, "%s/tok", dir);
    cr_expect_str_eq(cr.token_file, want);
    cr_expect_null(cr.token);
    cr_expect(cr.insecure);
    cr_expect_str_eq(cr.name, "cluster");
}

Test(kubeconfig, certificate_authority_data_is_decoded)
{
    /* base64("-----BEGIN CERTIFICATE-----\nAB\n"), wrapped as some tools write it. */
    write_kc("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://h', certificate-authority-data: "
             "'LS0tLS1CRUdJTiBDRVJUSUZJQ0FU\n RS0tLS0tCkFCCg=='}}]\n"
             "users: [{name: u, user: {token: t0k}}]\n");
    cr_assert_eq(kube_credentials_from_kubeconfig(path, &cr, err, sizeof err), 0, "%s", err);
    const char pem[] = "-----BEGIN CERTIFICATE-----\nAB\n";
    cr_assert_eq(cr.ca_data_len, sizeof pem - 1);
    cr_expect_eq(memcmp(cr.ca_data, pem, sizeof pem - 1), 0);
    cr_expect_str_eq(cr.token, "t0k");
    cr_expect_null(cr.ca_file);
}

Test(kubeconfig, errors_name_file_line_and_column)
{
    char want[256];
    write_kc(CONTEXTS "clusters:\n- name: c2\n  cluster: {server: https://two}\nusers: []\n");
    cr_assert_eq(kube_credentials_from_kubeconfig(path, &cr, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:6:32: no entry named \"u2\" in users", path);
    cr_expect_str_eq(err, want);
    kube_credentials_free(&cr);

    write_kc(CONTEXTS "clusters:\n- name: c2\n  cluster: {server: https://two, certificate-authority-data: '***'}\n"
                      "users: [{name: u2, user: {token: t}}]\n");
    cr_assert_eq(kube_credentials_from_kubeconfig(path, &cr, err, sizeof err), -1);
    cr_expect(strstr(err, "certificate-authority-data: not base64") != NULL, "%s", err);
    kube_credentials_free(&cr);

    write_kc("clusters: []\n");
    cr_assert_eq(kube_credentials_from_kubeconfig(path, &cr, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: current-context is not set (kubectl config use-context NAME)", path);
    cr_expect_str_eq(err, want);
}

Test(kubeconfig, path_as_kubectl_looks_for_it)
{
    char buf[256];
    setenv("KUBECONFIG", "/a/first:/b/second", 1);
    setenv("HOME", "/home/me", 1);
    cr_expect_str_eq(kubeconfig_path("/flag", buf, sizeof buf, err, sizeof err), "/flag");
    cr_expect_str_eq(kubeconfig_path(NULL, buf, sizeof buf, err, sizeof err), "/a/first");
    unsetenv("KUBECONFIG");
    cr_expect_str_eq(kubeconfig_path(NULL, buf, sizeof buf, err, sizeof err), "/home/me/.kube/config");
    unsetenv("HOME");
    cr_expect_null(kubeconfig_path(NULL, buf, sizeof buf, err, sizeof err));
    cr_expect(strstr(err, "--kubeconfig") != NULL, "%s", err);
}
