/* Path decoding and cleaning as Go's ServeMux reads paths; the gate's
 * prefix match and pool name; the character table behind the parsers. */
#include <criterion/criterion.h>
#include <string.h>

#include "http/path.h"

static char out[512];
static size_t outlen;

static int norm(const char *raw)
{
    return http_path_normalize(raw, strlen(raw), out, sizeof out, &outlen);
}

/* raw -> what Go's cleanPath(decoded) gives, which the mux serves. */
static const struct { const char *raw, *clean; } CLEAN[] = {
    {"/config/worker", "/config/worker"},
    {"/config/master", "/config/master"},
    {"/config//worker", "/config/worker"},
    {"//config///worker", "/config/worker"},
    {"/config/./worker", "/config/worker"},
    {"/config/../config/worker", "/config/worker"},
    {"/x/y/../../config/worker", "/config/worker"},
    {"/config/worker/", "/config/worker/"},
    {"/config/worker//", "/config/worker/"},
    {"/config/worker/.", "/config/worker"},
    {"/config/worker/./", "/config/worker/"},
    {"/config/worker/..", "/config"},
    {"/config/worker/../", "/config/"},
    {"/config/..", "/"},
    {"/config/../", "/"},
    {"/..", "/"},
    {"/../..//config/worker", "/config/worker"},
    {"/.", "/"},
    {"/", "/"},
    {"//", "/"},
    {"", "/"},
    {"config/worker", "/config/worker"},
    {"/%63onfig/worker", "/config/worker"},
    /* Already clean (copied as is), or nearly so (the long way). */
    {"/a.b/c..d/e.", "/a.b/c..d/e."},
    {"/a/.b/..c/", "/a/.b/..c/"},
    {"/a/b.", "/a/b."},
    {"/config/worker-1.x_y~z!$&'()*+,;=:@", "/config/worker-1.x_y~z!$&'()*+,;=:@"},
    {"/%63%6F%6e%66ig/%77orker", "/config/worker"},
    {"/CONFIG/worker", "/CONFIG/worker"},
    {"/config/...", "/config/..."},
    {"/config/..a/b", "/config/..a/b"},
    {"/config/.a", "/config/.a"},
    {"/config/a.", "/config/a."},
    {"/config/worker?", "/config/worker?"},   /* the query is split off before */
    {"/config/w%3Fx", "/config/w?x"},
    {"/config/w%25x", "/config/w%x"},
    {"/config/w+x", "/config/w+x"},
    {"/config/%C3%A9", "/config/\xc3\xa9"},
    {"/a/b/c/../../../../d", "/d"},
};

Test(http_path, clean_table)
{
    for (size_t i = 0; i < sizeof CLEAN / sizeof CLEAN[0]; i++) {
        int rc = norm(CLEAN[i].raw);
        cr_assert_eq(rc, HTTP_PATH_OK, "%s: %s", CLEAN[i].raw, http_path_strerror(rc));
        cr_expect(outlen == strlen(CLEAN[i].clean) && memcmp(out, CLEAN[i].clean, outlen) == 0,
                  "%s -> %.*s, want %s", CLEAN[i].raw, (int)outlen, out, CLEAN[i].clean);
    }
}

Test(http_path, invalid_escapes)
{
    static const char *const bad[] = {"/config/%zz", "/config/%4", "/config/%", "/%g0",
                                      "/config/%%41", "/config/%4 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(norm(bad[i]), HTTP_PATH_BAD_ESCAPE, "%s", bad[i]);
}

Test(http_path, decoded_control_characters)
{
    cr_assert_eq(norm("/config/%00"), HTTP_PATH_BAD_CHAR);
    cr_assert_eq(norm("/config/worker%00.ign"), HTTP_PATH_BAD_CHAR);
    cr_assert_eq(norm("/config/%0a"), HTTP_PATH_BAD_CHAR);
    cr_assert_eq(norm("/config/%7F"), HTTP_PATH_BAD_CHAR);
    cr_assert_eq(http_path_normalize("/a\0b", 4, out, sizeof out, &outlen), HTTP_PATH_BAD_CHAR);
}

Test(http_path, encoded_separator_or_dot_is_ambiguous)
{
    /* Go >= 1.22 routes on the encoded path: these reach the /config/
     * handler, which serves pool "worker" (see http_path.h). */
    static const char *const bad[] = {"/config/worker%2Fx", "/config%2fworker", "/config/%2e%2e/worker",
                                      "/config/x%2F..%2F..%2Fworker", "/config/%2E", "/config/rhel%2e9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(norm(bad[i]), HTTP_PATH_AMBIGUOUS, "%s", bad[i]);
}

/* The one encoded '/' the MCS's two readings agree on (Go's mux before and
 * after 1.22, http_path.h): the last character, ending a segment other than
 * "." or "..". The real MCS serves "/config/master%2f" as pool master
 * (docs/mcs-fidelity.md). */
Test(http_path, a_last_encoded_separator_reads_as_a_slash)
{
    static const struct { const char *raw, *clean, *pool; } ok[] = {
        {"/config/master%2f", "/config/master/", "master"},
        {"/config/master%2F", "/config/master/", "master"},
        {"/config/worker/%2F", "/config/worker/", "worker"},
        {"/config/../config/master%2f", "/config/master/", "master"},
        {"/config/./master%2F", "/config/master/", "master"},
        {"/config/...%2f", "/config/.../", "..."},
        {"/config/.a%2f", "/config/.a/", ".a"},
        {"/config/a.%2f", "/config/a./", "a."},
        {"/config%2F", "/config/", "config"},
        {"/%2f", "/", ""},
        {"%2f", "/", ""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc = norm(ok[i].raw);
        cr_assert_eq(rc, HTTP_PATH_OK, "%s: %s", ok[i].raw, http_path_strerror(rc));
        cr_expect(outlen == strlen(ok[i].clean) && memcmp(out, ok[i].clean, outlen) == 0,
                  "%s -> %.*s, want %s", ok[i].raw, (int)outlen, out, ok[i].clean);
        http_slice_t s = http_path_last_segment(out, outlen);
        cr_expect(s.len == strlen(ok[i].pool) && memcmp(out + s.off, ok[i].pool, s.len) == 0, "%s", ok[i].raw);
    }
    /* Not last, or ending "." or "..": the newer reading would serve a
     * segment the decoded, cleaned path does not have. */
    static const char *const bad[] = {"/config/..%2f", "/config/master/..%2F", "/config/.%2f", "/..%2f",
                                      "/config/master%2f%2f", "/config/master%2f/", "/config/master%2fx",
                                      "/config/%2F%2F", "/config/master%2f%2e", "/config/master%2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_lt(norm(bad[i]), 0, "%s", bad[i]);
}

Test(http_path, output_space)
{
    const char *raw = "config";
    cr_assert_eq(http_path_normalize(raw, 6, out, 6, &outlen), HTTP_PATH_NO_SPACE);
    cr_assert_eq(http_path_normalize(raw, 6, out, 7, &outlen), HTTP_PATH_OK);
    cr_assert_eq(outlen, 7);
    cr_assert_eq(http_path_normalize("", 0, out, 1, &outlen), HTTP_PATH_OK);
    cr_assert_eq(outlen, 1);
    cr_assert_eq(http_path_normalize("/a/", 3, out, 4, &outlen), HTTP_PATH_OK);
    cr_assert_eq(outlen, 3);
}

Test(http_path, error_texts)
{
    cr_assert_str_eq(http_path_strerror(HTTP_PATH_AMBIGUOUS), "encoded '/' or '.' in path");
    cr_assert_str_eq(http_path_strerror(HTTP_PATH_BAD_ESCAPE), "invalid percent-encoding in path");
    cr_assert_str_eq(http_path_strerror(HTTP_PATH_BAD_CHAR), "control character in path");
}

static void expect_segment(const char *clean, const char *want)
{
    http_slice_t s = http_path_last_segment(clean, strlen(clean));
    cr_expect(s.len == strlen(want) && memcmp(clean + s.off, want, s.len) == 0,
              "%s -> %.*s, want %s", clean, (int)s.len, clean + s.off, want);
}

Test(http_path, last_segment_like_path_base)
{
    expect_segment("/config/worker", "worker");
    expect_segment("/config/worker/", "worker");
    expect_segment("/config/", "config");
    expect_segment("/config", "config");
    expect_segment("/config/a/b", "b");
    expect_segment("/", "");
}

Test(http_path, prefix_match)
{
    static const struct { const char *path, *prefix; bool match; } t[] = {
        {"/config/worker", "/config/", true},
        {"/config/", "/config/", true},
        {"/config", "/config/", false},
        {"/configx/worker", "/config/", false},
        {"/CONFIG/worker", "/config/", false},
        {"/healthz", "/healthz", true},
        {"/healthz/x", "/healthz", true},
        {"/healthzx", "/healthz", false},
        {"/health", "/healthz", false},
        {"/anything", "/", true},
        {"/anything", "", true},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        cr_expect_eq(http_path_has_prefix(t[i].path, strlen(t[i].path), t[i].prefix), t[i].match,
                     "%s under %s", t[i].path, t[i].prefix);
}

Test(http_path, gate_reading_of_the_briefs_examples)
{
    static const struct { const char *raw; int rc; bool gated; const char *pool; } t[] = {
        {"/config/../config/worker", HTTP_PATH_OK, true, "worker"},
        {"/CONFIG/worker", HTTP_PATH_OK, false, "worker"},
        {"/config//worker", HTTP_PATH_OK, true, "worker"},
        {"/%63onfig/worker", HTTP_PATH_OK, true, "worker"},
        {"/config/worker/", HTTP_PATH_OK, true, "worker"},
        {"/config/worker%2Fx", HTTP_PATH_AMBIGUOUS, false, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_eq(norm(t[i].raw), t[i].rc, "%s", t[i].raw);
        if (t[i].rc != HTTP_PATH_OK)
            continue;
        cr_expect_eq(http_path_has_prefix(out, outlen, "/config/"), t[i].gated, "%s", t[i].raw);
        http_slice_t s = http_path_last_segment(out, outlen);
        cr_expect(s.len == strlen(t[i].pool) && memcmp(out + s.off, t[i].pool, s.len) == 0, "%s", t[i].raw);
    }
}

/* A clean path is copied as is (path_is_clean), any other one decoded and
 * cleaned: the two must agree. "/." in front of a rooted path forces the
 * long way and changes nothing Clean returns, so each random path is
 * checked against itself behind "/.", at every length and alignment. */
Test(http_path, clean_path_shortcut_agrees_with_the_long_way)
{
    static const char alphabet[] = "aZ9-~/./%41\x01\x7f\x80";
    uint32_t seed = 12345;
    for (int n = 0; n < 20000; n++) {
        char raw[48], forced[52], a[64], b[64];
        size_t len = 1 + (size_t)(n % 40), alen, blen;
        raw[0] = '/';
        for (size_t i = 1; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly letters, so that many paths take the shortcut */
            raw[i] = (seed >> 16) % 4 ? (char)('a' + (seed >> 20) % 26)
                                      : alphabet[(seed >> 20) % (sizeof alphabet - 1)];
        }
        memcpy(forced, "/.", 2);
        memcpy(forced + 2, raw, len);
        int ra = http_path_normalize(raw, len, a, sizeof a, &alen);
        int rb = http_path_normalize(forced, len + 2, b, sizeof b, &blen);
        cr_assert_eq(ra, rb, "%.*s: %d vs %d", (int)len, raw, ra, rb);
        if (ra == HTTP_PATH_OK) {
            cr_assert_eq(alen, blen, "%.*s", (int)len, raw);
            cr_assert(memcmp(a, b, alen) == 0, "%.*s", (int)len, raw);
        }
    }
}
