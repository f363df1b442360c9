#include <string.h>

#include "core/time.h"
#include "source/machines.h"
#include "status_text.h"

static const struct {
    const char *name, *words;
} status_reasons[] = {
    /* The verdict's (DESIGN 1.6). */
    {"Override", "an override set by an administrator decides"},
    {"SourceUnavailable", "the verdict source has no current view (never synced, or failing too long)"},
    {"NotFound", "the MachineConfiguration object does not exist"},
    {"StatusUnset", "the MCO has not reported the boot image skew status yet"},
    {"EnforcementDisabled", "boot image skew enforcement is off (mode None)"},
    {"BootImageControllerDegraded", "the MCO's boot image controller is degraded"},
    {"BootImageControllerProgressing", "the MCO is still updating the boot images: the last settled decision holds"},
    {"VersionUnparseable", "a boot image version in the status does not parse"},
    {"OutOfSkew", "the boot images are older than this release supports"},
    {"Compliant", "the boot images are recent enough for this release"},
    /* The admission policies' (DESIGN 1.7), per client. */
    {"TokenMissing", "the client sent no provisioning token"},
    {"TokenInvalid", "the client's provisioning token is not an accepted one"},
    {"UnknownMachine", "the client's address is not yet a pending Machine's"},
    {"ActiveNode", "the client's address belongs to a Node that already joined"},
    {"Paced", "pace.max_joining nodes are joining (cluster-wide with the API view), others asked first, or "
              "pace.max_pending_csrs node CSRs are pending: its turn comes"},
    {"ClientBootImageTooOld", "the client's own boot image (its Ignition) is too old"},
};

const char *status_reason_words(const char *reason)
{
    for (size_t i = 0; reason && i < sizeof status_reasons / sizeof status_reasons[0]; i++)
        if (!strcmp(status_reasons[i].name, reason))
            return status_reasons[i].words;
    return NULL;
}

void status_age(long long s, char *buf, size_t cap)
{
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, cap, "%llds", s);
    else if (s < 3600)
        snprintf(buf, cap, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, cap, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, cap, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

static const char *status_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* "2026-12-01T10:00:00Z (3m12s ago)" or "(in 3m12s)"; "never" for null. */
static void status_when(const char *rfc3339, time_t now, char *buf, size_t cap)
{
    time_t t;
    if (!rfc3339 || !*rfc3339 || time_parse_rfc3339(rfc3339, &t) < 0) {
        snprintf(buf, cap, "never");
        return;
    }
    char age[32];
    status_age(t <= now ? now - t : t - now, age, sizeof age);
    snprintf(buf, cap, t <= now ? "%s (%s ago)" : "%s (in %s)", rfc3339, age);
}

/* admission.machines' watch: its state and since when, its last list (or
 * none since it started: the gate is not ready and holds every gated
 * client), and its last error, kept after it recovers. */
static void status_print_machines(FILE *out, const json_t *w, time_t now)
{
    char since[96], when[96];
    status_when(json_string_value(json_object_get(w, "since")), now, since, sizeof since);
    const char *last_list = json_string_value(json_object_get(w, "lastList"));
    if (last_list) {
        status_when(last_list, now, when, sizeof when);
        fprintf(out, "Machines:    %s since %s; last list %s\n", status_str(w, "state"), since, when);
    } else {
        fprintf(out, "Machines:    NOT READY: %s since %s; never listed: every gated client is held (UnknownMachine)\n",
                status_str(w, "state"), since);
    }
    const json_t *failed = json_object_get(w, "lastError");
    if (json_is_object(failed)) {
        status_when(json_string_value(json_object_get(failed, "at")), now, when, sizeof when);
        fprintf(out, "             last error: %s (%s)\n", status_str(failed, "message"), when);
    }
}

/* A refused reload first: the file on disk is not what serves. */
static void status_print_reload_refused(FILE *out, const json_t *r, time_t now)
{
    char at[96], since[96];
    status_when(json_string_value(json_object_get(r, "at")), now, at, sizeof at);
    status_when(json_string_value(json_object_get(r, "servingSince")), now, since, sizeof since);
    const char *loc = status_str(r, "location");
    fprintf(out, "DEGRADED:    the last reload (at %s) was refused: %s%s%s\n", at, loc, *loc ? ": " : "",
            status_str(r, "message"));
    fprintf(out, "             the gate serves the configuration loaded at %s; fix the file, then reload "
            "(SIGHUP)\n", since);
}

/* Who set the local override and why (a gate before these fields, or
 * the annotation's: nothing). */
static void status_print_setter(FILE *out, const json_t *o, time_t now)
{
    const json_t *by = json_object_get(o, "setBy");
    const char *origin = status_str(o, "origin");
    if (!strcmp(origin, "cluster")) {
        fprintf(out, "             set by the cluster-wide annotation (its author: the API server's audit log)\n");
        return;
    }
    if (!json_is_object(by))
        return;
    char at[96];
    status_when(json_string_value(json_object_get(o, "setAt")), now, at, sizeof at);
    if (!strcmp(status_str(by, "via"), "socket"))
        fprintf(out, "             set by uid %lld (pid %lld) over the admin socket at %s\n",
                (long long)json_integer_value(json_object_get(by, "uid")),
                (long long)json_integer_value(json_object_get(by, "pid")), at);
    else
        fprintf(out, "             set with the token of admin.token_file %s at %s\n", status_str(by, "credential"), at);
    const char *reason = json_string_value(json_object_get(o, "reason"));
    fprintf(out, "             reason: %s\n", reason ? reason : "none given (skewgate override --reason TEXT)");
}

static void status_print_verdict(FILE *out, const json_t *v, const char *not_ready, time_t now, const char *how)
{
    const json_t *refused = json_object_get(v, "reloadRefused");
    if (json_is_object(refused))
        status_print_reload_refused(out, refused, now);
    const char *decision = status_str(v, "decision"), *reason = status_str(v, "reason");
    const char *words = status_reason_words(reason);
    char when[96];
    fprintf(out, "Decision:    %s new nodes: %s (%s)\n", !strcmp(decision, "admit") ? "ADMIT" : "HOLD",
            words ? words : reason, reason);
    fprintf(out, "Message:     %s\n", status_str(v, "message"));
    status_when(json_string_value(json_object_get(v, "since")), now, when, sizeof when);
    fprintf(out, "Since:       %s\n", when);
    const char *mode = status_str(v, "mode");
    fprintf(out, "Mode:        %s\n", *mode ? mode : "unknown (no status)");

    const json_t *boot = json_object_get(v, "bootImage"), *limit = json_object_get(v, "limit");
    const char *ocp = status_str(boot, "ocpVersion"), *rhcos = status_str(boot, "rhcosVersion");
    fprintf(out, "Boot image:  ");
    if (*ocp)
        fprintf(out, "OCP %s", ocp);
    if (*rhcos)
        fprintf(out, "%sRHCOS %s", *ocp ? ", " : "", rhcos);
    if (!*ocp && !*rhcos)
        fprintf(out, "not reported");
    fprintf(out, "; limit OCP %s, RHEL %s\n", status_str(limit, "ocpVersion"), status_str(limit, "rhelVersion"));

    /* The watch's own reason goes on its line (status_print_machines). */
    if (not_ready && !strncmp(not_ready, MACHINES_NOT_READY_PREFIX, strlen(MACHINES_NOT_READY_PREFIX)))
        not_ready = NULL;
    status_when(json_string_value(json_object_get(v, "lastSync")), now, when, sizeof when);
    fprintf(out, "Source:      %s, %s%s; last sync %s\n", status_str(v, "source"), not_ready ? "NOT READY: " : "healthy",
            not_ready ? not_ready : "", when);
    /* Kept after the source recovers: the time tells whether it is news. */
    const json_t *failed = json_object_get(v, "lastError");
    if (json_is_object(failed)) {
        status_when(json_string_value(json_object_get(failed, "at")), now, when, sizeof when);
        fprintf(out, "Last error:  %s (%s)\n", status_str(failed, "message"), when);
    }

    const json_t *mcs = json_object_get(v, "mcsRelease");
    if (json_is_object(mcs)) {
        /* from cluster: the operator version read; from default: why, when
         * auto could not take the cluster's word. */
        const char *version = json_string_value(json_object_get(mcs, "version"));
        const char *why = json_string_value(json_object_get(mcs, "why"));
        fprintf(out, "MCS release: %s, Accept read as %s (from %s%s%s)%s%s\n", status_str(mcs, "release"),
                status_str(mcs, "family"), status_str(mcs, "from"), version ? ": ClusterOperator version " : "",
                version ? version : "", why ? ": " : "", why ? why : "");
    }

    const json_t *w = json_object_get(v, "machinesWatch");
    if (json_is_object(w))
        status_print_machines(out, w, now);

    const json_t *o = json_object_get(v, "override");
    if (json_is_object(o)) {
        const char *until = json_string_value(json_object_get(o, "until"));
        if (until)
            status_when(until, now, when, sizeof when);
        fprintf(out, "Override:    %s, %s%s\n", status_str(o, "decision"), until ? "lapses " : "no expiry",
                until ? when : "");
        status_print_setter(out, o, now);
        if (strcmp(status_str(o, "origin"), "cluster"))
            fprintf(out, "             undo: skewgate override clear %s\n", how);
        else
            fprintf(out, "             undo: skewgate override clear --cluster\n");
    } else {
        fprintf(out, "Override:    none\n");
    }
}

enum { COL_ADDR, COL_POOL, COL_UA, COL_SPEC, COL_REASON, COL_ATTEMPTS, COL_HELD, COL_SEEN, COL_STATE, N_COLS };
static const char *const status_heads[N_COLS] = {
    "ADDRESS", "POOL", "IGNITION", "SPEC", "REASON", "ATTEMPTS", "HELD FOR", "LAST SEEN", "STATE",
};

/* One client's cells; the strings live in cells[] or in c. */
static void status_cells(const json_t *c, char store[N_COLS][48], const char *cells[N_COLS])
{
    cells[COL_ADDR] = status_str(c, "address");
    cells[COL_POOL] = status_str(c, "pool");
    if (!*cells[COL_POOL])
        cells[COL_POOL] = "-";      /* a refusal by an admission policy: by address alone */
    cells[COL_UA] = status_str(c, "userAgent");
    cells[COL_SPEC] = status_str(c, "spec");
    cells[COL_REASON] = status_str(c, "reason");
    snprintf(store[COL_ATTEMPTS], sizeof store[0], "%lld",
             (long long)json_integer_value(json_object_get(c, "attempts")));
    status_age(json_integer_value(json_object_get(c, "heldSeconds")), store[COL_HELD], sizeof store[0]);
    char age[32];
    status_age(json_integer_value(json_object_get(c, "quietSeconds")), age, sizeof age);
    snprintf(store[COL_SEEN], sizeof store[0], "%s ago", age);
    cells[COL_ATTEMPTS] = store[COL_ATTEMPTS];
    cells[COL_HELD] = store[COL_HELD];
    cells[COL_SEEN] = store[COL_SEEN];
    cells[COL_STATE] = status_str(c, "state");
}

/* Columns padded to their width, two spaces apart; the last unpadded. */
static void status_print_row(FILE *out, const char *const cells[N_COLS], const size_t width[N_COLS])
{
    for (int k = 0; k + 1 < N_COLS; k++)
        fprintf(out, "%-*s  ", (int)width[k], cells[k]);
    fprintf(out, "%s\n", cells[N_COLS - 1]);
}

static void status_print_held(FILE *out, const json_t *held)
{
    const json_t *clients = json_object_get(held, "clients");
    size_t n = json_array_size(clients);
    char forget[32];
    status_age(json_integer_value(json_object_get(held, "forgetAfterSeconds")), forget, sizeof forget);
    fprintf(out, "\nHeld nodes:  %lld held, %lld admitted after a hold",
            (long long)json_integer_value(json_object_get(held, "held")),
            (long long)json_integer_value(json_object_get(held, "admittedAfterHold")));
    long long overflow = json_integer_value(json_object_get(held, "overflow"));
    if (overflow)
        fprintf(out, ", %lld attempts not recorded (table full)", overflow);
    fprintf(out, "; forgotten after %s of silence\n", forget);
    if (n == 0)
        return;
    size_t width[N_COLS];
    for (int k = 0; k < N_COLS; k++)
        width[k] = strlen(status_heads[k]);
    char store[N_COLS][48];
    const char *cells[N_COLS];
    for (size_t i = 0; i < n; i++) {
        status_cells(json_array_get(clients, i), store, cells);
        for (int k = 0; k < N_COLS; k++)
            if (strlen(cells[k]) > width[k])
                width[k] = strlen(cells[k]);
    }
    status_print_row(out, status_heads, width);
    for (size_t i = 0; i < n; i++) {
        status_cells(json_array_get(clients, i), store, cells);
        status_print_row(out, cells, width);
    }
}

/* The pacing line (/held's pace, present while pace.enabled): the counts,
 * then the waiting nodes in line order, each with its place and wait. */
static void status_print_pace(FILE *out, const json_t *pace)
{
    const json_t *line = json_object_get(pace, "line");
    fprintf(out, "\nPacing:      %lld joining, %lld waiting, %lld admitted, %lld slots freed at join_timeout\n",
            (long long)json_integer_value(json_object_get(pace, "joining")),
            (long long)json_integer_value(json_object_get(pace, "waiting")),
            (long long)json_integer_value(json_object_get(pace, "admittedTotal")),
            (long long)json_integer_value(json_object_get(pace, "joinTimeouts")));
    /* The shared line (pace.line), when configured: on it, or why not. */
    if (json_object_get(pace, "lineWhy")) {
        if (!strcmp(status_str(pace, "lineMode"), "api"))
            fprintf(out, "  line:      shared (the pace-line Leases): %lld joining, %lld waiting, %lld claims in flight\n",
                    (long long)json_integer_value(json_object_get(pace, "sharedJoining")),
                    (long long)json_integer_value(json_object_get(pace, "sharedWaiting")),
                    (long long)json_integer_value(json_object_get(pace, "claimsInFlight")));
        if (!strcmp(status_str(pace, "lineMode"), "api") && json_is_string(json_object_get(pace, "lineWhy")))
            fprintf(out, "             %s\n", status_str(pace, "lineWhy"));   /* settling after a fallback */
        else if (strcmp(status_str(pace, "lineMode"), "api"))
            fprintf(out, "  line:      the gate's own, not the shared one: %s\n", status_str(pace, "lineWhy"));
    }
    /* A gate before this field: nothing to say of how it counts. */
    const char *counting = status_str(pace, "counting");
    if (!strcmp(counting, "api"))
        fprintf(out, "  counting:  by the API: %lld of %lld used (%lld young Nodes not Ready + %lld pending CSRs + "
                "%lld x %lld admitted, no Node yet), %lld joined Ready\n",
                (long long)json_integer_value(json_object_get(pace, "budgetUsed")),
                (long long)json_integer_value(json_object_get(pace, "maxJoining")),
                (long long)json_integer_value(json_object_get(pace, "youngNotReadyNodes")),
                (long long)json_integer_value(json_object_get(pace, "youngPendingCsrs")),
                (long long)json_integer_value(json_object_get(pace, "replicas")),
                (long long)json_integer_value(json_object_get(pace, "unseenAdmissions")),
                (long long)json_integer_value(json_object_get(pace, "joinedTotal")));
    else if (*counting)
        fprintf(out, "  counting:  by join_timeout alone (%lld of %lld used): %s\n",
                (long long)json_integer_value(json_object_get(pace, "budgetUsed")),
                (long long)json_integer_value(json_object_get(pace, "maxJoining")), status_str(pace, "why"));
    if (*counting && strcmp(counting, "api"))
        fprintf(out, "  node CSRs: not counted without the API view; ceiling %lld\n",
                (long long)json_integer_value(json_object_get(pace, "maxPendingCsrs")));
    else if (*counting)
        fprintf(out,
                "  node CSRs: %lld as the approver counts them (both kinds, Denied and Failed included), ceiling "
                "%lld%s; the approver's limit %lld (max(%s, Nodes) + 100), headroom %lld%s\n",
                (long long)json_integer_value(json_object_get(pace, "pendingCsrs")),
                (long long)json_integer_value(json_object_get(pace, "maxPendingCsrs")),
                json_is_true(json_object_get(pace, "csrCeiling")) ? ": at the ceiling, nobody is admitted" : "",
                (long long)json_integer_value(json_object_get(pace, "approverLimit")),
                json_is_true(json_object_get(pace, "machinesCounted")) ? "Machines" : "Machines not watched: 0",
                (long long)json_integer_value(json_object_get(pace, "approverHeadroom")),
                json_integer_value(json_object_get(pace, "approverHeadroom")) < 0 ? ": it approves nothing" : "");
    if (json_is_true(json_object_get(pace, "roomFull")))
        fprintf(out, "  line full: %lld places (held.max_clients); a newcomer takes the place of one absent longest, "
                "%lld made way, %lld paced without a place\n",
                (long long)json_integer_value(json_object_get(pace, "maxLine")),
                (long long)json_integer_value(json_object_get(pace, "evictedTotal")),
                (long long)json_integer_value(json_object_get(pace, "unrecordedTotal")));
    const char *head = status_str(pace, "headEarliestAdmission");
    if (*head)
        fprintf(out, "  head:      the first present node of the line is admitted at the soonest %s\n", head);
    const json_t *joining = json_object_get(pace, "joiningNodes");
    if (json_array_size(joining))
        fprintf(out, "  joining (admitted at, frees at the latest, on):\n");
    for (size_t i = 0; i < json_array_size(joining); i++) {
        const json_t *j = json_array_get(joining, i);
        fprintf(out, "       %-39s %-16s %s  %s  %s%s\n", status_str(j, "address"), status_str(j, "pool"),
                status_str(j, "admittedAt"), status_str(j, "freesAt"), status_str(j, "freesOn"),
                json_is_true(json_object_get(j, "registered")) ? " (its Node registered)" : "");
    }
    if (json_array_size(line))
        fprintf(out, "  waiting, in line order:\n");
    for (size_t i = 0; i < json_array_size(line); i++) {
        const json_t *w = json_array_get(line, i);
        char waited[32], quiet[32];
        status_age(json_integer_value(json_object_get(w, "waitedSeconds")), waited, sizeof waited);
        status_age(json_integer_value(json_object_get(w, "quietSeconds")), quiet, sizeof quiet);
        fprintf(out, "  %3lld. %-39s %-16s waited %s%s%s\n", (long long)json_integer_value(json_object_get(w, "place")),
                status_str(w, "address"), status_str(w, "pool"), waited,
                json_is_true(json_object_get(w, "present")) ? "" : ", absent for ",
                json_is_true(json_object_get(w, "present")) ? "" : quiet);
    }
}

/* Who may enter the line (/held's pace.protection; a gate before it says
 * nothing), with the warning when nothing but reachability does. */
static void status_print_pace_protection(FILE *out, const json_t *pace)
{
    static const struct {
        const char *name, *words;
    } kinds[] = {
        {"token", "admission.token: only holders of a provisioning token enter the line"},
        {"machines", "admission.machines: only addresses of pending Machines enter the line"},
        {"token+machines", "admission.token and admission.machines: only a pending Machine's address with a "
                           "provisioning token enters the line"},
    };
    const char *protection = status_str(pace, "protection");
    if (!*protection)
        return;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(protection, kinds[i].name)) {
            fprintf(out, "  protected: %s (%s)\n", kinds[i].name, kinds[i].words);
            return;
        }
    fprintf(out, "  protected: NO, %s\n", *status_str(pace, "warning") ? status_str(pace, "warning") : protection);
}

void status_print_text_with(FILE *out, const json_t *verdict, const char *not_ready, const json_t *held,
                            time_t now, const char *how_flags)
{
    /* Without the flags, the default TCP address: a change there needs the token. */
    status_print_verdict(out, verdict, not_ready, now,
                         how_flags ? how_flags
                                   : "--admin 127.0.0.1:22625 --token-file FILE (admin.token_file), or -c with the "
                                     "gate's configuration");
    if (held)
        status_print_held(out, held);
    const json_t *pace = held ? json_object_get(held, "pace") : NULL;
    if (pace)
        status_print_pace(out, pace);
    if (pace)
        status_print_pace_protection(out, pace);
}

void status_print_text(FILE *out, const json_t *verdict, const char *not_ready, const json_t *held, time_t now)
{
    status_print_text_with(out, verdict, not_ready, held, now, NULL);
}
