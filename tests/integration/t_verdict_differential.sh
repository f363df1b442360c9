#!/usr/bin/env bash
# Differential check of the verdict (issue 12, item 2): 100 000 random
# MachineConfigurations, seeded, each judged by skewgate's verdict_compute
# (tests/integration/verdict_batch.c, one process for all of them, built
# here against the libskewgate.a next to $SKEWGATE_BIN) and by the
# independent reference in verdict_reference.py. Any difference in
# decision, reason or settled fails, and is printed with its case.
# DIFF_CASES and DIFF_SEED change the count and the seed (default 12).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib=$(dirname "$SKEWGATE_BIN")/libskewgate.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -f "$lib" ] || { echo "FAIL: no $lib next to $SKEWGATE_BIN"; exit 1; }
# The driver is built with the sanitizer the library was built with (the
# TSan pass sets SKEWGATE_SAN too): the library's own symbols say which.
syms=$(nm "$lib" 2>/dev/null)
san=()
if grep -q '__tsan_' <<<"$syms"; then
  san=(-fsanitize=thread)
elif grep -q '__asan_' <<<"$syms"; then
  san=(-fsanitize=address,undefined -fno-sanitize-recover=all)
fi
pkgs="libevent libevent_openssl libevent_pthreads openssl jansson yaml-0.1 libnftables"
# shellcheck disable=SC2046
if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -O1 -g "${san[@]}" -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
    -Wmissing-prototypes -I"$root/include" $(pkg-config --cflags jansson) -o "$tmp/verdict-batch" \
    "$here/verdict_batch.c" "$lib" $(pkg-config --libs $pkgs) -lpthread; then
  echo "FAIL: cannot build verdict_batch.c against $lib"
  exit 1
fi

# The harness must be able to fail: a case judged wrongly on purpose
# (a Compliant object whose expected reason is mangled) must be caught.
if python3 "$here/verdict_reference.py" "$tmp/verdict-batch" --cases 200 --seed 1 --self-test >"$tmp/self" 2>&1; then
  echo "FAIL: the self-test mismatch went unnoticed:"; cat "$tmp/self"; exit 1
fi
grep -q '^MISMATCH' "$tmp/self" || { echo "FAIL: self-test did not run:"; cat "$tmp/self"; exit 1; }

python3 "$here/verdict_reference.py" "$tmp/verdict-batch" --cases "${DIFF_CASES:-100000}" --seed "${DIFF_SEED:-12}"
