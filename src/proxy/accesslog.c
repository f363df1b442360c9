#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy/accesslog.h"
#include "core/clock.h"
#include "core/addr.h"
#include "http/query.h"
#include "policy/admission_token.h"

/* A field's room in the line, escaped: every field fits at its longest,
 * so a line is always whole JSON. A longer value is cut, and says so
 * ("..."): a 5 KiB query used to run the line out of room halfway
 * through a key, and the line went out as broken JSON with a NUL in it. */
enum {
    ACCESSLOG_SHORT = 64,           /* method, decision, reason */
    ACCESSLOG_PATH = 1024,
    ACCESSLOG_POOL = 256,
    ACCESSLOG_UA = 512,
    /* the fixed text (time, client, numbers, keys) is under 400 bytes */
    ACCESSLOG_LINE = 512 + 3 * ACCESSLOG_SHORT + ACCESSLOG_PATH + ACCESSLOG_POOL + ACCESSLOG_UA,
};

/* Appends s as the inside of a JSON string, at most max bytes of it
 * (then "..." when s was longer); never writes past cap. */
static size_t accesslog_escape(char *out, size_t at, size_t cap, const char *s, size_t len, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t end = at + max - 3 < cap ? at + max - 3 : cap;
    size_t i = 0;
    for (; i < len && at + 6 <= end; i++) {
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
    if (i < len && at + 3 <= cap) {
        memcpy(out + at, "...", 3);
        at += 3;
    }
    return at;
}

static const char *accesslog_time(accesslog_clock_t *clk, int *ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != clk->sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(clk->text, sizeof clk->text, "%Y-%m-%dT%H:%M:%S", &tm);
        clk->sec = ts.tv_sec;
    }
    *ms = (int)(ts.tv_nsec / 1000000);
    return clk->text;
}

static size_t accesslog_str(char *out, size_t at, size_t cap, const char *key, const char *s, size_t len,
                            size_t max)
{
    at += (size_t)snprintf(out + at, cap - at, ",\"%s\":\"", key);
    if (at >= cap)
        return cap;
    at = accesslog_escape(out, at, cap, s, len, max);
    if (at + 1 < cap)
        out[at++] = '"';
    return at;
}

/* The target as logged: never with a token parameter's value, in any
 * spelling Go reads as one, nor a pair Go refuses (it may hold one),
 * whatever the admission policy (no log line holds a token). Without
 * either, the target itself; else a copy into out[cap] without them, or,
 * too long to copy, the target without its query. */
static const char *accesslog_target(const char *target, size_t *len, char *out, size_t cap)
{
    if (!memchr(target, '?', *len) || !http_target_strips(target, *len, ADMISSION_TOKEN_PARAM))
        return target;
    size_t n = http_target_without_param(target, *len, ADMISSION_TOKEN_PARAM, out, cap);
    *len = n ? n : (size_t)((const char *)memchr(target, '?', *len) - target);
    return n ? out : target;
}

void accesslog_write(accesslog_clock_t *clk, const request_log_t *log, const char *head,
                     const struct sockaddr_storage *peer_addr, bool tls)
{
    char line[ACCESSLOG_LINE];
    size_t cap = sizeof line - 2, at;
    int ms;
    const char *when = accesslog_time(clk, &ms);
    char peer[ADDR_IP_TEXT_LEN];
    addr_ip_text(peer_addr, peer, sizeof peer);
    unsigned port = addr_port(peer_addr);
    uint64_t now_ns = clock_monotonic_ns();
    double dur = log->start_ns ? (double)(now_ns - log->start_ns) / 1e9 : 0.0;
    double up = (double)log->upstream_ns / 1e9;
    at = (size_t)snprintf(line, cap, "{\"time\":\"%s.%03dZ\",\"level\":\"info\",\"event\":\"access\",\"client\":\"%s\","
                          "\"client_port\":%u", when, ms, peer, port);
    const char *ib = head ? head : "";
    at = accesslog_str(line, at, cap, "method", ib + log->method_off, head ? log->method_len : 0,
                       ACCESSLOG_SHORT);
    char target_copy[1024];
    size_t target_len = head ? log->path_len : 0;
    const char *target = accesslog_target(ib + log->path_off, &target_len, target_copy, sizeof target_copy);
    at = accesslog_str(line, at, cap, "path", target, target_len, ACCESSLOG_PATH);
    at = accesslog_str(line, at, cap, "pool", log->pool, strlen(log->pool), ACCESSLOG_POOL);
    const char *decision = request_decision_name(log->decision);
    at = accesslog_str(line, at, cap, "decision", decision, strlen(decision), ACCESSLOG_SHORT);
    if (log->reason)
        at = accesslog_str(line, at, cap, "reason", log->reason, strlen(log->reason), ACCESSLOG_SHORT);
    if (log->pace_cause && at < cap)
        at += (size_t)snprintf(line + at, cap - at, ",\"pace_cause\":\"%s\",\"pace_place\":%u", log->pace_cause,
                               (unsigned)log->pace_place);
    if (at < cap)
        at += (size_t)snprintf(line + at, cap - at,
                               ",\"status\":%d,\"bytes\":%llu,\"duration\":%.6f,\"upstream_time\":%.6f,\"tls\":%s",
                               log->status, (unsigned long long)log->bytes, dur, up, tls ? "true" : "false");
    if (at > cap)
        at = cap;
    at = accesslog_str(line, at, cap, "user_agent", ib + log->ua_off, head ? log->ua_len : 0,
                       ACCESSLOG_UA);
    if (at > cap)
        at = cap;
    line[at++] = '}';
    line[at++] = '\n';
    ssize_t n = write(STDERR_FILENO, line, at);
    (void)n;
}
