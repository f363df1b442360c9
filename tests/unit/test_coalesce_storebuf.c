/* The coalescing wake-up under a store-buffer memory model: coalesce.c
 * compiled a second time, here, with its atomics and its lock routed to a
 * model in which each (logical) thread's stores wait in a buffer of its
 * own until something drains it, and two threads run in an order the
 * test chooses, on one OS thread.
 *
 * Why a model: the handshake is store buffering (a reader's worker sets
 * its bit and then looks at the fetch's state; the driver stores the
 * state and then looks at the bits), and its failure needs a store to
 * stay unseen across the other side's whole look. On this x86 machine
 * the state and the bits share a cache line and the reader's fetch_or is
 * a locked instruction, so hardware never showed it: 300,000 rounds of
 * test_coalesce's threaded race lost nothing with both fences removed.
 * Here each fence is removed in turn and its test fails at once.
 *
 * The model is stronger than C11 and weaker than sequential consistency,
 * so what fails here may happen on a real machine:
 * - a store, or an RMW's write, below seq_cst waits in the thread's FIFO
 *   buffer; the thread's own loads see it there, others see memory;
 * - an RMW first drains, through its location, any other thread's buffer
 *   (atomicity: it reads the latest value), then writes into its own;
 * - a seq_cst fence or store drains the thread's buffer;
 * - the mutex is a word of the model: lock is an acquire RMW on it,
 *   unlock a release store, so a lock that follows an unlock sees what
 *   was stored before it (FIFO), as pthreads promise, and no more;
 * - plain (non-atomic) memory is seen at once by all.
 * A test starts every scenario with empty buffers and names the thread
 * before each call. */
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sb_entry {
    void *addr;
    size_t size;
    uint64_t val;
} sb_entry_t;

typedef struct sb_thread {
    sb_entry_t buf[64];
    size_t n;
} sb_thread_t;

static sb_thread_t sb_threads[2];
/* The thread running; NULL outside a scenario (set-up): memory at once. */
static sb_thread_t *sb_now;

static uint64_t sb_mem_read(const void *addr, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, addr, size);
    return v;
}

/* Drains t's buffer through its newest entry for addr (all of it for NULL). */
static void sb_drain_through(sb_thread_t *t, const void *addr)
{
    size_t upto = addr ? 0 : t->n;
    for (size_t i = 0; addr && i < t->n; i++)
        if (t->buf[i].addr == addr)
            upto = i + 1;
    for (size_t i = 0; i < upto; i++)
        memcpy(t->buf[i].addr, &t->buf[i].val, t->buf[i].size);
    memmove(t->buf, t->buf + upto, (t->n - upto) * sizeof t->buf[0]);
    t->n -= upto;
}

static void sb_drain(sb_thread_t *t)
{
    sb_drain_through(t, NULL);
}

static uint64_t sb_load(const void *addr, size_t size)
{
    for (size_t i = sb_now ? sb_now->n : 0; i > 0; i--)
        if (sb_now->buf[i - 1].addr == addr)
            return sb_now->buf[i - 1].val;
    return sb_mem_read(addr, size);
}

static void sb_store(void *addr, size_t size, uint64_t val, memory_order mo)
{
    if (!sb_now) {
        memcpy(addr, &val, size);
        return;
    }
    if (sb_now->n == sizeof sb_now->buf / sizeof sb_now->buf[0])
        sb_drain_through(sb_now, sb_now->buf[0].addr);     /* the oldest goes out: always allowed */
    sb_now->buf[sb_now->n++] = (sb_entry_t){.addr = addr, .size = size, .val = val};
    if (mo == memory_order_seq_cst)
        sb_drain(sb_now);
}

typedef enum { SB_ADD, SB_SUB, SB_OR, SB_SWAP } sb_op_t;

static uint64_t sb_rmw(void *addr, size_t size, uint64_t operand, sb_op_t op, memory_order mo)
{
    for (size_t t = 0; t < 2; t++)
        if (&sb_threads[t] != sb_now)
            sb_drain_through(&sb_threads[t], addr);
    uint64_t old = sb_load(addr, size);
    uint64_t val = op == SB_ADD ? old + operand : op == SB_SUB ? old - operand : op == SB_OR ? old | operand : operand;
    if (size < sizeof val)
        val &= (1ull << (8 * size)) - 1;
    sb_store(addr, size, val, mo);
    return old;
}

static void sb_fence(memory_order mo)
{
    if (sb_now && mo == memory_order_seq_cst)
        sb_drain(sb_now);
}

/* coalesce.c has one mutex, table_lock; its word in the model. */
static uint32_t sb_lock_word;

static int sb_mutex_lock(pthread_mutex_t *m)
{
    (void)m;
    uint32_t was = (uint32_t)sb_rmw(&sb_lock_word, sizeof sb_lock_word, 1, SB_SWAP, memory_order_acquire);
    /* One OS thread: a lock held in memory by the other logical thread
     * would never be given back. The scenarios never ask for that. */
    if (was)
        abort();
    return 0;
}

static int sb_mutex_unlock(pthread_mutex_t *m)
{
    (void)m;
    sb_store(&sb_lock_word, sizeof sb_lock_word, 0, memory_order_release);
    return 0;
}

/* A value of *obj's (non-atomic) type, as the model's 64 bits, and back. */
#define SB_BITS(obj, v) __extension__({                 \
    __typeof__((void)0, *(obj)) sb_t_ = (v);            \
    uint64_t sb_u_ = 0;                                 \
    memcpy(&sb_u_, &sb_t_, sizeof sb_t_);               \
    sb_u_;                                              \
})
#define SB_VALUE(obj, bits) __extension__({             \
    __typeof__((void)0, *(obj)) sb_v_;                  \
    uint64_t sb_b_ = (bits);                            \
    memcpy(&sb_v_, &sb_b_, sizeof sb_v_);               \
    sb_v_;                                              \
})

#undef atomic_init
#undef atomic_load_explicit
#undef atomic_store_explicit
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or_explicit
#undef atomic_thread_fence
#define atomic_init(obj, v) memcpy((void *)(obj), &(uint64_t){SB_BITS(obj, v)}, sizeof *(obj))
#define atomic_load_explicit(obj, mo) SB_VALUE(obj, sb_load((const void *)(obj), sizeof *(obj)))
#define atomic_store_explicit(obj, v, mo) sb_store((void *)(obj), sizeof *(obj), SB_BITS(obj, v), (mo))
#define atomic_fetch_add_explicit(obj, v, mo) \
    SB_VALUE(obj, sb_rmw((void *)(obj), sizeof *(obj), (uint64_t)(v), SB_ADD, (mo)))
#define atomic_fetch_sub_explicit(obj, v, mo) \
    SB_VALUE(obj, sb_rmw((void *)(obj), sizeof *(obj), (uint64_t)(v), SB_SUB, (mo)))
#define atomic_fetch_or_explicit(obj, v, mo) \
    SB_VALUE(obj, sb_rmw((void *)(obj), sizeof *(obj), (uint64_t)(v), SB_OR, (mo)))
#define atomic_thread_fence(mo) sb_fence(mo)
#define pthread_mutex_lock(m) sb_mutex_lock(m)
#define pthread_mutex_unlock(m) sb_mutex_unlock(m)

/* The modelled copy keeps its own names (and its own static table), apart
 * from the real coalesce.o the other tests link: a function added to
 * coalesce.c and missing here is defined twice, and the link fails. */
#define coalesce_attach sb_coalesce_attach
#define coalesce_body_len sb_coalesce_body_len
#define coalesce_failure sb_coalesce_failure
#define coalesce_fetch_cut sb_coalesce_fetch_cut
#define coalesce_fetch_done sb_coalesce_fetch_done
#define coalesce_fetch_fail sb_coalesce_fetch_fail
#define coalesce_fetch_publish sb_coalesce_fetch_publish
#define coalesce_fetch_release sb_coalesce_fetch_release
#define coalesce_fetch_keep_at_most sb_coalesce_fetch_keep_at_most
#define coalesce_fetch_sent_to sb_coalesce_fetch_sent_to
#define coalesce_fetch_shared sb_coalesce_fetch_shared
#define coalesce_fetch_ttl_left sb_coalesce_fetch_ttl_left
#define coalesce_fetch_unshare sb_coalesce_fetch_unshare
#define coalesce_fetch_upstream sb_coalesce_fetch_upstream
#define coalesce_reader_leave sb_coalesce_reader_leave
#define coalesce_reader_pump sb_coalesce_reader_pump
#define coalesce_status sb_coalesce_status
#define coalesce_worker_destroy sb_coalesce_worker_destroy
#define coalesce_worker_init sb_coalesce_worker_init

#include "../../src/proxy/coalesce.c"

#include "coalesce_client.h"

static sb_thread_t *const DRIVER = &sb_threads[0];
static sb_thread_t *const READER = &sb_threads[1];

static config_coalesce_t cfg = {.enabled = true, .max_body = 1u << 20, .max_followers = 1000};
static struct event_base *base;
static coalesce_worker_t cw_driver, cw_reader;     /* two workers: the wake-up crosses threads */
static char err[256];

static const char HEAD_KA[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
static const char HEAD_CLOSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n";
static const char KEY[] = "GET /config/worker HTTP/1.1\r\nAccept: application/vnd.coreos.ignition+json;version=3.4.0\r\n";

/* Whether the reader's worker was rung from the driver's thread. */
static bool reader_worker_rung(void)
{
    uint64_t n;
    return read(wakeup_fd(&cw_reader.wake), &n, sizeof n) == sizeof n;
}

static void setup(void)
{
    sb_now = NULL;
    memset(sb_threads, 0, sizeof sb_threads);
    base = event_base_new();
    cr_assert_not_null(base);
    cr_assert_eq(coalesce_worker_init(&cw_driver, base, &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(coalesce_worker_init(&cw_reader, base, &cfg, err, sizeof err), 0, "%s", err);
}

static void teardown(void)
{
    sb_now = NULL;
    coalesce_worker_destroy(&cw_reader);
    coalesce_worker_destroy(&cw_driver);
    event_base_free(base);
}

/* The driver's thread leads a fetch of KEY; its buffer is drained after. */
static coalesce_fetch_t *drive_new_fetch(client_t *leader)
{
    client_init(leader);
    coalesce_fetch_t *f;
    coalesce_key_t k = {.bytes = KEY, .len = sizeof KEY - 1};
    sb_now = DRIVER;
    cr_assert_eq(coalesce_attach(&cw_driver, &k, &leader->r, on_wake, &leader->io, true, &f), COALESCE_LEADS);
    sb_drain(DRIVER);
    return f;
}

static char *drive_head(coalesce_fetch_t *f)
{
    const char *heads[HTTP_CONN__COUNT] = {HEAD_KA, HEAD_CLOSE, HEAD_KA};
    size_t lens[HTTP_CONN__COUNT] = {sizeof HEAD_KA - 1, sizeof HEAD_CLOSE - 1, sizeof HEAD_KA - 1};
    sb_now = DRIVER;
    char *body = coalesce_fetch_shared(f, &cw_driver, 200, heads, lens, 10);
    cr_assert_not_null(body);
    return body;
}

static coalesce_result_t reader_joins_and_pumps(client_t *c)
{
    client_init(c);
    coalesce_fetch_t *none;
    coalesce_key_t k = {.bytes = KEY, .len = sizeof KEY - 1};
    sb_now = READER;
    cr_assert_eq(coalesce_attach(&cw_reader, &k, &c->r, on_wake, &c->io, false, &none), COALESCE_JOINED);
    return coalesce_reader_pump(&c->r, HTTP_CONN_KEEP_ALIVE);
}

static void end_scenario(coalesce_fetch_t *f, client_t *leader, client_t *reader)
{
    sb_drain(DRIVER);
    sb_drain(READER);
    sb_now = NULL;
    client_close(reader);
    coalesce_fetch_done(f, &cw_driver);
    coalesce_fetch_release(f);
    client_close(leader);
}

TestSuite(coalesce_storebuf, .init = setup, .fini = teardown);

/* The driver stores the head's state and looks at the bits while the
 * store still sits in its buffer; the reader joins in that moment, sets
 * its bit, reads the old state and waits. Without the fence at the top of
 * fetch_wake nobody rings the reader's worker. */
Test(coalesce_storebuf, the_driver_sees_a_reader_that_joins_while_its_head_is_unseen)
{
    client_t leader, reader;
    coalesce_fetch_t *f = drive_new_fetch(&leader);
    drive_head(f);
    coalesce_result_t got = reader_joins_and_pumps(&reader);
    sb_drain(DRIVER);       /* the head's state reaches memory, later */
    cr_assert_eq(got, COALESCE_WAIT_FETCH);     /* for the head, or (fenced) for body bytes */
    char head[128];
    bool has_head = read(reader.peer, head, sizeof head) > 0;
    cr_expect(has_head || reader_worker_rung(), "the reader waits for a head that came, and its worker was never rung");
    end_scenario(f, &leader, &reader);
}

/* The reader sets its bit and looks at published while its bit still
 * sits in its buffer; the driver publishes bytes and looks at the bits.
 * Without the fence at the end of reader_attach the driver misses the
 * reader and the bytes wait for a later wake-up (at the end of the body,
 * by then the whole of it). */
Test(coalesce_storebuf, a_reader_whose_bit_is_unseen_is_not_missed_by_a_publish)
{
    client_t leader, reader;
    coalesce_fetch_t *f = drive_new_fetch(&leader);
    char *body = drive_head(f);
    sb_drain(DRIVER);       /* the head is out before the reader comes */
    coalesce_result_t got = reader_joins_and_pumps(&reader);
    cr_assert_eq(got, COALESCE_WAIT_FETCH, "the reader has the head and waits for body bytes");
    memcpy(body, "0123456789", 10);
    sb_now = DRIVER;
    coalesce_fetch_publish(f, &cw_driver, 4);
    sb_drain(DRIVER);
    sb_drain(READER);       /* the bit reaches memory, later */
    cr_expect(reader_worker_rung(), "4 bytes were published and the waiting reader's worker was never rung");
    end_scenario(f, &leader, &reader);
}

/* The model itself: without a fence, store buffering is allowed (both
 * loads see the old values), and with one on each side it is not. A
 * model that drained too eagerly would pass the two tests above with
 * the fences gone. */
Test(coalesce_storebuf, the_model_shows_store_buffering_and_fences_forbid_it)
{
    for (int fenced = 0; fenced <= 1; fenced++) {
        _Atomic int x = 0, y = 0;
        sb_now = DRIVER;
        atomic_store_explicit(&x, 1, memory_order_release);
        if (fenced)
            atomic_thread_fence(memory_order_seq_cst);
        int r_driver = atomic_load_explicit(&y, memory_order_acquire);
        sb_now = READER;
        atomic_store_explicit(&y, 1, memory_order_release);
        if (fenced)
            atomic_thread_fence(memory_order_seq_cst);
        int r_reader = atomic_load_explicit(&x, memory_order_acquire);
        sb_drain(DRIVER);
        sb_drain(READER);
        sb_now = NULL;
        if (fenced)
            cr_expect(r_driver == 1 || r_reader == 1, "fenced, both sides read the old value");
        else
            cr_expect(r_driver == 0 && r_reader == 0, "unfenced, the model did not buffer the stores");
        cr_expect(x == 1 && y == 1);
    }
}
