/* libFuzzer target: what admission.machines keeps of a Machine or Node
 * (kube_addresses_read), fed the input as one object and as a list page
 * whose items are read one by one, as the reflector hands them over.
 * Checks that a read object has a non-empty name, at most
 * KUBE_ADDRESSES_MAX distinct addresses that all go into an address set
 * and come out of it with the class they went in with, and that a refusal
 * says why. */
// sources: src/source/kube/addresses.c src/source/kube/event.c src/core/addrset.c
// pkgs: jansson
// dict: json.dict
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/kube/addresses.h"
#include "source/kube/event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_object(const json_t *object)
{
    kube_addresses_t a;
    char err[256];
    memset(err, 'x', sizeof err);
    if (kube_addresses_read(object, &a, err, sizeof err) < 0) {
        if (!memchr(err, '\0', sizeof err) || !err[0])
            abort();
        return;
    }
    if (!a.name || !a.name[0] || a.n > KUBE_ADDRESSES_MAX)
        abort();
    addrset_builder_t b = {0};
    addrset_class_t cls = a.has_node_ref ? ADDRSET_ACTIVE : ADDRSET_PENDING;
    for (size_t i = 0; i < a.n; i++) {
        for (size_t j = 0; j < i; j++)
            if (!memcmp(a.keys[i].b, a.keys[j].b, sizeof a.keys[i].b))
                abort();            /* kept twice */
        addrset_builder_add(&b, &a.keys[i], cls);
    }
    addrset_t *set = addrset_build(&b);
    if (!set || addrset_count(set, cls) != a.n)
        abort();
    for (size_t i = 0; i < a.n; i++)
        if (addrset_lookup_key(set, &a.keys[i]) != cls)
            abort();
    addrset_unref(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    json_error_t jerr;
    json_t *root = json_loadb((const char *)data, size, 0, &jerr);
    if (root) {
        one_object(root);
        json_decref(root);
    }
    json_t *items;
    char rv[KUBE_RV_MAX], cont[KUBE_CONTINUE_MAX], err[256];
    if (kube_list_page_parse((const char *)data, size, &items, rv, cont, err, sizeof err) == 0) {
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item)
            one_object(item);
        json_decref(items);
    }
    return 0;
}
