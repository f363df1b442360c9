/* The spec versions and the release table (core/ignition.h). */
#include <stdio.h>
#include <string.h>

#include "core/ignition.h"

/* Each row from Red Hat's security advisory for the release's RPMs (the
 * package list names ignition-X.Y.Z-N.rhaosA.B), the spec from the
 * Ignition release that first asks for it (coreos/ignition
 * internal/resource/url.go, DESIGN 1.2: 2.7 -> 3.2.0, 2.11 -> 3.3.0,
 * 2.15 -> 3.4.0). Releases without a row here (4.9, 4.10, 4.13, 4.17 and
 * later) take the row before them: no advisory read for this table names
 * their Ignition. docs/evidence.md has the sources in full. */
static const ignition_release_t releases[] = {
    {4, 8, "2.9.0", {3, 2, 0, false}, "RHSA-2021:2984"},
    {4, 11, "2.14.0", {3, 3, 0, false}, "RHSA-2022:5068"},
    {4, 12, "2.14.0", {3, 3, 0, false}, "RHSA-2022:7398"},
    {4, 14, "2.16.2", {3, 4, 0, false}, "RHSA-2023:5009"},
    {4, 15, "2.16.2", {3, 4, 0, false}, "RHSA-2023:7201"},
    {4, 16, "2.18.0", {3, 4, 0, false}, "RHSA-2024:0045"},
};

/* Specs are short: anything longer than "3.10.10" by far is not one. */
#define SPEC_MAX_LEN 16

static int take_number(const char **p, uint32_t *out)
{
    uint32_t n = 0;
    size_t digits = 0;
    while (**p >= '0' && **p <= '9') {
        if (++digits > 4)
            return -1;
        n = n * 10 + (uint32_t)(*(*p)++ - '0');
    }
    *out = n;
    return digits ? 0 : -1;
}

int ignition_version_parse(const char *s, ignition_version_t *out)
{
    if (!s || strlen(s) > SPEC_MAX_LEN)
        return -1;
    ignition_version_t v = {0};
    const char *p = s;
    if (take_number(&p, &v.major) < 0 || *p++ != '.' || take_number(&p, &v.minor) < 0 || *p++ != '.' ||
        take_number(&p, &v.patch) < 0 || *p != '\0')
        return -1;
    if (v.major != 2 && v.major != 3)
        return -1;
    *out = v;
    return 0;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
    return (a > b) - (a < b);
}

int ignition_version_cmp(const ignition_version_t *a, const ignition_version_t *b)
{
    int c = cmp_u32(a->major, b->major);
    if (!c)
        c = cmp_u32(a->minor, b->minor);
    if (!c)
        c = cmp_u32(a->patch, b->patch);
    if (!c)
        c = (int)b->prerelease - (int)a->prerelease;
    return c;
}

char *ignition_version_format(const ignition_version_t *v, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u%s", (unsigned)v->major, (unsigned)v->minor, (unsigned)v->patch,
             v->prerelease ? "-pre" : "");
    return buf;
}

const ignition_release_t *ignition_releases(size_t *n)
{
    *n = sizeof releases / sizeof releases[0];
    return releases;
}

const ignition_release_t *ignition_release_for(const ocp_version_t *ocp)
{
    const ignition_release_t *found = NULL;
    for (size_t i = 0; i < sizeof releases / sizeof releases[0]; i++) {
        const ignition_release_t *r = &releases[i];
        if (r->ocp_major < ocp->major || (r->ocp_major == ocp->major && r->ocp_minor <= ocp->minor))
            found = r;
    }
    return found;
}
