#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "admin/client.h"
#include "conf/grammar.h"

#define ADMIN_CLIENT_TIMEOUT_S 5
#define ADMIN_CLIENT_MAX_ANSWER (4u << 20)

/* A unix socket path as the address to ask; its text is the path. */
static int admin_client_unix(const char *path, config_addr_t *out, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof sun.sun_path || len >= sizeof out->text) {
        snprintf(err, errlen, "%s: a unix socket path is at most %zu bytes", path, sizeof sun.sun_path - 1);
        return -1;
    }
    memcpy(sun.sun_path, path, len + 1);
    *out = (config_addr_t){.len = sizeof sun};
    memcpy(&out->ss, &sun, sizeof sun);
    memcpy(out->text, path, len + 1);
    return 0;
}

int admin_client_token(const char *token_file, const char *config_path, kube_token_t *out, bool *have,
                       char *err, size_t errlen)
{
    *have = false;
    config_t *cfg = NULL;
    if (!token_file && config_path) {
        if (!(cfg = config_load(config_path, err, errlen)))
            return -1;
        token_file = cfg->admin.token_file;
    }
    int rc = 0;
    if (token_file) {
        char why[256];
        if (kube_token_init(out, token_file) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else if (kube_token_refresh(out, why, sizeof why) < 0) {
            snprintf(err, errlen, "admin token: %s", why);
            kube_token_free(out);
            rc = -1;
        } else {
            *have = true;
        }
    }
    config_free(cfg);
    return rc;
}

int admin_client_addr(const char *admin_addr, const char *config_path, config_addr_t *out, char *err,
                      size_t errlen)
{
    /* An address never holds a '/': a path does, relative to the current
     * directory unless it starts with one. */
    if (admin_addr && strchr(admin_addr, '/')) {
        if (admin_addr[0] == '/')
            return admin_client_unix(admin_addr, out, err, errlen);
        char cwd[PATH_MAX], path[PATH_MAX + 2];
        if (!getcwd(cwd, sizeof cwd)) {
            snprintf(err, errlen, "--admin %s: a relative path, and the current directory is unknown: %s",
                     admin_addr, strerror(errno));
            return -1;
        }
        if (snprintf(path, sizeof path, "%s/%s", cwd, admin_addr) >= (int)sizeof path) {
            snprintf(err, errlen, "--admin %s: path too long", admin_addr);
            return -1;
        }
        return admin_client_unix(path, out, err, errlen);
    }
    if (admin_addr) {
        if (config_parse_addr(admin_addr, out) < 0) {
            snprintf(err, errlen, "--admin %s: expected IP:PORT (127.0.0.1:22625) or the path of the admin "
                     "socket, with a '/' (/run/skewgate/admin.sock, ./admin.sock)", admin_addr);
            return -1;
        }
        return 0;
    }
    if (!config_path)
        return config_parse_addr(ADMIN_CLIENT_DEFAULT_ADDR, out);
    config_t *cfg = config_load(config_path, err, errlen);
    if (!cfg)
        return -1;
    int rc = 0;
    if (cfg->admin.enabled && cfg->admin.socket) {
        rc = admin_client_unix(cfg->admin.socket, out, err, errlen);
    } else if (cfg->admin.enabled) {
        *out = cfg->admin.addr;
    } else {
        snprintf(err, errlen, "%s: admin.enabled is false: the gate has no admin listener", config_path);
        rc = -1;
    }
    config_free(cfg);
    return rc;
}

static int admin_client_send(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until the gate closes (the request said Connection: close). */
static char *admin_client_read_all(int fd, size_t *len)
{
    size_t cap = 4096, at = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - at < 2) {
            char *bigger = cap < ADMIN_CLIENT_MAX_ANSWER ? realloc(buf, cap * 2) : NULL;
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + at, cap - at - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (n == 0) {
            buf[at] = '\0';
            *len = at;
            return buf;
        }
        at += (size_t)n;
    }
    free(buf);
    return NULL;
}

static int admin_client_exchange(int fd, const config_addr_t *addr, const char *token, const char *method,
                                 const char *path, const char *form, char **body, char *err, size_t errlen)
{
    char head[512 + KUBE_TOKEN_MAX];
    size_t form_len = form ? strlen(form) : 0;
    /* Host is the address's text over TCP; a socket path is no host. */
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s%s%s"
                     "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n\r\n",
                     method, path, addr->ss.ss_family == AF_UNIX ? "localhost" : addr->text,
                     token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "", form_len);
    if (n < 0 || (size_t)n >= sizeof head) {
        explicit_bzero(head, sizeof head);
        snprintf(err, errlen, "request too long");
        return -1;
    }
    int sent = admin_client_send(fd, head, (size_t)n);
    explicit_bzero(head, sizeof head);
    if (sent < 0 || admin_client_send(fd, form ? form : "", form_len) < 0) {
        snprintf(err, errlen, "%s: send: %s", addr->text, strerror(errno));
        return -1;
    }
    size_t len;
    errno = 0;
    char *answer = admin_client_read_all(fd, &len);
    if (!answer) {
        snprintf(err, errlen, "%s: no answer: %s", addr->text, errno ? strerror(errno) : "too large");
        return -1;
    }
    int status;
    char *start = strstr(answer, "\r\n\r\n");
    if (sscanf(answer, "HTTP/1.%*1[01] %3d", &status) != 1 || !start) {
        snprintf(err, errlen, "%s: not an HTTP answer", addr->text);
        free(answer);
        return -1;
    }
    start += 4;
    memmove(answer, start, len - (size_t)(start - answer) + 1);
    *body = answer;
    return status;
}

int admin_client_request(const config_addr_t *addr, const char *method, const char *path, const char *form,
                         char **body, char *err, size_t errlen)
{
    return admin_client_request_auth(addr, NULL, method, path, form, body, err, errlen);
}

int admin_client_request_auth(const config_addr_t *addr, const char *token, const char *method, const char *path,
                              const char *form, char **body, char *err, size_t errlen)
{
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    struct timeval tv = {.tv_sec = ADMIN_CLIENT_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int status = -1;
    if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0)
        snprintf(err, errlen, "cannot reach the gate's admin listener at %s: %s", addr->text, strerror(errno));
    else
        status = admin_client_exchange(fd, addr, token, method, path, form, body, err, errlen);
    close(fd);
    return status;
}
