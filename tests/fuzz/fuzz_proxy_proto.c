/* libFuzzer target: the PROXY protocol header parser. Beyond not crashing,
 * checks what the connection relies on to read the header byte-exact: a
 * complete header's length lies within the input and PROXY_HDR_MAX, the
 * same bytes cut at the header's end give the same answer, every shorter
 * prefix asks for more (never an answer of its own), and "more" is only
 * said below PROXY_HDR_MAX. */
// sources: src/http/proxy_proto.c
// dict: proxy.dict
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "http/proxy_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proxy_hdr_t h, again;
    int r = proxy_hdr_parse(data, size, &h);
    if (r < -1)
        abort();
    if (r == 0 && size >= PROXY_HDR_MAX)
        abort();
    if (r <= 0)
        return 0;
    if ((size_t)r > size || r > PROXY_HDR_MAX || (h.version == 1 && r > PROXY_HDR_V1_MAX))
        abort();
    if (h.version != 1 && h.version != 2)
        abort();
    if (h.has_addr) {
        int fam = h.src.ss_family;
        if ((fam != AF_INET && fam != AF_INET6) || h.dst.ss_family != fam ||
            h.addr_len != (fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)))
            abort();
    }
    if (proxy_hdr_parse(data, (size_t)r, &again) != r || again.has_addr != h.has_addr ||
        (h.has_addr && memcmp(&again.src, &h.src, h.addr_len) != 0))
        abort();
    for (size_t cut = 0; cut < (size_t)r; cut += 1 + (size_t)r / 16)
        if (proxy_hdr_parse(data, cut, &again) != 0)
            abort();
    if (proxy_hdr_parse(data, (size_t)r - 1, &again) != 0)
        abort();
    return 0;
}
