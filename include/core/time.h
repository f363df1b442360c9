/* time: RFC 3339 timestamps, the one parser and the one formatter. The
 * parser serves the override annotation's until= and skewgate verdict
 * --now; the formatter the verdict's since and an override's expiry. */
#ifndef SKEWGATE_TIME_H
#define SKEWGATE_TIME_H

#include <stddef.h>
#include <time.h>

/* Parses an RFC 3339 date-time (section 5.6), the whole string:
 *   YYYY-MM-DD "T" hh:mm:ss [ "." 1*DIGIT ] ( "Z" | "+hh:mm" | "-hh:mm" )
 *   e.g. 2026-12-01T10:00:00Z, 2026-12-01T12:00:00.250+02:00
 * - Exactly that many digits in each field; no spaces anywhere, so no
 *   space in place of the T.
 * - T and Z may be written t and z (RFC 3339 5.6, NOTE).
 * - The offset is required (a local time without one is refused); its
 *   hour is 00 to 23 and its minute 00 to 59; -00:00 is UTC.
 * - Year 0000 to 9999 of the proleptic Gregorian calendar, month 01 to 12,
 *   day 01 to the month's last (29 February only in a leap year), hour 00
 *   to 23 (24:00 is refused), minute 00 to 59.
 * - Second 00 to 60. POSIX time has no leap seconds and no table of them
 *   is kept, so second 60 is accepted at any minute and reads as the first
 *   second of the next one.
 * - Fractional seconds are dropped: the instant is rounded down to its
 *   second.
 * *out is seconds since 1970-01-01T00:00:00Z, negative before it; the
 * caller decides what range makes sense. 0, or -1 with *out untouched. */
int time_parse_rfc3339(const char *s, time_t *out);

/* Room for time_format_rfc3339's text, NUL included, for any time_t. */
#define TIME_RFC3339_LEN 40

/* t as UTC "YYYY-MM-DDThh:mm:ssZ", the year written with at least four
 * digits; "@SECONDS" for a t gmtime cannot convert. Returns buf. */
char *time_format_rfc3339(time_t t, char *buf, size_t len);

#endif
