#include "core/addrset.h"
#include "policy/admission_machines.h"

admission_result_t admission_machines_judge(const addrset_t *set, const struct sockaddr_storage *peer)
{
    addrset_class_t cls = set ? addrset_lookup(set, peer) : ADDRSET_UNKNOWN;
    if (cls == ADDRSET_PENDING)
        return ADMISSION_PASS;
    return cls == ADDRSET_ACTIVE ? ADMISSION_ACTIVE_NODE : ADMISSION_UNKNOWN_MACHINE;
}
