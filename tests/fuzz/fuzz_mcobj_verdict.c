/* libFuzzer target: the MachineConfiguration reader (mcobj_parse: YAML,
 * JSON, a List, a kubectl dump) followed by verdict_compute with the
 * default limits and policy at a fixed time, with and without a previous
 * decision, and verdict_to_json. Checks: a refusal is a NUL-terminated
 * "fuzz.yaml: ..." or "fuzz.yaml:LINE:COL: ..."; a verdict has a valid
 * decision and reason, and every string in it is NUL-terminated within its
 * array, valid UTF-8 and free of control characters (C0 and DEL), as
 * verdict.h promises. */
// sources: src/verdict/mcobj.c src/verdict/verdict.c src/verdict/override.c src/verdict/verdict_json.c src/core/ydoc.c src/core/text.c src/core/time.c src/core/skew.c src/core/version.c
// pkgs: jansson yaml-0.1
// dict: json.dict
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/mcobj.h"
#include "verdict/verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* NUL within cap, valid UTF-8 (shortest form, no surrogates, at most
 * U+10FFFF), no C0 control or DEL. */
static void shown_text(const char *s, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strnlen(s, cap);
    if (n == cap)
        abort();
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x20 || c == 0x7f)
            abort();
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            abort();
        }
        if (i + k >= n + 1)
            abort();
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                abort();
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            abort();
        i += k + 1;
    }
}

static void check(const verdict_t *v)
{
    if ((unsigned)v->decision > DECISION_REJECT || (unsigned)v->reason >= REASON__COUNT)
        abort();
    if (!verdict_reason_name(v->reason))
        abort();
    shown_text(v->mode, sizeof v->mode);
    shown_text(v->ocp_version, sizeof v->ocp_version);
    shown_text(v->rhcos_version, sizeof v->rhcos_version);
    shown_text(v->message, sizeof v->message);
    shown_text(v->resource_version, sizeof v->resource_version);
    json_t *j = verdict_to_json(v);
    if (!j)
        abort();
    char *text = json_dumps(j, JSON_COMPACT);
    if (!text)
        abort();
    free(text);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    char *text = malloc(size ? size : 1);   /* exact size: ASan sees over-reads */
    memcpy(text, data, size);
    char err[MCOBJ_ERR_LEN];
    memset(err, 'x', sizeof err);
    json_t *obj = mcobj_parse(text, size, "fuzz.yaml", err, sizeof err);
    free(text);
    if (!obj) {
        if (!memchr(err, '\0', sizeof err) || strncmp(err, "fuzz.yaml:", 10) != 0)
            abort();
        return 0;
    }

    verdict_input_t in = {.state = SOURCE_PRESENT, .object = obj, .now = 1796119200}; /* 2026-12-01T10:00:00Z */
    verdict_limits_default(&in.limits);
    verdict_policy_default(&in.policy);
    verdict_t v1, v2;
    memset(&v1, 0xff, sizeof v1);
    verdict_compute(&in, &v1);
    check(&v1);

    in.has_previous = true;
    in.previous = v1.decision == DECISION_ADMIT ? DECISION_REJECT : DECISION_ADMIT;
    memset(&v2, 0xff, sizeof v2);
    verdict_compute(&in, &v2);
    check(&v2);
    /* A settled verdict rests on the object alone: the previous decision
     * must not change it. */
    if (v1.settled && (v2.decision != v1.decision || v2.reason != v1.reason))
        abort();
    json_decref(obj);
    return 0;
}
