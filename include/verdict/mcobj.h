/* mcobj: reads a MachineConfiguration from YAML or JSON text: a single
 * object, a `kind: List` (kubectl -o json/yaml of a list), or a kubectl
 * dump. Errors name the file and the line and column. */
#ifndef SKEWGATE_MCOBJ_H
#define SKEWGATE_MCOBJ_H

#include <stddef.h>
#include <jansson.h>

#define MCOBJ_ERR_LEN 512
/* Larger inputs are refused: the real object is a few KiB, and the bound
 * keeps a wrong file (or a stream on stdin) from filling memory. */
#define MCOBJ_MAX_BYTES (8u << 20)

/* Parses text (name is used in errors: a path or "<stdin>"). Returns the
 * MachineConfiguration (new reference), or NULL with "name:LINE:COL: problem"
 * (or "name: problem" when no position applies) in err. Not a
 * MachineConfiguration (wrong apiVersion/kind), a List holding none, or a
 * List holding several without one named "cluster": errors. */
json_t *mcobj_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);

/* Reads a file ("-" = stdin), then mcobj_parse. */
json_t *mcobj_load(const char *path, char *err, size_t errlen);

#endif
