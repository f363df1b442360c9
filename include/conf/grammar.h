/* grammar: the scalar grammars of the configuration (durations, sizes,
 * addresses). The grammar_* parsers say why a value is wrong, for the
 * loader's file:line:column messages (0, or -1 with *why set); the
 * config_parse_* ones, for values from elsewhere (the admin API's
 * override form, the client's address), only say whether. */
#ifndef SKEWGATE_CONF_GRAMMAR_H
#define SKEWGATE_CONF_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config_types.h"

/* Reads a run of decimal digits at *p and advances past it; false on none
 * or on uint64 overflow (*overflow tells which). */
bool grammar_decimal(const char **p, uint64_t *out, bool *overflow);

int grammar_duration(const char *s, uint64_t *ms, const char **why);
int grammar_size(const char *s, uint64_t *bytes, const char **why);
int grammar_addr(const char *s, config_addr_t *out, const char **why);

/* The inverses, for range messages: 5400000 -> "1h30m", 16384 -> "16KiB". */
void grammar_format_duration(uint64_t ms, char *buf, size_t len);
void grammar_format_size(uint64_t bytes, char *buf, size_t len);

/* 0.0.0.0 or [::] */
bool grammar_addr_is_wildcard(const config_addr_t *a);
/* 127.0.0.0/8 or [::1] */
bool grammar_addr_is_loopback(const config_addr_t *a);
/* Whether two sockets would claim the same port, or a connection to one
 * would land on the other. Families are kept apart: the gate's IPv6
 * listeners are v6-only, so [::] and 0.0.0.0 on one port may coexist.
 * Port 0 never clashes: the kernel picks a free port. */
bool grammar_addrs_overlap(const config_addr_t *a, const config_addr_t *b);

/* "10s", "250ms", "5m", "1h", "1h30m", "7d" -> milliseconds (a day is
 * 24h). 0 or -1. */
int config_parse_duration(const char *s, uint64_t *ms);
/* "16KiB", "16384", "1MiB" -> bytes. 0 or -1. */
int config_parse_size(const char *s, uint64_t *bytes);
/* "127.0.0.1:22623", "[::1]:22623", "0.0.0.0:22623", ":22623" (all v4). Port
 * 0..65535; IPv6 only in brackets; hostnames are refused. 0 or -1. */
int config_parse_addr(const char *s, config_addr_t *out);

#endif
