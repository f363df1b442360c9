/* gate: what both the start (cmd_run.c) and a reload (gate_reload.c)
 * build or log the same way, so that neither calls into the other:
 * cmd_run -> gate_reload -> gate, cmd_run -> gate. */
#include <jansson.h>

#include "core/addr.h"
#include "core/log.h"
#include "gate.h"

void gate_log_listening(const config_listener_t *lc, const struct sockaddr_storage *ss)
{
    char host[ADDR_IP_TEXT_LEN];
    addr_ip_text(ss, host, sizeof host);
    unsigned port = addr_port(ss);
    json_t *f = json_pack("{s:s, s:i, s:b}", "host", host, "port", (int)port, "tls", lc->tls.enabled);
    log_json(LOG_INFO, "listening", f);
}

source_t *gate_new_source(gate_t *g, const config_t *cfg)
{
    const config_enforcement_t *e = &cfg->enforcement;
    if (e->source == SOURCE_KIND_KUBERNETES)
        return source_kube_new(g->base, &e->kubernetes, verdict_ctl_on_source, g->ctl);
    return source_file_new(g->base, &e->file, verdict_ctl_on_source, g->ctl);
}

void gate_log_warning(const char *msg, void *arg)
{
    (void)arg;
    log_msg(LOG_WARN, "token_file_mode", "%s", msg);
}
