/* skewgate redirect: installs, removes or checks the node-local redirect
 * (DESIGN 1.1): the nftables table redirect.table whose rules send the
 * MCS ports that other hosts dial to the gate's listeners. The table is
 * os/nftables' business; this file turns the configuration into its
 * plain values and says what happened. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "conf/config.h"
#include "os/nftables.h"

typedef enum { REDIRECT_INSTALL, REDIRECT_REMOVE, REDIRECT_STATUS } redirect_action_t;

static void redirect_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate redirect install|remove|status [-c FILE] [--force]\n"
            "\n"
            "Manages the node-local redirect: the nftables table redirect.table (family\n"
            "inet, default \"skewgate\") whose nat prerouting chain redirects TCP connections\n"
            "that other hosts make to the MCS's ports (redirect.ports; by default 22623 and\n"
            "22624) to the gate's listeners. The MCS keeps its ports; connections made on\n"
            "this host (the gate's own, over loopback, to the MCS) are not redirected.\n"
            "Nothing outside that table is touched, and a table of that name that holds\n"
            "anything install does not write (a set, another chain, a rule that is not\n"
            "one of its redirects) is neither replaced nor deleted without --force.\n"
            "\n"
            "  install   create the table, or replace it atomically (idempotent)\n"
            "  remove    delete the table, so that nodes reach the MCS directly again: the\n"
            "            whole rollback (succeeds when it is absent already)\n"
            "  status    compare the live table with the configuration\n"
            "\n"
            "  -c, --config FILE   the gate's configuration (default " CLI_DEFAULT_CONFIG ")\n"
            "  --force             install, remove: replace or delete the table even when it\n"
            "                      holds objects install did not write (they are lost)\n"
            "  -h, --help          this help\n"
            "\n"
            "Needs CAP_NET_ADMIN in the host's network namespace. While the table is\n"
            "installed and the gate is down, nodes get connection refused, which Ignition\n"
            "retries forever: they wait, none fails.\n"
            "\n"
            "Exit status: 0 done (status: installed exactly as the configuration says),\n"
            "1 the table is absent or differs (status) or the operation failed (a table\n"
            "holding what install did not write, without --force, included), 2 bad usage\n"
            "or configuration.\n");
}

/* The port pairs as "22623 -> 22643, 22624 -> 22644". */
static void describe_ports(const nftables_redirect_t *r, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_ports && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%stcp %u -> %u", i ? ", " : "", (unsigned)r->ports[i].from,
                               (unsigned)r->ports[i].to);
}

/* The configuration's redirect as plain values: 0, or -1 after saying why. */
static int redirect_from_config(const config_t *cfg, nftables_port_t ports[NFTABLES_MAX_PORTS],
                                nftables_redirect_t *r)
{
    _Static_assert(CONFIG_MAX_REDIRECT_PORTS <= NFTABLES_MAX_PORTS, "port pairs");
    _Static_assert(CONFIG_REDIRECT_TABLE_MAX <= NFTABLES_TABLE_MAX, "table name");
    config_redirect_port_t pairs[CONFIG_MAX_REDIRECT_PORTS];
    size_t n;
    char err[CONFIG_ERR_LEN];
    if (config_redirect_ports(cfg, pairs, &n, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate redirect: %s\n", err);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ports[i] = (nftables_port_t){.from = (uint16_t)pairs[i].from, .to = (uint16_t)pairs[i].to};
    *r = (nftables_redirect_t){.table = cfg->redirect.table, .ports = ports, .n_ports = n};
    if (!nftables_redirect_valid(r, err, sizeof err)) {
        fprintf(stderr, "skewgate redirect: %s: %s\n", cfg->path, err);
        return -1;
    }
    return 0;
}

/* Whether `action` (install, remove) may replace or delete the live
 * table: yes when it holds only what install writes, or with force, after
 * saying what is lost; no after saying what is there and how to go on. */
static bool may_touch_table(const char *action, const char *table, bool force)
{
    char what[512], err[1024];
    int n = nftables_foreign(table, what, sizeof what, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "skewgate redirect %s: %s\n", action, err);
        return false;
    }
    if (n == 0)
        return true;
    if (force) {
        fprintf(stderr, "skewgate redirect %s: --force: table inet %s held %d object%s that install does not "
                "write, now gone with it: %s\n", action, table, n, n == 1 ? "" : "s", what);
        return true;
    }
    fprintf(stderr,
            "skewgate redirect %s: table inet %s holds %d object%s that install does not write: %s; "
            "it is left as it is (see `nft list table inet %s`): set redirect.table to a name of the gate's own, "
            "or pass --force to %s it, and them with it\n",
            action, table, n, n == 1 ? "" : "s", what, table, !strcmp(action, "remove") ? "delete" : "replace");
    return false;
}

static int redirect_install(const nftables_redirect_t *r, bool force)
{
    char err[1024], ports[256];
    if (!may_touch_table("install", r->table, force))
        return 1;
    if (nftables_install(r, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate redirect install: %s\n", err);
        return 1;
    }
    describe_ports(r, ports, sizeof ports);
    printf("table inet %s installed: %s\n", r->table, ports);
    return 0;
}

static int redirect_remove(const char *table, bool force)
{
    char err[1024];
    bool was_present;
    if (!may_touch_table("remove", table, force))
        return 1;
    if (nftables_remove(table, &was_present, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate redirect remove: %s\n", err);
        return 1;
    }
    printf("table inet %s %s\n", table, was_present ? "removed" : "was not installed: nothing to remove");
    return 0;
}

static int redirect_status(const nftables_redirect_t *r)
{
    char why[1024], ports[256];
    switch (nftables_status(r, why, sizeof why)) {
    case NFTABLES_INSTALLED:
        describe_ports(r, ports, sizeof ports);
        printf("table inet %s installed as the configuration says: %s\n", r->table, ports);
        return 0;
    case NFTABLES_ABSENT:
        printf("table inet %s absent: nodes reach whatever listens on the MCS ports directly\n", r->table);
        return 1;
    case NFTABLES_DIFFERS:
        printf("table inet %s differs from the configuration: %s\n", r->table, why);
        return 1;
    case NFTABLES_FAILED:
        break;
    }
    fprintf(stderr, "skewgate redirect status: %s\n", why);
    return 1;
}

static int parse_action(const char *s, redirect_action_t *out)
{
    static const struct {
        const char *name;
        redirect_action_t action;
    } actions[] = {{"install", REDIRECT_INSTALL}, {"remove", REDIRECT_REMOVE}, {"status", REDIRECT_STATUS}};
    for (size_t i = 0; s && i < sizeof actions / sizeof actions[0]; i++) {
        if (!strcmp(s, actions[i].name)) {
            *out = actions[i].action;
            return 0;
        }
    }
    return -1;
}

int cmd_redirect(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = CLI_DEFAULT_CONFIG;
    bool force = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            redirect_usage(stdout);
            return 0;
        default:
            redirect_usage(stderr);
            return 2;
        }
    }
    redirect_action_t action;
    if (optind + 1 != argc || parse_action(argv[optind], &action) < 0) {
        if (optind < argc && optind + 1 == argc)
            fprintf(stderr, "skewgate redirect: unknown action '%s'\n", argv[optind]);
        redirect_usage(stderr);
        return 2;
    }
    if (force && action == REDIRECT_STATUS) {
        fprintf(stderr, "skewgate redirect: --force is for install and remove; status changes nothing\n");
        return 2;
    }
    char err[CONFIG_ERR_LEN];
    config_t *cfg = config_load(config_path, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "skewgate redirect: %s\n", err);
        return 2;
    }
    int rc = 2;
    nftables_port_t ports[NFTABLES_MAX_PORTS];
    nftables_redirect_t r;
    if (action == REDIRECT_REMOVE)
        rc = redirect_remove(cfg->redirect.table, force);   /* only the table's name: a rollback needs no ports */
    else if (redirect_from_config(cfg, ports, &r) == 0)
        rc = action == REDIRECT_INSTALL ? redirect_install(&r, force) : redirect_status(&r);
    config_free(cfg);
    return rc;
}
