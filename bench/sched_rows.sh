#!/usr/bin/env bash
# sched_rows.sh [ROUNDS [SECONDS [RATE]]] - the cost of scheduler records
# (issue #31 must-show 3): ringbench's frame loop (3 producers, compact,
# --policy drop) with KT_SCHED=0 and KT_SCHED=1 alternated in one run,
# ROUNDS rounds each (default 7), SECONDS each (default 3) at RATE events/s
# (default 4000000).  Per run: the producers' emit ns p50 and p99, the
# flusher's CPU in all, and (on) the context switches written (the
# katra.sched streams' records less one follow each).  Prints one line per
# run, then medians, min-max and the flusher's extra CPU per switch.
# bench/sample_rows.sh runs it for samples: KNOB (the variable, default
# KT_SCHED), ON (its value when on, default 1), STREAM (the streams' name,
# default katra.sched) and FIRST (records a stream holds besides, default
# 1: its follow).
set -euo pipefail
knob=${KNOB:-KT_SCHED} on=${ON:-1} stream=${STREAM:-katra.sched} first=${FIRST:-1}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-7} secs=${2:-3} rate=${3:-4000000}
rb=${RINGBENCH:-build/ringbench} katra=${KATRA:-build/katra}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-schedrows.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%-4s %-3s %10s %10s %14s %10s %12s\n' round mode "ns p50" "ns p99" "flusher ms" switches "events"
for r in $(seq 1 "$rounds"); do
  for mode in 0 "$on"; do
    out=$tmp/rb.katra
    rm -f "$out"
    txt=$(env "$knob=$mode" "$rb" --seconds "$secs" --rate "$rate" --policy drop --out "$out")
    row=$(awk '$1 == "katra" { print $6, $7 }' <<<"$txt")
    per=$(awk '$1 == "flusher" { print $2 }' <<<"$txt")
    written=$(awk '$1 == "written" { print $2 }' <<<"$txt")
    sw=$("$katra" info "$out" | awk -v s="$stream" -v f="$first" '$6 == s { n += $8 - f } END { print n + 0 }')
    cpu=$(awk -v p="$per" -v w="$written" 'BEGIN { printf "%.2f", p * w / 1e6 }')
    printf '%-4s %-3s %10s %10s %14s %10s %12s\n' "$r" "$([[ $mode != 0 ]] && echo on || echo off)" \
      $row "$cpu" "$sw" "$written"
  done
done | tee "$tmp/rows"
awk "$(cat bench/medians.awk)"'
  $2 == "off" { n0++; p0[n0] = $3; q0[n0] = $4; c0[n0] = $5 }
  $2 == "on"  { n1++; p1[n1] = $3; q1[n1] = $4; c1[n1] = $5; s1[n1] = $6 }
  END {
    printf "off: emit p50 median %.2f ns (%.2f-%.2f), p99 median %.2f; flusher %.1f ms median\n",
      med(p0, n0), lo(p0, n0), hi(p0, n0), med(q0, n0), med(c0, n0)
    printf "on:  emit p50 median %.2f ns (%.2f-%.2f), p99 median %.2f; flusher %.1f ms median; %d switches median\n",
      med(p1, n1), lo(p1, n1), hi(p1, n1), med(q1, n1), med(c1, n1), med(s1, n1)
    printf "on/off emit p50: %.3fx; flusher extra per switch: %.0f ns (medians)\n",
      med(p1, n1) / med(p0, n0), (med(c1, n1) - med(c0, n0)) * 1e6 / med(s1, n1)
  }' "$tmp/rows"
