/* verdict_batch: evaluates many MachineConfigurations in one process, for
 * the differential check (t_verdict_differential.sh). Built by that test
 * against build/libskewgate.a; not part of the product.
 *
 * stdin: one JSON case per line
 *   {"object": <MachineConfiguration JSON> | null (absent),
 *    "previous": "admit"|"reject"|null, "now": RFC3339,
 *    "ocpLimit": "4.13.0", "rhelLimit": "9.2",
 *    "whenUnknown": "admit"|"reject", "whenUnparseable": "admit"|"reject"}
 * stdout: one line per case, in order
 *   {"decision": ..., "reason": ..., "settled": bool}  or  {"error": "..."}
 * The object goes through mcobj_parse as its JSON text, then
 * verdict_compute: the path of `skewgate verdict FILE`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "core/skew.h"
#include "core/time.h"
#include "core/version.h"
#include "verdict/mcobj.h"
#include "verdict/verdict.h"

static void emit_error(const char *what)
{
    json_t *o = json_pack("{s:s}", "error", what);
    char *s = json_dumps(o, JSON_COMPACT);
    puts(s);
    free(s);
    json_decref(o);
}

static const char *opt_str(json_t *c, const char *key)
{
    json_t *v = json_object_get(c, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void one_case(const char *line)
{
    json_error_t jerr;
    json_t *c = json_loads(line, 0, &jerr);
    if (!json_is_object(c)) {
        emit_error("bad case line");
        json_decref(c);
        return;
    }
    verdict_input_t in = {.state = SOURCE_PRESENT};
    verdict_limits_default(&in.limits);
    verdict_policy_default(&in.policy);
    const char *s;
    const char *bad = NULL;
    if ((s = opt_str(c, "ocpLimit")) && version_parse_ocp(s, &in.limits.ocp) < 0)
        bad = "bad ocpLimit";
    if ((s = opt_str(c, "rhelLimit")) && version_parse_rhel(s, &in.limits.rhel) < 0)
        bad = "bad rhelLimit";
    if ((s = opt_str(c, "whenUnknown")) && decision_parse(s, &in.policy.when_unknown) < 0)
        bad = "bad whenUnknown";
    if ((s = opt_str(c, "whenUnparseable")) && decision_parse(s, &in.policy.when_unparseable) < 0)
        bad = "bad whenUnparseable";
    if ((s = opt_str(c, "previous"))) {
        if (decision_parse(s, &in.previous) < 0)
            bad = "bad previous";
        in.has_previous = true;
    }
    if (!(s = opt_str(c, "now")) || time_parse_rfc3339(s, &in.now) < 0)
        bad = "bad now";
    if (bad) {
        emit_error(bad);
        json_decref(c);
        return;
    }
    json_t *object = NULL;
    json_t *given = json_object_get(c, "object");
    if (!given || json_is_null(given)) {
        in.state = SOURCE_ABSENT;
    } else {
        char *text = json_dumps(given, JSON_COMPACT);
        char err[MCOBJ_ERR_LEN];
        object = text ? mcobj_parse(text, strlen(text), "<case>", err, sizeof err) : NULL;
        free(text);
        if (!object) {
            emit_error(err);
            json_decref(c);
            return;
        }
        in.object = object;
    }
    verdict_t v;
    verdict_compute(&in, &v);
    json_t *o = json_pack("{s:s,s:s,s:b}", "decision", decision_name(v.decision), "reason",
                          verdict_reason_name(v.reason), "settled", v.settled);
    char *out = json_dumps(o, JSON_COMPACT);
    puts(out);
    free(out);
    json_decref(o);
    json_decref(object);
    json_decref(c);
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        if (line[0])
            one_case(line);
    }
    free(line);
    return fflush(stdout) == 0 ? 0 : 1;
}
