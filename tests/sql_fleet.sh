#!/usr/bin/env bash
# sql_fleet.sh KATRA RINGBENCH - issue 33's fleet: 20 captures of ringbench
# through the capture manager, two "commits" (run ids commitA and commitB,
# ten epochs each), exported by `katra export --parquet` to one dataset; a
# DuckDB query over the dataset by partition (run_id=...) gives per zone
# name the count and p99 that `katra diff A... -- B...` gives per side.
# Diff's p99 is the value at rank floor(0.99 (n - 1)) of its sample, which
# here holds every value (the runs are small: sampled == count is checked),
# so they are equal exactly.  Skipped (exit 77) without libduckdb.so.
set -euo pipefail
katra=$1 ringbench=$2
source "$(dirname "$0")/sql_common.sh"

sql_need_duckdb "$katra"

mkdir "$tmp/cap"
for c in A B; do
  for e in $(seq 1 10); do
    "$ringbench" --seconds 0.1 --rate 20000 --capture-root "$tmp/cap" --run-id "commit$c" \
      --epoch "$e" >"$tmp/rb" 2>&1 || fail "ringbench commit$c epoch $e: $(tail -3 "$tmp/rb")"
  done
done
a=("$tmp"/cap/commitA.*.katra) b=("$tmp"/cap/commitB.*.katra)
((${#a[@]} == 10 && ${#b[@]} == 10)) || fail "captures: ${#a[@]} and ${#b[@]}"

"$katra" export --parquet "${a[@]}" "${b[@]}" "$tmp/ds" 2>"$tmp/err" ||
  fail "export --parquet: $(cat "$tmp/err")"
n=$(ls "$tmp"/ds/zones/run_id=commitA/*.parquet "$tmp"/ds/zones/run_id=commitB/*.parquet | wc -l)
((n == 20)) || fail "the dataset holds $n zone files, wanted 20"

"$katra" diff "${a[@]}" -- "${b[@]}" --json >"$tmp/diff.json" || (($? == 4)) ||
  fail "katra diff failed"
want=$(jq -c '[.zones[] | select(.a.count > 0 and .b.count > 0) |
               [.name, .a.count, .a.sampled, .a.p99_ns, .b.count, .b.sampled, .b.p99_ns]] | sort' \
       "$tmp/diff.json")
jq -n -e --argjson w "$want" '($w | length) > 0 and
  ($w | all(.[1] == .[2] and .[4] == .[5]))' >/dev/null ||
  fail "diff sampled fewer values than it counted (the runs are too long for exact p99): $want"
got=$("$katra" sql "CREATE MACRO pct(l, p) AS list_sort(l)[floor(p * (len(l) - 1))::BIGINT + 1];
       SELECT name, run_id, count(*) AS n, pct(list(dur_ns), 0.99) AS p99
       FROM read_parquet('$tmp/ds/zones/*/*.parquet', hive_partitioning = true)
       GROUP BY name, run_id" --format json |
      jq -s -c 'group_by(.name) | map(
        (map(select(.run_id == "commitA"))[0]) as $x | (map(select(.run_id == "commitB"))[0]) as $y |
        [$x.name, $x.n, $x.n, $x.p99, $y.n, $y.n, $y.p99]) | sort')
[[ $want == "$got" ]] || fail "per side:
diff: $want
sql:  $got"
echo "sql_fleet: 20 captures, per commit count and p99 of every zone name equal diff's: $got"
