#!/usr/bin/env bash
# The provisioning token policy (admission.token): real Ignition fetches
# with the token in the pointer config's httpHeaders, curl with
# Authorization and with ?token=, 403 TokenMissing / TokenInvalid,
# rotation across two files, a deleted or emptied file revoking its token,
# the token never upstream and never in a log.
. "$(dirname "$0")/lib.sh"

[ -x "$IGNITION" ] || fail "Ignition is not installed (package ignition)"
certs
mcs_start 4096
object="$TMP/mc.yaml"
set_object automatic-compliant.yaml "$object"
tokdir="$TMP/tokens"
mkdir -p "$tokdir"
# Tokens as an operator makes them (openssl rand -hex 32).
TOK_A=$(openssl rand -hex 32); TOK_B=$(openssl rand -hex 32); TOK_C=$(openssl rand -hex 32)
put_token() { printf '%s\n' "$2" >"$tokdir/$1.tmp" && mv "$tokdir/$1.tmp" "$tokdir/$1"; }
put_token current "$TOK_A"
put_token previous "$TOK_B"
admin_port=$(free_port)
ADMIN_ADDR="127.0.0.1:$admin_port"
gate_config "$TMP/gate.yaml" hold "$object" "admission:
  token:
    files: [$tokdir/current, $tokdir/previous]"

note "check --files: a missing or empty token file is an error naming the file"
cp "$TMP/gate.yaml" "$TMP/bad.yaml"
sed -i "s|$tokdir/previous|$tokdir/absent|" "$TMP/bad.yaml"
if out=$("$SKEWGATE_BIN" check --files -c "$TMP/bad.yaml" 2>&1); then fail "check accepted a missing token file"; fi
grep -q "token file $tokdir/absent: No such file" <<<"$out" || fail "check said: $out"
: >"$tokdir/empty"
sed -i "s|$tokdir/absent|$tokdir/empty|" "$TMP/bad.yaml"
if out=$("$SKEWGATE_BIN" run -c "$TMP/bad.yaml" 2>&1); then fail "run started with an empty token file"; fi
grep -q "token file $tokdir/empty is empty" <<<"$out" || fail "run said: $out"
"$SKEWGATE_BIN" check --files -c "$TMP/gate.yaml" >/dev/null || fail "check refused good token files"

gate_start "$TMP/gate.yaml"
url="https://127.0.0.1:$TLS_PORT/config/worker"
# status_of CURL_ARGS...: "STATUS REASON" of one request.
status_of() {
  curl -s -o /dev/null -D "$TMP/h" --cacert "$CA" -w '%{http_code}' "$@" >"$TMP/code" || true
  echo "$(cat "$TMP/code") $(sed -n 's/^Skewgate-Reason: \([A-Za-z]*\).*/\1/p' "$TMP/h")"
}

note "curl: missing and wrong tokens get 403 with the reason; right ones are admitted"
[ "$(status_of "$url")" = "403 TokenMissing" ] || fail "no token: $(status_of "$url")"
[ "$(status_of -H "Authorization: Bearer nope" "$url")" = "403 TokenInvalid" ] || fail "wrong bearer"
[ "$(status_of "$url?token=nope")" = "403 TokenInvalid" ] || fail "wrong parameter"
[ "$(status_of -H "Authorization: Basic eDp5" "$url")" = "403 TokenMissing" ] || fail "another scheme"
[ "$(status_of -H "Authorization: Bearer $TOK_A" "$url")" = "200 " ] || fail "bearer A: $(status_of -H "Authorization: Bearer $TOK_A" "$url")"
[ "$(status_of "$url?token=$TOK_B")" = "200 " ] || fail "parameter B"
[ "$(status_of "http://127.0.0.1:$PLAIN_PORT/config/worker?a=1&token=$TOK_A&b=2")" = "200 " ] || fail "plain, parameter among others"
# Ungated paths are not judged.
[ "$(status_of "http://127.0.0.1:$PLAIN_PORT/healthz")" = "200 " ] || fail "/healthz was judged"

note "a 403 keeps the connection: the next request on it is answered"
codes=$(curl -s --cacert "$CA" -o /dev/null -o /dev/null -w '%{http_code}%{num_connects}\n' \
  "$url" -H "Authorization: Bearer $TOK_A" --next --cacert "$CA" -o /dev/null -w '%{http_code}%{num_connects}\n' \
  -H "Authorization: Bearer $TOK_A" "$url") || true
[ "$(tr '\n' ' ' <<<"$codes")" = "2001 2000 " ] || fail "keep-alive across requests: $codes"
codes=$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}%{num_connects}\n' "$url" \
  --next --cacert "$CA" -o /dev/null -w '%{http_code}%{num_connects}\n' -H "Authorization: Bearer $TOK_A" "$url") || true
[ "$(tr '\n' ' ' <<<"$codes")" = "4031 2000 " ] || fail "after a 403 the connection was not reused: $codes"

note "the MCS never sees the token parameter"
grep -q "GET /config/worker?a=1&b=2 " "$TMP/mcs/access.log" || { cat "$TMP/mcs/access.log"; fail "upstream did not get the target without the token"; }
grep -q "GET /config/worker HTTP" "$TMP/mcs/access.log" || fail "upstream did not get ?token= stripped"

note "every spelling Go reads as the token parameter is judged, stripped and never logged"
# TOK_A's bytes all percent-encoded, and the key spelled three ways.
enc_A=$(printf '%s' "$TOK_A" | od -An -tx1 -v | tr -d ' \n' | sed 's/../%&/g')
plain="http://127.0.0.1:$PLAIN_PORT/config/worker"
for q in "to%6Ben=$TOK_A" "token=$enc_A" "%74%6F%6B%65%6E=$TOK_A&keep=1" "keep=2&tok%65n=$enc_A"; do
  [ "$(status_of "$plain?$q")" = "200 " ] || fail "?$q: $(status_of "$plain?$q")"
done
# Pairs Go refuses (a ';', a bad escape) are no parameter: no token, and
# they are dropped as r.URL.Query() drops them, so neither reaches the MCS.
for q in "a;token=$TOK_A" "token=$TOK_A;x" "keep=3&;token=$TOK_A" "token=$TOK_A%zz"; do
  [ "$(status_of "$plain?$q")" = "403 TokenMissing" ] || fail "?$q: $(status_of "$plain?$q")"
done
[ "$(status_of -H "Authorization: Bearer $TOK_A" "$plain?a;token=$TOK_A&keep=4")" = "200 " ] || fail "bearer with a refused pair"
# A '+' is a space to Go: a raw '+' cannot spell a token that has one.
[ "$(status_of "$plain?token=${TOK_A:0:8}+${TOK_A:8}")" = "403 TokenInvalid" ] || fail "a raw + was not read as a space"
for n in 1 2 4; do
  grep -q "GET /config/worker?keep=$n HTTP" "$TMP/mcs/access.log" || { cat "$TMP/mcs/access.log"; fail "keep=$n not forwarded alone"; }
done
if grep -E 'to%6Ben|%74%6F%6B|tok%65n|token' "$TMP/mcs/access.log"; then fail "a token parameter reached the MCS"; fi
grep -q '"path":"/config/worker?keep=1","pool":"worker"' "$GATE_LOG" || fail "the access log's path or pool"
if grep -E '"pool":"[^"]*(token|;)' "$GATE_LOG"; then fail "the query reached the pool label"; fi

note "a duplicate Authorization field is 400, whatever the tokens"
[ "$(status_of -H "Authorization: Bearer $TOK_A" -H "Authorization: Bearer $TOK_A" "$plain")" = "400 " ] ||
  fail "duplicate Authorization: $(status_of -H "Authorization: Bearer $TOK_A" -H "Authorization: Bearer $TOK_A" "$plain")"
[ "$(status_of -H "Authorization: Bearer $TOK_A" -H "authorization: Bearer nope" "$url")" = "400 " ] ||
  fail "duplicate Authorization over TLS"

note "Ignition: the token in httpHeaders boots; none fails at once"
IGN_HEADERS="[{\"name\": \"Authorization\", \"value\": \"Bearer $TOK_A\"}]" ign_run with_token ||
  { cat "$TMP/with_token/out"; fail "Ignition with the token failed"; }
grep -q "Ignition finished successfully" "$TMP/with_token/out" || fail "no success line"
if ign_run without_token; then fail "Ignition without the token succeeded"; fi
grep -q "GET result: Forbidden" "$TMP/without_token/out" || { cat "$TMP/without_token/out"; fail "Ignition did not see 403"; }
if IGN_HEADERS="[{\"name\": \"Authorization\", \"value\": \"Bearer $TOK_C\"}]" ign_run not_yet; then
  fail "Ignition with a token not accepted yet succeeded"
fi

note "rotation: previous := A, current := C; A and C accepted, B refused once re-read"
put_token previous "$TOK_A"
put_token current "$TOK_C"
c_accepted() { [ "$(status_of -H "Authorization: Bearer $TOK_C" "$url")" = "200 " ]; }
wait_until 10 c_accepted || fail "the new token was not accepted after the rotation"
[ "$(status_of -H "Authorization: Bearer $TOK_A" "$url")" = "200 " ] || fail "the previous token lapsed during the overlap"
[ "$(status_of -H "Authorization: Bearer $TOK_B" "$url")" = "403 TokenInvalid" ] || fail "the removed token is still accepted"
IGN_HEADERS="[{\"name\": \"Authorization\", \"value\": \"Bearer $TOK_C\"}]" ign_run rotated ||
  { cat "$TMP/rotated/out"; fail "Ignition with the new token failed"; }

note "a token file deleted at runtime revokes its token (the other stays), and it is logged"
# previous holds A, current holds C (after the rotation above).
[ "$(status_of -H "Authorization: Bearer $TOK_A" "$url")" = "200 " ] || fail "A not accepted before the delete"
rm "$tokdir/previous"
a_refused() { [ "$(status_of -H "Authorization: Bearer $TOK_A" "$url")" = "403 TokenInvalid" ]; }
wait_until 10 a_refused || fail "the token of a deleted file is still accepted"
grep -q '"event":"admission_tokens".*token file '"$tokdir"'/previous: No such file.*its token is refused' "$GATE_LOG" ||
  fail "the deleted file was not logged"
[ "$(status_of -H "Authorization: Bearer $TOK_C" "$url")" = "200 " ] || fail "the other file's token was dropped too"
[ "$(status_of "$url?token=$TOK_A")" = "403 TokenInvalid" ] || fail "the revoked token is accepted as a parameter"
put_token previous "$TOK_B"
b_back() { [ "$(status_of -H "Authorization: Bearer $TOK_B" "$url")" = "200 " ]; }
wait_until 10 b_back || fail "the file's return was not read"
[ "$(status_of -H "Authorization: Bearer $TOK_A" "$url")" = "403 TokenInvalid" ] || fail "A accepted again"

note "an emptied token file revokes its token; with no usable file every token is refused"
: >"$tokdir/previous"
b_refused() { [ "$(status_of -H "Authorization: Bearer $TOK_B" "$url")" = "403 TokenInvalid" ]; }
wait_until 10 b_refused || fail "the token of an emptied file is still accepted"
rm "$tokdir/current"
c_refused() { [ "$(status_of -H "Authorization: Bearer $TOK_C" "$url")" = "403 TokenInvalid" ]; }
wait_until 10 c_refused || fail "with no usable token file, a token is still accepted"
grep -q '"level":"error","event":"admission_tokens".*none of the 2 token files is usable' "$GATE_LOG" ||
  fail "no usable file was not logged as an error"
[ "$(status_of "$url")" = "403 TokenMissing" ] || fail "no token, no usable file: $(status_of "$url")"
put_token current "$TOK_C"
put_token previous "$TOK_B"
wait_until 10 b_back || fail "the files' return was not read"
[ "$(status_of -H "Authorization: Bearer $TOK_C" "$url")" = "200 " ] || fail "C not accepted after its return"

note "the reasons are counted and logged"
metrics=$(curl -sf "http://$ADMIN_ADDR/metrics")
missing=$(sed -n 's/^skewgate_admission_rejects_total{reason="TokenMissing"} //p' <<<"$metrics")
invalid=$(sed -n 's/^skewgate_admission_rejects_total{reason="TokenInvalid"} //p' <<<"$metrics")
[ "$missing" = "$(access_count reason TokenMissing)" ] && [ "$missing" -ge 3 ] || fail "TokenMissing: metric $missing, log $(access_count reason TokenMissing)"
[ "$invalid" = "$(access_count reason TokenInvalid)" ] && [ "$invalid" -ge 4 ] || fail "TokenInvalid: metric $invalid, log $(access_count reason TokenInvalid)"
grep -q '"decision":"reject","reason":"TokenMissing","status":403' "$GATE_LOG" || fail "no access log line for TokenMissing"
held_reasons=$(curl -sf "http://$ADMIN_ADDR/held" |
  python3 -c 'import json, sys; print(" ".join(sorted({c["reason"] for c in json.load(sys.stdin)["clients"]})))')
# One client (127.0.0.1, one pool): one row, with the reason it got last.
[ "$held_reasons" = "TokenInvalid" ] || fail "/held reasons: '$held_reasons' (want the last one, TokenInvalid)"
for t in "$TOK_A" "$TOK_B" "$TOK_C"; do
  ! grep -qF "$t" <<<"$(curl -sf "http://$ADMIN_ADDR/held")" || fail "/held shows a token"
done

note "no log line holds a token"
gate_stop
for t in "$TOK_A" "$TOK_B" "$TOK_C" "$enc_A"; do
  for f in "$GATE_LOG" "$TMP/mcs/access.log" "$TMP/mcs/error.log" "$TMP/mcs/stdout"; do
    if grep -qF "$t" "$f"; then fail "a token appears in $f"; fi
  done
done
echo "PASS"
