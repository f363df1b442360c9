#!/usr/bin/env bash
# The Kubernetes source end to end: the fake API server, kubectl as the
# operator, the nginx MCS stand-in, skewgate (hold mode) and curl as the
# node. Patches, overrides, deletion, and every fault the fake can make:
# dropped watch, 410, API down at start, garbage, bad and rotated tokens.
# The timed promises (a flip within a second, the flip latency over 50
# patches, when_unknown after max_staleness) are t_kube_flip.sh's, alone.
. "$(dirname "$0")/lib_kube.sh"
need_kubectl

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml"
kube_gate_start hold "  max_staleness: 60s"

note "compliant at start: admitted"
wait_until 5 reason_is Compliant || die "no Compliant verdict from the list"
code_is 200 || die "not admitted while compliant"

note "kubectl patch out of skew: rejected"
patch_status "$STATUS_OUT_OF_SKEW"
wait_until 5 code_is 503 || die "the gate did not reject after the patch"
reason_is OutOfSkew || die "reason $(verdict_reason), expected OutOfSkew"

note "mode None: admitted"
patch_status "$STATUS_NONE"
wait_until 2 code_is 200 || die "not admitted with mode None"
reason_is EnforcementDisabled || die "reason $(verdict_reason)"

note "override annotation: followed, and dropped"
fa_kubectl annotate machineconfiguration cluster skewgate.openshift.io/override=reject >/dev/null
wait_until 2 code_is 503 || die "override reject not followed"
reason_is Override || die "reason $(verdict_reason), expected Override"
fa_kubectl annotate machineconfiguration cluster skewgate.openshift.io/override- >/dev/null
wait_until 2 code_is 200 || die "removing the override did not admit"
reason_is EnforcementDisabled || die "reason $(verdict_reason)"

note "deleted: when_unknown (admit), reason NotFound"
patch_status "$STATUS_OUT_OF_SKEW"
wait_until 2 code_is 503 || die "not rejected before the delete"
fa_kubectl delete machineconfiguration cluster >/dev/null
wait_until 2 code_is 200 || die "not admitted after the delete"
reason_is NotFound || die "reason $(verdict_reason), expected NotFound"
fa_ctl "{\"fault\":\"set_object\",\"file\":\"$FIXTURES/automatic-compliant.yaml\"}" >/dev/null
wait_until 2 reason_is Compliant || die "re-created object not seen"

note "watch dropped, a change while away: caught up on reconnect"
lists=$(log_count source_listed)
# New requests (the gate's reconnect) wait 2 s; the control API does not.
fa_ctl '{"fault":"stall","seconds":2}' >/dev/null
fa_ctl '{"fault":"drop_watches"}' >/dev/null
wait_until 2 log_count_above source_error 0 "watch:" || die "the drop was not noticed"
fa_ctl "{\"fault\":\"set_object\",\"file\":\"$FIXTURES/automatic-out-of-skew.yaml\"}" >/dev/null
code_is 200 || die "the last good verdict was not kept while reconnecting"
wait_until 10 code_is 503 || die "the change made while disconnected was missed"
log_count_above source_listed "$lists" || die "no relist after the drop"

note "410 Expired: relist"
lists=$(log_count source_listed)
fa_ctl '{"fault":"expire","notify":true}' >/dev/null
wait_until 3 log_count_above source_listed "$lists" || die "no relist after 410"
[ "$(log_count source_watch "expired")" -ge 1 ] || die "the 410 was not logged"
patch_status "$STATUS_COMPLIANT"
wait_until 2 code_is 200 || die "no watch after the relist"

note "garbage on the stream: reconnect, last good verdict kept"
lists=$(log_count source_listed)
verdicts=$(log_count verdict)
fa_ctl '{"fault":"garbage"}' >/dev/null
wait_until 3 log_count_above source_listed "$lists" || die "no reconnect after garbage"
[ "$(log_count source_error "not JSON")" -ge 1 ] || die "garbage not logged"
[ "$(log_count verdict)" = "$verdicts" ] || die "the verdict changed on garbage"
code_is 200 || die "the last good verdict was not kept"

note "5xx on the list: logged, backed off, recovered"
# Two watches list here (the MachineConfiguration, and the machine-config
# ClusterOperator of upstream.mcs_release auto), so the two 500s may go to
# either, and one may list again before the other's 500 is logged: each is
# waited for, with the MachineConfiguration's recovery.
lists=$(log_count source_listed "MachineConfiguration")
errors=$(log_count source_error "HTTP 500")
fa_ctl '{"fault":"status_500","count":2,"kinds":["list"]}' >/dev/null
fa_ctl '{"fault":"drop_watches"}' >/dev/null
wait_until 5 log_count_above source_listed "$lists" "MachineConfiguration" || die "no recovery after two 500s"
wait_until 5 log_count_above source_error $((errors + 1)) "HTTP 500" || die "the 500s were not logged"
code_is 200 || die "the last good verdict was not kept through 500s"

note "wrong token: 401 logged, retried, no crash; fixed: recovers"
errors=$(log_count source_error "HTTP 401")
echo wrong-token >"$GATE_TOKEN"
fa_ctl '{"fault":"drop_watches"}' >/dev/null
wait_until 5 log_count_above source_error $((errors + 1)) "HTTP 401" || die "401 not logged twice (retries)"
grep '"event":"source_error"' "$GATE_LOG" | has "Unauthorized" || die "401 log lacks the reason"
if grep -qF "$(cat "$FA_DIR/token")" "$GATE_LOG" || grep -q wrong-token "$GATE_LOG"; then
  die "a token was logged"
fi
kill -0 "$GATE_PID" || die "the gate died"
code_is 200 || die "the last good verdict was not kept during 401s"
lists=$(log_count source_listed)
cp "$FA_DIR/token" "$GATE_TOKEN"
wait_until 35 log_count_above source_listed "$lists" || die "no recovery after fixing the token"
[ "$(log_count source_recovered)" -ge 1 ] || die "recovery not logged"

note "token rotated: the new token is used"
new="fa-rotated-$RANDOM$RANDOM"
printf '%s\n' "$new" >"$FA_DIR/token.new" && mv "$FA_DIR/token.new" "$FA_DIR/token"
printf '%s\n' "$new" >"$GATE_TOKEN.new" && mv "$GATE_TOKEN.new" "$GATE_TOKEN"
FA_TOKEN=$new; fa_kubeconfig "$FA_DIR/kubeconfig"
auth_before=$(fa_stats | fa_json 'd["authFailures"]')
lists=$(log_count source_listed)
fa_ctl '{"fault":"drop_watches"}' >/dev/null
wait_until 5 log_count_above source_listed "$lists" || die "no relist with the rotated token"
[ "$(fa_stats | fa_json 'd["lastTokenValid"]')" = true ] || die "the fake saw a wrong token"
[ "$(fa_stats | fa_json 'd["authFailures"]')" = "$auth_before" ] || die "auth failures after rotation"
[ "$(log_count source_token "changed")" -ge 1 ] || die "rotation not logged"

note "API down at start: when_unknown until it comes up, then the real verdict"
gate_stop_checked
port=$FA_PORT
fa_stop
kube_gate_start hold
wait_until 3 log_count_above source_error 1 || die "no connection errors logged"
reason_is SourceUnavailable || die "reason $(verdict_reason), expected SourceUnavailable"
code_is 200 || die "when_unknown (admit) not applied"
fa_start --port "$port" --object "$FIXTURES/automatic-out-of-skew.yaml"
wait_until 15 code_is 503 || die "the real verdict did not follow the API server's start"
reason_is OutOfSkew || die "reason $(verdict_reason)"

echo PASS
