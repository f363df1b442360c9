#!/usr/bin/env bash
# A rotated cluster CA is followed without a reload. In a cluster the
# kubelet rewrites the service account's ca.crt itself and nothing sends
# the gate a SIGHUP; the gate read its CA once, so once the API server
# served a certificate of the new CA the verdict source and the
# admission.machines watch failed "certificate verify failed" until a
# restart, and after max_staleness enforcement fell to when_unknown. Now a
# failed connection has its CA file looked at again before the retry.
# Here: the fake API server restarts on its port with a new CA, and the
# gate fails to verify it (its CA file still holds the old one); then the
# new CA is renamed into ca_file, no signal sent, and the source follows
# the object again, the watch sees a new Machine, /readyz is ok, and no
# reload happened. A CA file that is not PEM while failing is said in the
# log, the old trust stays, and the good file after it is taken.
. "$(dirname "$0")/lib_kube_ca.sh"
ca_stage_start
ready() { [ "$(curl -s "$ADMIN/readyz")" = ok ]; }
reloads() { curl -sf "$ADMIN/config" | python3 -c 'import json, sys; r = json.load(sys.stdin)["reloads"]; print(r["success"] + r["failure"])'; }

note "the API server restarts on its port with a new CA; ca_file still holds the old one"
fa_mkcerts "$TMP/pki2" >/dev/null || die "mkcerts failed"
errors_before=$(log_count source_error "certificate verify failed")
fa_restart_with "$TMP/pki2"
wait_until 60 verify_failed || die "the old CA did not fail against the new server (nothing tested)"

note "ca_file rewritten with something that is not PEM: said, the old trust stays"
printf 'not a certificate\n' >"$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
wait_until 30 log_count_above source_tls 0 "the CA trusted so far stays" || die "a CA file that is not PEM went unsaid"

note "the new CA renamed into ca_file, no signal: the source and the watch follow it"
cp "$FA_DIR/pki/ca.crt" "$TMP/api/ca.crt.new" && mv "$TMP/api/ca.crt.new" "$TMP/api/ca.crt"
# Both owners (the source, the watch) say so at their next retry: within
# the reflector's longest backoff (30 s) after the rename.
took_new_ca() { [ "$(log_count source_tls "the CA file changed")" -ge 2 ]; }
wait_until 40 took_new_ca ||
  die "the source and the watch did not both take the new CA: $(grep '"event":"source_tls"' "$GATE_LOG")"
wait_until 20 ready || die "not ready after the CA file changed: $(curl -s "$ADMIN/readyz")"
follows "after the CA rotation"
machine pending-2 127.0.0.4
wait_until 20 from_is 127.0.0.4 200 || die "the machines watch does not follow the new server: $(from 127.0.0.4)"
[ "$(reloads)" = 0 ] || die "a reload happened (nothing tested)"
gate_stop
echo PASS
