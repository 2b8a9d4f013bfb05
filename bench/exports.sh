#!/usr/bin/env bash
# exports.sh TRACE [REPS] - every `katra export` format on TRACE, side by
# side in one run: output bytes per event, median wall time and events per
# second, median CPU time (both threads of the pipeline), and peak RSS, of
# REPS runs each (default 3), the formats interleaved round by round so a
# neighbour's load falls on all of them alike.  Each is also timed writing
# to /dev/null: the tool's own rate, apart from what the disk takes (a
# file of 15-90 bytes per event outruns this machine's ~215 MB/s disk).  Uses build-rel/katra
# (Release), built first.  Outputs go to a temporary directory beside
# TRACE's, deleted after each run.  Not a test: read the numbers.
#
# A trace to run it on: build-rel/ringbench --out /tmp/default.katra (the
# default frame loop, 50M events in 5 s; --policy block keeps all 50M on a
# loaded machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

trace=${1:?usage: bench/exports.sh TRACE [REPS]}
reps=${2:-3}
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bench/exports.sh TRACE [REPS]  (REPS a positive whole number)" >&2
  exit 2
fi
cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-rel -j2 --target katra_cli >/dev/null
katra=$PWD/build-rel/katra

events=$("$katra" info "$trace" | awk '$1 == "events" { print $2 }')
tmp=$(mktemp -d "$(dirname "$trace")/katra-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
formats=(chrome collapsed perfetto perfetto+zstd fxt) # + joins a format and its option
declare -A wall cpu rss bytes null

for ((r = 0; r < reps; r++)); do
  for f in "${formats[@]}"; do
    rm -f "$tmp/out"
    read -ra args <<<"--${f//+/ --}"
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$katra" export "${args[@]}" "$trace" "$tmp/out" \
      2>/dev/null || { echo "exports.sh: export ${args[*]} failed" >&2; exit 1; }
    read -r e u s m <"$tmp/time"
    wall[$f]+="$e "
    cpu[$f]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "
    rss[$f]+="$m "
    bytes[$f]=$(stat -c %s "$tmp/out")
    rm -f "$tmp/out"
    /usr/bin/time -f '%e' -o "$tmp/time" "$katra" export "${args[@]}" "$trace" /dev/null \
      2>/dev/null || { echo "exports.sh: export ${args[*]} to /dev/null failed" >&2; exit 1; }
    null[$f]+="$(cat "$tmp/time") "
  done
done
rm -f "$tmp/out"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# katra export, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# trace: $trace, $events events; median of $reps run(s) each"
printf '%-14s %14s %8s %9s %12s %9s %10s %9s %12s\n' format bytes "B/event" "wall s" "Mevents/s" "cpu s" "rss MiB" \
  "null s" "null Mev/s"
for f in "${formats[@]}"; do
  w=$(median <<<"${wall[$f]}")
  c=$(median <<<"${cpu[$f]}")
  m=$(median <<<"${rss[$f]}")
  z=$(median <<<"${null[$f]}")
  awk -v f="$f" -v b="${bytes[$f]}" -v n="$events" -v w="$w" -v c="$c" -v m="$m" -v z="$z" 'BEGIN {
    printf "%-14s %14.0f %8.2f %9.2f %12.1f %9.2f %10.1f %9.2f %12.1f\n", f, b, b / n, w, n / w / 1e6,
      c, m / 1024, z, n / z / 1e6 }'
done
