# shellcheck shell=bash
# Sourced after lib.sh by the held-table tests (t_held.sh, t_held_forget.sh):
# an Ignition-like client from any loopback address, and readers of the
# admin API's /held, /metrics, /config and /verdict, on ADMIN_ADDR (a free
# port, set here; ADMIN its URL). Needs PLAIN_PORT by the time they run.

ADMIN_ADDR="127.0.0.1:$(free_port)"
ADMIN="http://$ADMIN_ADDR"

ACCEPT='application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1'

# fetch FROM [POOL]: one Ignition-like request from loopback address FROM; prints the status.
fetch() {
  curl -s -o /dev/null -w '%{http_code}' --interface "$1" -A 'Ignition/2.14.0' -H "Accept: $ACCEPT" \
    "http://127.0.0.1:$PLAIN_PORT/config/${2:-worker}"
}
fetch_is() { [ "$(fetch "$1")" = "$2" ]; }   # a function, so wait_until asks again
held_json() { curl -sf "http://$ADMIN_ADDR/held"; }
# held_check PYTHON: asserts on h, the /held object.
held_check() { python3 -c "import json, sys; h = json.load(sys.stdin); $1" <<<"$(held_json)"; }
metric() { curl -sf "http://$ADMIN_ADDR/metrics" | awk -v k="$1" '$1 == k {v = $2} END {printf "%.0f\n", v}'; }
reloads() { curl -sf "http://$ADMIN_ADDR/config" | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p"; }
reloads_are() { [ "$(reloads "$1")" = "$2" ]; }
verdict_is() { [ "$(curl -sf "http://$ADMIN_ADDR/verdict" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decision"])')" = "$1" ]; }
