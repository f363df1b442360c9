#include <pthread.h>
#include <stdio.h>

#include "core/addrset.h"
#include "proxy/admission_machines.h"
#include "proxy/worker.h"

typedef struct prepared {
    char text[192];
    size_t len;
} prepared_t;

static prepared_t answers[ADMISSION__COUNT][HTTP_CONN__COUNT];
static pthread_once_t answers_once = PTHREAD_ONCE_INIT;

static const struct {
    int status;
    const char *line;
} answer_status[ADMISSION__COUNT] = {
    [ADMISSION_UNKNOWN_MACHINE] = {503, "503 Service Unavailable"},
    [ADMISSION_ACTIVE_NODE] = {403, "403 Forbidden"},
};

/* Empty bodies: Ignition retries a 503 with an empty body on the same
 * connection every 5 s, so a held machine boots on the first try after
 * its Machine shows its address. */
static void render_answers(void)
{
    for (int r = 0; r < ADMISSION__COUNT; r++)
        for (int v = 0; v < HTTP_CONN__COUNT; v++) {
            prepared_t *p = &answers[r][v];
            int n = snprintf(p->text, sizeof p->text,
                             "HTTP/1.1 %s\r\nContent-Length: 0\r\nSkewgate-Reason: %s\r\n"
                             "Cache-Control: no-store\r\n%s\r\n",
                             answer_status[r].line, admission_reason_name((admission_reason_t)r),
                             http_connection_line((http_conn_variant_t)v, NULL));
            p->len = (size_t)n;
        }
}

bool admission_machines_refuse(conn_t *c)
{
    worker_t *w = c->w;
    addrset_class_t cls = w->addrset ? addrset_lookup(w->addrset, &c->peer) : ADDRSET_UNKNOWN;
    if (cls == ADDRSET_PENDING)
        return false;
    admission_reason_t why = cls == ADDRSET_ACTIVE ? ADMISSION_ACTIVE_NODE : ADMISSION_UNKNOWN_MACHINE;
    pthread_once(&answers_once, render_answers);
    const prepared_t *p = &answers[why][http_conn_variant(c->keep_alive, c->http10)];
    c->log.decision = REQUEST_REJECT;
    c->log.reason = admission_reason_name(why);
    c->log.status = answer_status[why].status;
    metrics_add(&w->metrics.admission_rejects[why], 1);
    conn_send_prepared(c, p->text, p->len);
    return true;
}
