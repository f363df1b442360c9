/* libFuzzer target: the configuration loader on YAML text (config_parse,
 * name "etc/skewgate.yaml", so relative paths resolve too), then
 * config_redirect_ports on what loads, then config_free. Checks: a refusal
 * is NUL-terminated and starts "etc/skewgate.yaml:LINE:COL: " as config.h
 * promises; a loaded config keeps its counts within their arrays (workers
 * as written: 0 is auto, resolved at start). Leaks
 * are reported by ASan. */
// sources: src/conf/*.c src/core/addr.c src/core/cidr.c src/core/ignition.c src/core/ydoc.c src/core/text.c src/core/skew.c src/core/version.c src/core/time.c src/core/log.c src/core/release.c
// pkgs: jansson yaml-0.1 openssl
// dict: yaml.dict
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "etc/skewgate.yaml"

/* "NAME:LINE:COL: " */
static bool positioned(const char *e)
{
    size_t nl = strlen(NAME);
    if (strncmp(e, NAME ":", nl + 1) != 0)
        return false;
    const char *p = e + nl + 1;
    for (int field = 0; field < 2; field++) {
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p++ != ':')
            return false;
    }
    return *p == ' ';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (256u << 10))
        return 0;
    char *text = malloc(size ? size : 1);  /* exact size: ASan sees over-reads */
    memcpy(text, data, size);
    char err[CONFIG_ERR_LEN];
    memset(err, 'x', sizeof err);
    config_t *cfg = config_parse(text, size, NAME, err, sizeof err);
    free(text);
    if (!cfg) {
        if (!memchr(err, '\0', sizeof err) || !positioned(err))
            abort();
        return 0;
    }
    if (cfg->n_listeners > CONFIG_MAX_LISTENERS || cfg->gate.n_prefixes > CONFIG_MAX_PREFIXES ||
        cfg->redirect.n_ports > CONFIG_MAX_REDIRECT_PORTS || cfg->workers > CONFIG_MAX_WORKERS)
        abort();
    config_redirect_port_t ports[CONFIG_MAX_REDIRECT_PORTS];
    size_t n = 99;
    memset(err, 'x', sizeof err);
    if (config_redirect_ports(cfg, ports, &n, err, sizeof err) == 0) {
        if (n > CONFIG_MAX_REDIRECT_PORTS)
            abort();
    } else if (!memchr(err, '\0', sizeof err)) {
        abort();
    }
    config_free(cfg);
    return 0;
}
