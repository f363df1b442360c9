/* libFuzzer target: the override annotation, admit|reject[;until=RFC3339]
 * (verdict_override_parse), and the RFC 3339 reader under it. Checks: a
 * refusal clears the output; what is accepted has that exact shape, an
 * until after the epoch, and survives a round trip through the formatter
 * (decision_name and time_format_rfc3339) unchanged. */
// sources: src/verdict/override.c src/core/time.c src/core/skew.c src/core/version.c
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/time.h"
#include "verdict/verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = malloc(size + 1);            /* exact size: ASan sees over-reads */
    memcpy(s, data, size);
    s[size] = '\0';

    verdict_override_t o;
    memset(&o, 0x5a, sizeof o);
    int rc = verdict_override_parse(s, &o);
    if (rc == -1) {
        if (o.active || o.until != 0 || o.decision != DECISION_ADMIT)
            abort();
    } else if (rc == 0) {
        if (!o.active || (unsigned)o.decision > DECISION_REJECT || o.until < 0)
            abort();
        const char *word = decision_name(o.decision);
        size_t wl = strlen(word);
        if (strncmp(s, word, wl) != 0)
            abort();
        if (s[wl] == '\0') {
            if (o.until != 0)
                abort();
        } else if (strncmp(s + wl, ";until=", 7) != 0 || o.until <= 0) {
            abort();
        }
        /* Round trip through the formatter. */
        char again[64 + TIME_RFC3339_LEN], ts[TIME_RFC3339_LEN];
        if (o.until)
            snprintf(again, sizeof again, "%s;until=%s", word, time_format_rfc3339(o.until, ts, sizeof ts));
        else
            snprintf(again, sizeof again, "%s", word);
        verdict_override_t o2;
        if (verdict_override_parse(again, &o2) != 0 || o2.active != o.active || o2.decision != o.decision ||
            o2.until != o.until)
            abort();
    } else {
        abort();
    }
    if (verdict_override_parse(NULL, &o) != -1 || o.active)
        abort();

    /* The timestamp reader on its own: format(parse(x)) parses to the same
     * instant, and the formatted text is what the formatter promises. */
    time_t t = 12345;
    if (time_parse_rfc3339(s, &t) == 0) {
        char ts[TIME_RFC3339_LEN];
        time_format_rfc3339(t, ts, sizeof ts);
        if (!memchr(ts, '\0', sizeof ts))
            abort();
        time_t t2;
        if (ts[0] != '@' && (time_parse_rfc3339(ts, &t2) != 0 || t2 != t))
            abort();
    } else if (t != 12345) {
        abort();                        /* -1 leaves *out untouched */
    }
    free(s);
    return 0;
}
