#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tls/tls.h"
#include "core/addr.h"

/* Non-blocking sockets with buffers that move: see tls.h. RELEASE_BUFFERS
 * frees the two ~17 KiB record buffers whenever they are empty, which is
 * most of the life of a held node's keep-alive connection; re-allocating
 * one per record while streaming a body costs far less than its AEAD. */
#define TLS_IO_MODES (SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | \
                      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)

/* HTTP framing (Content-Length) already tells a complete message from a cut
 * one, and many clients close without close_notify: an EOF is not an error
 * here. Renegotiation is a CPU lever for clients and HTTP/1.1 needs none. */
#define TLS_COMMON_OPTIONS (SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION)

static const unsigned char tls_alpn_http11[] = "\x08http/1.1";

/* OpenSSL's reason for the earliest queued error: that is the cause, and
 * the later ones are its callers wrapping it ("PEM lib", "system lib"). */
static void tls_queued_reason(char *buf, size_t len)
{
    const char *data = NULL;
    int flags = 0;
    unsigned long e = ERR_peek_error_data(&data, &flags);
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    char sys[128];
    if (!e)
        snprintf(buf, len, "unknown OpenSSL error");
    else if (ERR_SYSTEM_ERROR(e))
        snprintf(buf, len, "%s", strerror_r(ERR_GET_REASON(e), sys, sizeof sys));
    else if (!reason)
        ERR_error_string_n(e, buf, len);
    else if ((flags & ERR_TXT_STRING) && data && *data)
        snprintf(buf, len, "%s (%s)", reason, data);
    else
        snprintf(buf, len, "%s", reason);
}

/* "<what>: <OpenSSL's reason>" */
__attribute__((format(printf, 3, 4)))
static void tls_fail_openssl(char *err, size_t errlen, const char *fmt, ...)
{
    char what[1024], reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tls_queued_reason(reason, sizeof reason);
    if (err)
        snprintf(err, errlen, "%s: %s", what, reason);
    ERR_clear_error();
}

/* A message that says it all; whatever OpenSSL queued only repeats it. */
__attribute__((format(printf, 3, 4)))
static void tls_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    ERR_clear_error();
}

/* Never prompt on a terminal for a key passphrase (OpenSSL's default):
 * a daemon would hang. Records that one was wanted, for the message. */
static int tls_refuse_passphrase(char *buf, int size, int rwflag, void *asked)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    if (asked)
        *(bool *)asked = true;
    return -1;
}

static bool tls_load_identity(SSL_CTX *ctx, const config_tls_server_t *cfg,
                              char *err, size_t errlen)
{
    if (!cfg->certificate || !*cfg->certificate) {
        tls_fail(err, errlen, "tls: no certificate file configured");
        return false;
    }
    if (!cfg->key || !*cfg->key) {
        tls_fail(err, errlen, "tls: no key file configured");
        return false;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->certificate) != 1) {
        tls_fail_openssl(err, errlen, "tls: certificate %s", cfg->certificate);
        return false;
    }

    bool passphrase_asked = false;
    SSL_CTX_set_default_passwd_cb(ctx, tls_refuse_passphrase);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, &passphrase_asked);
    int loaded = SSL_CTX_use_PrivateKey_file(ctx, cfg->key, SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    if (loaded != 1) {
        unsigned long e = ERR_peek_error();
        if (passphrase_asked)
            tls_fail(err, errlen, "tls: key %s is encrypted; an unencrypted PEM key is required",
                     cfg->key);
        else if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
            tls_fail(err, errlen, "tls: key %s does not match certificate %s",
                     cfg->key, cfg->certificate);
        else
            tls_fail_openssl(err, errlen, "tls: key %s", cfg->key);
        return false;
    }
    /* A key of another type than the certificate loads into its own slot
     * without complaint; only this check catches it. */
    if (SSL_CTX_check_private_key(ctx) != 1) {
        tls_fail(err, errlen, "tls: key %s does not match certificate %s",
                 cfg->key, cfg->certificate);
        return false;
    }
    return true;
}

/* OpenSSL skips TLS 1.3 suite names it does not know, so a typo would
 * silently drop a suite, or TLS 1.3 altogether. Returns how many were named
 * (all known), or -1. */
static int tls_check_ciphersuites(SSL_CTX *ctx, const char *suites, char *err, size_t errlen)
{
    STACK_OF(SSL_CIPHER) *enabled = SSL_CTX_get_ciphers(ctx);
    int named = 0;
    for (const char *p = suites; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0) {
            bool known = false;
            for (int i = 0; i < sk_SSL_CIPHER_num(enabled) && !known; i++) {
                const SSL_CIPHER *c = sk_SSL_CIPHER_value(enabled, i);
                const char *name = SSL_CIPHER_get_name(c);
                known = SSL_CIPHER_get_kx_nid(c) == NID_kx_any &&
                        strlen(name) == len && memcmp(name, p, len) == 0;
            }
            if (!known) {
                tls_fail(err, errlen, "tls: ciphersuites \"%s\": unknown TLS 1.3 ciphersuite \"%.*s\"",
                         suites, (int)len, p);
                return -1;
            }
            named++;
        }
        p += len + (p[len] == ':');
    }
    return named;
}

static bool tls_set_algorithms(SSL_CTX *ctx, const config_tls_server_t *cfg, int min_version,
                               char *err, size_t errlen)
{
    const char *ciphers = cfg->ciphers ? cfg->ciphers : CONFIG_TLS_INTERMEDIATE_CIPHERS;
    const char *suites = cfg->ciphersuites ? cfg->ciphersuites : CONFIG_TLS_INTERMEDIATE_CIPHERSUITES;
    const char *groups = cfg->groups ? cfg->groups : CONFIG_TLS_INTERMEDIATE_GROUPS;

    if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
        tls_fail_openssl(err, errlen, "tls: ciphers \"%s\"", ciphers);
        return false;
    }
    if (SSL_CTX_set_ciphersuites(ctx, suites) != 1) {
        tls_fail_openssl(err, errlen, "tls: ciphersuites \"%s\"", suites);
        return false;
    }
    int named = tls_check_ciphersuites(ctx, suites, err, errlen);
    if (named < 0)
        return false;
    /* An empty list turns TLS 1.3 off, unless it is all that is allowed.
     * OpenSSL 3.0 would still pick TLS 1.3 for a client offering it and
     * then fail for want of a suite, so the maximum says it too. */
    if (named == 0) {
        if (min_version == TLS1_3_VERSION) {
            tls_fail(err, errlen, "tls: no TLS 1.3 ciphersuites but the minimum version is TLS 1.3");
            return false;
        }
        if (SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION) != 1) {
            tls_fail_openssl(err, errlen, "tls: maximum version TLS 1.2");
            return false;
        }
    }
    if (SSL_CTX_set1_groups_list(ctx, groups) != 1) {
        tls_fail_openssl(err, errlen, "tls: groups \"%s\"", groups);
        return false;
    }
    return true;
}

/* HTTP/2 is never offered: a client that offers only other protocols gets
 * no ALPN at all (not a fatal alert) and speaks HTTP/1.1 as if it had sent
 * none. The list was checked well-formed by OpenSSL; the bound is cheap. */
static int tls_select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                             const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    const unsigned int want_len = sizeof tls_alpn_http11 - 2;
    const unsigned char *want = tls_alpn_http11 + 1;
    for (unsigned int i = 0; i < inlen;) {
        unsigned int len = in[i];
        if (len > inlen - i - 1)
            break;
        if (len == want_len && memcmp(in + i + 1, want, want_len) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)len;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

SSL_CTX *tls_server_ctx_new(const config_tls_server_t *cfg, char *err, size_t errlen)
{
    ERR_clear_error();
    int min_version = cfg->min_version ? cfg->min_version : TLS1_2_VERSION;
    if (min_version != TLS1_2_VERSION && min_version != TLS1_3_VERSION) {
        tls_fail(err, errlen, "tls: minimum version 0x%04x: only TLS 1.2 and TLS 1.3 are allowed",
                 (unsigned)min_version);
        return NULL;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        tls_fail_openssl(err, errlen, "tls: cannot create a server context");
        return NULL;
    }
    if (!tls_load_identity(ctx, cfg, err, errlen) ||
        !tls_set_algorithms(ctx, cfg, min_version, err, errlen))
        goto fail;
    if (SSL_CTX_set_min_proto_version(ctx, min_version) != 1) {
        tls_fail_openssl(err, errlen, "tls: minimum version 0x%04x", (unsigned)min_version);
        goto fail;
    }

    SSL_CTX_set_options(ctx, TLS_COMMON_OPTIONS | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Without SSL_MODE_RELEASE_BUFFERS: that mode frees the 17 KiB read
     * and write buffers after every record and allocates them again for
     * the next (about 900 instructions of malloc and free per held TLS
     * request, callgrind S1t). A client connection keeps them while it
     * asks again at once, and conn.c gives them back once it has been
     * quiet for CONN_QUIET_MS (sockio_release_buffers), so an idle
     * connection holds none, as before. */
    SSL_CTX_set_mode(ctx, TLS_IO_MODES & ~(long)SSL_MODE_RELEASE_BUFFERS);
    /* One read(2) takes what the socket has, several records at once,
     * instead of a record header and then its body: half the reads. Our
     * readers loop until WANT_READ or ask SSL_has_pending (sockio). */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* No server-side session cache. Stateless tickets resume TLS 1.2 and
     * 1.3 sessions with no server memory; a cache would add a context-wide
     * lock to every full handshake across the workers and hold thousands of
     * sessions for nothing, since Ignition (Go, no ClientSessionCache) never
     * resumes. With tickets off there is no resumption at all, and TLS 1.3
     * sends no ticket (SSL_OP_NO_TICKET alone would switch it to stateful
     * tickets that only a cache could honour). */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (!cfg->session_tickets) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    SSL_CTX_set_alpn_select_cb(ctx, tls_select_http11, NULL);
    ERR_clear_error();
    return ctx;

fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/* A client context verifying its peer against ca_file (else the system
 * trust store) unless insecure; what names the peer in messages. */
static SSL_CTX *tls_client_ctx(const char *ca_file, bool insecure, const char *what,
                               char *err, size_t errlen)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        tls_fail_openssl(err, errlen, "tls: cannot create a client context");
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        tls_fail_openssl(err, errlen, "tls: %s minimum version", what);
        goto fail;
    }
    /* A CA file that is named is loaded even when verification is off, so
     * that `skewgate check` reports a wrong path before anyone relies on it. */
    if (ca_file && *ca_file) {
        if (SSL_CTX_load_verify_file(ctx, ca_file) != 1) {
            tls_fail_openssl(err, errlen, "tls: %s ca_file %s", what, ca_file);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        tls_fail_openssl(err, errlen, "tls: %s: system trust store", what);
        goto fail;
    }
    SSL_CTX_set_verify(ctx, insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    /* SSL_CTX_set_alpn_protos returns 0 on success. */
    if (SSL_CTX_set_alpn_protos(ctx, tls_alpn_http11, sizeof tls_alpn_http11 - 1) != 0) {
        tls_fail_openssl(err, errlen, "tls: %s ALPN", what);
        goto fail;
    }
    SSL_CTX_set_options(ctx, TLS_COMMON_OPTIONS);
    SSL_CTX_set_mode(ctx, TLS_IO_MODES);
    /* One read(2) takes what the socket has, several records at once,
     * instead of a record header and then its body: half the reads. Our
     * readers loop until WANT_READ or ask SSL_has_pending (sockio). */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* OpenSSL never looks a client session up in its own cache and nothing
     * here resumes one (tls.h), so storing them would only hold memory. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    ERR_clear_error();
    return ctx;

fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *tls_client_ctx_new(const config_upstream_t *up, char *err, size_t errlen)
{
    return tls_client_ctx(up->ca_file, up->insecure_skip_verify, "upstream", err, errlen);
}

SSL_CTX *tls_api_ctx_new(const char *ca_file, bool insecure, char *err, size_t errlen)
{
    return tls_client_ctx(ca_file, insecure, "kubernetes", err, errlen);
}

SSL_CTX *tls_api_ctx_new_pem(const char *pem, size_t len, bool insecure, char *err, size_t errlen)
{
    SSL_CTX *ctx = tls_client_ctx(NULL, insecure, "kubernetes", err, errlen);
    X509_STORE *store = ctx ? X509_STORE_new() : NULL;
    BIO *bio = store && len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    int n = 0;
    for (X509 *x; bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)); X509_free(x))
        n += X509_STORE_add_cert(store, x) == 1;
    /* The loop ends on the PEM reader's "no start line": not an error. */
    ERR_clear_error();
    BIO_free(bio);
    if (!ctx || n == 0) {
        if (ctx)
            snprintf(err, errlen, "tls: kubernetes CA data: no PEM certificate in it");
        X509_STORE_free(store);
        SSL_CTX_free(ctx);
        return NULL;
    }
    /* Only these CAs, as kubectl trusts them: the store replaces the
     * system's (SSL_CTX_set_cert_store frees the old one). */
    SSL_CTX_set_cert_store(ctx, store);
    return ctx;
}

static bool tls_is_ip_literal(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

/* The host part of the upstream address, for when no server_name is set. */
static bool tls_addr_host(const config_addr_t *addr, char *buf, size_t len)
{
    return addr_ip_text(&addr->ss, buf, len) > 0;
}

/* SNI for a DNS name (never for an IP literal) and the name or IP the
 * peer's certificate must match, unless insecure. */
static int tls_prepare_name(SSL *ssl, const char *name, bool insecure, const char *what,
                            char *err, size_t errlen)
{
    bool is_ip = tls_is_ip_literal(name);
    /* RFC 6066 allows only host names in SNI, never addresses. */
    if (!is_ip && SSL_set_tlsext_host_name(ssl, name) != 1) {
        tls_fail_openssl(err, errlen, "tls: %s server_name \"%s\" cannot be sent as SNI", what, name);
        return -1;
    }
    if (insecure)
        return 0;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    int ok;
    if (is_ip) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(param, name);
    } else {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set1_host(ssl, name);
    }
    if (ok != 1) {
        tls_fail_openssl(err, errlen, "tls: %s server_name \"%s\" cannot be verified", what, name);
        return -1;
    }
    return 0;
}

static int tls_prepare(SSL *ssl, const config_upstream_t *up, char *err, size_t errlen)
{
    char addr_host[INET6_ADDRSTRLEN];
    const char *name = up->server_name;
    if (!name || !*name) {
        if (!tls_addr_host(&up->addr, addr_host, sizeof addr_host)) {
            if (up->insecure_skip_verify)
                return 0;
            tls_fail(err, errlen, "tls: upstream: no server_name and no address to verify");
            return -1;
        }
        name = addr_host;
    }
    return tls_prepare_name(ssl, name, up->insecure_skip_verify, "upstream", err, errlen);
}

int tls_api_prepare(SSL *ssl, const char *host, bool insecure, char *err, size_t errlen)
{
    return tls_prepare_name(ssl, host, insecure, "kubernetes", err, errlen);
}

int tls_client_prepare(SSL *ssl, const config_upstream_t *up)
{
    return tls_prepare(ssl, up, NULL, 0);
}

int tls_check_listener(const config_tls_server_t *cfg, char *err, size_t errlen)
{
    if (!cfg->enabled)
        return 0;
    SSL_CTX *ctx = tls_server_ctx_new(cfg, err, errlen);
    if (!ctx)
        return -1;
    SSL_CTX_free(ctx);
    return 0;
}

int tls_check_upstream(const config_upstream_t *up, char *err, size_t errlen)
{
    if (!up->tls)
        return 0;
    SSL_CTX *ctx = tls_client_ctx_new(up, err, errlen);
    if (!ctx)
        return -1;
    int rc = -1;
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        tls_fail_openssl(err, errlen, "tls: upstream: cannot create a connection");
    else
        rc = tls_prepare(ssl, up, err, errlen);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return rc;
}
