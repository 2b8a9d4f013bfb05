#!/usr/bin/env bash
# lua_tracy.sh KATRA LUA_TRACE TRACY_DIR - a real Lua program traced
# (examples/lua_trace running examples/lua/workload.lua at scale 2) read
# by code katra did not write: its FXT and Chrome exports through Tracy's
# own importers (built by scripts/viewers.sh into TRACY_DIR), then
# tracy-csvexport, must hold per zone name as many zones as `katra stats
# --json` counts (fib 1972, count_down 602, yield 400, pcall 40, ...).
# Exit 0 when both agree on every name; 1 otherwise.
set -euo pipefail
katra=$(realpath "$1")
lt=$(realpath "$2")
tracy=$(realpath "$3")
script=$(cd "$(dirname "${BASH_SOURCE[0]}")/../examples/lua" && pwd)/workload.lua
for t in tracy-import-fuchsia tracy-import-chrome tracy-csvexport; do
  [[ -x $tracy/$t ]] || { echo "lua_tracy: $tracy/$t missing (bash scripts/viewers.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-luatracy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

"$lt" --out lua.katra "$script" 2 >/dev/null 2>lua.err
"$katra" verify lua.katra >/dev/null
"$katra" stats --json lua.katra >stats.json
"$katra" export --fxt lua.katra lua.fxt 2>/dev/null
"$katra" export --chrome lua.katra lua.json 2>/dev/null
"$tracy/tracy-import-fuchsia" lua.fxt fxt.tracy >fxt.import.log 2>&1
"$tracy/tracy-import-chrome" lua.json chrome.tracy >chrome.import.log 2>&1
"$tracy/tracy-csvexport" fxt.tracy >fxt.csv
"$tracy/tracy-csvexport" chrome.tracy >chrome.csv

python3 - <<'PY'
import csv, json, sys
want = {}
for n in json.load(open("stats.json"))["names"]:
    if n.get("zone"):
        want[n["name"]] = want.get(n["name"], 0) + n["zone"]["count"]
bad = 0
for f in ("fxt", "chrome"):
    got = {}
    for row in csv.DictReader(open(f + ".csv")):
        got[row["name"]] = got.get(row["name"], 0) + int(row["counts"])
    diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
    print("lua_tracy: %s: %d names, %d zones%s" % (f, len(got), sum(got.values()),
          "" if not diff else ": differ (katra, Tracy) %s" % sorted(diff.items())[:8]))
    bad |= bool(diff) or sum(got.values()) == 0
sys.exit(bad)
PY
