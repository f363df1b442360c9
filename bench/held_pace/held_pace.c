/* bench/held_pace/held_pace.c: the gate's CPU to produce /held's pacing
 * text (issue 31): a pace room of N waiting nodes (and one joining), as
 * the gate's admin listener reads it for GET /held: pace_report with the
 * lists, under the room's lock, then pace_json_text. Linked with
 * libskewgate.a (bench/held_pace/run builds it).
 *
 *   held_pace [--nodes N] [--runs R] [--reads K] [--json]
 *
 * Each of R runs times K reads back to back by the thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) and keeps the run's mean per read; prints the
 * median and the range of the R figures, with the report and render
 * parts apart (from K more reads of each alone), and the text's size.
 * One thread, no I/O inside the timed loop. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "admin/held_json.h"
#include "proxy/pace.h"

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The i-th node's address, from 10.0.0.1 on (a node network's). */
static struct sockaddr_storage node_addr(uint32_t i)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl((10u << 24) + 1 + i);
    return ss;
}

typedef struct {
    double total, report, render;
} figures_t;

int main(int argc, char **argv)
{
    uint32_t nodes = 4096;
    int runs = 15, reads = 50;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reads") && i + 1 < argc)
            reads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else {
            fprintf(stderr, "usage: held_pace [--nodes N] [--runs R] [--reads K] [--json]\n");
            return 2;
        }
    }
    if (nodes < 1 || nodes > 1000000 || runs < 1 || runs > 1000 || reads < 1 || reads > 100000) {
        fprintf(stderr, "held_pace: out of range\n");
        return 2;
    }
    /* The gate's defaults but max_joining 1 and long timeouts: one node
     * joins, every other waits, present (head_hold), none forgotten. */
    config_pace_t cfg = {.enabled = true, .max_joining = 1, .join_timeout_ms = 3600 * 1000,
                         .head_hold_ms = 3600 * 1000, .max_pending_csrs = 90, .replicas = 1};
    pace_room_t room;
    if (pace_room_init(&room, nodes) < 0)
        return 1;
    uint64_t t0 = 1000000;
    for (uint32_t i = 0; i <= nodes; i++) {
        struct sockaddr_storage a = node_addr(i);
        pace_decision_t d = pace_decide(&room, &cfg, &a, "worker", t0 + i);
        if ((i == 0) != (d.cause == PACE_ADMITTED) || (i && d.place != i)) {
            fprintf(stderr, "held_pace: node %u: cause %d place %u\n", i, (int)d.cause, d.place);
            return 1;
        }
    }
    uint64_t now = t0 + nodes + 5000;
    pace_clocks_t clocks = {.mono_ms = now, .wall_ms = 1796000000000ull};

    size_t len = 0;
    double *tot = calloc((size_t)runs, sizeof *tot), *rep = calloc((size_t)runs, sizeof *rep),
           *ren = calloc((size_t)runs, sizeof *ren);
    if (!tot || !rep || !ren)
        return 1;
    pace_report_t r;
    for (int run = -1; run < runs; run++) {       /* run -1 warms the caches and the allocator */
        uint64_t a = cpu_ns();
        for (int k = 0; k < reads; k++) {
            if (pace_report(&room, &cfg, now, true, &r) < 0)
                return 1;
            char *text = pace_json_text(&r, &clocks, NULL, &len);
            pace_report_release(&r);
            if (!text)
                return 1;
            free(text);
        }
        uint64_t b = cpu_ns();
        for (int k = 0; k < reads; k++) {
            if (pace_report(&room, &cfg, now, true, &r) < 0)
                return 1;
            pace_report_release(&r);
        }
        uint64_t c = cpu_ns();
        if (pace_report(&room, &cfg, now, true, &r) < 0)
            return 1;
        uint64_t d = cpu_ns();
        for (int k = 0; k < reads; k++)
            free(pace_json_text(&r, &clocks, NULL, &len));
        uint64_t e = cpu_ns();
        if (r.n_line != nodes || r.n_joining != 1) {
            fprintf(stderr, "held_pace: %zu waiting and %zu joining listed\n", r.n_line, r.n_joining);
            return 1;
        }
        pace_report_release(&r);
        if (run >= 0) {
            tot[run] = (double)(b - a) / reads / 1e6;
            rep[run] = (double)(c - b) / reads / 1e6;
            ren[run] = (double)(e - d) / reads / 1e6;
        }
    }
    figures_t med, lo, hi;
    double *sets[3] = {tot, rep, ren};
    double *m[3] = {&med.total, &med.report, &med.render}, *l[3] = {&lo.total, &lo.report, &lo.render},
           *h[3] = {&hi.total, &hi.report, &hi.render};
    for (int s = 0; s < 3; s++) {
        *m[s] = median(sets[s], runs);     /* sorts: min and max at the ends */
        *l[s] = sets[s][0];
        *h[s] = sets[s][runs - 1];
    }
    if (json)
        printf("{\"nodes\": %u, \"runs\": %d, \"reads\": %d, \"bytes\": %zu, \"ms_per_read\": %.4f, "
               "\"ms_per_read_min\": %.4f, \"ms_per_read_max\": %.4f, \"report_ms\": %.4f, \"render_ms\": %.4f}\n",
               nodes, runs, reads, len, med.total, lo.total, hi.total, med.report, med.render);
    else
        printf("/held pacing text at %u waiting nodes (%zu bytes): %.3f ms CPU a read, median of %d runs of %d "
               "(%.3f-%.3f); pace_report %.3f ms (%.3f-%.3f), pace_json_text %.3f ms (%.3f-%.3f)\n",
               nodes, len, med.total, runs, reads, lo.total, hi.total, med.report, lo.report, hi.report,
               med.render, lo.render, hi.render);
    free(tot);
    free(rep);
    free(ren);
    pace_room_destroy(&room);
    return 0;
}
