#!/bin/bash
# tls-sync: keeps the Machine Config Server's serving certificate where the
# gate reads it, and makes the gate reload it when it changes.
#
#   tls-sync.sh watch   sync now, then every $SYNC_INTERVAL seconds (the sidecar)
#   tls-sync.sh once    sync now; exit 0 if the files are in place
#
# A sync reads the secret $SECRET_NAME in $SECRET_NAMESPACE with
# `oc extract` (tls.crt and tls.key into $TLS_DIR/.fetch-N), and, when
# either file differs from what $TLS_DIR/current holds, renames it gen-N
# and swaps the symlink $TLS_DIR/current to it in one rename (the gate
# never reads a new certificate with an old key) and sends SIGHUP to the
# gate: the process named skewgate whose command line is `run` with
# $GATE_CONFIG (the pod shares one process namespace; same UID). The gate
# reloads its certificates without dropping a connection. A failed read
# keeps the current files and is retried at the next interval.
set -euo pipefail

mode=${1:-watch}
dir=${TLS_DIR:-/run/skewgate/tls}
ns=${SECRET_NAMESPACE:-openshift-machine-config-operator}
name=${SECRET_NAME:-machine-config-server-tls}
config=${GATE_CONFIG:-/etc/skewgate/skewgate.yaml}
interval=${SYNC_INTERVAL:-60}
OC=${OC:-oc}

log() { printf '{"component":"tls-sync","event":"%s","msg":"%s"}\n' "$1" "$2" >&2; }

# The gate's pids: comm "skewgate", argv[1] "run", $config among its args.
gate_pids() {
  local p comm args a
  for p in /proc/[0-9]*; do
    { comm=$(<"$p/comm"); } 2>/dev/null || continue
    [ "$comm" = skewgate ] || continue
    { mapfile -d '' args <"$p/cmdline"; } 2>/dev/null || continue
    [ "${args[1]:-}" = run ] || continue
    for a in "${args[@]}"; do
      if [ "$a" = "$config" ]; then
        echo "${p#/proc/}"
        break
      fi
    done
  done
}

same_file() { [ -f "$1" ] && [ -f "$2" ] && [ "$(<"$1")" = "$(<"$2")" ]; }

# One sync. 0: the files are in place (new, changed or not); 1: they are
# not (the first read failed).
sync_once() {
  local n fetch gen old pid
  n=$(date +%s%N)
  fetch="$dir/.fetch-$n"
  gen="$dir/gen-$n"
  if ! mkdir -m 0700 "$fetch" ||
     ! "$OC" extract -n "$ns" "secret/$name" --keys=tls.crt,tls.key --to="$fetch" >/dev/null ||
     [ ! -s "$fetch/tls.crt" ] || [ ! -s "$fetch/tls.key" ]; then
    rm -rf "$fetch"
    log read_failed "could not read secret $ns/$name; keeping the current certificate"
    [ -e "$dir/current/tls.key" ]
    return
  fi
  if same_file "$fetch/tls.crt" "$dir/current/tls.crt" && same_file "$fetch/tls.key" "$dir/current/tls.key"; then
    rm -rf "$fetch"
    return 0
  fi
  old=$(readlink "$dir/current" 2>/dev/null || true)
  if ! mv -T "$fetch" "$gen" || ! ln -sfn "${gen##*/}" "$dir/current.new" ||
     ! mv -T "$dir/current.new" "$dir/current"; then
    rm -rf "$fetch" "$gen" "$dir/current.new"
    log swap_failed "could not update $dir/current; keeping the current certificate"
    [ -e "$dir/current/tls.key" ]
    return
  fi
  if [ -n "$old" ]; then rm -rf "${dir:?}/$old"; fi
  log installed "certificate of $ns/$name in place (${gen##*/})"
  for pid in $(gate_pids); do
    if kill -HUP "$pid"; then
      log reload "SIGHUP to the gate (pid $pid)"
    fi
  done
  return 0
}

case "$mode" in
  once) sync_once ;;
  watch)
    while true; do
      sync_once || true
      sleep "$interval"
    done
    ;;
  *) echo "usage: tls-sync.sh once|watch" >&2; exit 2 ;;
esac
