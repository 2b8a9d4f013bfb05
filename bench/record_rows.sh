#!/usr/bin/env bash
# record_rows.sh [ROUNDS [EVENTS]] - the emit cost under `katra record`
# (issue #30 must-show 4): ringbench --producer-only's katra row with a
# session in code, and the same batches into the session the environment
# starts (`katra record -- ringbench --recorded`: no session code, the
# library's autostart), alternated ROUNDS times (default 5), EVENTS events
# per row (default 5000000).  Both with 64 MiB rings and the compact
# codec; each run has its own floor row (the same stores without katra),
# so katra - floor sets the two runs side by side whatever the machine's
# load did between them.  Prints a line per run, then medians and min-max.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-5} events=${2:-5000000}
rb=${RINGBENCH:-build/ringbench} katra=${KATRA:-build/katra}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-recordrows.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ring=$((64 << 20))
printf '%-5s %-7s %10s %10s %10s %10s\n' round mode "katra p50" "floor p50" "- floor" dropped
for r in $(seq 1 "$rounds"); do
  for mode in code record; do
    if [[ $mode == code ]]; then
      txt=$(TMPDIR=$tmp "$rb" --producer-only --events "$events" --ring-size "$ring")
      row=katra
    else
      rm -f "$tmp/r.katra"
      txt=$("$katra" record -o "$tmp/r.katra" --ring-size "$ring" -- \
        "$rb" --recorded --events "$events" 2>/dev/null)
      row=katra_record
    fi
    k=$(awk -v r="$row" '$1 == r { print $6, $4 }' <<<"$txt")
    f=$(awk '$1 == "floor" { print $6 }' <<<"$txt")
    set -- $k
    printf '%-5s %-7s %10s %10s %10.2f %10s\n' "$r" "$mode" "$1" "$f" \
      "$(awk -v a="$1" -v b="$f" 'BEGIN { print a - b }')" "$2"
  done
done | tee "$tmp/rows"
awk "$(cat bench/medians.awk)"'
  $2 == "code"   { n0++; k0[n0] = $3; d0[n0] = $5 }
  $2 == "record" { n1++; k1[n1] = $3; d1[n1] = $5 }
  END {
    printf "session in code: katra p50 median %.2f ns (%.2f-%.2f), katra - floor median %.2f (%.2f-%.2f)\n",
      med(k0, n0), lo(k0, n0), hi(k0, n0), med(d0, n0), lo(d0, n0), hi(d0, n0)
    printf "katra record:    katra p50 median %.2f ns (%.2f-%.2f), katra - floor median %.2f (%.2f-%.2f)\n",
      med(k1, n1), lo(k1, n1), hi(k1, n1), med(d1, n1), lo(d1, n1), hi(d1, n1)
    printf "record/code katra p50: %.3fx (medians)\n", med(k1, n1) / med(k0, n0)
  }' "$tmp/rows"
