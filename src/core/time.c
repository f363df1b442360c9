#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/time.h"

/* Years up to 9999 and offsets fit a 64-bit time_t; a 32-bit one would wrap
 * after 2038. */
_Static_assert(sizeof(time_t) >= 8, "time_t must hold years up to 9999");

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

static int days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && is_leap_year(year) ? 29 : days[month - 1];
}

/* Leap years among 0 .. year-1, year >= 0 (year 0 is one). Counted from
 * year 0 so that every division is of a non-negative number. */
static int64_t leap_years_before(int year)
{
    return (year + 3) / 4 - (year + 99) / 100 + (year + 399) / 400;
}

static int64_t days_since_epoch(int year, int month, int day)
{
    int64_t days =
        365 * (int64_t)(year - 1970) + leap_years_before(year) - leap_years_before(1970);
    for (int m = 1; m < month; m++)
        days += days_in_month(year, m);
    return days + day - 1;
}

/* Exactly n digits at *p; advances past them. */
static int take_digits(const char **p, int n, int *out)
{
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i]))
            return -1;
        value = value * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = value;
    return 0;
}

/* upper, or its lower case: RFC 3339 lets T and Z be written t and z. */
static int take_char(const char **p, char upper)
{
    if (**p != upper && **p != (upper | 0x20))
        return -1;
    (*p)++;
    return 0;
}

/* "Z", or "+hh:mm" / "-hh:mm" as seconds east of UTC. */
static int take_offset(const char **p, int *seconds)
{
    if (**p != '+' && **p != '-') {
        *seconds = 0;
        return take_char(p, 'Z');
    }
    int sign = **p == '-' ? -1 : 1, hour, minute;
    (*p)++;
    if (take_digits(p, 2, &hour) || take_char(p, ':') || take_digits(p, 2, &minute) ||
        hour > 23 || minute > 59)
        return -1;
    *seconds = sign * (hour * 3600 + minute * 60);
    return 0;
}

int time_parse_rfc3339(const char *s, time_t *out)
{
    const char *p = s;
    int year, month, day, hour, minute, second, offset;
    if (take_digits(&p, 4, &year) || take_char(&p, '-') || take_digits(&p, 2, &month) ||
        take_char(&p, '-') || take_digits(&p, 2, &day) || take_char(&p, 'T') ||
        take_digits(&p, 2, &hour) || take_char(&p, ':') || take_digits(&p, 2, &minute) ||
        take_char(&p, ':') || take_digits(&p, 2, &second))
        return -1;
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return -1;
        while (is_digit(*p))
            p++;
    }
    if (take_offset(&p, &offset) || *p != '\0')
        return -1;
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 60)
        return -1;
    *out = (time_t)(days_since_epoch(year, month, day) * 86400 + hour * 3600 + minute * 60 +
                    second - offset);
    return 0;
}

char *time_format_rfc3339(time_t t, char *buf, size_t len)
{
    struct tm tm;
    if (gmtime_r(&t, &tm))
        snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    else
        snprintf(buf, len, "@%lld", (long long)t);
    return buf;
}
