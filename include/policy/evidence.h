/* evidence: per-node evidence of an old boot image (docs/evidence.md).
 * Ignition asks for the newest config spec it reads; a node that asks for
 * an older spec than evidence.min_spec runs an Ignition older than the
 * boot images the release supports ship, so it is booting from an older
 * image, whatever the cluster-wide record says (custom boot images,
 * MachineSets the boot image controller skipped). */
#ifndef SKEWGATE_EVIDENCE_H
#define SKEWGATE_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"
#include "http/accept.h"
#include "verdict/verdict.h"

/* Whether evidence may hold a request the verdict admits for `reason`:
 * not when an override admits (the admin's last word) nor when
 * enforcement is off (mode None: the admin's way to let held nodes boot);
 * yes for every other admitting reason (Compliant, the when_unknown and
 * when_unparseable defaults, Progressing's kept decision). */
bool evidence_applies(verdict_reason_t reason);

/* True when the request must be held: its Accept (NULL: no header), read
 * as an MCS of family reads it, names an Ignition spec older than
 * e->min_spec. A request that names no
 * Ignition spec (curl, a browser) proves nothing and is not held. The
 * caller checks e->enabled and evidence_applies first. */
bool evidence_too_old(const config_evidence_t *e, mcs_family_t family, const char *accept, size_t accept_len);

#endif
