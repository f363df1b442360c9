#!/usr/bin/env bash
# SIGHUP reloads the Kubernetes API server's CA: the file at ca_file gets
# new contents under the same path and a reload makes the verdict source
# and the admission.machines watch trust them. Both used to build their
# TLS context once, at start, and a reload compared the path only. (A
# failed connection now looks at the CA file by itself, t_kube_ca_follow;
# the reload is the operator's way to have it taken at once.) Here: the
# rotation as it is done with overlap, a bundle of the old and the new CA
# written to ca_file while the API server still serves the old one; the
# SIGHUP rebuilds the source and the watch on it (counted); then the API
# server restarts with a certificate of the new CA and the gate follows it
# with no error. A CA file rewritten with the same bytes keeps both; a CA
# file gone at reload refuses the reload, and the running ones stay. The
# rotation keeps the addresses the old watch published until the new one
# has listed: the same server, the same cluster (another server holds
# every client: t_reload_machines_server).
. "$(dirname "$0")/lib_kube_ca.sh"
ca_stage_start
reloads() {  # reloads success|failure
  curl -sf "$ADMIN/config" | python3 -c 'import json, sys; print(json.load(sys.stdin)["reloads"][sys.argv[1]])' "$1"
}
reloads_are() { [ "$(reloads "$1")" = "$2" ]; }
replaced() { log_count reload '"msg":"verdict source now'; }
rewatched() { log_count reload 'the Machines and Nodes watch starts again'; }

note "the same CA written again (new inode and mtime, same bytes): nothing is rebuilt"
cp "$TMP/api/ca.crt" "$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are success 1 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
[ "$(replaced)" = 0 ] || die "the same CA replaced the verdict source"
[ "$(rewatched)" = 0 ] || die "the same CA started the machines watch again"
from_is 127.0.0.2 200 || die "the kept watch's addresses were dropped: $(from 127.0.0.2)"

note "a bundle of the old and the new CA in ca_file, SIGHUP: the source and the watch are rebuilt on it"
fa_mkcerts "$TMP/pki2" >/dev/null || die "mkcerts failed"
cat "$FA_DIR/pki/ca.crt" "$TMP/pki2/ca.crt" >"$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
# The same server: the old watch's addresses vouch for this cluster's
# machines until the new watch has listed. The server stalls its answers
# meanwhile, so the relist cannot come before the look.
published=$(log_count machines_published)
fa_ctl '{"fault":"stall","seconds":120}' >/dev/null
kill -HUP "$GATE_PID"
wait_until 10 reloads_are success 2 || die "the reload was not taken: $(curl -s "$ADMIN/config")"
got=$(from 127.0.0.2)
[ "$(log_count machines_published)" = "$published" ] || die "a set was published during the stall (nothing tested)"
[ "$got" = 200 ] || die "a CA rotation held the pending Machine for the relist: $got"
fa_ctl '{"fault":"clear"}' >/dev/null
[ "$(replaced)" = 1 ] || die "the verdict source was not replaced once: $(replaced)"
[ "$(rewatched)" = 1 ] || die "the machines watch was not started again once: $(rewatched)"
follows "after the reload on the bundle"

note "the API server restarts on its port with a certificate of the new CA: followed, no error"
errors_before=$(log_count source_error "certificate verify failed")
fa_restart_with "$TMP/pki2"
follows "after the API server's new certificate"
machine pending-2 127.0.0.4
wait_until 20 from_is 127.0.0.4 200 || die "the machines watch does not follow the new server: $(from 127.0.0.4)"
wait_until 20 sh -c "curl -s $ADMIN/readyz | grep -qx ok" || die "not ready after the rotation: $(curl -s "$ADMIN/readyz")"
[ "$(log_count source_error "certificate verify failed")" = "$errors_before" ] ||
  die "the bundle the reload took did not verify the new certificate"
[ "$(log_count source_tls "the CA file changed")" = 0 ] || die "the CA was followed after a failure, not by the reload"

note "ca_file gone at reload: refused, named; the running source and watch stay"
mv "$TMP/api/ca.crt" "$TMP/api/ca.crt.away"
kill -HUP "$GATE_PID"
wait_until 10 reloads_are failure 1 || die "a reload without its CA file was not refused: $(curl -s "$ADMIN/config")"
curl -sf "$ADMIN/config" | has -F "enforcement.kubernetes.ca_file: $TMP/api/ca.crt" ||
  die "the refusal does not name the CA file: $(curl -s "$ADMIN/config")"
[ "$(replaced)" = 1 ] && [ "$(rewatched)" = 1 ] || die "a refused reload replaced something"
follows "after a refused reload"
machine pending-3 127.0.0.5
wait_until 20 from_is 127.0.0.5 200 || die "the machines watch stopped after a refused reload: $(from 127.0.0.5)"
gate_stop
echo PASS
