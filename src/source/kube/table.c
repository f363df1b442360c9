#include <time.h>

#include "core/log.h"
#include "source/kube/table.h"

static double wall_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

static void on_list_begin(void *arg)
{
    kube_table_t *t = arg;
    json_decref(t->listing);
    t->listing = json_object();
}

static void on_item(void *arg, json_t *item)
{
    kube_table_t *t = arg;
    /* NULL: out of memory at the list's start, said once it is whole. */
    if (t->listing)
        t->ops->keep(t->owner, t->listing, item, false);
}

static void on_listed(void *arg, const char *rv)
{
    (void)rv;
    kube_table_t *t = arg;
    if (!t->listing) {
        log_msg(LOG_ERROR, t->log_event, "%s: out of memory: keeping the previous view", t->what);
        return;
    }
    json_decref(t->records);
    t->records = t->listing;
    t->listing = NULL;
    t->listed = true;
    t->listed_at = wall_now();
    t->failing = false;
    t->ops->listed(t->owner);
}

static void on_event(void *arg, const kube_event_t *ev, uint64_t arrived_ns)
{
    (void)arrived_ns;
    kube_table_t *t = arg;
    if (t->ops->keep(t->owner, t->records, ev->object, ev->type == KUBE_EVENT_DELETED))
        t->ops->changed(t->owner);
}

/* A bookmark confirms what the table holds: nothing to do. */
static void on_synced(void *arg)
{
    (void)arg;
}

static void on_failing(void *arg)
{
    kube_table_t *t = arg;
    t->failing = true;
    t->ops->failing(t->owner);
}

static void on_error(void *arg, const char *why)
{
    kube_table_t *t = arg;
    t->ops->error(t->owner, t->what, why);
}

int kube_table_init(kube_table_t *t, const char *what, const char *log_event, const kube_table_ops_t *ops,
                    void *owner)
{
    *t = (kube_table_t){.ops = ops, .owner = owner, .what = what, .log_event = log_event};
    t->records = json_object();
    return t->records ? 0 : -1;
}

int kube_table_watch(kube_table_t *t, struct event_base *base, kube_api_t *api, const kube_reflector_cfg_t *cfg)
{
    static const kube_reflector_cbs_t cbs = {on_list_begin, on_item, on_listed,
                                             on_event, on_synced, on_failing, on_error};
    t->reflector = kube_reflector_new(base, api, cfg, &cbs, t);
    return t->reflector ? 0 : -1;
}

void kube_table_destroy(kube_table_t *t)
{
    kube_reflector_free(t->reflector);
    json_decref(t->records);
    json_decref(t->listing);
}
