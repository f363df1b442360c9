/* readers: the field readers of values only this configuration has, for
 * the tables in tables.c (private to conf). Each is a read_fn (schema.h):
 * 0, or -1 with the file:line:column message in ld->err. */
#ifndef SKEWGATE_CONF_READERS_H
#define SKEWGATE_CONF_READERS_H

#include "schema.h"

/* "auto" (left 0, resolved once loading ends) or 1..CONFIG_MAX_WORKERS. */
int conf_read_workers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* The skew limits: an ocp_version_t "4.13.0", a rhel_version_t "9.2". */
int conf_read_ocp_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
int conf_read_rhel_version(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* evidence.min_spec into a config_evidence_t: "auto" or an Ignition spec
 * such as "3.2.0" (core/ignition.h). */
int conf_read_min_spec(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* upstream.mcs_release into an unsigned: auto (0) or a quoted release
 * "4.N", N >= 13 (verdict/mcs_release.h). */
int conf_read_mcs_release(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* The MachineConfiguration's name (a DNS-1123 subdomain) and the API
 * server's URL ("" for in-cluster). */
int conf_read_kube_name(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
int conf_read_kube_server(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* redirect.table: an nftables table name, as an identifier (see
 * core/text.h: it is spliced into nft commands). */
int conf_read_nft_table(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* gate.prefixes into a config_gate_t: clean absolute paths. */
int conf_read_prefixes(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* OpenSSL lists, each name checked: TLS 1.2 ciphers, TLS 1.3 suites,
 * key exchange groups. */
int conf_read_ciphers(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
int conf_read_ciphersuites(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
int conf_read_groups(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);

/* listeners[].trusted_proxies into a config_listener_t: 1..64 CIDRs. */
int conf_read_trusted_proxies(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
/* admission.token.files into a config_admission_token_t: 1..8 paths. */
/* held.pools: 0..CONFIG_MAX_HELD_POOLS distinct object names of at most
 * CONFIG_HELD_POOL_LEN - 1 bytes; dst is the config_held_t. */
int conf_read_held_pools(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);
int conf_read_token_files(loader_t *ld, const ynode_t *node, const field_t *f, void *dst);

#endif
