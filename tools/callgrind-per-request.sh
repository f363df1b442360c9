#!/usr/bin/env bash
# callgrind-per-request.sh SKEWGATE [N]: instructions the gate executes per
# request, measured with callgrind: one worker, one keep-alive client doing
# N and then 10N held (503) requests; (Ir(10N) - Ir(N)) / 9N cancels start-up
# and shutdown. Compare two builds to see what a change costs per request.
# GATE_EXTRA (YAML) is appended to the gate's config and CURL_HEADER (one
# "Name: value" line) sent with every request: an admission policy on, say:
#   GATE_EXTRA=$'admission:\n  token:\n    files: [/tmp/t]' \
#   CURL_HEADER="Authorization: Bearer $(cat /tmp/t)" tools/callgrind-per-request.sh build/skewgate
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); n=${2:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/skewgate-callgrind.XXXXXX)
fake=
trap '[ -z "$fake" ] || kill "$fake"; rm -rf "$tmp"' EXIT
cp "$root/tests/fixtures/machineconfiguration/automatic-out-of-skew.yaml" "$tmp/mc.yaml"
admission=
if [ -n "${CALLGRIND_MACHINES:-}" ]; then
  echo callgrind >"$tmp/token"
  /usr/bin/python3 "$root/tests/fakeapi/fakeapi.py" --plain-http --token-file "$tmp/token" \
    --port-file "$tmp/fa.port" 2>"$tmp/fa.log" &
  fake=$!
  for i in $(seq 200); do [ -s "$tmp/fa.port" ] && break; sleep 0.05; done
  fa="http://127.0.0.1:$(cat "$tmp/fa.port")"
  ip=127.0.0.1
  [ "$CALLGRIND_MACHINES" = pending ] || ip=127.0.0.9
  curl -sf -o /dev/null -d '{"fault":"generate_nodes","count":1000}' "$fa/_fake/fault"
  curl -sf -o /dev/null -d "{\"fault\":\"set_resource\",\"resource\":\"machines.machine.openshift.io\",\"object\":{\"metadata\":{\"name\":\"m\",\"namespace\":\"openshift-machine-api\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$ip\"}]}}}" "$fa/_fake/fault"
  admission="  kubernetes:
    server: $fa
    token_file: $tmp/token
admission:
  machines:
    enabled: true"
fi
cat >"$tmp/gate.yaml" <<YAML
workers: 1
listeners:
  - address: "127.0.0.1:0"
upstream:
  address: "127.0.0.1:1"
enforcement:
  source: file
  file:
    path: $tmp/mc.yaml
$admission
admin:
  enabled: false
log:
  access: false
${GATE_EXTRA:-}
YAML
curl_args=()
[ -z "${CURL_HEADER:-}" ] || curl_args=(-H "$CURL_HEADER")
# total_ir COUNT: the gate's instructions for COUNT requests, start to stop.
total_ir() {
  local out="$tmp/cg.$1" log="$tmp/log.$1" port pid i
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" run -c "$tmp/gate.yaml" 2>"$log" &
  pid=$!
  for i in $(seq 600); do
    port=$(sed -n 's/.*"event":"listening".*"port":\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$log" >&2; exit 1; }
  if [ -n "$admission" ]; then
    for i in $(seq 600); do grep -q '"event":"machines_published"' "$log" && break; sleep 0.05; done
    grep -q '"event":"machines_published"' "$log" || { cat "$log" >&2; exit 1; }
  fi
  curl -s -o /dev/null ${curl_args[@]+"${curl_args[@]}"} "http://127.0.0.1:$port/config/worker?[1-$1]"
  kill -TERM "$pid"
  wait "$pid" || true
  sed -n 's/^totals: \([0-9]*\).*/\1/p' "$out"
}
small=$(total_ir "$n")
large=$(total_ir $((10 * n)))
echo "$bin: $(( (large - small) / (9 * n) )) instructions per request (Ir $small for $n, $large for $((10 * n)))"
