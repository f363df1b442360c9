#!/usr/bin/env bash
# The status page at GET / on the admin listener (issue 11.7), in headless
# Chromium (Debian's chromium): after its script ran, the page shows the
# verdict and a held node's row; a User-Agent with markup in it stays text;
# the page, script and stylesheet have their content types and the policy
# that lets only the gate's own script run; a screenshot is taken.
. "$(dirname "$0")/lib.sh"

command -v chromium >/dev/null || fail "chromium is not installed (tools/deps.sh installs it)"
ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"
certs
mcs_start
object="$TMP/mc.yaml"
set_object automatic-out-of-skew.yaml "$object"
ADMIN_ADDR=$ADMIN_ADDR gate_config "$TMP/gate.yaml" hold "$object"
gate_start "$TMP/gate.yaml"
rejects() { curl -sf "$ADMIN/verdict" | has '"decision": "reject"'; }
wait_until 10 rejects || fail "the gate does not reject"

# Client-controlled text that would run if the page wrote it as markup.
UA_SCRIPT="Ignition/2.14.0 <script>document.title='pwned'</script>"
UA_IMG="<img src=x onerror=\"document.title='pwned'\">"
hold() { curl -s -o /dev/null -w '%{http_code}' --interface "$1" -A "$2" "http://127.0.0.1:$PLAIN_PORT/config/worker"; }
[ "$(hold 127.0.0.2 "$UA_SCRIPT")" = 503 ] || fail "127.0.0.2 not held"
[ "$(hold 127.0.0.3 "$UA_IMG")" = 503 ] || fail "127.0.0.3 not held"

note "content types and the script policy"
header() { curl -s -o /dev/null -D - "$ADMIN$1" | tr -d '\r' | awk -F': ' -v h="$2" 'tolower($1) == tolower(h) {print $2}'; }
[ "$(header / Content-Type)" = "text/html; charset=utf-8" ] || fail "/ content type: $(header / Content-Type)"
[ "$(header /status.js Content-Type)" = "text/javascript; charset=utf-8" ] || fail "/status.js content type"
[ "$(header /status.css Content-Type)" = "text/css; charset=utf-8" ] || fail "/status.css content type"
header / Content-Security-Policy | has "script-src 'self'" || fail "no script policy: $(header / Content-Security-Policy)"
[ "$(header / X-Content-Type-Options)" = nosniff ] || fail "nosniff"
! curl -s "$ADMIN/" | has -iE '(src|href)="(https?:)?//' || fail "the page loads an external asset"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$ADMIN/")" = 405 ] || fail "POST / is not 405"

# browse FLAGS...: headless Chromium on the page, bounded; the page's
# script gets a few seconds of virtual time (fetches and a refresh).
browse() {
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$TMP/chromium" \
    --virtual-time-budget=8000 --window-size=1280,900 "$@" "$ADMIN/" 2>>"$TMP/chromium.log"
}
note "the page after its script ran: verdict, held rows, counters"
browse --dump-dom >"$TMP/dom.html" || fail "chromium failed: $(tail -5 "$TMP/chromium.log")"
grep -q '<span id="decision" class="reject">holding new nodes</span>' "$TMP/dom.html" ||
  fail "no verdict in the page: $(cat "$TMP/dom.html")"
grep -q '<span id="reason">(OutOfSkew)</span>' "$TMP/dom.html" || fail "no reason in the page"
grep -q 'which is below the minimum required version 4.13.0</p>' "$TMP/dom.html" || fail "no message in the page"
grep -q '<tr><td>127.0.0.2</td><td>worker</td>' "$TMP/dom.html" || fail "no row for 127.0.0.2: $(cat "$TMP/dom.html")"
grep -q '<tr><td>127.0.0.3</td><td>worker</td>' "$TMP/dom.html" || fail "no row for 127.0.0.3"
grep -q '<span id="heldcount">2</span>' "$TMP/dom.html" || fail "held count"
grep -q '<dd id="machines" hidden=""></dd>' "$TMP/dom.html" || fail "a machines watch row with admission.machines off"
grep -q '<section id="pace" hidden="">' "$TMP/dom.html" || fail "a pacing section with pace.enabled off"
grep -q '<td>requests rejected</td><td class="num">2</td>' "$TMP/dom.html" || fail "counters: $(grep -o '<tbody id="counterrows">.*</tbody>' "$TMP/dom.html")"
note "markup in a User-Agent is shown as text, never run"
grep -qF "<td>Ignition/2.14.0 &lt;script&gt;document.title='pwned'&lt;/script&gt;</td>" "$TMP/dom.html" ||
  fail "the UA is not shown as text: $(grep -o '<tbody id="heldrows">.*</tbody>' "$TMP/dom.html")"
grep -qF '<td>&lt;img src=x onerror="document.title='"'"'pwned'"'"'"&gt;</td>' "$TMP/dom.html" ||
  fail "the img UA is not shown as text: $(grep -o '<tbody id="heldrows">.*</tbody>' "$TMP/dom.html")"
! grep -q "<img" "$TMP/dom.html" || fail "an img element made it into the page"
[ "$(grep -c '<script' "$TMP/dom.html")" = 1 ] || fail "a script element besides the page's own"
grep -q '<title>skewgate</title>' "$TMP/dom.html" || fail "the title changed: an injected script ran"

note "a screenshot"
browse --screenshot="$TMP/status.png" >/dev/null || fail "chromium screenshot failed: $(tail -5 "$TMP/chromium.log")"
python3 - "$TMP/status.png" <<'PY' || fail "screenshot"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1280, 900), (w, h)
assert len(data) > 20000, len(data)   # a blank page compresses to far less
PY
echo "PASS"
