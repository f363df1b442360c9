#include <criterion/criterion.h>
#include <string.h>

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
    cr_expect(strncmp(err, "3:", 2) == 0, "got %s", err);
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
