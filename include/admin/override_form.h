/* override_form: the rules of a local override's fields, shared by the
 * admin API's POST /override (for=, reason=) and `skewgate override`
 * (--for, --reason), so that both refuse the same values with the same
 * words: the value, then the rule it broke. */
#ifndef SKEWGATE_ADMIN_OVERRIDE_FORM_H
#define SKEWGATE_ADMIN_OVERRIDE_FORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest a local override may last: one that outlives the incident
 * it was set for is forgotten, and a gate that admits or holds against
 * the cluster's verdict for months is a misconfiguration. Longer needs a
 * deliberate renewal (or the cluster-wide annotation, which has no cap). */
#define OVERRIDE_MAX_MS (7ull * 24 * 3600 * 1000)
#define OVERRIDE_MAX_TEXT "7d (168h)"

/* The longest reason, in bytes. */
#define OVERRIDE_REASON_MAX 200

/* A duration of the configuration's grammar (conf/grammar.h: 90s, 5m,
 * 1h30m, 7d), above 0 and, capped (a local override; the cluster-wide
 * annotation has no cap), at most OVERRIDE_MAX_MS. 0, or -1 with why:
 * "\"VALUE\" RULE", e.g. "\"10d\" is over the limit: at most 7d (168h)...". */
int override_form_duration(const char *s, bool capped, uint64_t *ms, char *why, size_t len);

/* A reason: 1..OVERRIDE_REASON_MAX bytes of UTF-8 text without control
 * characters (one line, safe in a log and a terminal). 0, or -1 with why
 * (which does not echo it: what is wrong with it may be a terminal escape). */
int override_form_reason(const char *s, char *why, size_t len);

#endif
