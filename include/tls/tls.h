/* tls: builds the OpenSSL contexts of the client-facing listeners and of the
 * upstream MCS connections. Nothing here does I/O or keeps global state;
 * errors are "tls: ..." messages naming the file or setting and OpenSSL's
 * reason, and every function leaves the thread's OpenSSL error queue empty.
 *
 * A context is read-only once built: share one per listener (and one for the
 * upstream) across all workers. Sharing the server context is what makes
 * session tickets resume at all, since the ticket keys live in it and
 * SO_REUSEPORT lands a client's next connection on any worker. SSL_new()
 * takes its own reference, so a context swapped out on reload can be freed
 * once no worker will call SSL_new() on it again; live connections keep it.
 *
 * Both contexts enable SSL_MODE_ENABLE_PARTIAL_WRITE and
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER: SSL_write() returns after each full
 * record, and after SSL_ERROR_WANT_WRITE/WANT_READ it must be called again
 * with the same bytes at the front of the buffer (the address may change,
 * the length may grow but not shrink). Drain the source by exactly what
 * SSL_write() returned, never before. Either call can also want the other
 * direction (SSL_read WANT_WRITE, SSL_write WANT_READ, e.g. a TLS 1.3
 * KeyUpdate). Empty the thread's error queue (ERR_clear_error) before each
 * call whose result goes to SSL_get_error(), or a stale entry turns a
 * WANT_READ into SSL_ERROR_SSL. An EOF without close_notify reads as
 * SSL_ERROR_ZERO_RETURN (SSL_OP_IGNORE_UNEXPECTED_EOF): the HTTP framing
 * must tell a cut body from a finished one. OpenSSL's socket BIO writes
 * with plain write(2), so the process must ignore SIGPIPE. */
#ifndef SKEWGATE_TLS_H
#define SKEWGATE_TLS_H

#include <stddef.h>
#include <openssl/ssl.h>

#include "conf/config.h"

/* Server context for a listener: cfg->certificate (PEM chain, leaf first)
 * and cfg->key (unencrypted PEM, RSA or ECDSA). min_version 0 means TLS 1.2;
 * NULL ciphers/ciphersuites/groups mean OpenShift's Intermediate profile,
 * CONFIG_TLS_INTERMEDIATE_* (conf/config.h), as in a loaded config. Selects
 * ALPN "http/1.1" when offered and otherwise proceeds without ALPN.
 * Stateless session tickets unless session_tickets is false; no server-side
 * session cache (see tls.c). NULL with a message in err on failure. */
SSL_CTX *tls_server_ctx_new(const config_tls_server_t *cfg, char *err, size_t errlen);

/* Client context for the upstream MCS: TLS 1.2 minimum, the peer verified
 * against up->ca_file (else the system trust store) unless
 * up->insecure_skip_verify, ALPN "http/1.1" offered. No session is
 * resumed: every new upstream connection makes a full handshake, and the
 * upstream's keep-alive pool is what spares them. */
SSL_CTX *tls_client_ctx_new(const config_upstream_t *up, char *err, size_t errlen);

/* Per-connection client setup, after SSL_new() and before connecting: SNI
 * from up->server_name when it is a DNS name (never for an IP literal), and
 * the name or IP the certificate must match (unless insecure_skip_verify).
 * With no server_name, the IP of up->addr is verified. 0, or -1 if the name
 * cannot be used (tls_check_upstream reports why). */
int tls_client_prepare(SSL *ssl, const config_upstream_t *up);

/* Client context for the Kubernetes API server: as the upstream's, with
 * the peer verified against ca_file (the service account's ca.crt) unless
 * insecure. NULL with a message in err on failure. */
SSL_CTX *tls_api_ctx_new(const char *ca_file, bool insecure, char *err, size_t errlen);

/* The same, trusting only the PEM certificates in pem[0..len) (a
 * kubeconfig's certificate-authority-data, decoded). NULL with err when
 * it holds none. */
SSL_CTX *tls_api_ctx_new_pem(const char *pem, size_t len, bool insecure, char *err, size_t errlen);

/* Per-connection setup for the API server: SNI when host is a DNS name,
 * and the name or IP its certificate must match (unless insecure). 0, or
 * -1 and err. */
int tls_api_prepare(SSL *ssl, const char *host, bool insecure, char *err, size_t errlen);

/* For `skewgate check`: build (and free) the context, as run would. 0 when
 * it builds or TLS is off for it (cfg->enabled, up->tls), else -1 and err. */
int tls_check_listener(const config_tls_server_t *cfg, char *err, size_t errlen);
int tls_check_upstream(const config_upstream_t *up, char *err, size_t errlen);

#endif
