#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "proxy/accesslog.h"
#include "core/clock.h"
#include "proxy/conn.h"
#include "proxy/worker.h"
#include "core/addr.h"

/* Appends s as the inside of a JSON string; never writes past cap. */
static size_t accesslog_escape(char *out, size_t at, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len && at + 6 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            out[at++] = '\\';
            out[at++] = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            /* Bytes, not characters: a client's bytes need not be UTF-8,
             * and the line must stay valid JSON. */
            memcpy(out + at, "\\u00", 4);
            out[at + 4] = hex[ch >> 4];
            out[at + 5] = hex[ch & 15];
            at += 6;
        } else {
            out[at++] = (char)ch;
        }
    }
    return at;
}

static const char *accesslog_time(worker_t *w, int *ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != w->log_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(w->log_time, sizeof w->log_time, "%Y-%m-%dT%H:%M:%S", &tm);
        w->log_sec = ts.tv_sec;
    }
    *ms = (int)(ts.tv_nsec / 1000000);
    return w->log_time;
}

static size_t accesslog_str(char *out, size_t at, size_t cap, const char *key, const char *s, size_t len)
{
    at += (size_t)snprintf(out + at, cap - at, ",\"%s\":\"", key);
    if (at >= cap)
        return cap;
    at = accesslog_escape(out, at, cap, s, len);
    if (at + 1 < cap)
        out[at++] = '"';
    return at;
}

void accesslog_write(conn_t *c)
{
    worker_t *w = c->w;
    char line[2048];
    size_t cap = sizeof line - 2, at;
    int ms;
    const char *when = accesslog_time(w, &ms);
    char peer[ADDR_IP_TEXT_LEN];
    addr_ip_text(&c->peer, peer, sizeof peer);
    unsigned port = addr_port(&c->peer);
    uint64_t now_ns = clock_monotonic_ns();
    double dur = c->log.start_ns ? (double)(now_ns - c->log.start_ns) / 1e9 : 0.0;
    double up = (double)c->log.upstream_ns / 1e9;
    at = (size_t)snprintf(line, cap, "{\"time\":\"%s.%03dZ\",\"level\":\"info\",\"event\":\"access\",\"client\":\"%s\","
                          "\"client_port\":%u", when, ms, peer, port);
    const char *ib = c->ibuf ? c->ibuf : "";
    at = accesslog_str(line, at, cap, "method", ib + c->log.method_off, c->ibuf ? c->log.method_len : 0);
    at = accesslog_str(line, at, cap, "path", ib + c->log.path_off, c->ibuf ? c->log.path_len : 0);
    at = accesslog_str(line, at, cap, "pool", c->log.pool, strlen(c->log.pool));
    const char *decision = c->log.decision ? c->log.decision : "error";
    at = accesslog_str(line, at, cap, "decision", decision, strlen(decision));
    if (c->log.reason)
        at = accesslog_str(line, at, cap, "reason", c->log.reason, strlen(c->log.reason));
    if (at < cap)
        at += (size_t)snprintf(line + at, cap - at,
                               ",\"status\":%d,\"bytes\":%llu,\"duration\":%.6f,\"upstream_time\":%.6f,\"tls\":%s",
                               c->log.status, (unsigned long long)c->log.bytes, dur, up, c->tls ? "true" : "false");
    if (at > cap)
        at = cap;
    at = accesslog_str(line, at, cap, "user_agent", ib + c->log.ua_off, c->ibuf ? c->log.ua_len : 0);
    if (at > cap)
        at = cap;
    line[at++] = '}';
    line[at++] = '\n';
    ssize_t n = write(STDERR_FILENO, line, at);
    (void)n;
}
