#!/usr/bin/env bash
# top_json.sh KATRA PARTICLES - `katra top PID --once --json --at-end`
# against examples/particles while it runs: the figures it prints, the
# live page's last copy (the whole session, published as the session
# stops), equal `katra stats --json` of the trace the run wrote.  Events,
# drops, frame and zone counts exactly; total and self time within 0.1%
# (the page converts ticks with the start's calibration, stats with the
# start's and the stop's); p50 and p99 within 5% (both are histograms:
# the page's buckets are 1/16 octave wide).  Then the bad cases: a PID
# that is gone, a process that is not traced, a traced one with
# KATRA_LIVE=0, each one line on stderr and exit 1.
set -euo pipefail
export KATRA_LIVE=1 # the live page is opt-in

katra=${1:?usage: top_json.sh KATRA PARTICLES}
particles=${2:?usage: top_json.sh KATRA PARTICLES}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-top.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
fail() { echo "top_json: $*" >&2; exit 1; }

# Wait until process $1 publishes its live page.
wait_live() {
  for _ in $(seq 1 200); do
    "$katra" top "$1" --once --json >/dev/null 2>&1 && return 0
    kill -0 "$1" 2>/dev/null || fail "process $1 ended before publishing"
    sleep 0.05
  done
  fail "process $1 never published its live page"
}

"$particles" --frames 3000 --out "$tmp/p.katra" >/dev/null &
pid=$!
pids+=("$pid")
wait_live "$pid"
"$katra" top "$pid" --once --json --at-end >"$tmp/top.json"
wait "$pid"
"$katra" stats "$tmp/p.katra" --json >"$tmp/stats.json"

jq -e '.ended == true and .since_start == true and .events_not_walked == 0' "$tmp/top.json" >/dev/null ||
  fail "the last copy is not marked ended: $(head -c 300 "$tmp/top.json")"
for k in events dropped; do
  a=$(jq ".$k" "$tmp/top.json"); b=$(jq ".$k" "$tmp/stats.json")
  [[ $a == "$b" ]] || fail "$k: top $a, stats $b"
done
a=$(jq '.frames.count' "$tmp/top.json"); b=$(jq '.frames.count' "$tmp/stats.json")
[[ $a == "$b" && $a -gt 2000 ]] || fail "frames: top $a, stats $b"

# name count total self p50 p99, one zone a line, sorted by name.
jq -r '.zones[] | [.name, .count, .total_ns, .self_ns, .p50_ns, .p99_ns] | @tsv' \
  "$tmp/top.json" | sort >"$tmp/top.tsv"
jq -r '.names[] | select(.zone) | [.name, .zone.count, .zone.total_ns, .zone.self_ns,
  .zone.p50_ns, .zone.p99_ns] | @tsv' "$tmp/stats.json" | sort >"$tmp/stats.tsv"
cut -f1 "$tmp/top.tsv" >"$tmp/top.names"
cut -f1 "$tmp/stats.tsv" >"$tmp/stats.names"
diff "$tmp/top.names" "$tmp/stats.names" >/dev/null ||
  fail "zone names differ: top $(tr '\n' ' ' <"$tmp/top.names"), stats $(tr '\n' ' ' <"$tmp/stats.names")"
[[ $(wc -l <"$tmp/top.names") -ge 7 ]] || fail "fewer than 7 zones"
paste "$tmp/top.tsv" "$tmp/stats.tsv" | awk -F'\t' '
  function off(a, b, tol) { d = a - b; if (d < 0) d = -d; return d > tol * (b > 0 ? b : 1) }
  $2 != $8 { print "zone " $1 ": count " $2 " vs " $8; bad = 1 }
  off($3, $9, 0.001) || off($4, $10, 0.001) { print "zone " $1 ": total/self " $3 "/" $4 " vs " $9 "/" $10; bad = 1 }
  off($5, $11, 0.05) || off($6, $12, 0.05) { print "zone " $1 ": p50/p99 " $5 "/" $6 " vs " $11 "/" $12; bad = 1 }
  END { exit bad }' || fail "zones differ (above)"
for k in p50_ns p99_ns; do
  a=$(jq ".frames.$k" "$tmp/top.json"); b=$(jq ".frames.$k" "$tmp/stats.json")
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * b) }' ||
    fail "frames $k: top $a, stats $b"
done

# Bad cases: one line on stderr, exit 1.
expect_bad() {
  local what=$1 pid=$2 words=$3 rc=0
  "$katra" top "$pid" --once --json >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 1 ]] || fail "$what: exit $rc, not 1"
  [[ $(wc -l <"$tmp/err") == 1 && ! -s $tmp/out ]] || fail "$what: not one line: $(cat "$tmp/err")"
  grep -q "$words" "$tmp/err" || fail "$what: '$(cat "$tmp/err")' does not say '$words'"
}
true &
gone=$!
wait "$gone"
expect_bad "a process that is gone" "$gone" "no process $gone"
sleep 30 &
plain=$!
pids+=("$plain")
expect_bad "a process not traced" "$plain" "has no live katra session"
KATRA_LIVE=0 "$particles" --frames 100000 --out "$tmp/q.katra" >/dev/null &
quiet=$!
pids+=("$quiet")
sleep 0.5
expect_bad "a traced process with KATRA_LIVE=0" "$quiet" "has no live katra session"
echo "top_json: $(jq '.frames.count' "$tmp/top.json") frames, $(wc -l <"$tmp/top.names") zones equal stats; 3 bad cases refused"
