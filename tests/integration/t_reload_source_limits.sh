#!/usr/bin/env bash
# One reload that switches the verdict source and, in the same file,
# changes the limits (bug 4 of the review): the new file source reads its
# object while it starts, before the commit, and that first report was
# judged and published with the running limits: the new object (OCP
# 4.12.0) under the old limit (4.13.0), a reject that reached the workers,
# in deny mode a 403 for a node that came then, before the commit's admit.
# Each reload must publish only verdicts of the new configuration: here
# every verdict logged after the SIGHUP is checked to come from the new
# object judged by the new limit, both ways (a transient reject before an
# admit, a transient admit before a reject), so the test does not depend
# on a request landing in the window.
. "$(dirname "$0")/lib.sh"

certs
mcs_start 4096
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
set_object automatic-compliant.yaml "$TMP/a.yaml"     # OCP 4.18.2, resourceVersion 51234
set_object automatic-out-of-skew.yaml "$TMP/b.yaml"   # OCP 4.12.0, resourceVersion 51240

# gate_yaml OBJECT OCP_LIMIT: deny mode, the file source on OBJECT, the OCP
# limit (empty: the default, 4.13.0).
gate_yaml() {
  local limits=""
  [ -z "$2" ] || limits="
  limits:
    ocp_version: \"$2\""
  ADMIN_ADDR=$ADMIN_ADDR GATE_ENFORCEMENT="  source: file
  file:
    path: $1$limits" gate_config "$TMP/gate.yaml" deny unused
}
reloads_are() {
  [ "$(curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"]["success"])')" = "$1" ]
}
verdict_is() {
  [ "$(curl -sf "$ADMIN/verdict" | python3 -c 'import json, sys; v = json.load(sys.stdin); print(v["decision"], v["reason"], v["resourceVersion"])')" = "$1" ]
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PLAIN_PORT/config/worker"; }
log_lines() { wc -l <"$GATE_LOG"; }

# published_since LINE DECISION RV LIMIT: every verdict logged after the
# log's line LINE is DECISION for resourceVersion RV with LIMIT in its
# message (the new object judged by the new limit), there is at least one,
# and the reload's "verdict source now" line comes before the first.
published_since() {
  python3 - "$GATE_LOG" "$@" <<'PY'
import json, sys
path, since, decision, rv, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
seen, source_switched, bad = [], False, []
for n, line in enumerate(open(path), 1):
    if n <= since:
        continue
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "reload" and j.get("msg", "").startswith("verdict source now"):
        source_switched = True
    if j.get("event") != "verdict":
        continue
    what = "%s %s rv %s: %s" % (j["decision"], j["reason"], j["resourceVersion"], j["message"])
    seen.append(what)
    if not source_switched:
        bad.append("before the source switch: " + what)
    elif j["decision"] != decision or j["resourceVersion"] != rv or ("version " + limit) not in j["message"]:
        bad.append(what)
if not seen:
    bad.append("no verdict published by the reload")
for b in bad:
    print("published by the reload, not of its configuration: " + b)
sys.exit(1 if bad else 0)
PY
}

gate_yaml "$TMP/a.yaml" ""
gate_start "$TMP/gate.yaml"
wait_until 10 verdict_is "admit Compliant 51234" || fail "no Compliant verdict from a.yaml"
[ "$(code)" = 200 ] || fail "the compliant object is not admitted"

note "reload: source b.yaml (OCP 4.12.0) and OCP limit 4.12.0 at once: admitted throughout"
# A node asking all the while, from before the SIGHUP until the reload is
# done: none may get deny's 403.
python3 - "$PLAIN_PORT" "$TMP/asking" <<'PY' &
import http.client, os, sys
port, at = int(sys.argv[1]), sys.argv[2]
codes = []
while not os.path.exists(at + ".stop") and len(codes) < 100000:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/config/worker"); r = c.getresponse(); r.read(); c.close()
    codes.append(r.status)
    if len(codes) == 1:
        open(at + ".asking", "w").close()
open(at + ".codes", "w").write(" ".join(map(str, codes)))
PY
asking=$!; PIDS+=($asking)
wait_until 10 test -e "$TMP/asking.asking" || fail "the asking node did not start"
mark=$(log_lines)
gate_yaml "$TMP/b.yaml" "4.12.0"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 1 || fail "the reload was not taken: $(curl -s "$ADMIN/config")"
touch "$TMP/asking.stop"; wait "$asking" || fail "the asking node failed"
published_since "$mark" admit 51240 4.12.0 || fail "a verdict of the old limit went out"
verdict_is "admit Compliant 51240" || fail "after the reload: $(curl -s "$ADMIN/verdict")"
[ "$(code)" = 200 ] || fail "b.yaml under the limit 4.12.0 is not admitted"
codes=$(cat "$TMP/asking.codes")
others=$(tr ' ' '\n' <<<"$codes" | grep -vcx 200 || true)
[ "$others" = 0 ] || fail "the asking node got $others answers other than 200 of $(wc -w <<<"$codes") during the reload: $(tr ' ' '\n' <<<"$codes" | sort | uniq -c | tr -s ' \n' ' ')"
echo "answers during the reload: $(wc -w <<<"$codes"), all 200"

note "reload: source a.yaml (OCP 4.18.2) and OCP limit 4.19.0 at once: no admit in between"
mark=$(log_lines)
gate_yaml "$TMP/a.yaml" "4.19.0"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are 2 || fail "the second reload was not taken: $(curl -s "$ADMIN/config")"
published_since "$mark" reject 51234 4.19.0 || fail "a verdict of the old limit went out"
verdict_is "reject OutOfSkew 51234" || fail "after the reload: $(curl -s "$ADMIN/verdict")"
[ "$(code)" = 403 ] || fail "a.yaml under the limit 4.19.0 is not denied"
gate_stop
echo PASS
