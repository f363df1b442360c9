/* admission_machines: the data path of admission.machines (DESIGN 1.7).
 * A gated request is judged by its client address against the worker's
 * address set (core/addrset.h, published by source/machines.c): the
 * address of a pending Machine goes on to the verdict; a Node's, or a
 * Machine's that has a nodeRef, is refused (403 ActiveNode); any other is
 * held (503 UnknownMachine, the connection kept, as reject.mode hold
 * does), also before the first full list of Machines and Nodes. One hash
 * lookup per request; conn answers a refusal as every admission policy's
 * (local_response_admission, rendered once per process). */
#ifndef SKEWGATE_ADMISSION_MACHINES_H
#define SKEWGATE_ADMISSION_MACHINES_H

#include <sys/socket.h>

#include "core/addrset.h"
#include "policy/admission.h"

/* ADMISSION_PASS for a pending Machine's address (the verdict decides),
 * ADMISSION_ACTIVE_NODE or ADMISSION_UNKNOWN_MACHINE otherwise; set NULL
 * (no full list yet) holds everyone. */
admission_result_t admission_machines_judge(const addrset_t *set, const struct sockaddr_storage *peer);

#endif
