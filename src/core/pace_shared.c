#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pace_shared.h"

void pace_shared_free(pace_shared_t *s)
{
    if (!s)
        return;
    free(s->joining);
    free(s->line);
    free(s);
}

static int joiner_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(addrset_key_t));
}

void pace_shared_sort(pace_shared_t *s)
{
    if (s->n_joining)
        qsort(s->joining, s->n_joining, sizeof *s->joining, joiner_cmp);
}

size_t pace_shared_parse_joining(const char *text, pace_line_entry_t *out, size_t cap, size_t *bad)
{
    size_t n = 0;
    *bad = 0;
    for (const char *p = text; p && *p && n < cap;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[256], addr[64], gate[PACE_GATE_LEN];
        long long at;
        if (len > 0 && len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            if (sscanf(line, "%63s %lld %63s", addr, &at, gate) == 3 && at > 0 &&
                addrset_key_parse(addr, &out[n].key) == 0) {
                out[n].admitted_wall = at;
                snprintf(out[n].gate, sizeof out[n].gate, "%s", gate);
                n++;
            } else {
                (*bad)++;
            }
        } else if (len) {
            (*bad)++;
        }
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

char *pace_shared_format_joining(const pace_line_entry_t *e, size_t n)
{
    size_t cap = n * (64 + PACE_GATE_LEN + 24) + 1, at = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char addr[64];
        addrset_key_text(&e[i].key, addr, sizeof addr);
        at += (size_t)snprintf(buf + at, cap - at, "%s %lld %s\n", addr, (long long)e[i].admitted_wall,
                               e[i].gate[0] ? e[i].gate : "-");
    }
    return buf;
}
