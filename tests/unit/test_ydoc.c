#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ydoc.h"

static char err[256];

static json_t *yaml_to_json(const char *text)
{
    ydoc_t *d = ydoc_parse(text, strlen(text), err, sizeof err);
    if (!d)
        return NULL;
    json_t *j = ynode_to_json(ydoc_root(d), err, sizeof err);
    ydoc_free(d);
    return j;
}

Test(ydoc, positions_are_one_based)
{
    const char *text = "a: 1\nbb:\n  c: x\n";
    ydoc_t *d = ydoc_parse(text, strlen(text), err, sizeof err);
    cr_assert_not_null(d, "%s", err);
    const ynode_t *c = ynode_get(ynode_get(ydoc_root(d), "bb"), "c");
    cr_assert_not_null(c);
    cr_expect_eq(c->line, 3);
    cr_expect_eq(c->col, 6);
    ydoc_free(d);
}

Test(ydoc, core_schema_for_plain_scalars_only)
{
    json_t *j = yaml_to_json("a: 12\nb: \"12\"\nc: true\nd: ~\ne: 4.13.0\nf: 0x1f\ng: 1.5\nh: 'null'\n");
    cr_assert_not_null(j, "%s", err);
    cr_expect(json_is_integer(json_object_get(j, "a")));
    cr_expect(json_is_string(json_object_get(j, "b")));
    cr_expect(json_is_true(json_object_get(j, "c")));
    cr_expect(json_is_null(json_object_get(j, "d")));
    cr_expect_str_eq(json_string_value(json_object_get(j, "e")), "4.13.0");
    cr_expect_eq(json_integer_value(json_object_get(j, "f")), 31);
    cr_expect(json_is_real(json_object_get(j, "g")));
    cr_expect_str_eq(json_string_value(json_object_get(j, "h")), "null");
    json_decref(j);
}

Test(ydoc, syntax_error_names_line_and_column)
{
    cr_expect_null(yaml_to_json("a: 1\nb: [1, 2\n"));
    cr_expect_str_eq(err, "2:4: this '[' has no closing ']' (or two of its entries lack a ',' between them)");
}

/* libyaml's texts ("found character that cannot start any token") become
 * what the person did, at the line where they did it. */
static void expect_syntax(const char *text, const char *expected)
{
    err[0] = '\0';
    ydoc_t *d = ydoc_parse(text, strlen(text), err, sizeof err);
    cr_expect_null(d, "parsed:\n%s", text);
    ydoc_free(d);
    cr_expect_str_eq(err, expected, "for:\n%s", text);
}

Test(ydoc, syntax_errors_in_words)
{
    expect_syntax("a:\n\t- b\n", "2:1: a tab character: YAML indents with spaces only");
    expect_syntax("a:  b\n\tc: d\n", "2:1: a tab character: YAML indents with spaces only");
    expect_syntax("a: |\n  x\n\ty\n", "3:1: a tab character: YAML indents with spaces only");
    expect_syntax("a:\n    b: 1\n  c: 2\n",
                  "3:3: bad indentation: this line starts at column 3, and the lines above start at column 5 "
                  "(line 2) or column 1 (line 1)");
    expect_syntax("a:\n  b: 1\n   c: 2\n",
                  "3:4: bad indentation: this line is indented deeper than the line above (line 2), so it reads "
                  "as the rest of that line's value; align its key with the keys above");
    expect_syntax("a:\n  - b\n - c\n",
                  "3:2: bad indentation: this line starts at column 2, and the lines above start at column 5 "
                  "(line 2), column 3 (line 2) or column 1 (line 1)");
    expect_syntax("a: b\n- c\n", "2:1: a list item ('- ') where the mapping above expects a key: a list goes "
                  "under a key ending in ':', indented deeper than it");
    expect_syntax("a: \"x\nb: c\n", "1:4: unclosed quote: the string that starts here has no closing \"");
    expect_syntax("a: b\nc: 'x\n", "2:4: unclosed quote: the string that starts here has no closing '");
    expect_syntax("a: b\nc\nd: e\n", "2:1: this line has no ':': a mapping's lines are KEY: VALUE (or indent "
                  "the line deeper to continue the value above)");
    expect_syntax("a: b: c\n", "1:5: a second ': ' on this line: a value holding ': ' must be in quotes");
    expect_syntax("a: - b\n", "1:4: a list item ('- ') cannot follow a key on its line: start the list on the "
                  "next line, indented");
    expect_syntax("a: {b: 1\n", "1:4: this '{' has no closing '}' (or two of its entries lack a ',' between them)");
    expect_syntax("a: [b,\n", "2:1: a value is missing here (a list or mapping left open, or a line cut short)");
    expect_syntax("a: @b\n", "1:4: '@' cannot start a value: put the value in quotes");
    expect_syntax("a: *b\n", "1:4: '*' starts an alias, and no anchor '&' of that name comes before it: put the "
                  "value in quotes");
    expect_syntax("a: \"x\\q\"\n", "1:6: unknown escape in a double-quoted string: write \\\\ for a "
                  "backslash, or use single quotes");
    expect_syntax("a: b\nc: \x01\n", "2:4: a control character (byte 0x01): only text may be in YAML");
    expect_syntax("a: b\nc: \xff\n", "2:4: not UTF-8 text (byte 0xff: invalid leading UTF-8 octet)");
}

Test(ydoc, duplicate_key_is_an_error)
{
    cr_expect_null(yaml_to_json("a: 1\nb: 2\na: 3\n"));
    cr_expect_str_eq(err, "3:1: duplicate key \"a\"");
}

Test(ydoc, empty_and_multi_document_are_errors)
{
    cr_expect_null(yaml_to_json("# nothing\n"));
    cr_expect_str_eq(err, "1:1: empty document");
    cr_expect_null(yaml_to_json("a: 1\n---\nb: 2\n"));
    cr_expect(strstr(err, "more than one YAML document") != NULL, "got %s", err);
}

Test(ydoc, alias_bomb_is_bounded)
{
    const char *bomb =
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
        "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
        "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
        "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    cr_expect_null(yaml_to_json(bomb));
    cr_expect(strstr(err, "too large") != NULL, "got %s", err);
}

Test(ydoc, integer_overflow_is_an_error)
{
    cr_expect_null(yaml_to_json("a: 99999999999999999999999\n"));
    cr_expect_str_eq(err, "1:4: integer out of range");
}

/* "metadata:\n  annotations:\n" then n keys "    k<i>: v\n"; a duplicate of
 * key dup_of (if >= 0) is appended as the last one, on line n + 3. */
static char *annotations_yaml(size_t n, long dup_of, size_t *len)
{
    size_t cap = 64 + (n + 1) * 32;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    size_t off = (size_t)snprintf(text, cap, "metadata:\n  annotations:\n");
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(text + off, cap - off, "    example.com/key-%zu: \"v\"\n", i);
    if (dup_of >= 0)
        off += (size_t)snprintf(text + off, cap - off, "    example.com/key-%ld: \"again\"\n", dup_of);
    *len = off;
    return text;
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* Issue 12: the duplicate-key check was quadratic (60 000 keys: 52 s). */
Test(ydoc, sixty_thousand_distinct_keys_parse_in_linear_time)
{
    size_t len;
    char *text = annotations_yaml(60000, -1, &len);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ydoc_t *d = ydoc_parse(text, len, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_not_null(d, "%s", err);
    cr_expect_eq(ynode_get(ynode_get(ydoc_root(d), "metadata"), "annotations")->n, 60000);
    double ms = elapsed_ms(&t0, &t1);
    cr_log_info("ydoc: 60000 distinct annotation keys (%zu bytes) parsed in %.1f ms", len, ms);
    fprintf(stderr, "ydoc: 60000 distinct annotation keys (%zu bytes) parsed in %.1f ms\n", len, ms);
    cr_expect_lt(ms, 1000.0, "60000 keys took %.1f ms", ms);
    ydoc_free(d);
    free(text);
}

/* A duplicate anywhere in a large mapping is found, at its own line and
 * column: 2000 keys in a table of 4096 slots share slots by the hundred, so
 * every duplicate below sits somewhere along a probe chain. */
Test(ydoc, duplicate_found_among_many_keys_at_its_position)
{
    static const long dups[] = {0, 1, 2, 3, 999, 1000, 1500, 1998, 1999};
    for (size_t i = 0; i < sizeof dups / sizeof dups[0]; i++) {
        size_t len;
        char *text = annotations_yaml(2000, dups[i], &len);
        ydoc_t *d = ydoc_parse(text, len, err, sizeof err);
        cr_expect_null(d, "duplicate of key %ld not found", dups[i]);
        ydoc_free(d);
        char want[128];
        snprintf(want, sizeof want, "2003:5: duplicate key \"example.com/key-%ld\"", dups[i]);
        cr_expect_str_eq(err, want);
        free(text);
    }
    /* every key of a 300-key mapping, in turn */
    for (long k = 0; k < 300; k++) {
        size_t len;
        char *text = annotations_yaml(300, k, &len);
        cr_expect_null(ydoc_parse(text, len, err, sizeof err), "duplicate of key %ld not found", k);
        char want[128];
        snprintf(want, sizeof want, "303:5: duplicate key \"example.com/key-%ld\"", k);
        cr_expect_str_eq(err, want);
        free(text);
    }
}

/* Keys alike in length and prefix, or equal up to an embedded NUL, are
 * different keys; the first duplicate in source order is the one named,
 * in the first mapping (in document order) that has one. */
Test(ydoc, duplicate_keys_edge_cases)
{
    const char *ok = "ab: 1\nba: 2\naa: 3\nbb: 4\na: 5\nb: 6\n\"a\\0b\": 7\n\"a\\0c\": 8\n? [x]\n: 9\n? [x]\n: 10\n";
    json_t *j = yaml_to_json(ok);
    cr_expect(j == NULL || json_is_object(j), "%s", err);
    ydoc_t *d = ydoc_parse(ok, strlen(ok), err, sizeof err);
    cr_expect_not_null(d, "non-scalar keys and near-equal keys are not duplicates: %s", err);
    ydoc_free(d);

    cr_expect_null(yaml_to_json("x: 1\ny:\n  a: 1\n  b: 2\n  a: 3\nz: 2\nx: 4\n"));
    cr_expect_str_eq(err, "7:1: duplicate key \"x\"");
    cr_expect_null(yaml_to_json("p:\n  b: 1\n  c: 2\n  c: 3\n  b: 4\n"));
    cr_expect_str_eq(err, "4:3: duplicate key \"c\"");
    cr_expect_null(yaml_to_json("{a: 1, 'a': 2}\n"));
    cr_expect_str_eq(err, "1:8: duplicate key \"a\"");
    cr_expect_null(yaml_to_json("\"a\\0b\": 1\n\"a\\0b\": 2\n"));
    cr_expect_str_eq(err, "2:1: duplicate key \"a\"");
    cr_expect_null(yaml_to_json("\"\": 1\n'': 2\n"));
    cr_expect_str_eq(err, "2:1: duplicate key \"\"");
}
