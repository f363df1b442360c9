/* skewgate status: asks a running gate for its verdict, source health and
 * held nodes (GET /verdict, /readyz and /held on the admin listener) and
 * prints a summary for people, or with -o json one JSON object for
 * scripts. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "admin/client.h"
#include "cli/cmd.h"
#include "status_text.h"

static void status_usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate status [-c FILE | --admin ADDR] [-o text|json]\n"
            "\n"
            "Asks a running gate's admin listener for its current verdict, the health of\n"
            "its verdict source and the nodes it holds, and prints a summary.\n"
            "  -c, --config FILE   the gate's configuration: its admin.address\n"
            "      --admin ADDR    the admin listener (default " ADMIN_CLIENT_DEFAULT_ADDR "), or the path\n"
            "                      of its unix socket (with a '/': relative from here)\n"
            "  -o, --output FMT    text (default): the summary and the held-nodes table;\n"
            "                      json: GET /verdict's object with GET /held's as \"held\"\n"
            "\n"
            "Exit status: 0 the gate admits, 3 it rejects, 1 it cannot be asked, 2 bad usage.\n");
}

/* GET path as JSON; NULL with a message on stderr. */
static json_t *status_get(const config_addr_t *addr, const char *path)
{
    char err[CONFIG_ERR_LEN];
    char *body = NULL;
    int status = admin_client_request(addr, "GET", path, NULL, &body, err, sizeof err);
    if (status < 0) {
        fprintf(stderr, "skewgate status: %s\n", err);
        return NULL;
    }
    json_t *j = NULL;
    if (status != 200)
        fprintf(stderr, "skewgate status: %s answered %d to %s: %s", addr->text, status, path, body);
    else if (!(j = json_loads(body, 0, NULL)))
        fprintf(stderr, "skewgate status: %s answered %s with no JSON\n", addr->text, path);
    free(body);
    return j;
}

/* NULL when /readyz says ready, else its reason (malloc'ed). */
static char *status_not_ready(const config_addr_t *addr)
{
    char err[CONFIG_ERR_LEN];
    char *body = NULL;
    int status = admin_client_request(addr, "GET", "/readyz", NULL, &body, err, sizeof err);
    if (status == 200) {
        free(body);
        return NULL;
    }
    if (status < 0)
        return strdup(err);
    body[strcspn(body, "\n")] = '\0';
    return body;
}

/* 0 admit, 3 reject, 1 anything else. */
static int status_of_verdict(const json_t *verdict)
{
    const char *decision = json_string_value(json_object_get(verdict, "decision"));
    int rc = !decision ? 1 : !strcmp(decision, "admit") ? 0 : !strcmp(decision, "reject") ? 3 : 1;
    if (rc == 1)
        fprintf(stderr, "skewgate status: the gate's answer holds no decision\n");
    return rc;
}

/* word as the shell reads it back: as is when plain, else in single quotes. */
static void status_shell_word(const char *word, char *out, size_t cap)
{
    if (word[0] && strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") ==
                       strlen(word)) {
        snprintf(out, cap, "%s", word);
        return;
    }
    size_t at = 0;
    if (cap < 3)
        return;
    out[at++] = '\'';
    for (const char *p = word; *p && at + 6 < cap; p++) {
        if (*p == '\'') {
            memcpy(out + at, "'\\''", 4);
            at += 4;
        } else {
            out[at++] = *p;
        }
    }
    out[at++] = '\'';
    out[at] = '\0';
}

/* The flags that reach the gate's admin listener for a change, as the
 * user gave them: -c FILE and a socket path work as they are; a TCP
 * address needs the token besides. NULL: none given (the default). */
static const char *status_how(const char *config_path, const char *admin, char *buf, size_t cap)
{
    char word[1024];
    if (config_path) {
        status_shell_word(config_path, word, sizeof word);
        snprintf(buf, cap, "-c %s", word);
    } else if (admin) {
        status_shell_word(admin, word, sizeof word);
        snprintf(buf, cap, strchr(admin, '/') ? "--admin %s"
                                              : "--admin %s --token-file FILE (admin.token_file), or -c with the "
                                                "gate's configuration",
                 word);
    } else {
        return NULL;
    }
    return buf;
}

int cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"admin", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *admin = NULL, *output = "text";
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:o:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 'a':
            admin = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            status_usage(stdout);
            return 0;
        default:
            status_usage(stderr);
            return 2;
        }
    }
    bool json = !strcmp(output, "json");
    if (!json && strcmp(output, "text")) {
        fprintf(stderr, "skewgate status: unknown output format '%s': use text or json\n\n", output);
        status_usage(stderr);
        return 2;
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
    json_t *verdict = status_get(&addr, "/verdict");
    if (!verdict)
        return 1;
    json_t *held = status_get(&addr, "/held");
    int rc = status_of_verdict(verdict);
    if (json) {
        json_object_set(verdict, "held", held ? held : json_null());
        if (json_dumpf(verdict, stdout, JSON_INDENT(2)) < 0)
            rc = 1;
        fputc('\n', stdout);
    } else {
        char *not_ready = status_not_ready(&addr);
        char how[1200];
        status_print_text_with(stdout, verdict, not_ready, held, time(NULL),
                               status_how(config_path, admin, how, sizeof how));
        free(not_ready);
    }
    json_decref(held);
    json_decref(verdict);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
