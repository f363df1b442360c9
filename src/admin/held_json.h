/* held_json: GET /held (private to src/admin/): the merged held table as
 * the JSON the CLI and the status page read. Client-controlled text (the
 * User-Agent, the pool) is made valid UTF-8 without control characters;
 * readers that put it in a page must still escape it. */
#ifndef SKEWGATE_ADMIN_HELD_JSON_H
#define SKEWGATE_ADMIN_HELD_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "proxy/held.h"
#include "proxy/pace.h"

/* {clients:[{address, pool, userAgent, spec, reason, attempts, firstSeen,
 * lastSeen, admittedAt, admitted, heldSeconds, quietSeconds}], held,
 * admittedAfterHold, overflow, maxClients, forgetAfterSeconds}; times RFC
 * 3339 UTC, ages in whole seconds as of now_ms. NULL when out of memory. */
json_t *held_json(const held_view_t *v, uint64_t now_ms);
/* The two clocks at one instant: the room's times are monotonic, shown
 * as RFC 3339 by their distance from now. */
typedef struct pace_clocks {
    uint64_t mono_ms, wall_ms;
} pace_clocks_t;

/* The pacing room (pace.enabled) as JSON text (NUL-terminated, *len
 * without it; the caller frees it): {joining, waiting, present, maxLine,
 * admittedTotal, joinTimeouts, unrecordedTotal, evictedTotal,
 * forgottenTotal, freeSlots, roomFull, counting ("api" | "join_timeout"),
 * why (only when join_timeout), unseenAdmissions, budgetUsed, maxJoining,
 * maxPendingCsrs, replicas, csrCeiling, joinedTotal, pendingCsrs (the
 * node CSRs cluster-machine-approver counts), youngPendingCsrs,
 * youngNotReadyNodes, approverLimit (max(Machines, Nodes) + 100),
 * approverHeadroom (approverLimit - pendingCsrs, may be negative): null
 * unless counted by the API, machinesCounted,
 * pacedTotal: {cause: n}, headEarliestAdmission (RFC 3339 or null),
 * line: [{address, pool, place, waitedSeconds, quietSeconds, present,
 * firstPaced}] (every waiting node, place from 1 in line order),
 * joiningNodes: [{address, pool, admittedAt, freesAt, freesOn, registered,
 * joiningSeconds}] (oldest admission first)}, and the members of extra
 * (NULL: none). NULL when out of memory. */
char *pace_json_text(const pace_report_t *rep, const pace_clocks_t *c, const json_t *extra, size_t *len);
/* Adds to the pace object (pace_json_text's extra) what protects the line: protection, "none",
 * "token" (admission.token), "machines" (admission.machines) or
 * "token+machines", and with "none" warning, PACE_OPEN_WARNING. 0, or -1
 * when out of memory. */
#define PACE_OPEN_WARNING                                                                                        \
    "open to any address: without admission.token.files or admission.machines.enabled, any address that can " \
    "reach the gate can take a joining slot or a place in the line"
int pace_protection_json(json_t *pace, bool token, bool machines);

#endif
