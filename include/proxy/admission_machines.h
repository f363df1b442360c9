/* admission_machines: the data path of admission.machines (DESIGN 1.7).
 * A gated request is judged by its client address against the worker's
 * address set (core/addrset.h, published by source/machines.c): the
 * address of a pending Machine goes on to the verdict; a Node's, or a
 * Machine's that has a nodeRef, is refused (403 ActiveNode); any other is
 * held (503 UnknownMachine, the connection kept, as reject.mode hold
 * does), also before the first full list of Machines and Nodes. One hash
 * lookup per request; the answers are rendered once per process. */
#ifndef SKEWGATE_ADMISSION_MACHINES_H
#define SKEWGATE_ADMISSION_MACHINES_H

#include <stdbool.h>

#include "proxy/conn.h"

/* True when the request was answered here (held or refused); false when
 * the client is a pending Machine's and the verdict decides. */
bool admission_machines_refuse(conn_t *c);

#endif
