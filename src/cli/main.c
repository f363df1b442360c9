/* skewgate: a scale gate for the Machine Config Server. main only picks the
 * subcommand; each lives in its own cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"run", cmd_run, "run the gate"},
    {"check", cmd_check, "validate a configuration file"},
    {"verdict", cmd_verdict, "evaluate a MachineConfiguration and print the verdict"},
    {"status", cmd_status, "ask a running gate for its verdict"},
    {"override", cmd_override, "set or clear a running gate's local override"},
    {"redirect", cmd_redirect, "install, remove or check the node-local nftables redirect"},
};

/* The Makefile says both; a build by other means says it is unknown. */
#ifndef SKEWGATE_RELEASE
#define SKEWGATE_RELEASE "unknown"
#endif
#ifndef SKEWGATE_COMMIT
#define SKEWGATE_COMMIT ""
#endif

/* "skewgate 0.1.0 (commit 23d7e4c1a2b3)", without the commit when the build
 * did not know it. */
static void version(void)
{
    printf("skewgate %s", SKEWGATE_RELEASE);
    if (*SKEWGATE_COMMIT)
        printf(" (commit %s)", SKEWGATE_COMMIT);
    printf("\n");
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: skewgate SUBCOMMAND [OPTIONS]\n"
            "\n"
            "skewgate is a scale gate for OpenShift's Machine Config Server: it admits or\n"
            "rejects the Ignition config fetches of new nodes by the cluster's boot image\n"
            "skew verdict.\n"
            "\n"
            "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'skewgate SUBCOMMAND --help' describes each; 'skewgate --version' (-V)\n"
                 "prints the version and the commit it was built from.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        version();
        return fflush(stdout) == 0 ? 0 : 1;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "skewgate: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
