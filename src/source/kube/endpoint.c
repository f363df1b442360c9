#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/kube/endpoint.h"

static int endpoint_fail(char *err, size_t errlen, const char *what, const char *value)
{
    snprintf(err, errlen, "kubernetes: %s \"%s\"", what, value ? value : "");
    return -1;
}

static bool valid_port(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 5 || strspn(p, "0123456789") != n)
        return false;
    long v = strtol(p, NULL, 10);
    return v > 0 && v <= 65535;
}

/* Host names and IP literals only: whatever reaches the Host field and
 * getaddrinfo must be plain. */
static bool valid_host(const char *h, size_t n)
{
    if (n == 0 || n >= KUBE_HOST_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == ':' || c == '%' || c == '_';
        if (!ok)
            return false;
    }
    return true;
}

static int endpoint_set(kube_endpoint_t *ep, const char *host, size_t hlen, const char *port)
{
    memcpy(ep->host, host, hlen);
    ep->host[hlen] = '\0';
    snprintf(ep->port, sizeof ep->port, "%s", port);
    bool v6 = memchr(host, ':', hlen) != NULL;
    snprintf(ep->authority, sizeof ep->authority, v6 ? "[%s]:%s" : "%s:%s", ep->host, ep->port);
    return 0;
}

static int endpoint_in_cluster(const char *host, const char *port, kube_endpoint_t *ep,
                               char *err, size_t errlen)
{
    if (!host || !*host || !port || !*port) {
        snprintf(err, errlen, "kubernetes: enforcement.kubernetes.server is \"\" (in-cluster) but "
                              "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set: "
                              "not running in a pod? Set server to https://HOST:PORT");
        return -1;
    }
    if (!valid_host(host, strlen(host)))
        return endpoint_fail(err, errlen, "invalid KUBERNETES_SERVICE_HOST", host);
    if (!valid_port(port))
        return endpoint_fail(err, errlen, "invalid KUBERNETES_SERVICE_PORT", port);
    ep->tls = true;
    return endpoint_set(ep, host, strlen(host), port);
}

int kube_endpoint_parse(const char *server, const char *service_host, const char *service_port,
                        kube_endpoint_t *ep, char *err, size_t errlen)
{
    *ep = (kube_endpoint_t){0};
    if (!server || !*server)
        return endpoint_in_cluster(service_host, service_port, ep, err, errlen);
    const char *rest;
    if (!strncmp(server, "https://", 8)) {
        ep->tls = true;
        rest = server + 8;
    } else if (!strncmp(server, "http://", 7)) {
        rest = server + 7;
    } else {
        return endpoint_fail(err, errlen, "server must start with https:// or http://", server);
    }
    size_t auth_len = strcspn(rest, "/");
    /* A path prefix would need every target rewritten; the API is at the root. */
    if (rest[auth_len] && strcmp(rest + auth_len, "/") != 0)
        return endpoint_fail(err, errlen, "server must not have a path", server);
    const char *host = rest, *port = ep->tls ? "443" : "80";
    size_t hlen;
    char portbuf[8] = "";
    const char *after;
    if (rest[0] == '[') {
        const char *close = memchr(rest, ']', auth_len);
        if (!close)
            return endpoint_fail(err, errlen, "unbalanced [ in server", server);
        host = rest + 1;
        hlen = (size_t)(close - host);
        after = close + 1;
    } else {
        const char *colon = memchr(rest, ':', auth_len);
        hlen = colon ? (size_t)(colon - rest) : auth_len;
        after = rest + hlen;
    }
    size_t after_len = auth_len - (size_t)(after - rest);
    if (after_len > 0) {
        if (after[0] != ':' || after_len - 1 >= sizeof portbuf)
            return endpoint_fail(err, errlen, "invalid port in server", server);
        memcpy(portbuf, after + 1, after_len - 1);
        port = portbuf;
    }
    if (!valid_host(host, hlen))
        return endpoint_fail(err, errlen, "invalid host in server", server);
    if (!valid_port(port))
        return endpoint_fail(err, errlen, "invalid port in server", server);
    return endpoint_set(ep, host, hlen, port);
}

/* RFC 3986 unreserved characters pass; everything else is %XX. */
static int append_escaped(char *buf, size_t len, size_t *at, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        size_t need = plain ? 1 : 3;
        if (*at + need >= len)
            return -1;
        if (plain) {
            buf[(*at)++] = (char)*p;
        } else {
            buf[(*at)++] = '%';
            buf[(*at)++] = hex[*p >> 4];
            buf[(*at)++] = hex[*p & 15];
        }
    }
    buf[*at] = '\0';
    return 0;
}

static int append_raw(char *buf, size_t len, size_t *at, const char *s)
{
    size_t n = strlen(s);
    if (*at + n >= len)
        return -1;
    memcpy(buf + *at, s, n + 1);
    *at += n;
    return 0;
}

/* PATH?[fieldSelector=SEL&][labelSelector=SEL&]: every target starts so;
 * each selector is escaped as a whole. */
static int collection_target(char *buf, size_t len, size_t *at, const kube_collection_t *c)
{
    if (append_raw(buf, len, at, c->path) < 0 || append_raw(buf, len, at, "?") < 0)
        return -1;
    if (c->field_selector && *c->field_selector &&
        (append_raw(buf, len, at, "fieldSelector=") < 0 ||
         append_escaped(buf, len, at, c->field_selector) < 0 || append_raw(buf, len, at, "&") < 0))
        return -1;
    if (c->label_selector && *c->label_selector &&
        (append_raw(buf, len, at, "labelSelector=") < 0 ||
         append_escaped(buf, len, at, c->label_selector) < 0 || append_raw(buf, len, at, "&") < 0))
        return -1;
    return 0;
}

/* Drops the '&' or '?' that the last parameter left. */
static void trim_separator(char *buf, size_t *at)
{
    if (*at > 0 && (buf[*at - 1] == '&' || buf[*at - 1] == '?'))
        buf[--*at] = '\0';
}

int kube_list_target(char *buf, size_t len, const kube_collection_t *c, const char *cont)
{
    size_t at = 0;
    char limit[32];
    snprintf(limit, sizeof limit, "limit=%u&", c->limit);
    if (collection_target(buf, len, &at, c) < 0 || (c->limit && append_raw(buf, len, &at, limit) < 0))
        return -1;
    if (cont && *cont &&
        (append_raw(buf, len, &at, "continue=") < 0 || append_escaped(buf, len, &at, cont) < 0))
        return -1;
    trim_separator(buf, &at);
    return 0;
}

int kube_watch_target(char *buf, size_t len, const kube_collection_t *c, const char *resource_version,
                      uint64_t timeout_s)
{
    size_t at = 0;
    char tail[64];
    snprintf(tail, sizeof tail, "&allowWatchBookmarks=true&timeoutSeconds=%llu",
             (unsigned long long)timeout_s);
    if (collection_target(buf, len, &at, c) < 0 ||
        append_raw(buf, len, &at, "watch=1&resourceVersion=") < 0 ||
        append_escaped(buf, len, &at, resource_version) < 0 || append_raw(buf, len, &at, tail) < 0)
        return -1;
    return 0;
}
