#!/usr/bin/env bash
# Builds the libFuzzer targets with ASan and UBSan and runs each for a
# bounded time. Exits non-zero if a target crashes, leaks or fails a check.
#   FUZZ_SECONDS  seconds per target (default 20)
#   FUZZ_TARGETS  space-separated subset (default: every fuzz_*.c here)
#   FUZZ_JOBS     targets built, then fuzzed, at once (default 1; at most the cores)
#   FUZZ_OUT      build and work directory (default build/fuzz)
#   FUZZ_ARGS     extra libFuzzer flags (e.g. -runs=10000000 for a long run)
# A harness names what it links in comment lines of its own source:
#   // sources: src/http/*.c src/core/text.c   (globs from the root; default src/http/*.c)
#   // pkgs: jansson yaml-0.1                  (pkg-config packages; default none)
#   // dict: json.dict                         (in tests/fuzz; default http.dict)
# Seeds in tests/fuzz/corpus/<target> are read, never written: new inputs
# go to $FUZZ_OUT/corpus/<target>, crash inputs to $FUZZ_OUT/crash-*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-1}
out=${FUZZ_OUT:-$root/build/fuzz}
cc=${FUZZ_CC:-clang}
read -r -a extra <<<"${FUZZ_ARGS:-}"
all=()
for f in "$here"/fuzz_*.c; do
  b=${f##*/fuzz_}
  all+=("${b%.c}")
done
read -r -a targets <<<"${FUZZ_TARGETS:-${all[*]}}"
mkdir -p "$out"

cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
        -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
        -I"$root/include")

# The value of a "// key: ..." line of a harness, or $3.
meta() {
  local v
  v=$(sed -n "s|^// $2: *||p" "$1" | head -1)
  echo "${v:-$3}"
}

# Builds one target (its log is $out/build_$t.log); FUZZ_JOBS of them at once.
build_one() {
  local t=$1 src="$here/fuzz_$1.c" g m srcs=() pkgs=() pc_c=() pc_l=()
  for g in $(meta "$src" sources 'src/http/*.c'); do
    # shellcheck disable=SC2206  # the glob is meant to expand
    m=($root/$g)
    [ -e "${m[0]}" ] || { echo "run.sh: $t: no source matches $g" >&2; return 2; }
    srcs+=("${m[@]}")
  done
  read -r -a pkgs <<<"$(meta "$src" pkgs '')"
  if [ ${#pkgs[@]} -gt 0 ]; then
    read -r -a pc_c <<<"$(pkg-config --cflags "${pkgs[@]}")"
    read -r -a pc_l <<<"$(pkg-config --libs "${pkgs[@]}")"
  fi
  "$cc" "${cflags[@]}" ${pc_c[@]+"${pc_c[@]}"} -o "$out/fuzz_$t" "$src" "${srcs[@]}" \
    ${pc_l[@]+"${pc_l[@]}"} -lpthread 2>"$out/build_$t.log"
}
for t in "${targets[@]}"; do
  [ -f "$here/fuzz_$t.c" ] || { echo "run.sh: no harness $here/fuzz_$t.c" >&2; exit 2; }
done
building=() build_pids=()
for t in "${targets[@]}"; do
  if [ "${#build_pids[@]}" -ge "$jobs" ]; then
    wait "${build_pids[0]}" || { echo "run.sh: building ${building[0]} failed" >&2; failed_build=${building[0]}; break; }
    building=("${building[@]:1}") build_pids=("${build_pids[@]:1}")
  fi
  build_one "$t" &
  building+=("$t") build_pids+=($!)
done
for i in "${!build_pids[@]}"; do
  wait "${build_pids[$i]}" || failed_build=${failed_build:-${building[$i]}}
done
if [ -n "${failed_build:-}" ]; then
  t=$failed_build
  cat "$out/build_$t.log" >&2
  if grep -q 'libclang_rt.fuzzer' "$out/build_$t.log"; then
    echo "run.sh: the libFuzzer runtime is missing: apt-get install -y libclang-rt-14-dev" >&2
  fi
  exit 2
fi

# Fuzzes one target; its log is $out/$t.log, its exit status $out/$t.rc.
fuzz_one() {
  local t=$1 rc=0 dict
  dict=$(meta "$here/fuzz_$t.c" dict http.dict)
  mkdir -p "$out/corpus/$t"
  "$out/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -dict="$here/$dict" -artifact_prefix="$out/crash-$t-" -print_final_stats=1 \
      ${extra[@]+"${extra[@]}"} "$out/corpus/$t" "$here/corpus/$t" >"$out/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$t.rc"
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

status=0
printf '%-22s %12s %10s %8s  %s\n' target executions exec/s seconds result
for t in "${targets[@]}"; do
  log="$out/$t.log"
  rc=$(cat "$out/$t.rc" 2>/dev/null || echo 99)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  took=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc, see $log)"
    status=1
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20 >&2 || true
  fi
  printf '%-22s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${took:-$secs}" "$result"
done
exit "$status"
