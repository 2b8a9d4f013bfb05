#!/usr/bin/env bash
# fuzz.sh [SECONDS] - build every libFuzzer target (tests/fuzz/fuzz_*.c) with
# clang, ASan and UBSan into build-fuzz/, then run them for SECONDS in total
# (default 70), split evenly.
#
# For each target: its regression inputs (tests/fuzz/regress/<target>/*) run
# first as plain inputs; then libFuzzer runs on a temporary corpus seeded from
# tests/fuzz/corpus/<target>/, tests/data/*.katra and the regression inputs,
# so the repository's corpus never grows.  Crash inputs land in
# build-fuzz/artifacts/.  Any crash, leak, timeout or OOM fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

total=${1:-70}
if ! [[ $total =~ ^[0-9]+$ ]] || ((total < 1)); then
  echo "usage: $0 [SECONDS]  (a positive whole number, default 70)" >&2
  exit 2
fi

bash scripts/deps.sh

shopt -s nullglob
sources=(tests/fuzz/fuzz_*.c)
if ((${#sources[@]} == 0)); then
  echo "fuzz.sh: no tests/fuzz/fuzz_*.c targets" >&2
  exit 1
fi
targets=()
for s in "${sources[@]}"; do
  t=${s##*/}
  targets+=("${t%.c}")
done

werror=OFF
[[ ${CI:-} == true ]] && werror=ON
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DKATRA_FUZZ=ON -DKATRA_SANITIZE=address,undefined -DKATRA_WERROR="$werror"
cmake --build build-fuzz -j2 --target katra_fuzzers

artifacts=$root/build-fuzz/artifacts
mkdir -p "$artifacts"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/.start"   # to tell this run's artifacts from older ones

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

per=$((total / ${#targets[@]}))
((per >= 1)) || per=1
common=(-max_len=65536 -rss_limit_mb=2048 -timeout=30 -print_final_stats=1
        "-artifact_prefix=$artifacts/")

failed=()
for t in "${targets[@]}"; do
  exe=$root/build-fuzz/tests/fuzz/$t
  [[ -x $exe ]] || { echo "fuzz.sh: $exe was not built" >&2; exit 1; }

  regress=(tests/fuzz/regress/"$t"/*)
  if ((${#regress[@]} > 0)); then
    echo "== fuzz $t: ${#regress[@]} regression input(s)"
    if ! "$exe" "${common[@]}" "${regress[@]}"; then
      failed+=("$t (a regression input in tests/fuzz/regress/$t/ fails again)")
      continue
    fi
  fi

  corpus=$tmp/$t
  mkdir -p "$corpus"
  seeds=(tests/fuzz/corpus/"$t"/* tests/data/*.katra "${regress[@]}")
  # Each seed under a name of its own: a golden file may also be a
  # regression input, and cp refuses two sources of one name.
  for i in "${!seeds[@]}"; do
    if [[ -f ${seeds[$i]} ]]; then cp -- "${seeds[$i]}" "$corpus/$i-${seeds[$i]##*/}"; fi
  done

  echo "== fuzz $t: ${per}s, corpus seeded with ${#seeds[@]} file(s)"
  if ! "$exe" "${common[@]}" -max_total_time="$per" "$corpus"; then
    failed+=("$t")
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  echo "fuzz.sh: new crash inputs in $artifacts (keep each, once fixed, in tests/fuzz/regress/<target>/):" >&2
  find "$artifacts" -type f -newer "$tmp/.start" -printf '  %p (%s bytes)\n' >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s) ran ${per}s each, no crash"
