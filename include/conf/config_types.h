/* config_types: the configuration's types and limits, and no functions.
 * The loader's parts (schema, grammar, readers) fill these structs; they
 * include this header, not conf/config.h, so that the loader (config.c,
 * tables.c, defaults.c, validate.c) may include them without a circle.
 * Everything else includes conf/config.h, which includes this. */
#ifndef SKEWGATE_CONFIG_TYPES_H
#define SKEWGATE_CONFIG_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/cidr.h"
#include "core/ignition.h"
#include "core/log.h"
#include "core/skew.h"

#define CONFIG_ERR_LEN 512
#define CONFIG_MAX_LISTENERS 8
#define CONFIG_MAX_PREFIXES 8
#define CONFIG_MAX_WORKERS 256
#define CONFIG_MAX_REDIRECT_PORTS 16
#define CONFIG_MAX_TRUSTED_PROXIES 64
#define CONFIG_MAX_TOKEN_FILES 8
/* held.pools: the pools skewgate_held_clients names; each as an entry
 * keeps it (proxy/held.h HELD_POOL_LEN). */
#define CONFIG_MAX_HELD_POOLS 32
#define CONFIG_HELD_POOL_LEN 64
/* The kernel's limit on an nftables table name (NFT_TABLE_MAXNAMELEN less the NUL). */
#define CONFIG_REDIRECT_TABLE_MAX 255
/* The MCS ports nodes dial (DESIGN 1.3): what the redirect takes by default. */
#define CONFIG_MCS_TLS_PORT 22623
#define CONFIG_MCS_PLAIN_PORT 22624

typedef struct config_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    char text[128];             /* as written: "0.0.0.0:22623", "[::1]:8443" (IP only, no hostnames) */
} config_addr_t;

/* OpenShift's "Intermediate" TLS security profile: what a listener gets
 * where its tls mapping names no ciphers, ciphersuites or groups. Here, in
 * the lowest layer that needs it; tls falls back to it for a NULL list. */
#define CONFIG_TLS_INTERMEDIATE_CIPHERS                           \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"  \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"  \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define CONFIG_TLS_INTERMEDIATE_CIPHERSUITES \
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define CONFIG_TLS_INTERMEDIATE_GROUPS "X25519:prime256v1:secp384r1"

typedef struct config_tls_server {
    bool enabled;
    char *certificate;          /* PEM chain file */
    char *key;                  /* PEM key file */
    int min_version;            /* TLS1_2_VERSION (default) or TLS1_3_VERSION */
    char *ciphers;              /* TLS <= 1.2 list; default CONFIG_TLS_INTERMEDIATE_CIPHERS */
    char *ciphersuites;         /* TLS 1.3; default CONFIG_TLS_INTERMEDIATE_CIPHERSUITES */
    char *groups;               /* default CONFIG_TLS_INTERMEDIATE_GROUPS */
    bool session_tickets;       /* default true */
} config_tls_server_t;

/* IPv6 listeners are to be bound IPV6_V6ONLY: validation lets [::]:P and
 * 0.0.0.0:P coexist, and refuses only overlaps within one family. */
typedef struct config_listener {
    config_addr_t addr;         /* port 0: the kernel picks one, the gate reports it */
    config_tls_server_t tls;
    /* A PROXY protocol header (v1 or v2) comes first, before TLS, from one
     * of trusted_proxies; the client address is then the header's. */
    bool proxy_protocol;                /* default false */
    cidr_t trusted_proxies[CONFIG_MAX_TRUSTED_PROXIES];
    size_t n_trusted_proxies;           /* required (>= 1) with proxy_protocol */
} config_listener_t;

typedef struct config_upstream {
    config_addr_t addr;         /* default 127.0.0.1:22624: the MCS's plain port on this node */
    bool tls;                   /* default false */
    char *ca_file;              /* verify the MCS with this CA (tls only) */
    char *server_name;          /* SNI and verified name; default: the IP of addr ("127.0.0.1",
                                   "::1"), which is verified as an IP SAN and, per RFC 6066,
                                   not sent as SNI */
    bool insecure_skip_verify;  /* default false; logged loudly */
    uint64_t connect_timeout_ms;    /* default 5s */
    uint64_t response_timeout_ms;   /* default 60s: request sent -> response header */
    uint64_t idle_timeout_ms;       /* default 60s: idle pooled connection */
    uint32_t max_idle;              /* default 16 pooled idle connections per worker */
    uint32_t max_concurrent;        /* default 64 in flight per gate */
    uint32_t max_per_client;        /* default 8: one address's share while others wait
                                       (split like max_concurrent) */
    uint32_t max_queue;             /* default 256 waiting; overflow -> 503 */
    uint64_t queue_timeout_ms;      /* default 10s waiting -> 503 */
    unsigned mcs_release;           /* the MCS's release 4.N: N, or 0 = auto (default; see
                                       verdict/mcs_release.h) */
} config_upstream_t;

typedef enum { SOURCE_KIND_KUBERNETES, SOURCE_KIND_FILE } source_kind_t;

typedef struct config_source_kube {
    char *server;               /* "" = in-cluster (KUBERNETES_SERVICE_HOST/PORT) */
    char *ca_file;              /* default: service account ca.crt */
    char *token_file;           /* default: service account token */
    bool insecure_skip_tls_verify;
    char *name;                 /* default "cluster" */
    uint64_t watch_timeout_ms;  /* default 5m: timeoutSeconds of one watch */
} config_source_kube_t;

typedef struct config_source_file {
    char *path;
    uint64_t poll_interval_ms;  /* default 1s */
} config_source_file_t;

typedef struct config_enforcement {
    source_kind_t source;       /* default kubernetes */
    config_source_kube_t kubernetes;
    config_source_file_t file;
    verdict_limits_t limits;    /* default verdict_limits_default(): OCP 4.13.0, RHEL 9.2 */
    verdict_policy_t policy;    /* default verdict_policy_default(): admit, admit */
    uint64_t max_staleness_ms;  /* default 5m */
} config_enforcement_t;

typedef enum { REJECT_HOLD, REJECT_DENY, REJECT_EXPLAIN } reject_mode_t;

typedef struct config_gate {
    char *prefixes[CONFIG_MAX_PREFIXES];  /* default ["/config/"] */
    size_t n_prefixes;
    reject_mode_t reject_mode;  /* reject.mode, default hold */
} config_gate_t;

/* Per-node evidence of an old boot image (docs/evidence.md): a node whose
 * Ignition asks for a spec older than min_spec is held, whatever the
 * cluster's record says. */
typedef struct config_evidence {
    bool enabled;               /* default false */
    bool min_spec_auto;         /* min_spec: auto (default): from the release table and
                                   enforcement.limits.ocp_version */
    ignition_version_t min_spec;    /* resolved at load; 0.0.0 when auto finds no row and evidence is off */
} config_evidence_t;

typedef struct config_limits {
    uint32_t max_connections;   /* default 10000 (whole gate) */
    uint32_t max_header_bytes;  /* default 16 KiB */
    uint32_t max_headers;       /* default 100 */
    uint32_t max_uri_bytes;     /* default 8 KiB */
    uint64_t header_timeout_ms; /* default 10s -> 408 */
    uint64_t idle_timeout_ms;   /* default 120s client keep-alive (above Ignition's 5s) */
    uint64_t send_timeout_ms;   /* default 60s without progress writing to the client */
    uint32_t max_buffered;      /* default 256 MiB: response bytes kept for clients slower than
                                   the MCS, whole gate (split evenly across workers) */
    uint32_t max_buffered_per_client;   /* default 32 MiB: one address's, on each worker */
    uint64_t drain_timeout_ms;  /* default 30s: SIGTERM drain deadline */
} config_limits_t;

typedef struct config_admin {
    bool enabled;               /* default true */
    config_addr_t addr;         /* default 127.0.0.1:22625; loopback only (127.0.0.0/8, ::1) */
    char *socket;               /* default NULL: none; a unix socket (mode 0600) serving the same
                                   routes, mutations included: its mode is the credential */
    char *token_file;           /* default NULL: none; the bearer token that allows mutations over TCP */
} config_admin_t;

/* The longest unix socket path (sockaddr_un's sun_path less the NUL). */
#define CONFIG_SOCKET_PATH_MAX 107

/* A second, read-only listener: GET /metrics (what the admin API's
 * /metrics serves) and /healthz, nothing that changes anything, so it may
 * bind a node address for the cluster's monitoring. */
typedef struct config_metrics {
    bool enabled;               /* default false */
    config_addr_t addr;         /* default 127.0.0.1:22646; any IP, wildcard included; not a listener,
                                   the admin address or the upstream */
} config_metrics_t;


/* The node-local redirect (`skewgate redirect`, DESIGN 1.1): connections
 * from other hosts to the MCS's ports are redirected to the gate's
 * listeners by an nftables table of the gate's own. */
typedef struct config_redirect_port {
    uint32_t from;              /* the MCS port nodes dial, 1..65535 */
    uint32_t to;                /* the port of one of the gate's listeners */
} config_redirect_port_t;

typedef struct config_redirect {
    char *table;                /* default "skewgate": the table (family inet); an identifier */
    config_redirect_port_t ports[CONFIG_MAX_REDIRECT_PORTS];
    size_t n_ports;             /* 0: redirect.ports not written, config_redirect_ports derives them */
} config_redirect_t;

/* The held-nodes table (proxy/held.h): the recently rejected clients. */
typedef struct config_held {
    uint32_t max_clients;       /* default 4096, split across workers */
    uint64_t forget_after_ms;   /* default 15m of silence */
    /* The pools that exist, the only ones skewgate_held_clients names (a
     * request's pool is the client's word; any other counts as "other"),
     * until the gate watches MachineConfigPools. Default master, worker;
     * live: read at each scrape. */
    char pools[CONFIG_MAX_HELD_POOLS][CONFIG_HELD_POOL_LEN];
    size_t n_pools;
} config_held_t;

/* Admission policies (DESIGN 1.7): off by default, judged before the
 * verdict on gated paths. */
typedef struct config_admission_token {
    char *files[CONFIG_MAX_TOKEN_FILES];    /* one token each; none: the policy is off */
    size_t n_files;
} config_admission_token_t;

/* Collapsed forwarding (proxy/coalesce.h): concurrent admitted GETs whose
 * forwarded request line and Accept bytes are the same share one
 * upstream fetch. */
typedef struct config_coalesce {
    bool enabled;               /* default true */
    uint32_t max_body;          /* default 16 MiB: a longer Content-Length goes unshared */
    uint32_t max_followers;     /* default 1000 readers besides the leader; more go unshared */
    uint64_t ttl_ms;            /* default 0: a completed 200 is shared only while in flight */
    uint32_t min_read_rate;     /* default 32 KiB/s: a reader has send_timeout + body / this to read it all */
} config_coalesce_t;

typedef enum { PACE_LINE_AUTO, PACE_LINE_API, PACE_LINE_LOCAL } pace_line_kind_t;

/* Pacing a scale-up (DESIGN 1.9, proxy/pace.h): at most max_joining nodes
 * admitted and not yet joined, first come, first served. */
typedef struct config_pace {
    bool enabled;               /* default false */
    uint32_t max_joining;       /* default 50 nodes admitted and not yet joined */
    uint64_t join_timeout_ms;   /* default 30m: a node admitted this long ago has joined, or never will */
    uint64_t head_hold_ms;      /* default 15s: a node of the line not seen for this long keeps
                                   no free slot from those behind it */
    uint32_t per_minute;        /* default 0 (off): at most this many admitted in any minute */
    /* default 90: no node is admitted while cluster-machine-approver
     * counts this many node CSRs (client and serving of the last hour,
     * unapproved, Denied and Failed included, or approved by another
     * within 30 s: core/pace_view.h); it stops past max(Machines, Nodes)
     * + 100, and 90 leaves room for the nodes already joining */
    uint32_t max_pending_csrs;
    uint32_t replicas;          /* default 1: gates sharing the cluster's max_joining */
    /* default auto: the shared line (Leases in namespace, source/
     * pace_line.h) when enforcement.source is kubernetes and replicas > 1,
     * the gate's own line otherwise */
    pace_line_kind_t line;
    char *namespace;            /* default: the service account's namespace file, else "skewgate" */
} config_pace_t;

typedef struct config_log {
    log_level_t level;          /* default info */
    bool access;                /* default true */
} config_log_t;

/* admission.machines (DESIGN 1.7): only the addresses of pending Machines
 * get a config. The API server is the one of enforcement.kubernetes
 * (server, ca_file, token_file, insecure_skip_tls_verify, watch_timeout),
 * whatever enforcement.source says. */
typedef struct config_admission_machines {
    bool enabled;               /* default false */
    char *namespace;            /* default "openshift-machine-api" (machine.openshift.io Machines) */
    bool cluster_api;           /* cluster_api.enabled, default false: also cluster.x-k8s.io Machines */
    char *cluster_api_namespace;    /* cluster_api.namespace, default "openshift-cluster-api" */
    uint32_t page_size;         /* default 100 objects per list page */
} config_admission_machines_t;

typedef struct config_admission {
    config_admission_token_t token;
    config_admission_machines_t machines;
} config_admission_t;

/* Where a key naming a file was written: the errors found when a module
 * opens the file (at start, on SIGHUP, in `check --files`) point there, as
 * the loader's own do. */
typedef struct config_origin {
    char *key;                  /* "listeners[0].tls.certificate", "admission.token.files[1]" */
    int line, col;
} config_origin_t;

typedef struct config {
    char *path;                 /* the file it came from */
    config_origin_t *origins;   /* every key read as a file path, as written */
    size_t n_origins;
    uint32_t workers;           /* as written: 1..CONFIG_MAX_WORKERS, or 0 for "auto" (the default),
                                   which config_worker_threads resolves at start */
    config_listener_t listeners[CONFIG_MAX_LISTENERS];
    size_t n_listeners;
    config_upstream_t upstream;
    config_enforcement_t enforcement;
    config_gate_t gate;
    config_evidence_t evidence;
    config_limits_t limits;
    config_admin_t admin;
    config_redirect_t redirect;
    config_metrics_t metrics;
    config_held_t held;
    config_admission_t admission;
    config_coalesce_t coalesce;
    config_pace_t pace;
    config_log_t log;
    /* A loaded configuration is immutable and shared by the threads that
     * serve it (a SIGHUP loads a new one beside it): each holder keeps a
     * reference (config_ref / config_unref). */
    atomic_uint refs;
    char sha256[65];            /* of the file's bytes (lowercase hex); "" from config_parse */
} config_t;

#endif
