#!/usr/bin/env bash
# The Kubernetes reflector against the fake API server, named `localhost`
# (resolved through evdns and /etc/hosts): 1,000 Nodes of ~20 KiB (20 MiB
# as one page of 1,000, past the client's 8 MiB) listed by halving the
# page until it fits, and the list's memory given back to the system; a
# 410 on a continue token backed off and reported, not relisted at once.
# The RSS given back is the gate's own, which other tests' load does not
# move: it runs beside them. The /healthz latency while a name is resolved
# is t_kube_resolve_silent.sh's, alone.
. "$(dirname "$0")/lib_kube.sh"

certs
mcs_start 4096
fa_start --object "$FIXTURES/automatic-compliant.yaml" --bookmark-interval 0.5
fa_ctl '{"fault":"generate_nodes","count":1000,"prefix":"big","base":"10.129","pad_bytes":17000}' >/dev/null
ADMIN_ADDR="127.0.0.1:$(free_port)"
MACHINES="admission:
  machines:
    enabled: true
    namespace: openshift-machine-api
    page_size: 1000"

note "the API server as a name: localhost, resolved by evdns"
FA_URL="https://localhost:$FA_PORT"
kube_gate_start hold "$MACHINES"
published() { [ "$(log_count machines_published)" -ge 1 ]; }
wait_until 60 published || die "the address set was never published (pages too large?)"

note "pages bounded by bytes: 1,000 per page is 20 MiB, halved until one fits"
grep '"event":"source_list_page"' "$GATE_LOG" | has 'Nodes.*asking for 500 items a page' || die "no halving to 500"
grep '"event":"source_list_page"' "$GATE_LOG" | has 'Nodes.*asking for 250 items a page' || die "no halving to 250"
grep '"event":"source_listed"' "$GATE_LOG" | has 'Nodes: 1000 objects in 4 pages' || die "the Nodes were not listed in 4 pages of 250"
grep -q '"event":"source_error".*Nodes' "$GATE_LOG" && die "a page too large was reported as a failure"

note "the memory of the list goes back to the system once the watch starts"
if [ -n "${SKEWGATE_SAN:-}" ]; then
  echo "not measured: a sanitizer's allocator keeps freed memory (ASan's quarantine), so RSS says nothing here"
else
  # From a peak of ~24 MB: 14 MB back with the body buffer freed and the
  # heap trimmed, 9 MB trimmed with the buffer kept, none without the trim
  # (glibc serves the next large buffer from a heap it does not trim).
  hwm() { awk '/^VmHWM/ {print $2}' "/proc/$GATE_PID/status"; }
  given_back() { [ $(( $(hwm) - $(gate_rss) )) -ge 11776 ]; }   # 11.5 MiB
  wait_until 10 given_back || die "RSS $(gate_rss) kB after the list, peak $(hwm) kB: the list's memory was kept"
  echo "RSS $(gate_rss) kB after the list, peak $(hwm) kB"
fi

note "a 410 on a continue token: backed off (growing delays) and reported, then listed"
lists=$(log_count source_listed Nodes)
fa_ctl '{"fault":"continue_410","count":3}' >/dev/null
fa_ctl '{"fault":"watch_error","code":410,"reason":"Expired"}' >/dev/null
relisted() { log_count_above source_listed "$lists" Nodes; }
wait_until 60 relisted || die "no list of the Nodes after the 410s"
errors=$(grep '"event":"source_error"' "$GATE_LOG" | grep 'continue token expired' | grep -F 'Nodes') ||
  die "the 410 while paging was not reported"
[ "$(wc -l <<<"$errors")" -eq 3 ] || die "want 3 reports, one per 410: $errors"
delays=$(sed -n 's/.*"retry_ms":\([0-9]*\).*/\1/p' <<<"$errors" | tr '\n' ' ')
read -r d1 d2 d3 <<<"$delays"
[ "$d1" -ge 100 ] && [ "$d3" -gt "$d1" ] || die "no backoff between the relists: retry_ms $delays"
grep '"event":"machines_failing"' "$GATE_LOG" | has Nodes || die "the Nodes watch did not say it cannot confirm its view"
grep -q '"event":"source_recovered".*Nodes after 3 failures' "$GATE_LOG" || die "no recovery line after the 410s"
grep -E '"event":"source_(list_page|listed|error)".*Nodes' "$GATE_LOG" | cut -c1-240
gate_stop

echo PASS
