#!/usr/bin/env bash
# flusher_rows.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS [SECONDS]] - the
# flusher's cost per workload, two builds side by side (issue #28 must-show
# 1): ringbench's default run (the frame loop) and --workload renderer,
# interp and jobs, each written to a file with --out at ringbench's rate
# (10M events/s) for SECONDS (default 3), the two builds alternated in each
# round, ROUNDS rounds (default 5; about 3 minutes).  ringbench's flusher
# figure is the flusher thread's CPU (CLOCK_THREAD_CPUTIME_ID) over the
# events written: an io_uring worker's (iou-wrk) is not in it.  Prints a
# line per run (with the 1-minute load average after it), then per
# workload the medians, min-max and the median of the paired after/before
# ratios.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -lt 2 ]]; then
  echo "usage: $0 BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS [SECONDS]]" >&2
  exit 2
fi
before=$1 after=$2 rounds=${3:-5} secs=${4:-3}
for b in "$before" "$after"; do
  [[ -x $b/ringbench ]] || { echo "$0: no $b/ringbench" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-flusherrows.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%-5s %-9s %-6s %8s %10s %10s %6s\n' round workload build B/ev "flusher ns" dropped load
for r in $(seq 1 "$rounds"); do
  for w in default renderer interp jobs; do
    args=()
    [[ $w == default ]] || args=(--workload "$w")
    for side in before after; do
      dir=$before
      [[ $side == after ]] && dir=$after
      rm -f "$tmp/f.katra"
      txt=$("$dir/ringbench" "${args[@]}" --seconds "$secs" --out "$tmp/f.katra")
      bpe=$(awk '$1 == "on" && $2 == "disk" { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^bytes\/event/) print $i }' <<<"$txt")
      ns=$(awk '$1 == "flusher" { print $2 }' <<<"$txt")
      drop=$(awk '$1 == "written" { print $5 }' <<<"$txt")
      printf '%-5s %-9s %-6s %8s %10s %10s %6s\n' "$r" "$w" "$side" "${bpe%,}" "$ns" "$drop" \
        "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done | tee "$tmp/rows"
echo
awk "$(cat bench/medians.awk)"'
  $3 == "before" { k = $2; nb[k]++; bb[k, nb[k]] = $4; fb[k, nb[k]] = $5; last[k] = $5; lb[k] = $4 }
  $3 == "after" { k = $2; na[k]++; ba[k, na[k]] = $4; fa[k, na[k]] = $5
    rf[k, na[k]] = last[k] > 0 ? $5 / last[k] : 0; rb[k, na[k]] = lb[k] > 0 ? $4 / lb[k] : 0 }
  END {
    printf "%-9s %-6s %22s %28s\n", "workload", "build", "B/ev median (min-max)", "flusher ns/ev median (min-max)"
    split("default renderer interp jobs", ws, " ")
    for (wi = 1; wi <= 4; wi++) {
      k = ws[wi]
      if (!nb[k]) continue
      for (i = 1; i <= nb[k]; i++) { x[i] = bb[k, i]; y[i] = fb[k, i] }
      printf "%-9s %-6s %8.3f (%.3f-%.3f) %13.2f (%.2f-%.2f)\n", k, "before", med(x, nb[k]), lo(x, nb[k]), hi(x, nb[k]), med(y, nb[k]), lo(y, nb[k]), hi(y, nb[k])
      for (i = 1; i <= na[k]; i++) { x[i] = ba[k, i]; y[i] = fa[k, i] }
      printf "%-9s %-6s %8.3f (%.3f-%.3f) %13.2f (%.2f-%.2f)\n", k, "after", med(x, na[k]), lo(x, na[k]), hi(x, na[k]), med(y, na[k]), lo(y, na[k]), hi(y, na[k])
      for (i = 1; i <= na[k]; i++) { x[i] = rb[k, i]; y[i] = rf[k, i] }
      printf "%-9s %-6s %8.3fx %34.3fx  (after/before, median of pairs)\n", k, "ratio", med(x, na[k]), med(y, na[k])
    }
  }' "$tmp/rows"
