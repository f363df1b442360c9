#!/usr/bin/env bash
# File source faults (issue 12 item 3): the object file deleted, garbage,
# the wrong kind, unreadable, and replaced atomically in a loop while
# nodes are served. The last good verdict (OutOfSkew: 503 in hold mode)
# stands through every fault within max_staleness (a deleted file is an
# absent object: when_unknown, as for the kube source), each is logged,
# and during the replace loop no request ever sees anything but the two
# verdicts written (no half state: never when_unknown's admit with
# SourceUnavailable, StatusUnset or an error).
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4096
dir="$TMP/objdir"
mkdir -p "$dir"
object="$dir/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR="127.0.0.1:$(free_port)"
GATE_ENFORCEMENT="  source: file
  file:
    path: $object
    poll_interval: 200ms
  max_staleness: 120s" gate_config "$TMP/gate.yaml" hold unused
gate_start "$TMP/gate.yaml"

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PLAIN_PORT/config/worker"; }
reason() { curl -s "http://$ADMIN_ADDR/verdict" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])'; }
reason_is() { [ "$(reason)" = "$1" ]; }
errors() { grep -c '"level":"warn"\|"level":"error"' "$GATE_LOG" || true; }
errors_above() { [ "$(errors)" -gt "$1" ]; }
wait_until 5 reason_is OutOfSkew || fail "no OutOfSkew at start: $(reason)"

# fault NAME ERRORS [CODE REASON]: the fault is in place; it is logged,
# and for 2 s the node gets CODE (503: the last good verdict) and the
# verdict's reason is REASON (OutOfSkew).
fault() {
  local name=$1 e=$2 want=${3:-503} want_reason=${4:-OutOfSkew} end
  wait_until 5 errors_above "$e" || fail "$name: not logged"
  wait_until 3 reason_is "$want_reason" || fail "$name: reason $(reason), expected $want_reason"
  end=$(( $(date +%s%N) + 2000000000 ))
  while [ "$(date +%s%N)" -lt "$end" ]; do
    [ "$(code)" = "$want" ] || fail "$name: the node got $(code), expected $want"
    sleep 0.1
  done
  reason_is "$want_reason" || fail "$name: reason $(reason)"
  kill -0 "$GATE_PID" || fail "$name: the gate died"
  echo "$name: logged as: $(grep -E '"level":"(warn|error)"' "$GATE_LOG" | tail -1 | cut -c1-200)"
}

note "deleted: the object is absent, as a deleted MachineConfiguration: when_unknown (admit), NotFound"
e=$(errors); rm -f "$object"; fault deleted "$e" 200 NotFound
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 reason_is OutOfSkew || fail "not back to OutOfSkew after the delete: $(reason)"

note "garbage"
e=$(errors); printf 'status: [unclosed\n\x00\x01 garbage {{{\n' >"$object.tmp"; mv "$object.tmp" "$object"; fault garbage "$e"
grep -q "$object:[0-9]*:[0-9]*" "$GATE_LOG" || fail "garbage: the error has no file:line:column"
set_object automatic-out-of-skew.yaml "$object"

note "the wrong kind (a ConfigMap)"
e=$(errors)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster\ndata:\n  a: b\n' >"$object.tmp"; mv "$object.tmp" "$object"
fault "wrong kind" "$e"
set_object automatic-out-of-skew.yaml "$object"

note "unreadable"
e=$(errors)
if [ "$(id -u)" = 0 ]; then
  # root reads a mode 000 file: make the name a directory instead (reading
  # it fails with EISDIR). In one rename, a symlink to a directory: a
  # remove then a mkdir let the source see the file gone in between (and
  # keep that absent view, NotFound, as its last good one).
  mkdir -p "$TMP/a-directory"
  ln -sfn "$TMP/a-directory" "$object.tmp"; mv -T "$object.tmp" "$object"
  fault "unreadable (a directory)" "$e"
  # mv -T: a plain mv onto a symlink to a directory moves into the directory.
  cp "$FIXTURES/automatic-out-of-skew.yaml" "$object.tmp"; mv -T "$object.tmp" "$object"
else
  chmod 000 "$object"; fault "unreadable (mode 000)" "$e"; chmod 644 "$object"
fi
set_object automatic-out-of-skew.yaml "$object"
wait_until 5 reason_is OutOfSkew || fail "not back to OutOfSkew: $(reason)"

note "replaced atomically in a loop while serving: never a half state"
cp "$FIXTURES/automatic-out-of-skew.yaml" "$dir/a.yaml"
cp "$FIXTURES/automatic-compliant.yaml" "$dir/b.yaml"
(
  end=$(( $(date +%s) + 4 ))
  i=0
  while [ "$(date +%s)" -lt "$end" ]; do
    if [ $((i % 2)) = 0 ]; then cp "$dir/b.yaml" "$object.tmp"; else cp "$dir/a.yaml" "$object.tmp"; fi
    mv "$object.tmp" "$object"
    i=$((i + 1))
    sleep 0.05
  done
  echo "$i" >"$TMP/replaced"
) &
PIDS+=($!)
python3 - "$PLAIN_PORT" "$ADMIN_ADDR" <<'PY' || fail "a request saw a half state"
import json, sys, time, urllib.request, http.client
port, admin = int(sys.argv[1]), sys.argv[2]
end = time.monotonic() + 4
seen = {}
while time.monotonic() < end:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/config/worker")
    r = c.getresponse(); r.read(); c.close()
    assert r.status in (200, 503), r.status
    reason = r.getheader("Skewgate-Reason") or ""
    if r.status == 503:
        assert reason == "OutOfSkew", reason
    v = json.load(urllib.request.urlopen("http://%s/verdict" % admin, timeout=5))
    assert v["reason"] in ("OutOfSkew", "Compliant"), v
    seen[v["reason"]] = seen.get(v["reason"], 0) + 1
print("verdicts seen during the loop:", seen)
assert len(seen) == 2, seen
PY
wait_until 10 test -s "$TMP/replaced" || fail "the replace loop did not end"
echo "replaced $(cat "$TMP/replaced") times"
gate_stop
echo PASS
