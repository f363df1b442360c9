/* nftables: the node-local redirect (DESIGN 1.1). One table of the gate's
 * own, `table inet NAME`, holds one chain:
 *
 *   chain prerouting {
 *       type nat hook prerouting priority dstnat; policy accept;
 *       iifname != "lo" tcp dport FROM redirect to :TO
 *       ...
 *   }
 *
 * so that connections from other hosts to the MCS's ports reach the gate's
 * listeners, while locally originated ones (the gate's own upstream
 * connections, the kubelet's probes) are not redirected: prerouting does
 * not see them, and `iifname != "lo"` says so. Nothing outside that table
 * is read or written. Through Debian's libnftables, in the network
 * namespace of the caller; it needs CAP_NET_ADMIN there.
 *
 * The pure parts (the script install runs, reading a listing) are apart
 * from the calls into the kernel, so tests need no privileges. */
#ifndef SKEWGATE_NFTABLES_H
#define SKEWGATE_NFTABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a table name may be: core/text.h's identifier, the kernel's length. */
#define NFTABLES_TABLE_MAX 255
#define NFTABLES_MAX_PORTS 16

typedef struct nftables_port {
    uint16_t from;              /* the port nodes dial, 1..65535 */
    uint16_t to;                /* the port it is redirected to, 1..65535 */
} nftables_port_t;

typedef struct nftables_redirect {
    const char *table;          /* an identifier of at most NFTABLES_TABLE_MAX bytes */
    const nftables_port_t *ports;
    size_t n_ports;             /* 1..NFTABLES_MAX_PORTS, distinct from ports */
} nftables_redirect_t;

/* How the live table compares with a redirect (an outcome, not an error). */
typedef enum {
    NFTABLES_INSTALLED,         /* exactly the table install writes */
    NFTABLES_ABSENT,            /* no such table */
    NFTABLES_DIFFERS,           /* a table of that name, not as asked: why says how */
    NFTABLES_FAILED,            /* it could not be listed: why says why */
} nftables_state_t;

/* --- Pure. */

/* Whether r can be rendered: a table name that is an identifier, 1..max
 * pairs, ports non-zero, from ports distinct. false with why. */
bool nftables_redirect_valid(const nftables_redirect_t *r, char *why, size_t whylen);
/* Object: the script install runs as one transaction: the table is added
 * (a no-op when it exists), deleted, and added anew with its chain and
 * rules, so that it replaces any previous one atomically. malloc'ed; NULL
 * when r is not valid or out of memory. */
char *nftables_install_script(const nftables_redirect_t *r);
/* Object: the script remove runs: add then delete, one transaction, which
 * succeeds whether or not the table exists. NULL as above. */
char *nftables_remove_script(const char *table);
/* Reads the JSON of `list tables` (libnftables' JSON output): whether a
 * table of family inet named table is in it. -1 when the text is not such
 * a listing. */
int nftables_listing_has_table(const char *json, const char *table);
/* Reads the JSON of `list table inet NAME` and says whether it is exactly
 * the table install writes for r: NFTABLES_INSTALLED, or NFTABLES_DIFFERS
 * (also for text that is not such a listing) with the first difference
 * in why. Handles and the metainfo object are ignored; rule order counts. */
nftables_state_t nftables_compare(const char *json, const nftables_redirect_t *r, char *why, size_t whylen);

/* Reads the JSON of `list table inet NAME`: how many of its objects
 * install did not write (sets, maps, other chains, rules that are not its
 * redirects in its chain...), with the first few named in what ("set
 * \"blocked\", a rule in chain \"input\""). 0: the table holds only what some
 * install wrote (whatever its ports), or nothing. -1 when the text is not
 * such a listing. */
int nftables_listing_foreign(const char *json, const char *table, char *what, size_t whatlen);

/* --- The kernel, through libnftables. Status convention. */

/* The live table's objects that install did not write, as
 * nftables_listing_foreign says (0 also when there is no such table); -1
 * with err. install and remove replace or delete the table whole, so
 * their caller asks this first. */
int nftables_foreign(const char *table, char *what, size_t whatlen, char *err, size_t errlen);

/* Runs the install script, then lists the table and compares it, so that
 * 0 means the table is now in place as asked. -1 with err. */
int nftables_install(const nftables_redirect_t *r, char *err, size_t errlen);
/* Deletes the table; 0 also when it was absent (*was_present says which). */
int nftables_remove(const char *table, bool *was_present, char *err, size_t errlen);
/* Lists the table and compares it with r (see nftables_state_t). */
nftables_state_t nftables_status(const nftables_redirect_t *r, char *why, size_t whylen);

#endif
