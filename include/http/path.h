/* http_path: the request path as the MCS reads it, so that the gate judges
 * exactly what the upstream would serve (DESIGN 1.3).
 *
 * The MCS is Go's net/http. Its ServeMux routes on the cleaned path and
 * answers an unclean one (with "//", "/./", "/../") with a 301 to the clean
 * form, which Ignition follows; the handler then takes the pool from
 * path.Base of the percent-decoded path. The gate therefore matches its
 * prefixes on the decoded, cleaned path, and takes the pool from its last
 * segment.
 *
 * Go has two readings of an encoded '/' or '.': the mux of Go 1.21 cleans
 * the decoded path, the mux of Go 1.22 and later cleans the still-encoded
 * one and routes segment by segment, while the handler always sees the
 * decoded one. Under the newer reading "/config/x%2F..%2F..%2Fworker" or
 * "/config/%2e%2e/worker" reaches the /config/ handler and serves pool
 * "worker", although its decoded, cleaned path is "/worker". No client
 * encodes '/' or '.' in a path (Go's and curl's never do), so such a path
 * is refused (400) rather than judged under one reading. Without them both
 * readings see the same segments and agree with ours.
 *
 * One encoded '/' is read as the MCS reads it: the path's last character,
 * "/config/master%2F", ending a segment other than "." or "..". Both
 * readings then see the same segments (the newer one sees "master%2F" as
 * one segment, which decodes to "master/", and path.Base drops its slash),
 * so both serve the pool the gate judges; the MCS answers it 200, and a 400
 * would fail a node the MCS serves. After "." or "..", as in "/config/..%2F",
 * the readings differ again: refused. docs/mcs-fidelity.md lists the
 * refused spellings with the real MCS's answer to each, which the real-MCS
 * tier checks.
 *
 * Worked examples (raw path -> what the gate judges -> what happens):
 *   /config/worker             /config/worker    gated, pool "worker"
 *   /config//worker            /config/worker    gated; the MCS would 301 there
 *   /config/../config/worker   /config/worker    gated; the MCS would 301 there
 *   /config/./worker/          /config/worker/   gated, pool "worker" (the mux
 *                                                keeps the trailing slash; path.Base
 *                                                drops it)
 *   /%63onfig/worker           /config/worker    gated: Go decodes before routing
 *   /CONFIG/worker             /CONFIG/worker    not gated: Go's mux is
 *                                                case-sensitive, the MCS 404s it
 *   /config/worker%2Fx         refused (400): encoded '/'
 *   /config/worker%2F          /config/worker/   gated, pool "worker": a last '/'
 *   /config/..%2F              refused (400): an encoded '/' ending ".."
 *   /config/%2e%2e/worker      refused (400): encoded '.'
 *   /config/../../worker       /worker           not gated; the MCS 404s it
 *   /config                    /config           not gated by "/config/"; the mux
 *                                                301s to /config/, which is gated
 *   /config/%00                refused (400): decoded control character */
#ifndef SKEWGATE_HTTP_PATH_H
#define SKEWGATE_HTTP_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "http/message.h"

enum {
    HTTP_PATH_OK = 0,
    HTTP_PATH_BAD_ESCAPE = -1,      /* '%' without two hex digits */
    HTTP_PATH_BAD_CHAR = -2,        /* decodes to a control character */
    HTTP_PATH_AMBIGUOUS = -3,       /* an encoded '.', or '/' but a last one */
    HTTP_PATH_NO_SPACE = -4,        /* outcap below len + 1 */
};

/* Percent-decodes raw[0, len) and cleans it like Go's mux: a rooted
 * path.Clean that keeps a trailing slash. An empty or relative path gets
 * its leading '/'. The result has at most len + 1 bytes and no NUL
 * terminator. HTTP_PATH_OK or one of the errors above; all but NO_SPACE
 * mean 400. */
int http_path_normalize(const char *raw, size_t len, char *out, size_t outcap, size_t *outlen);

const char *http_path_strerror(int err);

/* The last segment of a clean path, as Go's path.Base: a trailing slash is
 * ignored ("/config/worker/" -> "worker"); the root has none (len 0). */
http_slice_t http_path_last_segment(const char *clean, size_t len);

/* Does the clean path fall under prefix? A prefix ending in '/' matches
 * what starts with it (like a ServeMux subtree pattern); one without
 * matches itself and what lies below it: "/healthz" matches "/healthz" and
 * "/healthz/x", never "/healthzx". */
bool http_path_has_prefix(const char *clean, size_t len, const char *prefix);

#endif
