#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/time.h"

#define DEC_1_10H ((time_t)1796119200) /* 2026-12-01T10:00:00Z */

Test(time_rfc3339, parses_every_form_rfc3339_allows)
{
    static const struct {
        const char *s;
        time_t want;
    } cases[] = {
        {"2026-12-01T10:00:00Z", DEC_1_10H},
        {"2026-12-01t10:00:00z", DEC_1_10H},
        {"2026-12-01T12:00:00+02:00", DEC_1_10H},
        {"2026-12-01T05:30:00-04:30", DEC_1_10H},
        {"2026-12-01T10:00:00-00:00", DEC_1_10H},
        {"2026-12-01T00:01:00-09:59", DEC_1_10H},
        {"2026-12-02T09:59:00+23:59", DEC_1_10H},
        /* Fractions are dropped: rounded down to the second. */
        {"2026-12-01T10:00:00.5Z", DEC_1_10H},
        {"2026-12-01T10:00:00.999999999999Z", DEC_1_10H},
        {"2026-12-01T12:00:00.250+02:00", DEC_1_10H},
        {"1969-12-31T23:59:59.9Z", -1},
        /* Leap days, in a leap year and in a 400-year one. */
        {"2028-02-29T23:59:59Z", 1835481599},
        {"2000-02-29T12:00:00Z", 951825600},
        /* A leap second reads as the next minute's first second. */
        {"2016-12-31T23:59:60Z", 1483228800},
        {"2026-12-01T09:59:60Z", DEC_1_10H},
        /* The range: years 0000 to 9999; year 0 is a leap year. */
        {"1970-01-01T00:00:00Z", 0},
        {"1969-12-31T23:59:59Z", -1},
        {"0000-01-01T00:00:00Z", -62167219200},
        {"0000-03-01T00:00:00Z", -62162035200},
        {"9999-12-31T23:59:59Z", 253402300799},
        {"0000-01-01T00:00:00+23:59", -62167219200 - 86340},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        time_t t = 42;
        cr_expect_eq(time_parse_rfc3339(cases[i].s, &t), 0, "\"%s\" must parse", cases[i].s);
        cr_expect_eq(t, cases[i].want, "\"%s\": %lld, want %lld", cases[i].s, (long long)t,
                     (long long)cases[i].want);
    }
}

Test(time_rfc3339, refuses_everything_else)
{
    static const char *const bad[] = {
        "",
        /* calendar */
        "2026-00-01T10:00:00Z",
        "2026-13-01T10:00:00Z",
        "2026-12-00T10:00:00Z",
        "2026-12-32T10:00:00Z",
        "2026-04-31T10:00:00Z",
        "2026-02-29T10:00:00Z",
        "1900-02-29T10:00:00Z",
        "2100-02-29T10:00:00Z",
        "2026-02-30T00:00:00Z",
        /* clock */
        "2026-12-01T24:00:00Z",
        "2026-12-01T10:60:00Z",
        "2026-12-01T10:00:61Z",
        "2026-12-01T10:00:99Z",
        /* the offset: required, with a colon, in range */
        "2026-12-01T10:00:00",
        "2026-12-01T10:00:00.5",
        "2026-12-01T10:00:00+0200",
        "2026-12-01T10:00:00+02",
        "2026-12-01T10:00:00+2:00",
        "2026-12-01T10:00:00+24:00",
        "2026-12-01T10:00:00+02:60",
        "2026-12-01T10:00:00 Z",
        "2026-12-01T10:00:00UTC",
        /* garbage after */
        "2026-12-01T10:00:00Zjunk",
        "2026-12-01T10:00:00Z ",
        "2026-12-01T10:00:00Z\n",
        "2026-12-01T10:00:00+02:00:00",
        "2026-12-01T10:00:00ZZ",
        /* digits: exactly as many as each field has */
        "26-12-01T10:00:00Z",
        "02026-12-01T10:00:00Z",
        "+2026-12-01T10:00:00Z",
        "2026-1-01T10:00:00Z",
        "2026-12-1T10:00:00Z",
        "2026-12-01T1:00:00Z",
        "2026-12-01T10:0:00Z",
        "2026-12-01T10:00:0Z",
        "2026-12-01T10:00Z",
        "2026-12-01",
        /* separators and spaces */
        " 2026-12-01T10:00:00Z",
        "2026-12-01 10:00:00Z",
        "2026-12-01T 10:00:00Z",
        "2026-12- 1T10:00:00Z",
        "2026/12/01T10:00:00Z",
        "2026-12-01X10:00:00Z",
        "2026-12-01T10.00.00Z",
        /* fractions: a dot and at least one digit */
        "2026-12-01T10:00:00.Z",
        "2026-12-01T10:00:00,5Z",
        "2026-12-01T10:00:00.5.5Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        time_t t = 42;
        cr_expect_eq(time_parse_rfc3339(bad[i], &t), -1, "\"%s\" must not parse", bad[i]);
        cr_expect_eq(t, 42, "\"%s\": output touched on error", bad[i]);
    }
}

/* One date, at a time of day that moves with it, against glibc's timegm;
 * a day past the month's end must be refused (timegm carries it into the
 * next month). */
static void expect_as_timegm(int year, int month, int day)
{
    struct tm tm = {.tm_year = year - 1900, .tm_mon = month - 1, .tm_mday = day,
                    .tm_hour = (year + day) % 24, .tm_min = (year + month) % 60,
                    .tm_sec = day % 60};
    char s[32];
    snprintf(s, sizeof s, "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    time_t want = timegm(&tm), got = 0;
    bool real_day = tm.tm_mday == day;
    int rc = time_parse_rfc3339(s, &got);
    cr_assert(real_day == (rc == 0) && (rc != 0 || got == want), "%s: rc %d, %lld; timegm %lld",
              s, rc, (long long)got, (long long)want);
}

/* Every day of the years around the epoch and at both ends of the range,
 * and the end of February of every year. */
Test(time_rfc3339, agrees_with_timegm)
{
    static const int spans[][2] = {{0, 4}, {1600, 1601}, {1899, 2101}, {9996, 9999}};
    for (size_t i = 0; i < sizeof spans / sizeof *spans; i++)
        for (int year = spans[i][0]; year <= spans[i][1]; year++)
            for (int month = 1; month <= 12; month++)
                for (int day = 1; day <= 31; day++)
                    expect_as_timegm(year, month, day);
    for (int year = 0; year <= 9999; year++) {
        for (int day = 28; day <= 31; day++)
            expect_as_timegm(year, 2, day);
        expect_as_timegm(year, 3, 1);
    }
}

Test(time_rfc3339, formats_utc_with_four_digit_years)
{
    static const struct {
        time_t t;
        const char *want;
    } cases[] = {
        {DEC_1_10H, "2026-12-01T10:00:00Z"},
        {0, "1970-01-01T00:00:00Z"},
        {-1, "1969-12-31T23:59:59Z"},
        {1483228800, "2017-01-01T00:00:00Z"},
        {-62167219200, "0000-01-01T00:00:00Z"},
        {-30610224000, "1000-01-01T00:00:00Z"},
        {-30610224001, "0999-12-31T23:59:59Z"},
        {253402300799, "9999-12-31T23:59:59Z"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[TIME_RFC3339_LEN];
        cr_expect_str_eq(time_format_rfc3339(cases[i].t, buf, sizeof buf), cases[i].want);
        time_t back;
        cr_expect_eq(time_parse_rfc3339(buf, &back), 0, "%s", buf);
        cr_expect_eq(back, cases[i].t, "%s reads back", buf);
    }
}

Test(time_rfc3339, formats_what_gmtime_cannot_convert_as_seconds)
{
    char buf[TIME_RFC3339_LEN];
    /* Its year does not fit an int. */
    time_t huge = (time_t)1 << 62;
    char want[TIME_RFC3339_LEN];
    snprintf(want, sizeof want, "@%lld", (long long)huge);
    cr_expect_str_eq(time_format_rfc3339(huge, buf, sizeof buf), want);
}
