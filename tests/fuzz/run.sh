#!/usr/bin/env bash
# Builds the HTTP libFuzzer targets with ASan and UBSan and runs each for a
# bounded time. Exits non-zero if a target crashes, leaks or fails a check.
#   FUZZ_SECONDS  seconds per target (default 20)
#   FUZZ_TARGETS  space-separated subset (default: all)
#   FUZZ_OUT      build and work directory (default build/fuzz)
# Seeds in tests/fuzz/corpus/<target> are read, never written: new inputs
# go to $FUZZ_OUT/corpus/<target>, crash inputs to $FUZZ_OUT/crash-*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${FUZZ_SECONDS:-20}
out=${FUZZ_OUT:-$root/build/fuzz}
cc=${FUZZ_CC:-clang}
read -r -a targets <<<"${FUZZ_TARGETS:-http_request http_response http_chunked http_path}"
mkdir -p "$out"

cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
        -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
        -I"$root/include")
srcs=("$root"/src/http/*.c)

for t in "${targets[@]}"; do
  if ! "$cc" "${cflags[@]}" -o "$out/fuzz_$t" "$here/fuzz_$t.c" "${srcs[@]}" 2>"$out/build_$t.log"; then
    cat "$out/build_$t.log" >&2
    if grep -q 'libclang_rt.fuzzer' "$out/build_$t.log"; then
      echo "run.sh: the libFuzzer runtime is missing: apt-get install -y libclang-rt-14-dev" >&2
    fi
    exit 2
  fi
done

status=0
printf '%-16s %12s %10s %8s  %s\n' target executions exec/s seconds result
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  log="$out/$t.log"
  rc=0
  "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -dict="$here/http.dict" -artifact_prefix="$out/crash-$t-" -print_final_stats=1 \
      "$out/corpus/$t" "$here/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc, see $log)"
    status=1
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20 >&2 || true
  fi
  printf '%-16s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$secs" "$result"
done
exit "$status"
