/* snapshot: what the data path reads on every request. The verdict thread
 * builds one per verdict and publishes it to the workers; it never changes
 * afterwards, so readers need no lock. Every reject response is rendered
 * here, once, as the exact bytes to write (DESIGN 1.7, 2). */
#ifndef SKEWGATE_SNAPSHOT_H
#define SKEWGATE_SNAPSHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"
#include "http/connection.h"
#include "http/accept.h"
#include "verdict/verdict.h"

/* The Skewgate-Reason and access log reason of an evidence answer. */
#define GATE_EVIDENCE_REASON "ClientBootImageTooOld"

typedef struct gate_response {
    const char *data;
    size_t len;         /* head and body: the answer to GET */
    size_t head_len;    /* the head alone: the answer to HEAD */
} gate_response_t;

typedef struct gate_snapshot {
    atomic_uint refs;
    bool admit;
    reject_mode_t mode;
    /* How the MCS in front of which the gate stands reads Accept: what
     * explain answers and evidence read by (upstream.mcs_release). */
    mcs_family_t mcs_family;
    verdict_t verdict;
    /* hold and deny ignore the spec: all their rows point at the same bytes */
    gate_response_t responses[IGNITION_SPEC__COUNT][HTTP_CONN__COUNT];
    /* The same mode's answers for a node held on evidence of an old boot
     * image (policy/evidence.h), rendered with every verdict. */
    gate_response_t evidence_responses[IGNITION_SPEC__COUNT][HTTP_CONN__COUNT];
    char bytes[];       /* every response, back to back */
} gate_snapshot_t;

/* Renders the responses of one reject mode for v, read by an MCS of
 * family; one reference, owned by the caller. NULL only when out of
 * memory. */
gate_snapshot_t *gate_snapshot_new(const verdict_t *v, reject_mode_t mode, mcs_family_t family);
gate_snapshot_t *gate_snapshot_ref(gate_snapshot_t *s);
/* Frees the snapshot with its last reference; NULL is ignored. */
void gate_snapshot_unref(gate_snapshot_t *s);

/* The response for a rejected request. spec_index comes from
 * http_accept_ignition_spec (explain mode) or is 0 (hold, deny). */
const gate_response_t *gate_snapshot_reject(const gate_snapshot_t *s, int spec_index,
                                            http_conn_variant_t variant);
/* The same for a node held on evidence of an old boot image. */
const gate_response_t *gate_snapshot_evidence(const gate_snapshot_t *s, int spec_index,
                                              http_conn_variant_t variant);

#endif
