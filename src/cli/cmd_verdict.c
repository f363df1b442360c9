/* skewgate verdict: evaluates a MachineConfiguration as the gate would and
 * prints the verdict, so that an admin or a script can ask before a
 * scale-up, and the rules can be tried on a saved object. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "core/time.h"
#include "verdict/mcobj.h"
#include "verdict/verdict.h"
#include "core/version.h"

static void verdict_usage(FILE *out)
{
    verdict_limits_t limits;
    verdict_limits_default(&limits);
    char ocp[VERDICT_VERSION_LEN], rhel[VERDICT_VERSION_LEN];
    fprintf(out,
            "usage: skewgate verdict [OPTIONS] FILE|-\n"
            "\n"
            "Evaluates a MachineConfiguration (operator.openshift.io/v1) given as YAML or\n"
            "JSON: the object itself, a kubectl get -o json|yaml dump, or a List holding the\n"
            "one named \"cluster\". Prints the boot image skew verdict as JSON. - reads stdin.\n"
            "\n"
            "options:\n"
            "  --ocp-limit V              minimum OCP boot image version (default %s)\n"
            "  --rhel-limit V             minimum RHEL version of an RHCOS boot image (default %s)\n"
            "  --when-unknown D           admit|reject while the status is unset (default admit)\n"
            "  --when-unparseable D       admit|reject when a version does not parse (default admit)\n"
            "  --previous D               the last settled decision, kept while the boot image\n"
            "                             controller is progressing (default none: admit)\n"
            "  --now RFC3339              evaluate at this time, e.g. for an override's expiry\n"
            "                             (default: the current time)\n"
            "  -h, --help                 this help\n"
            "\n"
            "exit status: 0 admit, 3 reject, 2 bad usage or input\n",
            version_format_ocp(&limits.ocp, ocp, sizeof ocp), version_format_rhel(&limits.rhel, rhel, sizeof rhel));
}

static int verdict_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, exit status 2. */
static int verdict_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("skewgate verdict: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int cmd_verdict(int argc, char **argv)
{
    enum { OPT_OCP_LIMIT = 256, OPT_RHEL_LIMIT, OPT_WHEN_UNKNOWN, OPT_WHEN_UNPARSEABLE, OPT_PREVIOUS, OPT_NOW };
    static const struct option options[] = {
        {"ocp-limit", required_argument, NULL, OPT_OCP_LIMIT},
        {"rhel-limit", required_argument, NULL, OPT_RHEL_LIMIT},
        {"when-unknown", required_argument, NULL, OPT_WHEN_UNKNOWN},
        {"when-unparseable", required_argument, NULL, OPT_WHEN_UNPARSEABLE},
        {"previous", required_argument, NULL, OPT_PREVIOUS},
        {"now", required_argument, NULL, OPT_NOW},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    verdict_input_t in = {.state = SOURCE_PRESENT, .now = time(NULL)};
    verdict_limits_default(&in.limits);
    verdict_policy_default(&in.policy);

    opterr = 0;   /* our messages, in our one-line format */
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (opt) {
        case OPT_OCP_LIMIT:
            if (version_parse_ocp(optarg, &in.limits.ocp) < 0)
                return verdict_fail("bad --ocp-limit '%s': expected an OCP version MAJOR.MINOR.PATCH such as 4.13.0",
                                    optarg);
            break;
        case OPT_RHEL_LIMIT:
            if (version_parse_rhel(optarg, &in.limits.rhel) < 0)
                return verdict_fail("bad --rhel-limit '%s': expected a RHEL version MAJOR.MINOR such as 9.2", optarg);
            break;
        case OPT_WHEN_UNKNOWN:
            if (decision_parse(optarg, &in.policy.when_unknown) < 0)
                return verdict_fail("bad --when-unknown '%s': expected admit or reject", optarg);
            break;
        case OPT_WHEN_UNPARSEABLE:
            if (decision_parse(optarg, &in.policy.when_unparseable) < 0)
                return verdict_fail("bad --when-unparseable '%s': expected admit or reject", optarg);
            break;
        case OPT_PREVIOUS:
            if (decision_parse(optarg, &in.previous) < 0)
                return verdict_fail("bad --previous '%s': expected admit or reject", optarg);
            in.has_previous = true;
            break;
        case OPT_NOW:
            if (time_parse_rfc3339(optarg, &in.now) < 0)
                return verdict_fail("bad --now '%s': expected an RFC 3339 time such as 2026-11-01T10:00:00Z", optarg);
            break;
        case 'h':
            verdict_usage(stdout);
            return 0;
        case ':':
            return verdict_fail("%s needs a value (see --help)", argv[optind - 1]);
        default:
            return verdict_fail("bad option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind == argc)
        return verdict_fail("missing FILE (- reads stdin; see --help)");
    if (optind + 1 < argc)
        return verdict_fail("one FILE expected, got %d (see --help)", argc - optind);

    char err[MCOBJ_ERR_LEN];
    json_t *object = mcobj_load(argv[optind], err, sizeof err);
    if (!object)
        return verdict_fail("%s", err);
    in.object = object;
    verdict_t verdict;
    verdict_compute(&in, &verdict);
    verdict.since = in.now;   /* a one-shot evaluation has no history */
    json_decref(object);

    json_t *out = verdict_to_json(&verdict);
    int dumped = json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(out);
    if (dumped < 0 || putchar('\n') == EOF || fflush(stdout) == EOF)
        return verdict_fail("cannot write the verdict: %s", strerror(errno));
    return verdict.decision == DECISION_REJECT ? 3 : 0;
}
