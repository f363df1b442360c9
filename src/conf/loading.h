/* loading: what config.c's entry points run, in order, on a parsed
 * document (private to conf): the defaults, the root of the tables, the
 * rules across fields and what is derived once the file is read. Each
 * returns 0, or -1 with the file:line:column message in ld->err. */
#ifndef SKEWGATE_CONF_LOADING_H
#define SKEWGATE_CONF_LOADING_H

#include "schema.h"

/* tables.c: the whole file's schema, its top-level keys. */
extern const schema_t config_root_schema;

/* defaults.c: every default, set before the file overlays them. */
int config_set_defaults(loader_t *ld, config_t *cfg);

/* validate.c: the rules across fields (listeners, upstream, admin,
 * metrics, enforcement, limits, redirect, coalesce), then what is derived
 * from the values read (evidence.min_spec auto, upstream.server_name). */
int config_validate(loader_t *ld);
int config_derive(loader_t *ld);

#endif
