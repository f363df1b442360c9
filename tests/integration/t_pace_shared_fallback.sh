#!/usr/bin/env bash
# The shared line's fallback (issue 34, docs/pacing.md "The shared line"):
# one gate of three (pace.replicas 3, max_joining 6, pace.line auto: the
# shared line) on the fake API server.
#   - The Leases answer 403 (the RBAC rule missing): /held's pace.lineMode
#     is local with lineWhy, skewgate_pace_shared_line 0, and the gate
#     counts blind: floor(6/3) = 2 of its own joining nodes, the third
#     Paced (budget). The Leases back: lineMode api again within seconds,
#     the two blind admissions written into the joining Lease, and the
#     gate settling (PACE_SETTLE_MS, 45 s: lineWhy says so): 0 + 3 x 2 of
#     6 used, so the next node waits until it has settled.
#   - One update fails (503): no fallback (lineMode stays api), the claim
#     is dropped and the node claims again at its next ask.
#   - Every update of the joining Lease conflicts (9 in a row: 3 rounds of
#     3 tries): the claims are dropped each round, then the gate falls back
#     (lineWhy says the updates conflicted); 5 s later it settles, and
#     once settled it claims again and the node is admitted through the
#     Lease. (Its blind budget admits nobody meanwhile: 3 x 2 of 6.)
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
cp "$FA_DIR/token" "$GATE_TOKEN"
chmod 600 "$GATE_TOKEN"
ADMIN="127.0.0.1:$(free_port)"
ADMIN_ADDR=$ADMIN ADMIN_SOCKET= GATE_ENFORCEMENT="  source: kubernetes
  kubernetes:
    server: $FA_URL
    ca_file: $FA_DIR/pki/ca.crt
    token_file: $GATE_TOKEN" gate_config "$TMP/gate.yaml" hold unused "pace:
  enabled: true
  max_joining: 6
  replicas: 3
  namespace: skewgate
  join_timeout: 10m
log:
  level: info"
gate_start "$TMP/gate.yaml"
PORT=$(gate_port false)
held_pace() { curl -sf --max-time 5 "http://$ADMIN/held" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["pace"]))'; }
pace_is() {   # pace_is PYTHON_EXPR (p: /held's pace)
  held_pace | python3 -c 'import json, sys; p = json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"
}
ask() {   # ask I: node 127.5.0.I asks once: "STATUS REASON"
  python3 - "$PORT" "$1" <<'PY'
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").environ["ROOT"], "tests/integration"))
from pace_node import fetch
print("%d %s" % fetch("127.5.0.%s" % sys.argv[2], int(sys.argv[1])))
PY
}
export ROOT
wait_until 20 pace_is 'p["lineMode"] == "api" and p["lineWhy"] is None' || die "not on the shared line: $(held_pace)"
wait_until 10 reason_is Compliant || die "the verdict did not settle"

note "the Leases forbidden (403): the gate falls back, blind, and says why"
fa_ctl '{"fault":"leases_unavailable","code":403,"verbs":["get","list","watch","create","update","delete"]}' >/dev/null
fa_ctl '{"fault":"drop_watches"}' >/dev/null
wait_until 20 pace_is 'p["lineMode"] == "local" and "403" in (p["lineWhy"] or "")' ||
  die "no fallback on 403: $(held_pace)"
held_pace | python3 -c 'import json, sys; print("lineWhy:", json.load(sys.stdin)["lineWhy"])'
curl -sf "http://$ADMIN/metrics" | grep -x "skewgate_pace_shared_line 0" >/dev/null || die "skewgate_pace_shared_line is not 0: $(curl -sf "http://$ADMIN/metrics" | grep -E "shared_line|^skewgate_pace_(joining|waiting) ")"
[ "$(ask 1)" = "200 " ] || die "node 1 not admitted blind"
[ "$(ask 2)" = "200 " ] || die "node 2 not admitted blind"
[ "$(ask 3)" = "503 Paced" ] || die "node 3 admitted past floor(6/3) of the gate's own"

note "the Leases back: the shared line again, the blind admissions written, settling"
fa_ctl '{"fault":"leases_available"}' >/dev/null
wait_until 20 pace_is 'p["lineMode"] == "api"' || die "not back on the shared line: $(held_pace)"
curl -sf "http://$ADMIN/metrics" | grep -x "skewgate_pace_shared_line 1" >/dev/null || die "skewgate_pace_shared_line is not 1"

in_lease() {   # in_lease I: node 127.5.0.I is in the joining Lease
  fa_kubectl get lease -n skewgate skewgate-pace-joining -o jsonpath='{.metadata.annotations.skewgate\.openshift\.io/joining}' 2>/dev/null |
    grep "^127\.5\.0\.$1 " >/dev/null
}
blind_written() { in_lease 1 && in_lease 2; }
wait_until 10 blind_written || die "the blind admissions are not in the joining Lease"
pace_is '"its own share" in (p["lineWhy"] or "")' || die "not settling after the fallback: $(held_pace)"
held_pace | python3 -c 'import json, sys; print("lineWhy:", json.load(sys.stdin)["lineWhy"])'
[ "$(ask 4)" = "503 Paced" ] || die "node 4 admitted while settling (0 + 3 x 2 of 6 used)"
admitted() { [ "$(ask "$1")" = "200 " ]; }
settled_at=$(date +%s)
wait_until 60 admitted 4 || die "node 4 was not admitted on the shared line: $(held_pace)"
echo "node 4 admitted $(( $(date +%s) - settled_at )) s after the gate came back (it settles 45 s)"
in_lease 4 || die "node 4 is not in the joining Lease"

note "one update fails (503): the claim again, no fallback"
fa_ctl '{"fault":"leases_unavailable","status":503,"verbs":["update"],"count":1}' >/dev/null
on_line_admitted() { pace_is 'p["lineMode"] == "api"' || die "one failed update: off the shared line: $(held_pace)"; admitted "$1"; }
wait_until 20 on_line_admitted 6 || die "node 6 was not admitted after one failed update: $(held_pace)"
in_lease 6 || die "node 6 is not in the joining Lease"
grep 'joining Lease failed (1 in a row): HTTP 503' "$GATE_LOG" >/dev/null || die "no update failed: the fault was not met"

note "updates that conflict 9 times in a row: the fallback, then the claim again"
fa_ctl '{"fault":"lease_conflicts","count":9}' >/dev/null
conflicted() { ask 5 >/dev/null; pace_is '"conflicted" in (p["lineWhy"] or "")'; }
wait_until 20 conflicted || die "no fallback after the conflicts: $(held_pace)"
held_pace | python3 -c 'import json, sys; print("lineWhy:", json.load(sys.stdin)["lineWhy"])'
# blind meanwhile: it admits what floor(6/3) leaves of its own (3 joining: none)
back() { ask 5 >/dev/null; pace_is 'p["lineMode"] == "api"'; }
wait_until 20 back || die "not back on the shared line after the conflicts: $(held_pace)"
wait_until 70 admitted 5 || die "node 5 was not admitted after the fallback: $(held_pace)"
in_lease 5 || die "node 5 is not in the joining Lease"
echo PASS
