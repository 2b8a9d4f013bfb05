#!/usr/bin/env bash
# renderer_rows.sh [ROUNDS [FRAMES]] - what tracing every zone costs
# examples/renderer (issue #28 must-show 2), and what of it is the clock:
# per round, in this order, unpaced with no hitch, FRAMES frames (default
# 300, ~54M events):
#   off     renderer_off: tracing compiled out
#   clock   renderer_clock: that plus the two rdtsc reads per shaded pixel
#           that any timestamped zone needs, nothing stored
#   flight  renderer: its flight recorder, every zone emitted into rings
#           that no flusher drains (the emit alone)
#   record  renderer --record: every zone to a file (emit and flusher)
#   noshade renderer --record with KT_CATEGORIES=-shading (the per-pixel
#           zones switched off at run time)
# ROUNDS rounds (default 5).  Prints a line per run (wall s, user+sys s),
# then per mode the medians and the median of its per-round ratios to
# off: side by side in one run, whatever the load did between rounds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-5} frames=${2:-300}
ex=${EXAMPLES:-build/examples}
for b in renderer renderer_off renderer_clock; do
  [[ -x $ex/$b ]] || { echo "renderer_rows.sh: no $ex/$b (build first)" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-rendrows.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
args=(--unpaced --hitch-at -1 --frames "$frames")
run() { # MODE CMD...: one timed run, "MODE wall cpu"
  local mode=$1; shift
  rm -f "$tmp/r.katra"
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$@" >/dev/null
  awk -v m="$mode" '{ printf "%-8s %6.2f %6.2f\n", m, $1, $2 + $3 }' "$tmp/t"
}
echo "# $(date -u '+%Y-%m-%d %H:%M:%S') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds, $frames frames"
printf '%-5s %-8s %6s %6s\n' round mode wall cpu
for r in $(seq 1 "$rounds"); do
  {
    run off "$ex/renderer_off" "${args[@]}"
    run clock "$ex/renderer_clock" "${args[@]}"
    run flight "$ex/renderer" "${args[@]}"
    run record "$ex/renderer" "${args[@]}" --record "$tmp/r.katra"
    KT_CATEGORIES=-shading run noshade "$ex/renderer" "${args[@]}" --record "$tmp/r.katra"
  } | sed "s/^/$r     /"
done | tee "$tmp/rows"
echo "# done $(date -u '+%H:%M:%S') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
awk "$(cat bench/medians.awk)"'
  { w[$2, $1] = $3; c[$2, $1] = $4; if ($1 > nr) nr = $1 }
  END {
    split("off clock flight record noshade", m, " ")
    printf "%-8s %11s %11s %16s %16s\n", "mode", "wall med", "cpu med", "wall/off med", "cpu/off med"
    for (i = 1; i <= 5; i++) {
      for (r = 1; r <= nr; r++) {
        a[r] = w[m[i], r]; b[r] = c[m[i], r]
        x[r] = w[m[i], r] / w["off", r]; y[r] = c[m[i], r] / c["off", r]
      }
      printf "%-8s %11.2f %11.2f %15.2fx %15.2fx\n", m[i], med(a, nr), med(b, nr), med(x, nr), med(y, nr)
    }
  }' "$tmp/rows"
