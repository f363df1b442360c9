#!/usr/bin/env bash
# workers: auto is the number of CPUs the gate may run on when it starts.
# The kubelet's CPU manager narrows a pod's cpuset while it runs (the
# shared pool shrinks as guaranteed pods take CPUs), so a SIGHUP with the
# file unchanged must not read the CPUs again and refuse "workers needs a
# restart (2 -> 1)": auto is still auto. A file that sets workers to a
# number is still a change that needs a restart.
. "$(dirname "$0")/lib.sh"

[ "$(nproc --all)" -ge 2 ] || skip "needs 2 CPUs to narrow the gate's affinity from 2 to 1"
taskset -c 0,1 true 2>/dev/null || skip "CPUs 0 and 1 are not both allowed here"

certs
mcs_start
object="$TMP/mc.yaml"
set_object none.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
GATE_WORKERS=auto gate_config "$TMP/gate.yaml" hold "$object"
SKEWGATE_BIN_REAL=$SKEWGATE_BIN
SKEWGATE_BIN="$TMP/skewgate-on-2-cpus"
# taskset execs the gate: GATE_PID is the gate's.
printf '#!/bin/sh\nexec taskset -c 0,1 "%s" "$@"\n' "$SKEWGATE_BIN_REAL" >"$SKEWGATE_BIN"
chmod +x "$SKEWGATE_BIN"
gate_start "$TMP/gate.yaml"
grep -q '"event":"started".*"2 workers' "$GATE_LOG" || fail "auto did not start 2 workers on 2 CPUs: $(grep started "$GATE_LOG")"

reloads_count() { curl -sf "$ADMIN/config" | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p"; }
reloads_are() { [ "$(reloads_count success)" = "$1" ] && [ "$(reloads_count failure)" = "$2" ]; }
wait_until 10 reloads_are 0 0 || fail "no /config: $(curl -s "$ADMIN/config")"

note "the cpuset narrows to one CPU, every thread of the gate's; SIGHUP with the file unchanged is taken"
taskset -a -p -c 0 "$GATE_PID" >/dev/null
for t in /proc/"$GATE_PID"/task/*; do
  grep -q '^Cpus_allowed_list:[[:space:]]*0$' "$t/status" || fail "thread ${t##*/} still runs on $(grep Cpus_allowed_list "$t/status")"
done
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 0 || fail "the unchanged file was not reloaded: $(grep '"event":"reload"' "$GATE_LOG" | tail -2)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PLAIN_PORT/config/worker")
[ "$code" = 200 ] || fail "after the reload: $code"

note "a number in the file where auto was is still a restart"
sed -i 's/^workers: auto$/workers: 2/' "$TMP/gate.yaml"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 1 || fail "workers: auto -> 2 was not refused: $(grep '"event":"reload"' "$GATE_LOG" | tail -2)"
grep -q 'workers needs a restart (auto -> 2)' "$GATE_LOG" || fail "the refusal does not say why: $(grep '"event":"reload"' "$GATE_LOG" | tail -1)"

echo PASS
