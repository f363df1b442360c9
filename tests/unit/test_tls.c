#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/logging.h>
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/tcp.h>

#include <openssl/err.h>

#include "os/sockio.h"
#include "tls/tls.h"

/* Certificates are made once per run by the runner process (tests run in
 * re-executed children, which inherit only its environment). */
#define CERTS_ENV "SKEWGATE_TEST_TLS_CERTS"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    char dir[] = "/tmp/skewgate-tls-test-XXXXXX";
    if (!mkdtemp(dir))
        return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%1$s/tools/mkcert.sh' '%2$s/ecdsa' ecdsa && '%1$s/tools/mkcert.sh' '%2$s/rsa' rsa && "
             "openssl pkey -in '%2$s/ecdsa/tls.key' -aes256 -passout pass:x -out '%2$s/encrypted.key'",
             SRCDIR, dir);
    if (system(cmd) == 0)
        setenv(CERTS_ENV, dir, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    const char *dir = getenv(CERTS_ENV);
    char cmd[PATH_MAX + 16];
    if (dir && snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd && system(cmd) != 0)
        fprintf(stderr, "test_tls: could not remove %s\n", dir);
}

typedef struct certs {
    char crt[PATH_MAX], key[PATH_MAX], ca[PATH_MAX], ca_key[PATH_MAX];
} certs_t;

static certs_t ecdsa, rsa;
static char encrypted_key[PATH_MAX];
static char err[512];

static void certs_fill(certs_t *c, const char *dir, const char *kind)
{
    snprintf(c->crt, sizeof c->crt, "%s/%s/tls.crt", dir, kind);
    snprintf(c->key, sizeof c->key, "%s/%s/tls.key", dir, kind);
    snprintf(c->ca, sizeof c->ca, "%s/%s/ca.crt", dir, kind);
    snprintf(c->ca_key, sizeof c->ca_key, "%s/%s/ca.key", dir, kind);
}

static void suite_init(void)
{
    const char *dir = getenv(CERTS_ENV);
    cr_assert_not_null(dir, "tools/mkcert.sh did not run (see stderr)");
    /* A peer gone before an alert is written must not kill the test. */
    signal(SIGPIPE, SIG_IGN);
    certs_fill(&ecdsa, dir, "ecdsa");
    certs_fill(&rsa, dir, "rsa");
    snprintf(encrypted_key, sizeof encrypted_key, "%s/encrypted.key", dir);
    err[0] = '\0';
}

TestSuite(tls, .init = suite_init);

static config_tls_server_t server_cfg(certs_t *c)
{
    return (config_tls_server_t){
        .enabled = true, .certificate = c->crt, .key = c->key, .session_tickets = true,
    };
}

static config_upstream_t upstream_cfg(char *ca_file, char *server_name)
{
    return (config_upstream_t){.tls = true, .ca_file = ca_file, .server_name = server_name};
}

static SSL_CTX *server_ctx(config_tls_server_t cfg)
{
    SSL_CTX *ctx = tls_server_ctx_new(&cfg, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    return ctx;
}

static SSL_CTX *client_ctx(const config_upstream_t *up)
{
    SSL_CTX *ctx = tls_client_ctx_new(up, err, sizeof err);
    cr_assert_not_null(ctx, "%s", err);
    return ctx;
}

/* Both ends of one connection over a non-blocking socketpair, driven from
 * this one thread. */
typedef struct link {
    SSL *client, *server;
    SSL *failed;            /* the end whose handshake failed first */
    unsigned long error;    /* its first OpenSSL error */
} link_t;

static link_t link_new(SSL_CTX *cctx, const config_upstream_t *up, SSL_CTX *sctx)
{
    int fds[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    link_t l = {.client = SSL_new(cctx), .server = SSL_new(sctx)};
    cr_assert(l.client && l.server);
    BIO *client_bio = BIO_new_socket(fds[0], BIO_CLOSE), *server_bio = BIO_new_socket(fds[1], BIO_CLOSE);
    SSL_set_bio(l.client, client_bio, client_bio);
    SSL_set_bio(l.server, server_bio, server_bio);
    SSL_set_connect_state(l.client);
    SSL_set_accept_state(l.server);
    cr_assert_eq(tls_client_prepare(l.client, up), 0);
    return l;
}

/* A clean close. Freeing an SSL that has not sent close_notify marks its
 * session unresumable, and a kept session is that same object. */
static void link_close(link_t *l)
{
    SSL_shutdown(l->client);
    SSL_shutdown(l->server);
}

static void link_free(link_t *l)
{
    SSL_free(l->client);
    SSL_free(l->server);
    ERR_clear_error();
}

/* One step of an SSL call on a non-blocking socket: 1 done, 0 retry later,
 * -1 failed. */
static int step(int rc, SSL *ssl)
{
    if (rc > 0)
        return 1;
    int e = SSL_get_error(ssl, rc);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/* Bounded, so that a stuck handshake fails the test instead of hanging. */
static bool handshake(link_t *l)
{
    bool client_done = false, server_done = false;
    for (int i = 0; i < 32 && !(client_done && server_done); i++) {
        SSL *ends[2] = {l->client, l->server};
        bool *done[2] = {&client_done, &server_done};
        for (int k = 0; k < 2; k++) {
            if (*done[k])
                continue;
            ERR_clear_error();
            int r = step(SSL_do_handshake(ends[k]), ends[k]);
            if (r < 0) {
                l->failed = ends[k];
                l->error = ERR_peek_error();
                return false;
            }
            *done[k] = r == 1;
        }
    }
    return client_done && server_done;
}

static bool transfer(SSL *from, SSL *to, const char *msg)
{
    int len = (int)strlen(msg);
    if (SSL_write(from, msg, len) != len)
        return false;
    char buf[256];
    for (int i = 0; i < 8; i++) {
        int r = SSL_read(to, buf, sizeof buf);
        if (r > 0)
            return r == len && memcmp(buf, msg, (size_t)len) == 0;
        if (step(r, to) < 0)
            return false;
    }
    return false;
}

/* A request and its response: the client has then also read what the
 * server sent after the handshake (TLS 1.3 tickets). */
static bool exchange(link_t *l)
{
    return transfer(l->client, l->server, "GET /config/worker HTTP/1.1\r\nHost: x\r\n\r\n") &&
           transfer(l->server, l->client, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
}

static bool connects(SSL_CTX *cctx, const config_upstream_t *up, SSL_CTX *sctx)
{
    link_t l = link_new(cctx, up, sctx);
    bool ok = handshake(&l);
    link_free(&l);
    return ok;
}

static const char *alpn_of(SSL *ssl)
{
    static char proto[32];
    const unsigned char *p;
    unsigned int len;
    SSL_get0_alpn_selected(ssl, &p, &len);
    snprintf(proto, sizeof proto, "%.*s", (int)len, p ? (const char *)p : "");
    return proto;
}

/* --- contexts from files --- */

Test(tls, ecdsa_server_negotiates_tls13_http11_and_verifies_the_name)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    /* Offered in a browser's order: h2 first. */
    static const unsigned char h2_and_http11[] = "\x02h2\x08http/1.1";
    cr_assert_eq(SSL_set_alpn_protos(l.client, h2_and_http11, sizeof h2_and_http11 - 1), 0);

    cr_assert(handshake(&l), "handshake failed: %s", ERR_reason_error_string(l.error));
    cr_expect_eq(SSL_version(l.server), TLS1_3_VERSION);
    cr_expect_str_eq(alpn_of(l.server), "http/1.1");
    cr_expect_str_eq(alpn_of(l.client), "http/1.1");
    cr_expect_eq(SSL_get_verify_result(l.client), X509_V_OK);
    cr_expect_str_eq(SSL_get_servername(l.server, TLSEXT_NAMETYPE_host_name), "localhost");
    cr_expect(EVP_PKEY_is_a(X509_get0_pubkey(SSL_get0_peer_certificate(l.client)), "EC"));
    cr_expect(exchange(&l));
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, rsa_server_serves_tls13_and_tls12_with_its_preferred_cipher)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&rsa));
    config_upstream_t up = upstream_cfg(rsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);

    link_t l = link_new(cctx, &up, sctx);
    cr_assert(handshake(&l));
    cr_expect_eq(SSL_version(l.server), TLS1_3_VERSION);
    cr_expect(EVP_PKEY_is_a(X509_get0_pubkey(SSL_get0_peer_certificate(l.client)), "RSA"));
    link_free(&l);

    /* The client prefers ChaCha20; the server's order puts AES-GCM first. */
    l = link_new(cctx, &up, sctx);
    SSL_set_max_proto_version(l.client, TLS1_2_VERSION);
    cr_assert_eq(SSL_set_cipher_list(l.client, "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384:"
                                               "ECDHE-RSA-AES128-GCM-SHA256"), 1);
    cr_assert(handshake(&l));
    cr_expect_eq(SSL_version(l.server), TLS1_2_VERSION);
    cr_expect_str_eq(SSL_get_cipher_name(l.server), "ECDHE-RSA-AES128-GCM-SHA256");
    cr_expect(exchange(&l));
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, missing_certificate_or_key_names_the_file)
{
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s.missing", ecdsa.crt);
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.certificate = missing;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    char want[sizeof missing + 64];
    snprintf(want, sizeof want, "tls: certificate %s: No such file or directory", missing);
    cr_expect_str_eq(err, want);

    cfg = server_cfg(&ecdsa);
    cfg.key = missing;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    snprintf(want, sizeof want, "tls: key %s: No such file or directory", missing);
    cr_expect_str_eq(err, want);
    cr_expect_eq(ERR_peek_error(), 0, "error queue left non-empty");
}

Test(tls, a_key_file_as_certificate_is_reported_with_openssls_reason)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.certificate = ecdsa.key;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "tls: certificate %s: no start line", ecdsa.key);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "got %s", err);
}

Test(tls, a_key_that_is_not_the_certificates_is_an_error)
{
    char want[2 * PATH_MAX + 64];
    /* Same type (P-256), different key. */
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.key = ecdsa.ca_key;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    snprintf(want, sizeof want, "tls: key %s does not match certificate %s", ecdsa.ca_key, ecdsa.crt);
    cr_expect_str_eq(err, want);

    /* Another type: OpenSSL files it in another slot without complaint. */
    cfg.key = rsa.key;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    snprintf(want, sizeof want, "tls: key %s does not match certificate %s", rsa.key, ecdsa.crt);
    cr_expect_str_eq(err, want);
    cr_expect_eq(ERR_peek_error(), 0, "error queue left non-empty");
}

Test(tls, an_encrypted_key_is_refused_without_prompting)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.key = encrypted_key;
    cr_assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "tls: key %s is encrypted; an unencrypted PEM key is required",
             encrypted_key);
    cr_expect_str_eq(err, want);
}

Test(tls, bad_algorithm_settings_are_errors)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.ciphers = "NO-SUCH-CIPHER";
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cr_expect_str_eq(err, "tls: ciphers \"NO-SUCH-CIPHER\": no cipher match");

    cfg = server_cfg(&ecdsa);
    cfg.ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_512_GCM";
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cr_expect_str_eq(err, "tls: ciphersuites \"TLS_AES_128_GCM_SHA256:TLS_AES_512_GCM\": "
                          "unknown TLS 1.3 ciphersuite \"TLS_AES_512_GCM\"");

    /* A TLS 1.2 name is not a TLS 1.3 suite, though both lists are set. */
    cfg.ciphersuites = "ECDHE-ECDSA-AES128-GCM-SHA256";
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));

    cfg = server_cfg(&ecdsa);
    cfg.groups = "X25519:brainpool-ish";
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cr_expect(strncmp(err, "tls: groups \"X25519:brainpool-ish\": ", 36) == 0, "got %s", err);

    cfg = server_cfg(&ecdsa);
    cfg.min_version = TLS1_3_VERSION;
    cfg.ciphersuites = "";
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cr_expect_str_eq(err, "tls: no TLS 1.3 ciphersuites but the minimum version is TLS 1.3");

    cfg = server_cfg(&ecdsa);
    cfg.min_version = TLS1_1_VERSION;
    cr_expect_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cr_expect_str_eq(err, "tls: minimum version 0x0302: only TLS 1.2 and TLS 1.3 are allowed");
    cr_expect_eq(ERR_peek_error(), 0, "error queue left non-empty");
}

Test(tls, empty_ciphersuites_turn_tls13_off)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.ciphersuites = "";
    SSL_CTX *sctx = server_ctx(cfg);
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_assert(handshake(&l), "failed: %s", ERR_reason_error_string(l.error));
    cr_expect_eq(SSL_version(l.server), TLS1_2_VERSION);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, contexts_carry_the_options_and_modes_the_proxy_relies_on)
{
    const uint64_t server_opts = SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE;
    const long modes = SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                       SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    cr_expect_eq(SSL_CTX_get_options(sctx) & server_opts, server_opts);
    cr_expect_eq(SSL_CTX_get_options(sctx) & SSL_OP_NO_TICKET, 0);
    /* A server connection keeps its record buffers between two requests;
     * conn.c gives them back once it is quiet (sockio_release_buffers). */
    cr_expect_eq(SSL_CTX_get_mode(sctx) & modes, modes & ~(long)SSL_MODE_RELEASE_BUFFERS);
    cr_expect_eq(SSL_CTX_get_session_cache_mode(sctx), SSL_SESS_CACHE_OFF);
    cr_expect_eq(SSL_CTX_get_min_proto_version(sctx), TLS1_2_VERSION);

    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    const uint64_t client_opts = SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION;
    cr_expect_eq(SSL_CTX_get_options(cctx) & client_opts, client_opts);
    cr_expect_eq(SSL_CTX_get_mode(cctx) & modes, modes);
    cr_expect_eq(SSL_CTX_get_min_proto_version(cctx), TLS1_2_VERSION);
    cr_expect_eq(SSL_CTX_get_verify_mode(cctx), SSL_VERIFY_PEER);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* --- handshakes --- */

Test(tls, ip_server_name_is_verified_against_the_san_and_not_sent_as_sni)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    char *ips[] = {"127.0.0.1", "::1"};
    for (size_t i = 0; i < 2; i++) {
        config_upstream_t up = upstream_cfg(ecdsa.ca, ips[i]);
        SSL_CTX *cctx = client_ctx(&up);
        link_t l = link_new(cctx, &up, sctx);
        cr_expect(handshake(&l), "%s: %s", ips[i], ERR_reason_error_string(l.error));
        cr_expect_null(SSL_get_servername(l.server, TLSEXT_NAMETYPE_host_name), "%s sent as SNI", ips[i]);
        link_free(&l);
        SSL_CTX_free(cctx);
    }
    SSL_CTX_free(sctx);
}

static void set_ipv4(config_addr_t *addr, const char *ip)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)&addr->ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(22623);
    cr_assert_eq(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    addr->len = sizeof *sin;
}

Test(tls, without_server_name_the_upstream_address_is_verified)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, NULL);
    SSL_CTX *cctx = client_ctx(&up);

    set_ipv4(&up.addr, "127.0.0.1");
    cr_expect(connects(cctx, &up, sctx));

    set_ipv4(&up.addr, "10.0.0.1");
    link_t l = link_new(cctx, &up, sctx);
    cr_expect_not(handshake(&l));
    cr_expect_eq(SSL_get_verify_result(l.client), X509_V_ERR_IP_ADDRESS_MISMATCH);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, a_name_the_certificate_does_not_carry_fails_verification)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "api-int.example.com");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_expect_not(handshake(&l));
    cr_expect_eq(l.failed, l.client);
    cr_expect_eq(SSL_get_verify_result(l.client), X509_V_ERR_HOSTNAME_MISMATCH);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, a_certificate_from_another_ca_fails_verification)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(rsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_expect_not(handshake(&l));
    cr_expect_eq(l.failed, l.client);
    cr_expect_eq(ERR_GET_REASON(l.error), SSL_R_CERTIFICATE_VERIFY_FAILED);
    cr_expect_eq(SSL_get_verify_result(l.client), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, insecure_skip_verify_accepts_an_unknown_ca_and_a_wrong_name)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(rsa.ca, "api-int.example.com");
    up.insecure_skip_verify = true;
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_expect(handshake(&l));
    cr_expect_str_eq(SSL_get_servername(l.server, TLSEXT_NAMETYPE_host_name), "api-int.example.com");
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, a_client_offering_only_h2_connects_without_alpn)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    static const unsigned char only_h2[] = "\x02h2";
    cr_assert_eq(SSL_set_alpn_protos(l.client, only_h2, sizeof only_h2 - 1), 0);
    cr_expect(handshake(&l), "handshake failed: %s", ERR_reason_error_string(l.error));
    cr_expect_str_eq(alpn_of(l.server), "");
    cr_expect_str_eq(alpn_of(l.client), "");
    cr_expect(exchange(&l));
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* A client that can really speak old versions: OpenSSL 3 only builds a
 * TLS 1.0/1.1 ClientHello at security level 0 (SHA-1 signatures). */
static void allow_old_versions(SSL *client, int max_version)
{
    SSL_set_min_proto_version(client, TLS1_VERSION);
    SSL_set_max_proto_version(client, max_version);
    cr_assert_eq(SSL_set_cipher_list(client, "DEFAULT:@SECLEVEL=0"), 1);
}

Test(tls, the_default_minimum_refuses_tls11)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    SSL_CTX_set_min_proto_version(cctx, TLS1_VERSION);

    link_t l = link_new(cctx, &up, sctx);
    allow_old_versions(l.client, TLS1_1_VERSION);
    cr_expect_not(handshake(&l));
    cr_expect_eq(l.failed, l.server);
    cr_expect_eq(ERR_GET_REASON(l.error), SSL_R_UNSUPPORTED_PROTOCOL,
                 "server failed with: %s", ERR_reason_error_string(l.error));
    link_free(&l);

    /* The same client allowed TLS 1.2 connects: it is the version. */
    l = link_new(cctx, &up, sctx);
    allow_old_versions(l.client, TLS1_2_VERSION);
    cr_expect(handshake(&l));
    cr_expect_eq(SSL_version(l.server), TLS1_2_VERSION);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, min_version_tls13_refuses_a_tls12_client)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.min_version = TLS1_3_VERSION;
    SSL_CTX *sctx = server_ctx(cfg);
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);

    link_t l = link_new(cctx, &up, sctx);
    SSL_set_max_proto_version(l.client, TLS1_2_VERSION);
    cr_expect_not(handshake(&l));
    cr_expect_eq(l.failed, l.server);
    cr_expect_eq(ERR_GET_REASON(l.error), SSL_R_UNSUPPORTED_PROTOCOL);
    link_free(&l);

    l = link_new(cctx, &up, sctx);
    cr_expect(handshake(&l));
    cr_expect_eq(SSL_version(l.server), TLS1_3_VERSION);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* "name:name:..." of the ciphers a context enables, TLS 1.3 suites included. */
static void cipher_names(SSL_CTX *ctx, char *buf, size_t len)
{
    STACK_OF(SSL_CIPHER) *ciphers = SSL_CTX_get_ciphers(ctx);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < sk_SSL_CIPHER_num(ciphers) && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ":" : "",
                                 SSL_CIPHER_get_name(sk_SSL_CIPHER_value(ciphers, i)));
}

/* Whether a client offering only group completes a handshake with sctx. */
static bool accepts_group(SSL_CTX *sctx, const char *group)
{
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_assert_eq(SSL_set1_groups_list(l.client, group), 1, "%s", group);
    bool ok = handshake(&l);
    link_free(&l);
    SSL_CTX_free(cctx);
    return ok;
}

/* A listener whose tls mapping names no lists, and a context built from
 * NULL lists, get the one Intermediate profile. */
Test(tls, a_config_silent_on_lists_and_null_lists_give_the_same_profile)
{
    char text[3 * PATH_MAX];
    snprintf(text, sizeof text, "listeners:\n  - address: \"127.0.0.1:0\"\n    tls: {certificate: \"%s\", key: \"%s\"}\n",
             ecdsa.crt, ecdsa.key);
    config_t *cfg = config_parse(text, strlen(text), "t.yaml", err, sizeof err);
    cr_assert_not_null(cfg, "%s", err);
    cr_expect_str_eq(cfg->listeners[0].tls.ciphers, CONFIG_TLS_INTERMEDIATE_CIPHERS);
    SSL_CTX *configured = server_ctx(cfg->listeners[0].tls);
    SSL_CTX *unset = server_ctx(server_cfg(&ecdsa));

    char a[4096], b[4096];
    cipher_names(configured, a, sizeof a);
    cipher_names(unset, b, sizeof b);
    cr_expect_str_eq(a, b);
    cr_expect(strstr(a, "TLS_CHACHA20_POLY1305_SHA256") && strstr(a, "ECDHE-RSA-CHACHA20-POLY1305"), "%s", a);
    static const struct { const char *group; bool in_profile; } groups[] = {
        {"X25519", true}, {"prime256v1", true}, {"secp384r1", true}, {"secp521r1", false}, {"X448", false},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        cr_expect_eq(accepts_group(configured, groups[i].group), groups[i].in_profile, "%s", groups[i].group);
        cr_expect_eq(accepts_group(unset, groups[i].group), groups[i].in_profile, "%s", groups[i].group);
    }
    SSL_CTX_free(unset);
    SSL_CTX_free(configured);
    config_free(cfg);
}

Test(tls, the_default_profile_refuses_static_rsa_and_the_config_can_allow_it)
{
    config_upstream_t up = upstream_cfg(rsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    config_tls_server_t cfg = server_cfg(&rsa);
    SSL_CTX *profile = server_ctx(cfg);
    cfg.ciphers = "ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256";
    SSL_CTX *custom = server_ctx(cfg);

    SSL_CTX *servers[2] = {profile, custom};
    for (int i = 0; i < 2; i++) {
        link_t l = link_new(cctx, &up, servers[i]);
        SSL_set_max_proto_version(l.client, TLS1_2_VERSION);
        cr_assert_eq(SSL_set_cipher_list(l.client, "AES128-GCM-SHA256"), 1);
        bool ok = handshake(&l);
        if (servers[i] == profile) {
            cr_expect_not(ok);
            cr_expect_eq(l.failed, l.server);
            cr_expect_eq(ERR_GET_REASON(l.error), SSL_R_NO_SHARED_CIPHER);
        } else {
            cr_expect(ok);
            cr_expect_str_eq(SSL_get_cipher_name(l.server), "AES128-GCM-SHA256");
        }
        link_free(&l);
    }
    SSL_CTX_free(custom);
    SSL_CTX_free(profile);
    SSL_CTX_free(cctx);
}

Test(tls, key_exchange_uses_the_configured_groups)
{
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    config_tls_server_t cfg = server_cfg(&ecdsa);
    SSL_CTX *profile = server_ctx(cfg);
    cfg.groups = "secp384r1";
    SSL_CTX *p384 = server_ctx(cfg);

    link_t l = link_new(cctx, &up, profile);
    cr_assert(handshake(&l));
    cr_expect_eq(SSL_get_negotiated_group(l.server), NID_X25519);
    link_free(&l);

    /* The client's first key share is X25519: the server asks for P-384. */
    l = link_new(cctx, &up, p384);
    cr_assert(handshake(&l));
    cr_expect_eq(SSL_get_negotiated_group(l.server), NID_secp384r1);
    link_free(&l);
    SSL_CTX_free(p384);
    SSL_CTX_free(profile);
    SSL_CTX_free(cctx);
}

/* Both ends read for a while; returns whether the client failed. */
static bool drive(link_t *l)
{
    char buf[64];
    bool client_failed = false, server_failed = false;
    for (int i = 0; i < 8; i++) {
        ERR_clear_error();
        if (!client_failed)
            client_failed = step(SSL_read(l->client, buf, sizeof buf), l->client) < 0;
        ERR_clear_error();
        if (!server_failed)
            server_failed = step(SSL_read(l->server, buf, sizeof buf), l->server) < 0;
    }
    ERR_clear_error();
    return client_failed;
}

Test(tls, upstream_initiated_renegotiation_is_refused)
{
    /* A server that asks for renegotiation, as skewgate's own never does
     * (and OpenSSL 3 servers refuse client-initiated ones by default). */
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    SSL_CTX_clear_options(sctx, SSL_OP_NO_RENEGOTIATION);
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    for (int refused = 0; refused < 2; refused++) {
        link_t l = link_new(cctx, &up, sctx);
        SSL_set_max_proto_version(l.client, TLS1_2_VERSION);
        if (!refused)   /* the control: renegotiation is seen when it happens */
            SSL_clear_options(l.client, SSL_OP_NO_RENEGOTIATION);
        cr_assert(handshake(&l));
        cr_assert_eq(SSL_renegotiate(l.server), 1);
        ERR_clear_error();
        cr_assert_geq(step(SSL_do_handshake(l.server), l.server), 0);
        bool client_failed = drive(&l);
        if (refused) {
            cr_expect(client_failed);
            cr_expect_eq(SSL_total_renegotiations(l.client), 0);
        } else {
            cr_expect_not(client_failed);
            cr_expect_eq(SSL_total_renegotiations(l.client), 1);
            cr_expect_not(SSL_renegotiate_pending(l.server));
        }
        link_free(&l);
    }
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, eof_without_close_notify_reads_as_a_plain_eof)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    link_t l = link_new(cctx, &up, sctx);
    cr_assert(handshake(&l));
    cr_assert(exchange(&l));
    SSL_free(l.client);             /* closes the socket, no close_notify */
    l.client = NULL;
    char buf[64];
    ERR_clear_error();
    int r = SSL_read(l.server, buf, sizeof buf);
    cr_expect_eq(r, 0);
    cr_expect_eq(SSL_get_error(l.server, r), SSL_ERROR_ZERO_RETURN);
    link_free(&l);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* --- sessions --- */

static const int both_versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};

Test(tls, tickets_let_a_client_resume_on_the_shared_server_context)
{
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    for (int v = 0; v < 2; v++) {
        link_t l = link_new(cctx, &up, sctx);
        SSL_set_max_proto_version(l.client, both_versions[v]);
        cr_assert(handshake(&l));
        cr_assert(exchange(&l));
        SSL_SESSION *kept = SSL_get1_session(l.client);
        cr_expect(SSL_SESSION_is_resumable(kept), "version %x", both_versions[v]);
        cr_expect(SSL_SESSION_has_ticket(kept));
        link_close(&l);
        link_free(&l);

        l = link_new(cctx, &up, sctx);
        SSL_set_max_proto_version(l.client, both_versions[v]);
        cr_assert_eq(SSL_set_session(l.client, kept), 1);
        cr_assert(handshake(&l));
        cr_expect(SSL_session_reused(l.client), "version %x not resumed", both_versions[v]);
        cr_expect(SSL_session_reused(l.server));
        link_free(&l);
        SSL_SESSION_free(kept);
    }
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

Test(tls, with_tickets_off_no_ticket_is_issued_and_nothing_resumes)
{
    config_tls_server_t cfg = server_cfg(&ecdsa);
    cfg.session_tickets = false;
    SSL_CTX *sctx = server_ctx(cfg);
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    for (int v = 0; v < 2; v++) {
        link_t l = link_new(cctx, &up, sctx);
        SSL_set_max_proto_version(l.client, both_versions[v]);
        cr_assert(handshake(&l));
        cr_assert(exchange(&l));
        SSL_SESSION *kept = SSL_get1_session(l.client);
        cr_expect_not(SSL_SESSION_has_ticket(kept), "version %x got a ticket", both_versions[v]);
        cr_expect_not(SSL_SESSION_is_resumable(kept));
        link_close(&l);
        link_free(&l);

        l = link_new(cctx, &up, sctx);
        SSL_set_max_proto_version(l.client, both_versions[v]);
        SSL_set_session(l.client, kept);
        cr_assert(handshake(&l));
        cr_expect_not(SSL_session_reused(l.server));
        link_free(&l);
        SSL_SESSION_free(kept);
    }
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}

/* --- memory of an idle connection --- */

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_STATS_ARE_MALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_STATS_ARE_MALLOCS 0
#endif
#endif
#ifndef HEAP_STATS_ARE_MALLOCS
#define HEAP_STATS_ARE_MALLOCS 1
#endif

static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* Heap held per server connection in the state of a held node between two
 * retries: handshake done, a request read, the 503 sent, the next read
 * pending. The clients are freed before measuring. */
static long idle_server_bytes(SSL_CTX *sctx, SSL_CTX *cctx, const config_upstream_t *up, bool release)
{
    enum { N = 64 };
    SSL *servers[N];
    size_t before = heap_in_use();
    for (int i = 0; i < N; i++) {
        link_t l = link_new(cctx, up, sctx);
        cr_assert(handshake(&l));
        cr_assert(exchange(&l));
        char buf[64];
        ERR_clear_error();
        cr_assert_eq(SSL_get_error(l.server, SSL_read(l.server, buf, sizeof buf)), SSL_ERROR_WANT_READ);
        if (release) {
            /* What conn.c's quiet sweep does to a connection between requests. */
            sockio_t io = {.ssl = l.server};
            cr_assert(sockio_release_buffers(&io));
        }
        SSL_free(l.client);
        servers[i] = l.server;
    }
    long per_conn = ((long)heap_in_use() - (long)before) / N;
    for (int i = 0; i < N; i++)
        SSL_free(servers[i]);
    return per_conn;
}

Test(tls, an_idle_connection_holds_no_record_buffers)
{
    if (!HEAP_STATS_ARE_MALLOCS)
        cr_skip_test("heap statistics do not see the sanitizer's allocations");
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *cctx = client_ctx(&up);
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa));
    SSL_CTX *always = server_ctx(server_cfg(&ecdsa));
    SSL_CTX_set_mode(always, SSL_MODE_RELEASE_BUFFERS);

    idle_server_bytes(sctx, cctx, &up, true);   /* first-use allocations */
    long released = idle_server_bytes(sctx, cctx, &up, true);
    long kept = idle_server_bytes(sctx, cctx, &up, false);
    long mode = idle_server_bytes(always, cctx, &up, false);
    cr_log_info("idle TLS 1.3 server connection: %ld bytes with its buffers given back, %ld with "
                "them kept, %ld with SSL_MODE_RELEASE_BUFFERS", released, kept, mode);
    /* Two record buffers of 16 KiB plus headroom each. */
    cr_expect_geq(kept - released, 32 * 1024, "saves only %ld bytes", kept - released);
    /* As little as the mode that frees them after every record. */
    cr_expect_leq(released, mode + 256, "%ld bytes given back vs %ld with the mode", released, mode);
    SSL_CTX_free(always);
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
}

/* --- client setup and checks --- */

Test(tls, upstream_ca_file_errors_name_the_file)
{
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s.missing", ecdsa.ca);
    config_upstream_t up = upstream_cfg(missing, "localhost");
    cr_expect_null(tls_client_ctx_new(&up, err, sizeof err));
    char want[sizeof missing + 64];
    snprintf(want, sizeof want, "tls: upstream ca_file %s: No such file or directory", missing);
    cr_expect_str_eq(err, want);

    up.ca_file = ecdsa.key;
    cr_expect_null(tls_client_ctx_new(&up, err, sizeof err));
    snprintf(want, sizeof want, "tls: upstream ca_file %s: no certificate or crl found", ecdsa.key);
    cr_expect_str_eq(err, want);
    cr_expect_eq(ERR_peek_error(), 0, "error queue left non-empty");
}

Test(tls, check_builds_what_is_enabled_and_reports_what_is_wrong)
{
    config_tls_server_t listener = server_cfg(&ecdsa);
    cr_expect_eq(tls_check_listener(&listener, err, sizeof err), 0, "%s", err);
    listener.key = rsa.key;
    cr_expect_eq(tls_check_listener(&listener, err, sizeof err), -1);
    cr_expect(strstr(err, "does not match certificate"), "got %s", err);
    listener.enabled = false;
    cr_expect_eq(tls_check_listener(&listener, err, sizeof err), 0);

    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    cr_expect_eq(tls_check_upstream(&up, err, sizeof err), 0, "%s", err);
    char too_long[300];
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    up.server_name = too_long;
    cr_expect_eq(tls_check_upstream(&up, err, sizeof err), -1);
    cr_expect(strstr(err, "cannot be sent as SNI"), "got %s", err);
    up.server_name = NULL;  /* and no address */
    cr_expect_eq(tls_check_upstream(&up, err, sizeof err), -1);
    cr_expect_str_eq(err, "tls: upstream: no server_name and no address to verify");
    up.tls = false;
    cr_expect_eq(tls_check_upstream(&up, err, sizeof err), 0);
}

/* sockio's own BIO, over a real loopback TCP connection: both ends in this
 * thread, non-blocking, every loop bounded. */
typedef struct tcp_link {
    sockio_t client, server;
} tcp_link_t;

static void tcp_pair(int *client_fd, int *server_fd)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0);
    cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
    *client_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert(connect(*client_fd, (struct sockaddr *)&a, sizeof a) == 0 || errno == EINPROGRESS);
    *server_fd = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    cr_assert(*server_fd >= 0);
    close(l);
    int one = 1;
    setsockopt(*server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(*client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void wait_fd(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    cr_assert_eq(poll(&p, 1, 2000), 1, "fd %d not ready in 2 s", fd);
}

/* In place: each end's BIO points at its sockio_t. */
static void tcp_link_init(tcp_link_t *link, bool tls, SSL_CTX *sctx, SSL_CTX *cctx, const config_upstream_t *up)
{
    *link = (tcp_link_t){.client = {.fd = -1}, .server = {.fd = -1}};
    tcp_link_t *l = link;
    tcp_pair(&l->client.fd, &l->server.fd);
    if (!tls)
        return;
    cr_assert_eq(sockio_attach_ssl(&l->server, SSL_new(sctx)), 0);
    cr_assert_eq(sockio_attach_ssl(&l->client, SSL_new(cctx)), 0);
    SSL_set_accept_state(l->server.ssl);
    SSL_set_connect_state(l->client.ssl);
    cr_assert_eq(tls_client_prepare(l->client.ssl, up), 0);
    int sd = 0, cd = 0;
    for (int i = 0; i < 64 && !(sd == 1 && cd == 1); i++) {
        if (cd != 1)
            cd = sockio_handshake(&l->client);
        if (sd != 1)
            sd = sockio_handshake(&l->server);
        cr_assert(cd != SOCKIO_ERROR && sd != SOCKIO_ERROR, "handshake failed");
        if (sd == SOCKIO_WANT_READ && cd != 1)
            continue;
        if (sd == SOCKIO_WANT_READ)
            wait_fd(l->server.fd, POLLIN);
    }
    cr_assert(sd == 1 && cd == 1, "handshake did not finish");
}

/* Reads exactly len bytes (the client may first see TLS 1.3 tickets). */
static void read_exactly(sockio_t *io, char *buf, size_t len)
{
    size_t got = 0;
    for (int i = 0; i < 64 && got < len; i++) {
        ssize_t n = sockio_read(io, buf + got, len - got);
        if (n > 0)
            got += (size_t)n;
        else if (n == SOCKIO_WANT_READ)
            wait_fd(io->fd, POLLIN);
        else
            cr_assert_fail("read failed: %zd", n);
    }
    cr_assert_eq(got, len);
}

static unsigned data_segments_out(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    cr_assert_eq(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    return ti.tcpi_data_segs_out;
}

/* Four 1000-byte writes, the first three with flags: data segments sent. */
static unsigned segments_for_four_writes(tcp_link_t *l, unsigned flags)
{
    char msg[4000], back[4000];
    memset(msg, 'x', sizeof msg);
    unsigned before = data_segments_out(l->server.fd);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(sockio_write(&l->server, msg + k * 1000, 1000, k < 3 ? flags : 0), 1000);
    unsigned segs = data_segments_out(l->server.fd) - before;
    read_exactly(&l->client, back, sizeof back);
    cr_assert(memcmp(back, msg, sizeof msg) == 0);
    return segs;
}

Test(tls, sockio_more_sends_a_batch_of_writes_as_one_segment)
{
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa)), *cctx = client_ctx(&up);
    for (int tls = 0; tls < 2; tls++) {
        tcp_link_t l;
        tcp_link_init(&l, tls, sctx, cctx, &up);
        unsigned pushed = segments_for_four_writes(&l, 0);
        unsigned batched = segments_for_four_writes(&l, SOCKIO_MORE);
        cr_expect_eq(batched, 1, "%s: %u segments for a batch", tls ? "tls" : "plain", batched);
        cr_expect_gt(pushed, 1, "%s: %u segments without SOCKIO_MORE", tls ? "tls" : "plain", pushed);
        sockio_close(&l.client);
        sockio_close(&l.server);
    }
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
}

Test(tls, sockio_tls_reads_an_end_without_close_notify_as_the_end)
{
    config_upstream_t up = upstream_cfg(ecdsa.ca, "localhost");
    SSL_CTX *sctx = server_ctx(server_cfg(&ecdsa)), *cctx = client_ctx(&up);
    tcp_link_t l;
    tcp_link_init(&l, true, sctx, cctx, &up);
    char buf[16];
    /* The client reads (tickets first), so its close is a FIN, not a reset. */
    cr_assert_eq(sockio_write(&l.server, "hello", 5, 0), 5);
    read_exactly(&l.client, buf, 5);
    cr_expect(memcmp(buf, "hello", 5) == 0);
    SSL_free(l.client.ssl);   /* gone without close_notify */
    l.client.ssl = NULL;
    sockio_close(&l.client);
    ssize_t n = SOCKIO_WANT_READ;
    for (int i = 0; i < 8 && n == SOCKIO_WANT_READ; i++) {
        wait_fd(l.server.fd, POLLIN);
        n = sockio_read(&l.server, buf, sizeof buf);
    }
    cr_expect_eq(n, 0, "an unexpected EOF read as %zd, not as the end", n);
    sockio_close(&l.server);
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
}
