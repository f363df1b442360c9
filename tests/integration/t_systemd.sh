#!/usr/bin/env bash
# deploy/systemd: both units pass `systemd-analyze verify` without a word,
# keep their sandbox (exposure from `systemd-analyze security --offline`
# and the settings that matter: the gate has no capability at all, the
# redirect unit CAP_NET_ADMIN alone), and the redirect unit's commands do
# what they say in a network namespace of their own.
#
# verify checks that each command's binary exists, so it reads copies of
# the units rewritten to run $SKEWGATE_BIN instead of /usr/local/bin/skewgate.
# Its namespace is its own: it runs beside the others.
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (package systemd)"
units=(skewgate skewgate-redirect)
mkdir -p "$TMP/units"
for u in "${units[@]}"; do
  src="$ROOT/deploy/systemd/$u.service"
  [ -f "$src" ] || fail "missing $src"
  grep -q /usr/local/bin/skewgate "$src" || fail "$u.service does not run /usr/local/bin/skewgate"
  sed "s|/usr/local/bin/skewgate|$SKEWGATE_BIN|g" "$src" >"$TMP/units/$u.service"
done

note "systemd-analyze verify: no error, no warning"
( cd "$TMP/units" && systemd-analyze verify "${units[@]/%/.service}" ) >"$TMP/verify.out" 2>&1 ||
  { cat "$TMP/verify.out"; fail "systemd-analyze verify failed"; }
[ ! -s "$TMP/verify.out" ] || { cat "$TMP/verify.out"; fail "systemd-analyze verify warned"; }

note "systemd-analyze security: exposure at most 1.5 for each"
for u in "${units[@]}"; do
  # --threshold is the exposure times ten; above it the command fails.
  systemd-analyze security --offline=yes --threshold=15 "$TMP/units/$u.service" >"$TMP/$u.security" 2>&1 ||
    { grep -E '✗|Overall' "$TMP/$u.security"; fail "$u.service is exposed"; }
  grep 'Overall exposure' "$TMP/$u.security"
done

# setting UNIT KEY: the values of KEY in UNIT, one per line.
setting() { sed -n "s/^$2=//p" "$ROOT/deploy/systemd/$1.service"; }
want() { [ "$(setting "$1" "$2")" = "$3" ] || fail "$1.service: $2='$(setting "$1" "$2")', expected '$3'"; }

note "the gate: no capability, nothing writable"
want skewgate CapabilityBoundingSet ""
want skewgate AmbientCapabilities ""
for kv in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict PrivateUsers=yes PrivateDevices=yes \
          RestrictNamespaces=yes MemoryDenyWriteExecute=yes SystemCallArchitectures=native; do
  want skewgate "${kv%%=*}" "${kv#*=}"
done
want skewgate RestrictAddressFamilies "AF_INET AF_INET6 AF_UNIX"
[ "$(setting skewgate SystemCallFilter | head -1)" = "@system-service" ] || fail "gate: SystemCallFilter"
! grep -qE '^Exec[A-Za-z]*=[-@:!+]*\+' "$ROOT/deploy/systemd/skewgate.service" ||
  fail "the gate's unit runs a command with full privileges (+)"
! grep -q 'redirect' <(setting skewgate ExecStartPre; setting skewgate ExecStopPost) ||
  fail "the gate's unit manages the redirect itself"

note "the redirect: CAP_NET_ADMIN and netlink only, install on start, remove on stop"
want skewgate-redirect CapabilityBoundingSet CAP_NET_ADMIN
want skewgate-redirect AmbientCapabilities CAP_NET_ADMIN
want skewgate-redirect RestrictAddressFamilies AF_NETLINK
want skewgate-redirect IPAddressDeny any
want skewgate-redirect Type oneshot
want skewgate-redirect RemainAfterExit yes
want skewgate-redirect After skewgate.service
want skewgate-redirect ExecStart "/usr/local/bin/skewgate redirect install -c /etc/skewgate/skewgate.yaml"
want skewgate-redirect ExecStop "/usr/local/bin/skewgate redirect remove -c /etc/skewgate/skewgate.yaml"
[ -z "$(setting skewgate-redirect PrivateUsers)" ] || fail "PrivateUsers would keep CAP_NET_ADMIN from the host's network"
[ "$(setting skewgate ExecStart)" = "/usr/local/bin/skewgate run -c /etc/skewgate/skewgate.yaml" ] ||
  fail "the units name different configurations"

note "the redirect unit's commands, run as written, in a network namespace"
if [ "$(id -u)" != 0 ] || ! ip netns add "sg-systemd-$$" 2>/dev/null; then
  echo "(not run: network namespaces cannot be created here)"
else
  CLEANUPS+=("ip netns delete sg-systemd-$$")
  printf 'listeners:\n  - address: "0.0.0.0:22643"\n    tls: {certificate: c, key: k}\n  - address: "0.0.0.0:22644"\n' \
    >"$TMP/gate.yaml"
  run_unit_cmd() {
    local cmd
    cmd=$(sed -n "s/^$1=//p" "$TMP/units/skewgate-redirect.service" | sed "s|/etc/skewgate/skewgate.yaml|$TMP/gate.yaml|")
    # shellcheck disable=SC2086  # the unit's command line, split as systemd splits it
    ip netns exec "sg-systemd-$$" $cmd
  }
  run_unit_cmd ExecStart
  # Listed first, then searched: `nft ... | grep -q` under pipefail fails
  # when grep, done early, leaves nft writing into a closed pipe.
  table=$(ip netns exec "sg-systemd-$$" nft list table inet skewgate)
  grep -qF 'tcp dport 22623 redirect to :22643' <<<"$table" ||
    fail "ExecStart did not install the redirect"
  run_unit_cmd ExecStop
  [ -z "$(ip netns exec "sg-systemd-$$" nft list ruleset)" ] || fail "ExecStop left rules behind"
fi
echo PASS
