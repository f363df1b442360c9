/* pace_room: what the room's files (pace.c: the table, time, the local
 * decision; pace_shared.c: the shared line; pace_report.c: reports)
 * share of one another, private to src/proxy/. Every function here is
 * called with the room's lock held. */
#ifndef SKEWGATE_PACE_ROOM_H
#define SKEWGATE_PACE_ROOM_H

#include "proxy/pace.h"

/* How the room counts: its own line (local), the shared line's
 * (shared), waiting for its first list (sync), blind while the shared
 * line cannot be used (fallback), or back on it but keeping to its own
 * share a moment, while the other gates write what they admitted blind
 * (settle). */
typedef enum { LINE_LOCAL, LINE_SHARED, LINE_SYNC, LINE_FALLBACK, LINE_SETTLE } line_mode_t;

/* The room's own helpers, each one file's, called from another. */
pace_node_t *pace_find(const pace_room_t *r, const addrset_key_t *k);
pace_node_t *pace_by_order(pace_link_t *l);
void pace_forget(pace_room_t *r, pace_node_t *n);
void pace_leave_line(pace_room_t *r, pace_node_t *n);
uint64_t pace_age(uint64_t now_ms, uint64_t t);
void pace_expire(pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
bool pace_trusted(const pace_room_t *r);
line_mode_t pace_line_mode(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
void pace_settle_from(pace_room_t *r, uint64_t now_ms);
uint64_t pace_settle_left(const pace_room_t *r, uint64_t now_ms);
uint32_t pace_young_not_ready(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
uint32_t pace_csrs_within(const pace_room_t *r, uint64_t window_ms, uint64_t now_ms);
uint32_t pace_pending_csrs(const pace_room_t *r, uint64_t now_ms);
bool pace_ceiling(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
uint64_t pace_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
bool pace_present(const pace_node_t *n, const config_pace_t *cfg, uint64_t now_ms);
uint32_t pace_in_minute(const pace_room_t *r, uint32_t limit, uint64_t now_ms);
uint32_t pace_rate_limit(const pace_room_t *r, const config_pace_t *cfg);
uint32_t pace_free(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool *rate);
pace_node_t *pace_admit(pace_room_t *r, pace_node_t *n, const addrset_key_t *k, const char *pool, uint64_t now_ms);
uint32_t pace_enqueue(pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, const char *pool,
                      uint64_t now_ms);
void pace_touch(pace_room_t *r, pace_node_t *n, const char *pool, uint64_t now_ms);
uint64_t pace_shared_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
uint64_t pace_shared_blind_used(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms);
void pace_ring(pace_room_t *r);
bool pace_shared_live(const pace_room_t *r, const config_pace_t *cfg, const addrset_key_t *k, uint64_t now_ms);
uint32_t pace_shared_free_slots(const pace_room_t *r, const config_pace_t *cfg, uint64_t now_ms, bool *rate);
pace_decision_t pace_decide_shared(pace_room_t *r, const config_pace_t *cfg, pace_node_t *n, const addrset_key_t *k,
                                   const char *pool, uint64_t now_ms);

#endif
