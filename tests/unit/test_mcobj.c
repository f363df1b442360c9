#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verdict/mcobj.h"
#include "verdict/verdict.h"

static char err[MCOBJ_ERR_LEN];

static json_t *parse(const char *text)
{
    err[0] = '\0';
    return mcobj_parse(text, strlen(text), "mc.yaml", err, sizeof err);
}

static const char *name_of(const json_t *mc)
{
    return json_string_value(json_object_get(json_object_get(mc, "metadata"), "name"));
}

#define MC_YAML(name)                                   \
    "  - apiVersion: operator.openshift.io/v1\n"        \
    "    kind: MachineConfiguration\n"                  \
    "    metadata: {name: " name "}\n"

Test(mcobj, yaml_object)
{
    json_t *mc = parse("# a comment\n"
                       "apiVersion: operator.openshift.io/v1\n"
                       "kind: MachineConfiguration\n"
                       "metadata:\n  name: cluster\n  resourceVersion: \"42\"\n"
                       "status:\n  bootImageSkewEnforcementStatus:\n    mode: None\n");
    cr_assert_not_null(mc, "%s", err);
    cr_expect_str_eq(name_of(mc), "cluster");
    const char *mode = json_string_value(
        json_object_get(json_object_get(json_object_get(mc, "status"), "bootImageSkewEnforcementStatus"), "mode"));
    cr_expect_str_eq(mode, "None");
    json_decref(mc);
}

Test(mcobj, json_object)
{
    json_t *mc = parse("\n  {\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"MachineConfiguration\","
                       "\"metadata\":{\"name\":\"cluster\",\"uid\":\"0c1d\",\"managedFields\":[]}}");
    cr_assert_not_null(mc, "%s", err);
    cr_expect_str_eq(name_of(mc), "cluster");
    json_decref(mc);
}

Test(mcobj, list_with_one_item_takes_it)
{
    json_t *mc = parse("apiVersion: v1\nkind: List\nitems:\n" MC_YAML("cluster") "metadata: {resourceVersion: \"\"}\n");
    cr_assert_not_null(mc, "%s", err);
    cr_expect_str_eq(name_of(mc), "cluster");
    json_decref(mc);
}

Test(mcobj, typed_list_picks_cluster_among_several)
{
    json_t *mc = parse("apiVersion: operator.openshift.io/v1\nkind: MachineConfigurationList\nitems:\n"
                       MC_YAML("other") MC_YAML("cluster") MC_YAML("third"));
    cr_assert_not_null(mc, "%s", err);
    cr_expect_str_eq(name_of(mc), "cluster");
    json_decref(mc);
}

Test(mcobj, json_list_picks_cluster)
{
    json_t *mc = parse("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}},"
                       "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"MachineConfiguration\","
                       "\"metadata\":{\"name\":\"cluster\"}}]}");
    cr_assert_not_null(mc, "%s", err);
    cr_expect_str_eq(name_of(mc), "cluster");
    json_decref(mc);
}

Test(mcobj, list_of_several_without_cluster_is_an_error)
{
    cr_expect_null(parse("apiVersion: v1\nkind: List\nitems:\n" MC_YAML("a") MC_YAML("b")));
    cr_expect_str_eq(err, "mc.yaml:4:3: List holds 2 items and none is named \"cluster\"");
}

Test(mcobj, list_with_cluster_twice_is_an_error)
{
    cr_expect_null(parse("apiVersion: v1\nkind: List\nitems:\n" MC_YAML("cluster") MC_YAML("cluster")));
    cr_expect_str_eq(err, "mc.yaml:7:5: List holds several items named \"cluster\" (items[0] and items[1])");
}

Test(mcobj, empty_list_is_an_error)
{
    cr_expect_null(parse("apiVersion: v1\nkind: List\nitems: []\n"));
    cr_expect_str_eq(err, "mc.yaml:3:8: List holds no items; expected the MachineConfiguration \"cluster\"");
    cr_expect_null(parse("{\"apiVersion\":\"v1\",\"kind\":\"List\"}"));
    cr_expect_str_eq(err, "mc.yaml: List holds no items; expected the MachineConfiguration \"cluster\"");
}

Test(mcobj, list_item_of_wrong_kind_is_named)
{
    cr_expect_null(parse("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"));
    cr_expect_str_eq(err, "mc.yaml:5:9: items[0]: ConfigMap: expected kind MachineConfiguration "
                          "(apiVersion operator.openshift.io/v1)");
}

Test(mcobj, configmap_error_names_its_kind)
{
    cr_expect_null(parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster}\n"));
    cr_expect_str_eq(err, "mc.yaml:2:7: ConfigMap: expected kind MachineConfiguration "
                          "(apiVersion operator.openshift.io/v1)");
}

Test(mcobj, machineconfig_of_the_mco_is_not_a_machineconfiguration)
{
    cr_expect_null(parse("{\"apiVersion\":\"machineconfiguration.openshift.io/v1\",\"kind\":\"MachineConfig\"}"));
    cr_expect_str_eq(err, "mc.yaml: MachineConfig: expected kind MachineConfiguration "
                          "(apiVersion operator.openshift.io/v1)");
}

Test(mcobj, wrong_api_version_is_an_error)
{
    cr_expect_null(parse("apiVersion: operator.openshift.io/v1alpha1\nkind: MachineConfiguration\n"));
    cr_expect_str_eq(err, "mc.yaml:1:13: apiVersion operator.openshift.io/v1alpha1: "
                          "expected operator.openshift.io/v1 for kind MachineConfiguration");
}

Test(mcobj, missing_kind_or_api_version_is_an_error)
{
    cr_expect_null(parse("# header\napiVersion: operator.openshift.io/v1\nmetadata: {name: cluster}\n"));
    cr_expect_str_eq(err, "mc.yaml:2:1: missing kind");
    cr_expect_null(parse("kind: MachineConfiguration\n"));
    cr_expect_str_eq(err, "mc.yaml:1:1: missing apiVersion");
    cr_expect_null(parse("apiVersion: operator.openshift.io/v1\nkind: [MachineConfiguration]\n"));
    cr_expect_str_eq(err, "mc.yaml:2:7: kind must be a string, found a sequence");
}

Test(mcobj, broken_yaml_names_line_and_column)
{
    cr_expect_null(parse("apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster\n"));
    cr_expect_str_eq(err, "mc.yaml:3:11: this '{' has no closing '}' (or two of its entries lack a ',' between them)");
    cr_expect_null(parse("kind: a\nkind: b\n"));
    cr_expect_str_eq(err, "mc.yaml:2:1: duplicate key \"kind\"");
}

Test(mcobj, broken_json_names_line_and_column)
{
    cr_expect_null(parse("{\"apiVersion\": \"operator.openshift.io/v1\",\n \"kind\": \"MachineConfiguration\",}\n"));
    cr_expect_str_eq(err, "mc.yaml:2:33: string or '}' expected near '}'");
    cr_expect_null(parse("{\"kind\": \"a\", \"kind\": \"b\"}"));
    cr_expect(strncmp(err, "mc.yaml:1:", 10) == 0 && strstr(err, "duplicate"), "got %s", err);
}

Test(mcobj, top_level_scalar_or_sequence_is_an_error)
{
    cr_expect_null(parse("just a string\n"));
    cr_expect_str_eq(err, "mc.yaml:1:1: expected a MachineConfiguration or a List holding it, found a string");
    cr_expect_null(parse("- kind: MachineConfiguration\n"));
    cr_expect_str_eq(err, "mc.yaml:1:1: expected a MachineConfiguration or a List holding it, found a sequence");
    cr_expect_null(parse("[{\"kind\": \"MachineConfiguration\"}]"));
    cr_expect_str_eq(err, "mc.yaml: expected a MachineConfiguration or a List holding it, found an array");
}

Test(mcobj, empty_input_is_an_error)
{
    cr_expect_null(mcobj_parse("", 0, "mc.yaml", err, sizeof err));
    cr_expect_str_eq(err, "mc.yaml: empty input");
    cr_expect_null(parse(" \n\t\r\n"));
    cr_expect_str_eq(err, "mc.yaml: empty input");
    cr_expect_null(parse("# only a comment\n"));
    cr_expect_str_eq(err, "mc.yaml:1:1: empty document");
}

/* Whitespace then a valid object: only the size can make it fail. */
static char *padded_object(size_t len)
{
    static const char object[] = "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"MachineConfiguration\"}";
    char *text = malloc(len);
    cr_assert_not_null(text);
    memset(text, ' ', len);
    memcpy(text + len - strlen(object), object, strlen(object));
    return text;
}

Test(mcobj, input_at_the_limit_is_accepted_beyond_it_refused)
{
    char *text = padded_object(MCOBJ_MAX_BYTES + 1);
    cr_expect_null(mcobj_parse(text, MCOBJ_MAX_BYTES + 1, "big.json", err, sizeof err));
    cr_expect_str_eq(err, "big.json: input is larger than 8 MiB");
    json_t *mc = mcobj_parse(text + 1, MCOBJ_MAX_BYTES, "big.json", err, sizeof err);
    cr_expect_not_null(mc, "%s", err);
    json_decref(mc);
    free(text);
}

Test(mcobj, load_reads_a_file_and_bounds_it)
{
    char path[] = "/tmp/test_mcobj_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster}\n", f);
    fclose(f);
    json_t *mc = mcobj_load(path, err, sizeof err);
    cr_expect_not_null(mc, "%s", err);
    json_decref(mc);

    char *text = padded_object(2 * MCOBJ_MAX_BYTES);
    f = fopen(path, "w");
    fwrite(text, 1, 2 * MCOBJ_MAX_BYTES, f);
    fclose(f);
    free(text);
    cr_expect_null(mcobj_load(path, err, sizeof err));
    char want[sizeof path + 64];
    snprintf(want, sizeof want, "%s: input is larger than 8 MiB", path);
    cr_expect_str_eq(err, want);
    unlink(path);
}

Test(mcobj, load_names_a_missing_file)
{
    cr_expect_null(mcobj_load("/nonexistent/mc.yaml", err, sizeof err));
    cr_expect_str_eq(err, "/nonexistent/mc.yaml: No such file or directory");
    cr_expect_null(mcobj_load("/", err, sizeof err));
    cr_expect_str_eq(err, "/: read error: Is a directory");
}

/* The sample objects. Tests read the repo's copy, so that they need nothing
 * outside it; the shared folder they were copied from is compared with it
 * when present (SKEWGATE_FIXTURES names it where it is not beside the repo). */
#define FIXTURES SRCDIR "/tests/fixtures/machineconfiguration"
#define SHARED_FIXTURES SRCDIR "/../shared/fixtures/machineconfiguration"

/* A JSON file carries no "# expected:" line; the fixtures' README states these. */
static const struct json_expectation {
    const char *file, *decision, *reason;
} json_expectations[] = {
    {"manual-ocp-compliant.json", "admit", "Compliant"},
};

struct fixture {
    char file[NAME_MAX + 1];
};

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int is_object_file(const struct dirent *e)
{
    return has_suffix(e->d_name, ".yaml") || has_suffix(e->d_name, ".yml") || has_suffix(e->d_name, ".json");
}

static int is_visible_file(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

static void free_fixtures(struct criterion_test_params *params)
{
    cr_free(params->params);
}

/* Listed when the tests are registered: a new fixture is tested without
 * being named here. */
ParameterizedTestParameters(fixtures, verdict_is_the_one_stated)
{
    struct dirent **entries;
    int n = scandir(FIXTURES, &entries, is_object_file, alphasort);
    if (n <= 0)
        return cr_make_param_array(struct fixture, NULL, 0);
    struct fixture *list = cr_malloc(sizeof *list * (size_t)n);
    for (int i = 0; i < n; i++) {
        snprintf(list[i].file, sizeof list[i].file, "%s", entries[i]->d_name);
        free(entries[i]);
    }
    free(entries);
    return cr_make_param_array(struct fixture, list, (size_t)n, free_fixtures);
}

/* "# expected: reject, reason OutOfSkew (4.12.0 < 4.13.0)" */
static bool stated_verdict(const char *path, const char *file, char *decision, char *reason)
{
    for (size_t i = 0; i < sizeof json_expectations / sizeof json_expectations[0]; i++) {
        if (!strcmp(file, json_expectations[i].file)) {
            strcpy(decision, json_expectations[i].decision);
            strcpy(reason, json_expectations[i].reason);
            return true;
        }
    }
    FILE *f = fopen(path, "r");
    char line[256] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
    }
    return sscanf(line, "# expected: %15[a-z], reason %63[A-Za-z]", decision, reason) == 2;
}

ParameterizedTest(struct fixture *fx, fixtures, verdict_is_the_one_stated)
{
    char path[PATH_MAX], decision[16], reason[64];
    snprintf(path, sizeof path, FIXTURES "/%s", fx->file);
    cr_assert(stated_verdict(path, fx->file, decision, reason),
              "%s: no '# expected: DECISION, reason REASON' first line (for JSON: add it to json_expectations)",
              fx->file);
    json_t *mc = mcobj_load(path, err, sizeof err);
    cr_assert_not_null(mc, "%s: %s", fx->file, err);

    verdict_input_t in = {.state = SOURCE_PRESENT, .object = mc, .now = 1793534400 /* 2026-11-01T12:00:00Z */};
    verdict_limits_default(&in.limits);
    verdict_policy_default(&in.policy);
    verdict_t v;
    verdict_compute(&in, &v);
    json_decref(mc);
    cr_expect_str_eq(decision_name(v.decision), decision, "%s: decision %s, stated %s (%s)", fx->file,
                     decision_name(v.decision), decision, v.message);
    cr_expect_str_eq(verdict_reason_name(v.reason), reason, "%s: reason %s, stated %s (%s)", fx->file,
                     verdict_reason_name(v.reason), reason, v.message);
}

Test(fixtures, are_present)
{
    struct dirent **entries;
    int n = scandir(FIXTURES, &entries, is_object_file, alphasort);
    cr_assert(n >= 7, "%d object files in %s, expected the 7 shared samples at least", n, FIXTURES);
    for (int i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    if (size >= 0 && (text = malloc((size_t)size + 1)))
        *len = fread(text, 1, (size_t)size, f);
    fclose(f);
    return text;
}

Test(fixtures, repo_copy_matches_the_shared_folder)
{
    const char *shared = getenv("SKEWGATE_FIXTURES");
    if (!shared || !*shared)
        shared = SHARED_FIXTURES;
    struct dirent **theirs, **ours;
    int n_theirs = scandir(shared, &theirs, is_visible_file, alphasort);
    if (n_theirs < 0)
        cr_skip_test("no shared fixtures at %s", shared);
    int n_ours = scandir(FIXTURES, &ours, is_visible_file, alphasort);
    cr_assert(n_ours >= 0, "cannot list %s", FIXTURES);
    for (int i = 0, j = 0; i < n_theirs || j < n_ours;) {
        int order = i == n_theirs ? 1 : j == n_ours ? -1 : strcmp(theirs[i]->d_name, ours[j]->d_name);
        if (order < 0) {
            cr_expect_fail("%s/%s is missing from %s", shared, theirs[i]->d_name, FIXTURES);
            i++;
        } else if (order > 0) {
            cr_expect_fail("%s/%s is not in %s", FIXTURES, ours[j]->d_name, shared);
            j++;
        } else {
            char a[PATH_MAX], b[PATH_MAX];
            snprintf(a, sizeof a, "%s/%s", shared, theirs[i]->d_name);
            snprintf(b, sizeof b, "%s/%s", FIXTURES, ours[j]->d_name);
            size_t len_a = 0, len_b = 0;
            char *text_a = read_whole(a, &len_a), *text_b = read_whole(b, &len_b);
            cr_expect(text_a && text_b && len_a == len_b && !memcmp(text_a, text_b, len_a), "%s differs from %s", b, a);
            free(text_a);
            free(text_b);
            i++, j++;
        }
    }
    for (int i = 0; i < n_theirs; i++)
        free(theirs[i]);
    for (int j = 0; j < n_ours; j++)
        free(ours[j]);
    free(theirs);
    free(ours);
}
