/* version: the OCP and RHCOS version rules of the boot image skew check.
 * Parsing is strict: a string that breaks the API server's format is an
 * error, never a guess (DESIGN 1.4). The limits are parsed here too, by
 * the configuration (enforcement.limits) and by `skewgate verdict
 * --ocp-limit/--rhel-limit` alike, so that both accept the same strings. */
#ifndef SKEWGATE_VERSION_H
#define SKEWGATE_VERSION_H

#include <stddef.h>
#include <stdint.h>

typedef struct ocp_version {
    uint32_t major, minor, patch;
} ocp_version_t;

typedef struct rhel_version {
    uint32_t major, minor;
} rhel_version_t;

/* "4.13.0": ^[0-9]+\.[0-9]+\.[0-9]+$, 5 to 10 characters. 0 or -1. */
int version_parse_ocp(const char *s, ocp_version_t *out);
/* RHCOS build -> the RHEL version it is based on. New scheme
 * "9.6.20250523-1" (RHEL = major.minor), legacy "418.94.202410090804-0"
 * (second field: first digit major, rest minor). The scheme is chosen by
 * the width of the third field: 8 digits new, 12 digits legacy. 0 or -1. */
int version_parse_rhcos(const char *s, rhel_version_t *out);
/* A RHEL limit as configured: "9.2" (^[0-9]+\.[0-9]+$), at most 10
 * characters, as long as the longest RHEL version an rhcosVersion can
 * carry. 0 or -1. */
int version_parse_rhel(const char *s, rhel_version_t *out);

/* <0, 0, >0 like strcmp, numeric per component. */
int version_cmp_ocp(const ocp_version_t *a, const ocp_version_t *b);
int version_cmp_rhel(const rhel_version_t *a, const rhel_version_t *b);

/* Formats into buf ("4.13.0", "9.2"); returns buf. */
char *version_format_ocp(const ocp_version_t *v, char *buf, size_t len);
char *version_format_rhel(const rhel_version_t *v, char *buf, size_t len);

#endif
