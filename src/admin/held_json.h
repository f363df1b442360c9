/* held_json: GET /held (private to src/admin/): the merged held table as
 * the JSON the CLI and the status page read. Client-controlled text (the
 * User-Agent, the pool) is made valid UTF-8 without control characters;
 * readers that put it in a page must still escape it. */
#ifndef SKEWGATE_ADMIN_HELD_JSON_H
#define SKEWGATE_ADMIN_HELD_JSON_H

#include <stdint.h>
#include <jansson.h>

#include "proxy/held.h"
#include "proxy/pace.h"

/* {clients:[{address, pool, userAgent, spec, reason, attempts, firstSeen,
 * lastSeen, admittedAt, admitted, heldSeconds, quietSeconds}], held,
 * admittedAfterHold, overflow, maxClients, forgetAfterSeconds}; times RFC
 * 3339 UTC, ages in whole seconds as of now_ms. NULL when out of memory. */
json_t *held_json(const held_view_t *v, uint64_t now_ms);
/* The pacing line (pace.enabled): {joining, waiting, admittedTotal,
 * joinTimeouts, line: [{address, pool, place, waitedSeconds, quietSeconds,
 * present}], counting ("api" | "join_timeout"), why (only when
 * join_timeout), pendingCsrs (the node CSRs cluster-machine-approver
 * counts), youngPendingCsrs, youngNotReadyNodes (within join_timeout),
 * unseenAdmissions, budgetUsed, maxJoining, maxPendingCsrs, replicas,
 * csrCeiling, joinedTotal, approverLimit (max(Machines, Nodes) + 100),
 * approverHeadroom (approverLimit - pendingCsrs, may be negative),
 * machinesCounted}, place
 * from 1 in line order; now_ms on the room's clock (monotonic). NULL when
 * out of memory. */
json_t *pace_json(const pace_stats_t *st, const pace_waiter_t *w, size_t n, uint64_t now_ms);

#endif
