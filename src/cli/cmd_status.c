/* skewgate status: asks a running gate for its verdict (GET /verdict on
 * the admin listener) and prints it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "admin/client.h"
#include "cli/cmd.h"

static void status_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate status [-c FILE | --admin ADDR]\n"
            "\n"
            "Asks a running gate's admin listener for its current verdict and prints it\n"
            "as JSON (with the verdict source and when it last confirmed its view).\n"
            "  -c, --config FILE   the gate's configuration: its admin.address\n"
            "      --admin ADDR    the admin listener (default " ADMIN_CLIENT_DEFAULT_ADDR ")\n"
            "\n"
            "Exit status: 0 the gate admits, 3 it rejects, 1 it cannot be asked, 2 bad usage.\n");
}

/* 0 admit, 3 reject, 1 anything else. */
static int status_of_verdict(const char *body)
{
    json_t *j = json_loads(body, 0, NULL);
    const char *decision = json_string_value(json_object_get(j, "decision"));
    int rc = !decision ? 1 : !strcmp(decision, "admit") ? 0 : !strcmp(decision, "reject") ? 3 : 1;
    if (rc == 1)
        fprintf(stderr, "skewgate status: the gate's answer holds no decision\n");
    json_decref(j);
    return rc;
}

int cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"admin", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *admin = NULL;
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
        case 'h':
            status_usage(stdout);
            return 0;
        default:
            status_usage(stderr);
            return 2;
        }
    }
    if (optind != argc || (config_path && admin)) {
        status_usage(stderr);
        return 2;
    }
    char err[CONFIG_ERR_LEN];
    config_addr_t addr;
    if (admin_client_addr(admin, config_path, &addr, err, sizeof err) < 0) {
        fprintf(stderr, "skewgate status: %s\n", err);
        return 2;
    }
    char *body = NULL;
    int status = admin_client_request(&addr, "GET", "/verdict", NULL, &body, err, sizeof err);
    if (status < 0) {
        fprintf(stderr, "skewgate status: %s\n", err);
        return 1;
    }
    int rc;
    if (status != 200) {
        fprintf(stderr, "skewgate status: %s answered %d: %s", addr.text, status, body);
        rc = 1;
    } else {
        fputs(body, stdout);
        rc = status_of_verdict(body);
    }
    free(body);
    return rc;
}
