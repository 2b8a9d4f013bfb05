#!/usr/bin/env bash
# sql_views.sh KATRA RINGBENCH SQL_PROBE - `katra sql`'s captures view
# against the capture manager's sidecars, and its zones' locations and
# args view against `katra dump` (issue 33), exact values.
#
#  - a capture of ringbench: the sidecar's state, code, complete, spans,
#    head loss and tail excess, as its JSON has them; sidecar_matches true;
#  - the sidecar tampered (its run id, its size, its SHA-256), or a link
#    in its place: the mismatch said on stderr, exit 3, the sidecar's
#    columns NULL, sidecar_problem the reason; the header's own run id kept;
#  - a plain trace, no sidecar: sidecar_matches NULL, exit 0;
#  - tests/sql_probe.c's trace: every zone's thread, name, begin, end, id
#    and FILE:LINE, and every argument's thread, time, zone id, name, type
#    and value, equal what `katra dump --format jsonl` shows of the file
#    (an awk reading of its lines: zone ids counted as begins in dump's
#    order, an argument given to its thread's innermost open zone); the
#    functions of the probe's zones by name; u64 values past 2^63 exact;
#  - tests/data/procs_v5.katra (a merged trace of two processes): the
#    processes view's rows as its process entries hold them, each thread's
#    pid; a version 3 file (no entries): one row of its header's pid.
# Skipped (exit 77) without DuckDB's libduckdb.so, as sql_stats.sh says.
set -euo pipefail
katra=$1 ringbench=$2 probe=$3
source "$(dirname "$0")/sql_common.sh"

sql_need_duckdb "$katra"

mkdir "$tmp/cap"
"$ringbench" --seconds 0.2 --capture-root "$tmp/cap" --run-id views >"$tmp/rb" 2>&1 ||
  fail "ringbench: $(tail -3 "$tmp/rb")"
cap=$(ls "$tmp"/cap/*.katra)
cp "$cap.json" "$tmp/sidecar.json"

cols='run_id, state, code, complete, requested_span_ns, capture_span_ns, head_loss_ns,
      tail_excess_ns, sidecar_matches, sidecar_problem'
captures() { # $1 trace: the row as JSON, katra's exit status in $tmp/rc
  local rc=0
  "$katra" sql "SELECT $cols FROM captures" "$1" --format json >"$tmp/row" 2>"$tmp/err" || rc=$?
  echo "$rc" >"$tmp/rc"
  jq -c . "$tmp/row"
}

# Intact: the sidecar's own values.
want=$(jq -c '{run_id, state, code: (.code // null), complete, requested_span_ns,
               capture_span_ns, head_loss_ns, tail_excess_ns, sidecar_matches: true,
               sidecar_problem: null}' "$tmp/sidecar.json")
got=$(captures "$cap")
[[ $got == "$want" ]] || fail "intact: sql $got
sidecar $want"
[[ $(cat "$tmp/rc") == 0 && ! -s $tmp/err ]] || fail "intact: exit $(cat "$tmp/rc"): $(cat "$tmp/err")"
# The run must have lost a head, or head_loss_ns proves nothing.
[[ $(jq .head_loss_ns <<<"$got") -gt 0 ]] || fail "intact: no head loss: $got"

# Tampered: each mismatch said, its columns NULL.
tampered() { # $1 label, $2 jq filter on the sidecar, $3 the reason's text
  jq -c "$2" "$tmp/sidecar.json" >"$cap.json"
  local row
  row=$(captures "$cap")
  [[ $(cat "$tmp/rc") == 3 ]] || fail "$1: exit $(cat "$tmp/rc"), wanted 3"
  grep -qF "$cap.json: capture sidecar does not match $cap: $3" "$tmp/err" ||
    fail "$1: stderr: $(cat "$tmp/err")"
  jq -e --arg why "$3" '.run_id == "views" and .state == null and .code == null and
        .complete == null and .requested_span_ns == null and .capture_span_ns == null and
        .head_loss_ns == null and .tail_excess_ns == null and .sidecar_matches == false and
        (.sidecar_problem | startswith($why))' <<<"$row" >/dev/null || fail "$1: row $row"
}
tampered "run id" '.run_id = "other"' 'run_id is "other", the trace'"'"'s is "views"'
tampered "size" '.bytes += 1' "bytes is $(($(stat -c %s "$cap") + 1)), the file has"
tampered "sha256" '.sha256 |= ("0" * 64)' "sha256 is $(printf '0%.0s' {1..64}), the file's is"
ln -sf "$tmp/sidecar.json" "$cap.json"
row=$(captures "$cap")
[[ $(cat "$tmp/rc") == 3 ]] && jq -e '.sidecar_matches == false and .head_loss_ns == null and
  (.sidecar_problem | test("symbolic link"))' <<<"$row" >/dev/null || fail "link: $row"
rm "$cap.json" && cp "$tmp/sidecar.json" "$cap.json"
[[ $(captures "$cap" | jq .sidecar_matches) == true ]] || fail "restored: $(cat "$tmp/row")"

# A plain trace: no sidecar, nothing said.
"$ringbench" --out "$tmp/plain.katra" --seconds 0.1 >"$tmp/rb" 2>&1 ||
  fail "ringbench --out: $(tail -3 "$tmp/rb")"
row=$(captures "$tmp/plain.katra")
[[ $(cat "$tmp/rc") == 0 && ! -s $tmp/err ]] || fail "plain: exit $(cat "$tmp/rc"): $(cat "$tmp/err")"
jq -e '.run_id == null and .sidecar_matches == null and .state == null' <<<"$row" >/dev/null ||
  fail "plain: $row"

# Zones and arguments: katra dump's view of sql_probe's trace.
"$probe" "$tmp/probe.katra" || fail "sql_probe"
"$katra" dump --format jsonl "$tmp/probe.katra" >"$tmp/probe.jsonl"
awk -v zones="$tmp/want_zones" -v args="$tmp/want_args" '
  function field(key,   m) { # the raw JSON of a member: a number, a string (quotes cut), null
    if (!match($0, "\"" key "\":(\"([^\"\\\\]|\\\\.)*\"|[-0-9.e+]+|null)")) return ""
    m = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
    if (m == "null") return ""
    return m ~ /^"/ ? substr(m, 2, length(m) - 2) : m
  }
  { ns = field("ns"); tid = field("tid"); type = field("type"); name = field("name") }
  type == "zone_begin" {
    id++; d = ++depth[tid]
    zid[tid, d] = id; zns[tid, d] = ns; zname[tid, d] = name; zloc[tid, d] = field("loc")
  }
  type == "zone_end" && depth[tid] > 0 { # the probe nests well: the top ends
    d = depth[tid]--
    print tid "," zname[tid, d] "," zns[tid, d] "," ns "," zid[tid, d] "," zloc[tid, d] >zones
  }
  type ~ /^arg_/ {
    v = type == "arg_str" ? field("text") : field("value")
    print tid "," ns "," (depth[tid] ? zid[tid, depth[tid]] : "") "," name "," \
          substr(type, 5) "," v >args
  }' "$tmp/probe.jsonl"
sed -i 's/,str,/,text,/' "$tmp/want_args"
"$katra" sql "SELECT thread, name, begin_ns, end_ns, zone_id, src_file || ':' || line FROM zones
              ORDER BY end_ns" "$tmp/probe.katra" --format csv | tail -n +2 >"$tmp/got_zones"
"$katra" sql "SELECT thread, ts_ns, zone_id, name, type,
                     coalesce(i64::VARCHAR, u64::VARCHAR, printf('%g', f64), text)
              FROM args ORDER BY ts_ns" "$tmp/probe.katra" --format csv | tail -n +2 >"$tmp/got_args"
[[ $(wc -l <"$tmp/want_zones") == 10 && $(wc -l <"$tmp/want_args") == 29 ]] ||
  fail "probe: dump gave $(wc -l <"$tmp/want_zones") zones, $(wc -l <"$tmp/want_args") args"
diff -u "$tmp/want_zones" "$tmp/got_zones" || fail "zones differ from dump's"
diff -u "$tmp/want_args" "$tmp/got_args" || fail "args differ from dump's"
# What dump does not show: functions, the category, parents, depths.
got=$("$katra" sql "SELECT name, function, category, parent, depth, count(*) AS n FROM zones
                    GROUP BY ALL ORDER BY name" "$tmp/probe.katra" --format csv | tr '\n' ' ')
[[ $got == "name,function,category,parent,depth,n leaf,leaf,,step,1,6 step,step,sim,,0,3 worker,worker,,,0,1 " ]] ||
  fail "zones' functions: $got"
grep -q 'big,u64,18446744073709551615$' "$tmp/got_args" || fail "u64: $(grep big "$tmp/got_args")"
grep -q ',,orphan,i64,1$' "$tmp/got_args" || fail "orphan: $(grep orphan "$tmp/got_args")"

# Processes (format version 4, SPEC §4.10), as `katra info` shows the fixture.
data=$(cd "$(dirname "$0")/data" && pwd)
got=$("$katra" sql "SELECT pid, parent_pid, name, command_line, start_ns, end_ns, complete, recovered
                    FROM processes ORDER BY pid" "$data/procs_v5.katra" --format csv | tr '\n' ' ')
[[ $got == "pid,parent_pid,name,command_line,start_ns,end_ns,complete,recovered 100,1,parent,\"./multiproc --events 5\",1000,9000,true,false 101,100,worker,,2000,,false,true " ]] ||
  fail "processes: $got"
got=$("$katra" sql "SELECT t.name, p.name FROM threads t JOIN processes p USING (file, pid)
                    ORDER BY t.thread" "$data/procs_v5.katra" --format csv | tr '\n' ' ')
[[ $got == "name,name main,parent work,worker " ]] || fail "threads' processes: $got"
got=$("$katra" sql "SELECT pid, name IS NULL AS unnamed FROM processes" "$data/golden_v3.katra" --format csv |
      tr '\n' ' ')
[[ $got == "pid,unnamed 4242,true " ]] || fail "a version 3 file's process: $got"
echo "sql_views: all passed"
