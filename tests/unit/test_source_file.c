#include <criterion/criterion.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "source/source.h"

/* Each test drives a real event loop; nothing sleeps. A short tick keeps
 * EVLOOP_ONCE from blocking past the deadline. */
#define DEADLINE_MS 3000
#define TICK_MS 20

typedef struct recorder {
    int calls;
    source_state_t state;
    json_t *object;
} recorder_t;

static struct event_base *base;
static struct event *tick;
static char dir[64];
static char path[128];
static recorder_t seen;
static source_t *src;

static void record(source_state_t state, json_t *object, void *arg)
{
    recorder_t *r = arg;
    r->calls++;
    r->state = state;
    json_decref(r->object);
    r->object = json_incref(object);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/skewgate-source-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/machineconfiguration.yaml", dir);
    base = event_base_new();
    tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval every = {0, TICK_MS * 1000};
    event_add(tick, &every);
    seen = (recorder_t){0};
    src = NULL;
}

static void teardown(void)
{
    source_free(src);
    json_decref(seen.object);
    event_free(tick);
    event_base_free(base);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Runs the loop until a report beyond the first `calls`; false at the deadline. */
static bool wait_for_report(int calls)
{
    long long deadline = now_ms() + DEADLINE_MS;
    while (seen.calls <= calls && now_ms() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    return seen.calls > calls;
}

/* Runs the loop for ms and tells whether anything was reported. */
static bool quiet_for(int ms)
{
    int calls = seen.calls;
    long long until = now_ms() + ms;
    while (now_ms() < until)
        event_base_loop(base, EVLOOP_ONCE);
    return seen.calls == calls;
}

static void write_text(const char *to, const char *text)
{
    FILE *f = fopen(to, "w");
    cr_assert_not_null(f, "%s", to);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static void write_object(const char *to, const char *resource_version)
{
    char text[512];
    snprintf(text, sizeof text,
             "apiVersion: operator.openshift.io/v1\n"
             "kind: MachineConfiguration\n"
             "metadata:\n"
             "  name: cluster\n"
             "  resourceVersion: \"%s\"\n"
             "status:\n"
             "  bootImageSkewEnforcementStatus:\n"
             "    mode: None\n",
             resource_version);
    write_text(to, text);
}

static const char *seen_rv(void)
{
    return json_string_value(
        json_object_get(json_object_get(seen.object, "metadata"), "resourceVersion"));
}

static void start(uint64_t poll_ms)
{
    config_source_file_t cfg = {.path = path, .poll_interval_ms = poll_ms};
    src = source_file_new(base, &cfg, record, &seen);
    cr_assert_not_null(src);
    cr_assert_str_eq(source_kind(src), "file");
    cr_assert_eq(source_start(src), 0);
    /* The first read, like any read but a rename's, is believed once it is
     * seen unchanged SETTLE_MS later (src/source/file.c). */
    if (seen.calls == 0)
        wait_for_report(0);
}

/* Polling is far off in most tests, so that inotify alone must see changes. */
#define NO_POLL_MS 600000

TestSuite(source_file, .init = setup, .fini = teardown);

Test(source_file, initial_read)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    cr_assert(seen.calls == 1 || wait_for_report(0));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "1");
    cr_expect_gt(source_last_sync(src), 0);
    cr_expect_gt(source_last_sync_monotonic_ms(src), 0);
}

Test(source_file, in_place_rewrite_within_a_second)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    /* Same size, likely the same mtime tick: only the event tells. */
    long long began = now_ms();
    write_object(path, "2");
    cr_assert(wait_for_report(1));
    cr_expect_lt(now_ms() - began, 1000);
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "2");
}

Test(source_file, rename_replace)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/.new", dir);
    write_object(tmp, "2");
    cr_assert_eq(rename(tmp, path), 0);
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "2");
}

Test(source_file, broken_file_keeps_the_last_good_object)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    double synced = source_last_sync(src);
    write_text(path, "apiVersion: [\n");
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_FAILING);
    cr_expect_str_eq(seen_rv(), "1");
    cr_expect_eq(source_last_sync(src), synced);
    /* The same error again is neither logged nor reported again. */
    write_text(path, "apiVersion: [\n");
    cr_expect(quiet_for(400));
    write_object(path, "3");
    cr_assert(wait_for_report(2));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "3");
}

Test(source_file, deletion_is_absent_and_recreation_present)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    cr_assert_eq(unlink(path), 0);
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_ABSENT);
    cr_expect_null(seen.object);
    write_object(path, "2");
    cr_assert(wait_for_report(2));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "2");
}

Test(source_file, missing_at_start_is_absent)
{
    start(NO_POLL_MS);
    cr_assert(seen.calls == 1 || wait_for_report(0));
    cr_expect_eq(seen.state, SOURCE_ABSENT);
    cr_expect_gt(source_last_sync(src), 0);
}

Test(source_file, identical_rewrite_is_not_reported)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    write_object(path, "1");
    cr_expect(quiet_for(400));
    cr_expect_eq(seen.calls, 1);
}

Test(source_file, polling_confirms_the_view)
{
    write_object(path, "1");
    start(50);
    double first = source_last_sync(src);
    cr_expect(quiet_for(200));
    cr_expect_gt(source_last_sync(src), first);
}

static const char *seen_mode(void)
{
    return json_string_value(json_object_get(
        json_object_get(json_object_get(seen.object, "status"), "bootImageSkewEnforcementStatus"), "mode"));
}

/* An object whose first part alone parses: a MachineConfiguration with no
 * status (StatusUnset, i.e. admit under the default when_unknown). */
static const char head_part[] = "apiVersion: operator.openshift.io/v1\n"
                                "kind: MachineConfiguration\n"
                                "metadata:\n"
                                "  name: cluster\n"
                                "  resourceVersion: \"2\"\n";
static const char tail_part[] = "status:\n"
                                "  bootImageSkewEnforcementStatus:\n"
                                "    mode: Manual\n"
                                "    manual: {mode: OCPVersion, ocpVersion: 4.12.0}\n";

static void write_all(int fd, const char *text)
{
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
}

/* Issue 12: an in-place rewrite, one open and several write() calls, with
 * the poll on: the half-written file (which parses, status missing) must
 * never be reported, only the whole one once its writer is done. */
Test(source_file, in_place_rewrite_in_several_writes_is_seen_whole)
{
    write_object(path, "1");
    start(50);
    cr_assert_eq(seen.calls, 1);
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    write_all(fd, head_part);
    cr_expect(quiet_for(400), "a half-written file was reported: rv %s", seen_rv());
    write_all(fd, tail_part);
    cr_assert_eq(close(fd), 0);
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "2");
    cr_expect_str_eq(seen_mode(), "Manual");
    cr_expect(quiet_for(200));
    cr_expect_eq(seen.calls, 2);
}

/* The same in two open-write-close steps (a truncating write, then an
 * append): each close looks complete; the stability rule waits until the
 * file has stayed the same for SETTLE_MS. */
Test(source_file, in_place_rewrite_in_two_closes_is_seen_whole)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    cr_assert_eq(seen.calls, 1);
    write_text(path, head_part);
    cr_expect(quiet_for(30), "the first half was reported at once");
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs(tail_part, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "2");
    cr_expect_str_eq(seen_mode(), "Manual");
}

/* An object named other than "cluster" is an error, as for the kube source:
 * the last good view is kept. */
Test(source_file, wrong_name_is_an_error)
{
    write_object(path, "1");
    start(NO_POLL_MS);
    write_text(path, "apiVersion: operator.openshift.io/v1\n"
                     "kind: MachineConfiguration\n"
                     "metadata:\n"
                     "  name: other\n"
                     "  resourceVersion: \"2\"\n"
                     "status:\n"
                     "  bootImageSkewEnforcementStatus:\n"
                     "    mode: None\n");
    cr_assert(wait_for_report(1));
    cr_expect_eq(seen.state, SOURCE_FAILING);
    cr_expect_str_eq(seen_rv(), "1");
}

Test(source_file, wrong_name_at_start_is_an_error)
{
    write_text(path, "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: x\n");
    start(NO_POLL_MS);
    cr_expect_eq(seen.state, SOURCE_FAILING);
    cr_expect_null(seen.object);
}

/* A file that has not changed for a while is whole: the object the gate
 * starts with is reported within source_start, before the listeners open
 * (without this, the first requests of a starting gate were judged by
 * when_unknown while the first read waited out the settle time). */
Test(source_file, a_quiet_file_is_believed_at_start)
{
    write_object(path, "7");
    struct timespec past[2] = {{.tv_sec = time(NULL) - 10}, {.tv_sec = time(NULL) - 10}};
    cr_assert_eq(utimensat(AT_FDCWD, path, past, 0), 0);
    /* ctime moves with utimensat; wait until it too lies SETTLE_MS back. */
    cr_assert(quiet_for(150));
    config_source_file_t cfg = {.path = path, .poll_interval_ms = NO_POLL_MS};
    src = source_file_new(base, &cfg, record, &seen);
    cr_assert_not_null(src);
    cr_assert_eq(source_start(src), 0);
    cr_assert_eq(seen.calls, 1, "not reported within source_start");
    cr_expect_eq(seen.state, SOURCE_PRESENT);
    cr_expect_str_eq(seen_rv(), "7");
}
