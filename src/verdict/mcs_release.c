/* The MCS release the gate fronts (verdict/mcs_release.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "verdict/mcs_release.h"

const char *mcs_release_from_name(mcs_release_from_t from)
{
    switch (from) {
    case MCS_RELEASE_FROM_CONFIG:
        return "config";
    case MCS_RELEASE_FROM_CLUSTER:
        return "cluster";
    case MCS_RELEASE_FROM_DEFAULT:
    default:
        return "default";
    }
}

mcs_release_t mcs_release_configured(unsigned minor)
{
    mcs_release_from_t from = minor ? MCS_RELEASE_FROM_CONFIG : MCS_RELEASE_FROM_DEFAULT;
    if (!minor)
        minor = MCS_RELEASE_DEFAULT;
    return (mcs_release_t){minor, mcs_family_of_release(minor), from, "", ""};
}

mcs_release_t mcs_release_default(const char *fmt, ...)
{
    mcs_release_t r = mcs_release_configured(0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.why, sizeof r.why, fmt, ap);
    va_end(ap);
    return r;
}

int mcs_release_parse_version(const char *s, unsigned *minor)
{
    if (strncmp(s, "4.", 2) != 0)
        return -1;
    s += 2;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    unsigned n = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (unsigned)(*s - '0');
        if (n > MCS_RELEASE_MAX)
            return -1;
    }
    if (*s && *s != '.' && *s != '-' && *s != '+')
        return -1;
    *minor = n;
    return 0;
}

/* A prefix of s fit for a why: printable ASCII, at most 64 bytes. */
static void quote_prefix(char *out, size_t len, const char *s)
{
    size_t at = 0;
    for (; *s && at + 1 < len && at < 64; s++)
        out[at++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    out[at] = '\0';
}

mcs_release_t mcs_release_of_cluster_operator(const json_t *co)
{
    if (!co)
        return mcs_release_default("the ClusterOperator " MCS_RELEASE_OPERATOR " does not exist");
    const json_t *versions = json_object_get(json_object_get(co, "status"), "versions");
    const json_t *entry = NULL, *v;
    size_t i;
    json_array_foreach(versions, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name && !strcmp(name, MCS_RELEASE_OPERATOR_VERSION)) {
            entry = v;
            break;
        }
    }
    if (!entry)
        return mcs_release_default("the ClusterOperator " MCS_RELEASE_OPERATOR " reports no status.versions "
                                   "entry named " MCS_RELEASE_OPERATOR_VERSION);
    const char *version = json_string_value(json_object_get(entry, "version"));
    if (!version || !*version)
        return mcs_release_default("the ClusterOperator " MCS_RELEASE_OPERATOR "'s " MCS_RELEASE_OPERATOR_VERSION
                                   " version is empty");
    unsigned minor;
    if (mcs_release_parse_version(version, &minor) < 0 || strlen(version) >= MCS_RELEASE_VERSION_LEN) {
        char shown[80];
        quote_prefix(shown, sizeof shown, version);
        return mcs_release_default("the ClusterOperator " MCS_RELEASE_OPERATOR "'s " MCS_RELEASE_OPERATOR_VERSION
                                   " version \"%s\" is not a release 4.N", shown);
    }
    mcs_release_t r = {minor, mcs_family_of_release(minor), MCS_RELEASE_FROM_CLUSTER, "", ""};
    snprintf(r.version, sizeof r.version, "%s", version);
    return r;
}

bool mcs_release_newer_than_known(const mcs_release_t *r)
{
    return r->minor > MCS_RELEASE_NEWEST;
}

bool mcs_release_older_than_known(const mcs_release_t *r)
{
    return r->minor < MCS_RELEASE_OLDEST;
}

bool mcs_release_equal(const mcs_release_t *a, const mcs_release_t *b)
{
    return a->minor == b->minor && a->family == b->family && a->from == b->from &&
           !strcmp(a->version, b->version) && !strcmp(a->why, b->why);
}
