#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <string.h>

#include "core/cidr.h"

static struct sockaddr_storage ip(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(text, ':')) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, text, &in->sin_addr), 1);
    }
    return ss;
}

static bool matches(const char *cidr, const char *addr)
{
    cidr_t c;
    const char *why;
    cr_assert_eq(cidr_parse(cidr, &c, &why), 0, "%s", cidr);
    struct sockaddr_storage ss = ip(addr);
    return cidr_match(&c, &ss);
}

Test(cidr, prefixes_match_what_they_cover)
{
    cr_assert(matches("10.0.0.0/16", "10.0.255.1"));
    cr_assert_not(matches("10.0.0.0/16", "10.1.0.1"));
    cr_assert(matches("127.0.0.1/32", "127.0.0.1"));
    cr_assert_not(matches("127.0.0.1/32", "127.0.0.2"));
    cr_assert(matches("127.0.0.1", "127.0.0.1"));
    cr_assert(matches("0.0.0.0/0", "203.0.113.5"));
    cr_assert(matches("10.0.0.0/9", "10.127.1.1"));
    cr_assert_not(matches("10.0.0.0/9", "10.128.1.1"));
    cr_assert(matches("::1/128", "::1"));
    cr_assert_not(matches("::1/128", "::2"));
    cr_assert(matches("2001:db8::/32", "2001:db8:ffff::1"));
    cr_assert_not(matches("10.0.0.0/8", "::1"));
    cr_assert_not(matches("::/0", "10.0.0.1"));
    /* An IPv4-mapped peer is its IPv4 address. */
    cr_assert(matches("10.0.0.0/8", "::ffff:10.2.3.4"));
}

Test(cidr, bad_text_is_refused_with_a_reason)
{
    static const char *const bad[] = {"", "/8", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0.1/16",
                                      "10.0.0.0/016", "10.0.0.0/-1", "host.example/8", "10.0.0.0/8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cidr_t c;
        const char *why = NULL;
        cr_assert_eq(cidr_parse(bad[i], &c, &why), -1, "%s", bad[i]);
        cr_assert_not_null(why);
    }
}
