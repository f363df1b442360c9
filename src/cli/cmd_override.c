/* skewgate override: sets or clears a running gate's local override
 * (POST /override on its admin listener). Local to that gate: the
 * cluster-wide override is the object's skewgate.openshift.io/override
 * annotation. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/http.h>

#include "admin/client.h"
#include "admin/override_form.h"
#include "conf/grammar.h"
#include "cli/cmd.h"
#include "cli/override_cluster.h"

static void override_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate override admit|reject|clear [--for DURATION] [--reason TEXT]\n"
            "                                          [-c FILE | --admin ADDR|SOCKET] [--token-file FILE]\n"
            "       skewgate override admit|reject|clear [--for DURATION] --cluster [--kubeconfig FILE | -c FILE]\n"
            "\n"
            "Overrides the verdict of one running gate (admit or reject every gated\n"
            "request, whatever the MachineConfiguration says), or clears the override.\n"
            "It is local to that gate and lost on restart; for all replicas at once use\n"
            "--cluster (below).\n"
            "  --for DURATION      lapse by itself after DURATION (90s, 10m, 1h30m, 7d; at most\n"
            "                      7d, 168h); default never\n"
            "  --reason TEXT       why, logged and shown by status with who set it (the\n"
            "                      socket peer's uid and pid, or the token's file); one line,\n"
            "                      at most 200 bytes\n"
            "  -c, --config FILE   the gate's configuration: its admin.socket if set (the\n"
            "                      socket's mode is the credential), else its admin.address\n"
            "                      with the token of its admin.token_file\n"
            "      --admin ADDR    the admin listener (default " ADMIN_CLIENT_DEFAULT_ADDR "), or the\n"
            "                      path of its unix socket (/run/skewgate/admin.sock; a\n"
            "                      relative one, with a '/', from the current directory)\n"
            "      --token-file F  the bearer token to send over TCP (default: admin.token_file)\n"
            "\n"
            "With --cluster it sets (clear: removes) the annotation\n"
            "skewgate.openshift.io/override=admit|reject[;until=RFC3339] on the\n"
            "MachineConfiguration cluster with a JSON merge patch: every replica follows\n"
            "it within a second. It needs `patch` on machineconfigurations (the optional\n"
            "ClusterRole skewgate-override, deploy/kubernetes/override-rbac).\n"
            "  --kubeconfig FILE   the API server and token (default: $KUBECONFIG's first\n"
            "                      file, else ~/.kube/config; its current-context)\n"
            "  -c, --config FILE   the gate's configuration: its enforcement.kubernetes\n"
            "\n"
            "Prints the resulting verdict (--cluster: the annotation). Exit status: 0 done,\n"
            "1 the gate or the API server cannot be asked or refused, 2 bad usage.\n");
}

int cmd_override(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"admin", required_argument, NULL, 'a'},
        {"for", required_argument, NULL, 'f'},
        {"reason", required_argument, NULL, 'r'},
        {"token-file", required_argument, NULL, 't'},
        {"cluster", no_argument, NULL, 'C'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *admin = NULL, *duration = NULL, *token_file = NULL, *kubeconfig = NULL,
               *reason = NULL;
    bool cluster = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'a':
            admin = optarg;
            break;
        case 'f':
            duration = optarg;
            break;
        case 'r':
            reason = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        case 'C':
            cluster = true;
            break;
        case 'k':
            kubeconfig = optarg;
            break;
        case 'h':
            override_usage(stdout);
            return 0;
        default:
            override_usage(stderr);
            return 2;
        }
    }
    const char *action = optind + 1 == argc ? argv[optind] : NULL;
    uint64_t ms = 0;
    if (action && strcmp(action, "admit") && strcmp(action, "reject") && strcmp(action, "clear")) {
        fprintf(stderr, "skewgate override: unknown override action '%s': use admit, reject or clear\n\n", action);
        override_usage(stderr);
        return 2;
    }
    if (!action || (config_path && admin) || (cluster && (admin || token_file)) || (kubeconfig && !cluster)) {
        override_usage(stderr);
        return 2;
    }
    char why[256];
    if (duration && !strcmp(action, "clear")) {
        fprintf(stderr, "skewgate override: --for goes with admit or reject, not clear\n");
        return 2;
    }
    if (duration && override_form_duration(duration, !cluster, &ms, why, sizeof why) < 0) {
        fprintf(stderr, "skewgate override: --for: %s\n", why);
        return 2;
    }
    if (reason && override_form_reason(reason, why, sizeof why) < 0) {
        fprintf(stderr, "skewgate override: --reason: %s\n", why);
        return 2;
    }
    if (reason && cluster) {
        fprintf(stderr, "skewgate override: --reason goes with a local override: the annotation has no place for "
                "it (the API server's audit log records who patched it)\n");
        return 2;
    }
    if (cluster)
        return override_cluster(action, ms, kubeconfig, config_path);
    char err[CONFIG_ERR_LEN];
    config_addr_t addr;
    if (admin_client_addr(admin, config_path, &addr, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate override: %s\n", err);
        return 2;
    }
    /* Over the socket its mode is the credential; over TCP, the token. */
    kube_token_t token;
    bool have_token = false;
    if (addr.ss.ss_family != AF_UNIX &&
        admin_client_token(token_file, config_path, &token, &have_token, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate override: %s\n", err);
        return 2;
    }
    char form[128 + 3 * OVERRIDE_REASON_MAX];
    char *encoded = reason ? evhttp_uriencode(reason, -1, 0) : NULL;
    if (reason && !encoded) {
        fprintf(stderr, "skewgate override: out of memory\n");
        return 1;
    }
    snprintf(form, sizeof form, "action=%s%s%s%s%s", action, duration ? "&for=" : "", duration ? duration : "",
             encoded ? "&reason=" : "", encoded ? encoded : "");
    free(encoded);
    char *body = NULL;
    int status = admin_client_request_auth(&addr, have_token ? token.value : NULL, "POST", "/override", form,
                                           &body, err, sizeof err);
    if (have_token)
        kube_token_free(&token);
    if (status < 0) {
        fprintf(stderr, "skewgate override: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (status == 200) {
        fputs(body, stdout);
    } else {
        fprintf(stderr, "skewgate override: %s answered %d: %s", addr.text, status, body);
        rc = status == 400 ? 2 : 1;
    }
    free(body);
    return rc;
}
