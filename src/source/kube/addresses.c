#include <stdio.h>
#include <string.h>

#include "source/kube/addresses.h"

static bool counted_type(const char *type)
{
    return type && (!strcmp(type, "InternalIP") || !strcmp(type, "ExternalIP"));
}

static bool known(const kube_addresses_t *out, const addrset_key_t *key)
{
    for (size_t i = 0; i < out->n; i++)
        if (!memcmp(out->keys[i].b, key->b, sizeof key->b))
            return true;
    return false;
}

int kube_addresses_read(const json_t *object, kube_addresses_t *out, char *err, size_t errlen)
{
    *out = (kube_addresses_t){0};
    out->name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    if (!out->name || !*out->name) {
        snprintf(err, errlen, "object without metadata.name");
        return -1;
    }
    const json_t *status = json_object_get(object, "status");
    out->has_node_ref = json_is_object(json_object_get(status, "nodeRef"));
    const json_t *list = json_object_get(status, "addresses");
    if (list && !json_is_array(list) && !json_is_null(list)) {
        snprintf(err, errlen, "%.200s: status.addresses is not a list", out->name);
        return -1;
    }
    size_t i;
    const json_t *entry;
    json_array_foreach(list, i, entry) {
        const char *text = json_string_value(json_object_get(entry, "address"));
        addrset_key_t key;
        if (!counted_type(json_string_value(json_object_get(entry, "type"))) || !text ||
            addrset_key_parse(text, &key) < 0 || known(out, &key))
            continue;
        if (out->n == KUBE_ADDRESSES_MAX) {
            out->dropped++;
            continue;
        }
        out->keys[out->n++] = key;
    }
    return 0;
}
