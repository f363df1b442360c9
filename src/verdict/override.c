/* The override annotation's grammar (DESIGN 3): admit|reject[;until=RFC3339]. */
#include <string.h>

#include "core/time.h"
#include "verdict/verdict.h"

int verdict_override_parse(const char *s, verdict_override_t *out)
{
    static const char until_key[] = "until=";
    verdict_override_t parsed = {.active = true};
    memset(out, 0, sizeof *out);
    if (!s)
        return -1;
    const char *semicolon = strchr(s, ';');
    size_t word_len = semicolon ? (size_t)(semicolon - s) : strlen(s);
    if (decision_parse_n(s, word_len, &parsed.decision) != 0)
        return -1;
    if (semicolon) {
        const char *arg = semicolon + 1;
        if (strncmp(arg, until_key, sizeof until_key - 1) != 0 ||
            time_parse_rfc3339(arg + sizeof until_key - 1, &parsed.until) != 0)
            return -1;
        /* until == 0 means "no expiry", and an instant at or before 1970
         * can only be a mistake that must not turn into a permanent
         * override. */
        if (parsed.until <= 0)
            return -1;
    }
    *out = parsed;
    return 0;
}
