#!/usr/bin/env bash
# sql_stats.sh KATRA RINGBENCH - `katra sql` and `katra export --parquet`
# (issue 33) against `katra stats --json` on ringbench captures.
#
# Without DuckDB's libduckdb.so, `katra sql` must exit 1 saying what to
# install (checked always, with KATRA_DUCKDB naming a missing file); the
# rest is skipped (exit 77, ctest's SKIP_RETURN_CODE) with a line saying
# so.  With it:
#  - per zone name: count, total and self time equal stats' exactly; p50
#    and p99 within half of one of stats' histogram buckets (stats gives the
#    middle of the bucket of the value at rank floor(p (n - 1)); buckets
#    are 1/32 of a power of two, so 1.6% of the value, plus 1 ns for the
#    rounding of the middle), on a capture of the frame loop (the capture
#    manager) and on a run with a drop policy and small rings (zones cut by
#    drop windows).  The SQL takes the value at stats' rank (the macro
#    pct below): DuckDB's quantile_disc() takes rank ceil(p n) - 1, which
#    in a sparse tail can be several buckets away (frame p99 of the drop
#    run: 1574242 ns against 1490944 at stats' rank, 5% apart);
#  - events per name, frame-time count exactly, p99 as above; drops per
#    thread exactly;
#  - a damaged copy: exit 3, the damage said, the zones still equal to
#    stats' on the same copy; a cut copy: exit 3, "truncated";
#  - a query error: DuckDB's message with the position, exit 1;
#  - export --parquet: run_id=... directories, whose zones' counts per run
#    equal the traces'.
set -euo pipefail
katra=$1 ringbench=$2
source "$(dirname "$0")/sql_common.sh"

# Without the library: exit 1 and what to install.
rc=0
KATRA_DUCKDB=$tmp/no-libduckdb.so "$katra" sql 'SELECT 1' 2>"$tmp/err" || rc=$?
((rc == 1)) || fail "without libduckdb: exit $rc, wanted 1"
grep -q 'scripts/deps.sh' "$tmp/err" || fail "without libduckdb: $(cat "$tmp/err")"
grep -q 'KATRA_DUCKDB' "$tmp/err" || fail "without libduckdb: $(cat "$tmp/err")"

sql_need_duckdb "$katra"

mkdir "$tmp/cap"
"$ringbench" --seconds 0.5 --capture-root "$tmp/cap" --run-id sqltest >"$tmp/rb1" 2>&1 ||
  fail "ringbench: $(tail -3 "$tmp/rb1")"
cap=$(ls "$tmp"/cap/*.katra)
"$ringbench" --out "$tmp/drop.katra" --policy drop --ring-size 65536 --seconds 0.3 \
  >"$tmp/rb2" 2>&1 || fail "ringbench --policy drop: $(tail -3 "$tmp/rb2")"

# The zones per name of stats and of sql, as sorted JSON arrays.
stats_zones() { # $1 stats json
  jq -c '[.names[] | select(.zone) | {name, c: .zone.count, t: .zone.total_ns,
          s: .zone.self_ns, p50: .zone.p50_ns, p99: .zone.p99_ns}] | sort_by(.name)' "$1"
}
# The value at stats' rank of percentile p (tools/pipeline/hist.c: hist_pct()).
pct="CREATE MACRO pct(l, p) AS list_sort(l)[floor(p * (len(l) - 1))::BIGINT + 1];"
sql_zones() { # $1 trace; exit status of katra in $tmp/sql_rc
  local rc=0
  "$katra" sql "$pct SELECT name, count(*) AS c, sum(dur_ns) AS t, sum(self_ns) AS s,
                 pct(list(dur_ns), 0.5) AS p50, pct(list(dur_ns), 0.99) AS p99
                 FROM zones GROUP BY name" "$1" --format json >"$tmp/sqlz" 2>"$tmp/sqlz.err" || rc=$?
  echo "$rc" >"$tmp/sql_rc"
  jq -s -c 'sort_by(.name)' "$tmp/sqlz"
}
# Exact fields equal, percentiles within a bucket.
compare_zones() { # $1 label $2 stats array $3 sql array
  jq -n -e --argjson a "$2" --argjson b "$3" '
    def near(x; y): ((x - y) | fabs) <= 1 + 0.016 * y;
    ($a | length) > 0 and ($a | map(.name)) == ($b | map(.name)) and
    ([range(0; $a | length)] | all(. as $i | $a[$i] as $x | $b[$i] as $y |
      $x.c == $y.c and $x.t == $y.t and $x.s == $y.s and
      near($x.p50; $y.p50) and near($x.p99; $y.p99)))' >/dev/null ||
    fail "$1: zones differ:
stats: $2
sql:   $3"
}

for f in "$cap" "$tmp/drop.katra"; do
  "$katra" stats --json "$f" >"$tmp/stats.json"
  compare_zones "$f" "$(stats_zones "$tmp/stats.json")" "$(sql_zones "$f")"
  [[ $(cat "$tmp/sql_rc") == 0 ]] || fail "$f: sql exit $(cat "$tmp/sql_rc")"
  # Events per name (--json counts records: a zone's begin and end each).
  want=$(jq -c '[.names[] | [.name, .count]] | sort' "$tmp/stats.json")
  got=$("$katra" sql 'SELECT name, count(*) AS n FROM events WHERE type IS NOT NULL
                      GROUP BY name' "$f" --format json |
        jq -s -c 'map([.name, .n]) | sort')
  [[ $want == "$got" ]] || fail "$f: events per name: stats $want, sql $got"
  # Frame times: the count exactly, p99 within a bucket.
  want=$(jq -c '[.frames.count, .frames.p99_ns]' "$tmp/stats.json")
  got=$("$katra" sql "$pct SELECT count(frame_ns) AS n, pct(list(frame_ns), 0.99) AS p99
                      FROM frames WHERE frame_ns IS NOT NULL" "$f" --format json | jq -c '[.n, .p99]')
  jq -n -e --argjson a "$want" --argjson b "$got" \
    '$a[0] == $b[0] and $a[0] > 0 and (($a[1] - $b[1]) | fabs) <= 1 + 0.016 * $b[1]' >/dev/null ||
    fail "$f: frames: stats $want, sql $got"
  # Drops per thread, exactly.
  want=$(jq -c '[.threads[] | [.tid, .dropped]] | sort' "$tmp/stats.json")
  got=$("$katra" sql 'SELECT t.thread AS tid, coalesce(sum(d.count), 0) AS dropped
                      FROM threads t LEFT JOIN drops d USING (file, thread) GROUP BY t.thread' \
        "$f" --format json | jq -s -c 'map([.tid, .dropped]) | sort')
  [[ $want == "$got" ]] || fail "$f: drops per thread: stats $want, sql $got"
done
# The drop run did drop (else its drops test proves nothing).
[[ $(jq '.dropped' "$tmp/stats.json") -gt 0 ]] || fail "the drop run dropped nothing"

# Damage: a checksum broken mid-file; a copy cut short.
# (Offsets from the size: a sanitizer build's capture is smaller.)
size=$(stat -c %s "$cap")
cp "$cap" "$tmp/dmg.katra"
printf '\xff\xff\xff\xff' | dd of="$tmp/dmg.katra" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$katra" stats --json "$tmp/dmg.katra" >"$tmp/stats.json" 2>/dev/null || true
compare_zones damaged "$(stats_zones "$tmp/stats.json")" "$(sql_zones "$tmp/dmg.katra")"
[[ $(cat "$tmp/sql_rc") == 3 ]] || fail "damaged: exit $(cat "$tmp/sql_rc"), wanted 3"
grep -q 'damaged frames skipped' "$tmp/sqlz.err" || fail "damaged: $(cat "$tmp/sqlz.err")"
head -c $((size * 3 / 5)) "$cap" >"$tmp/cut.katra"
rc=0
"$katra" sql 'SELECT count(*) FROM zones' "$tmp/cut.katra" >/dev/null 2>"$tmp/err" || rc=$?
((rc == 3)) && grep -q truncated "$tmp/err" || fail "cut: exit $rc: $(cat "$tmp/err")"

# A query error: DuckDB's message, with the query's position, exit 1.
rc=0
"$katra" sql 'SELECT nope FROM zones' "$cap" 2>"$tmp/err" || rc=$?
((rc == 1)) && grep -q 'LINE 1: SELECT nope FROM zones' "$tmp/err" && grep -q '\^' "$tmp/err" ||
  fail "query error: exit $rc: $(cat "$tmp/err")"

# Parquet: both traces, partitioned by run id (the capture's, and the
# plain trace's file name); each partition's zones as many as its trace's.
"$katra" export --parquet "$cap" "$tmp/drop.katra" "$tmp/pq" 2>"$tmp/err" ||
  fail "export --parquet: $(cat "$tmp/err")"
[[ -d $tmp/pq/zones/run_id=sqltest && -d $tmp/pq/zones/run_id=drop ]] ||
  fail "export --parquet: $(ls -R "$tmp/pq" | head -20)"
for f in "$cap" "$tmp/drop.katra"; do
  want=$("$katra" sql 'SELECT count(*) FROM zones' "$f" --format csv | tail -1)
  run=$("$katra" sql 'SELECT coalesce(run_id, '"'drop'"') FROM captures' "$f" --format csv | tail -1)
  got=$("$katra" sql "SELECT count(*) FROM read_parquet('$tmp/pq/zones/*/*.parquet',
                      hive_partitioning = true) WHERE run_id = '$run'" --format csv | tail -1)
  [[ $want == "$got" && $want -gt 0 ]] || fail "parquet $run: $got zones, trace $want"
done
rc=0
"$katra" export --parquet "$cap" "$tmp/pq" 2>/dev/null || rc=$?
((rc == 1)) || fail "export --parquet into an existing DIR: exit $rc, wanted 1"
echo "sql_stats: all passed"
