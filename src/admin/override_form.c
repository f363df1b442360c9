#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/override_form.h"
#include "conf/grammar.h"
#include "core/text.h"

/* The value as quoted in a message: cut short and sanitized, as the user
 * typed it otherwise. */
static void override_form_quote(const char *s, char *out, size_t cap)
{
    text_copy(out, cap, s);
    if (strlen(s) >= cap - 1 && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

int override_form_duration(const char *s, bool capped, uint64_t *ms, char *why, size_t len)
{
    char v[48];
    override_form_quote(s, v, sizeof v);
    const char *rule;
    if (grammar_duration(s, ms, &rule) < 0) {
        if (s[0] == '-')
            snprintf(why, len, "\"%s\" is negative: an override lasts a positive duration (90s, 5m, 1h30m, 7d); "
                     "to end one, clear it", v);
        else if (capped && !strcmp(rule, "duration out of range"))
            snprintf(why, len, "\"%s\" is over the limit: at most " OVERRIDE_MAX_TEXT "; renew it before it "
                     "lapses, or use the cluster-wide annotation (skewgate override --cluster)", v);
        else
            snprintf(why, len, "\"%s\" is not a duration: %s%s", v, rule,
                     capped && !strncmp(rule, "expected", 8) ? "; at most 7d" : "");
        return -1;
    }
    if (*ms == 0) {
        snprintf(why, len, "\"%s\" is no time: an override lasts more than 0s; to end one, clear it", v);
        return -1;
    }
    if (capped && *ms > OVERRIDE_MAX_MS) {
        snprintf(why, len, "\"%s\" is over the limit: at most " OVERRIDE_MAX_TEXT "; renew it before it lapses, "
                 "or use the cluster-wide annotation (skewgate override --cluster)", v);
        return -1;
    }
    return 0;
}

int override_form_reason(const char *s, char *why, size_t len)
{
    size_t n = strlen(s);
    if (n == 0) {
        snprintf(why, len, "empty: say why in a few words, or leave it out");
        return -1;
    }
    if (n > OVERRIDE_REASON_MAX) {
        snprintf(why, len, "%zu bytes: at most %d", n, OVERRIDE_REASON_MAX);
        return -1;
    }
    char copy[OVERRIDE_REASON_MAX + 1];
    memcpy(copy, s, n + 1);
    text_sanitize(copy);
    if (strcmp(copy, s)) {
        snprintf(why, len, "holds a control character (a newline, a tab, an escape) or bytes that are not "
                 "UTF-8: one line of text");
        return -1;
    }
    return 0;
}
