/* A verdict as the JSON the admin API, the CLI and the logs show, and the
 * equality that decides whether a recomputed verdict is a new one. */
#include <string.h>

#include "core/time.h"
#include "verdict/verdict.h"

json_t *verdict_to_json(const verdict_t *v)
{
    char ocp_limit[32], rhel_limit[32];
    json_t *root = json_object();
    json_t *boot_image = json_object();
    json_t *limit = json_object();
    if (!root || !boot_image || !limit) {
        json_decref(root);
        json_decref(boot_image);
        json_decref(limit);
        return NULL;
    }
    json_object_set_new(boot_image, "ocpVersion", json_string(v->ocp_version));
    json_object_set_new(boot_image, "rhcosVersion", json_string(v->rhcos_version));
    json_object_set_new(
        limit, "ocpVersion",
        json_string(version_format_ocp(&v->limits.ocp, ocp_limit, sizeof ocp_limit)));
    json_object_set_new(
        limit, "rhelVersion",
        json_string(version_format_rhel(&v->limits.rhel, rhel_limit, sizeof rhel_limit)));

    json_object_set_new(root, "decision", json_string(decision_name(v->decision)));
    json_object_set_new(root, "reason", json_string(verdict_reason_name(v->reason)));
    json_object_set_new(root, "settled", json_boolean(v->settled));
    json_object_set_new(root, "mode", json_string(v->mode));
    json_object_set_new(root, "bootImage", boot_image);
    json_object_set_new(root, "limit", limit);
    json_object_set_new(root, "message", json_string(v->message));
    json_object_set_new(root, "resourceVersion", json_string(v->resource_version));
    if (v->since != 0) {
        char since[TIME_RFC3339_LEN];
        json_object_set_new(root, "since",
                            json_string(time_format_rfc3339(v->since, since, sizeof since)));
    } else {
        json_object_set_new(root, "since", json_null());
    }
    return root;
}

/* resourceVersion and since are left out: a status update that changes
 * nothing the verdict rests on should not count as a new verdict. */
bool verdict_equal(const verdict_t *a, const verdict_t *b)
{
    return a->decision == b->decision && a->reason == b->reason && a->settled == b->settled &&
           version_cmp_ocp(&a->limits.ocp, &b->limits.ocp) == 0 &&
           version_cmp_rhel(&a->limits.rhel, &b->limits.rhel) == 0 &&
           strcmp(a->mode, b->mode) == 0 && strcmp(a->ocp_version, b->ocp_version) == 0 &&
           strcmp(a->rhcos_version, b->rhcos_version) == 0 && strcmp(a->message, b->message) == 0;
}
