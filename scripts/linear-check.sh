#!/usr/bin/env bash
# linear-check.sh [REPS] - evidence that every katra command reading a
# trace runs in time linear (or n log n) in the file, whatever order or
# mix of frames it holds.  Builds bench/adversary.c and the katra command
# (in build/, as scripts/test.sh does), writes each kind of adversarial
# valid trace at a size n and at 4n, runs every reader command on both and
# prints the median CPU time (user + system, both threads of a pipelined
# command) of REPS runs (default 3) and the ratio t(4n)/t(n): about 4 for
# linear work, 16 for quadratic.  CPU time rather than wall time, because
# the machine is shared and a waiting process shows its neighbours' load.
# Rows over 5 are marked "!" and make the exit status 1.  Not a test: read
# the numbers side by side.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

reps=${1:-3}
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [REPS]  (a positive whole number, default 3)" >&2
  exit 2
fi

bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target katra_cli adversary >/dev/null
katra=$PWD/build/katra
adversary=$PWD/build/adversary

tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-linear.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# kind and n: n is chosen so that most commands take tens of milliseconds
# or more at n, above the noise of starting a process.
kinds=(
  "names-desc 20000"
  "threads-desc 2000"
  "many-threads 50000"
  "unmatched-ends 2000000"
  "deep-nesting 2000000"
  "huge-ids 10000"
  "far-ids 2000000"
  "large-messages 64000"
  "escapes 16000"
  "track-unmatched 1000000"
  "args-closed 20000"
)
commands=(
  "verify" "info" "stats" "stats --json" "dump" "dump --format jsonl"
  "export --chrome" "export --collapsed" "export --perfetto" "export --fxt" "replay --max"
  "slice" "compress" "decompress"
)

# The median CPU time, in ms, of REPS runs of katra with "$@".
median_ms() {
  local times=() rc
  for ((r = 0; r < reps; r++)); do
    rc=0
    TIMEFORMAT='%3U %3S'
    { time "$katra" "$@" >/dev/null 2>"$tmp/err"; } 2>"$tmp/time" || rc=$?
    if ((rc != 0 && rc != 3)); then
      echo "linear-check.sh: katra $* failed: $(head -c 300 "$tmp/err")" >&2
      exit 1
    fi
    times+=("$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$tmp/time")")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p"
}

# Commands that write a file write it to /dev/null (written in place, as
# outfile.h does for devices): the disk's write-back is not theirs to time.
args_for() { # command, file
  read -ra words <<<"$1"
  case ${words[0]} in
    export|slice|compress|decompress) echo "${words[*]} $2 /dev/null" ;;
    *) echo "${words[*]} $2" ;;
  esac
}

echo "# katra linear check: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
  "median CPU time of $reps run(s)"
printf '%-15s %-20s %8s %9s %9s %6s\n' kind command n "t(n) ms" "t(4n) ms" ratio
over=0
for entry in "${kinds[@]}"; do
  read -r kind n <<<"$entry"
  "$adversary" "$kind" "$n" "$tmp/a.katra"
  "$adversary" "$kind" $((4 * n)) "$tmp/b.katra"
  for cmd in "${commands[@]}"; do
    read -ra a <<<"$(args_for "$cmd" "$tmp/a.katra")"
    read -ra b <<<"$(args_for "$cmd" "$tmp/b.katra")"
    ta=$(median_ms "${a[@]}")
    tb=$(median_ms "${b[@]}")
    ratio=$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.1f", b / (a > 0 ? a : 1) }')
    mark=""
    if awk -v r="$ratio" 'BEGIN { exit !(r > 5) }'; then
      mark=" !"
      over=$((over + 1))
    fi
    printf '%-15s %-20s %8s %9s %9s %6s%s\n' "$kind" "$cmd" "$n" "$ta" "$tb" "$ratio" "$mark"
  done
done
# katra diff (its own block): `diff F F` and eight runs against eight of a
# trace of N zones over 1024 names (adversary zone-names), at n and 4n; at
# 4n each name has the 2048 zones a sample keeps, the caps of issue 26's D4
# (there `diff F F` took 28 s against 0.30 s for stats).
diff_n=524288
"$adversary" zone-names "$diff_n" "$tmp/d.katra"
"$adversary" zone-names $((4 * diff_n)) "$tmp/e.katra"
for runs in 1 8; do
  da=() db=()
  for ((i = 0; i < runs; i++)); do da+=("$tmp/d.katra"); db+=("$tmp/e.katra"); done
  ta=$(median_ms diff "${da[@]}" -- "${da[@]}")
  tb=$(median_ms diff "${db[@]}" -- "${db[@]}")
  ratio=$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.1f", b / (a > 0 ? a : 1) }')
  mark=""
  awk -v r="$ratio" 'BEGIN { exit !(r > 5) }' && mark=" !" && over=$((over + 1))
  printf '%-15s %-20s %8s %9s %9s %6s%s\n' zone-names "diff ${runs} -- ${runs}" "$diff_n" \
    "$ta" "$tb" "$ratio" "$mark"
done
if ((over > 0)); then
  echo "linear-check.sh: $over row(s) over 5" >&2
  exit 1
fi
echo "linear-check.sh: every ratio at most 5"
