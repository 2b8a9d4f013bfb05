#!/usr/bin/env bash
# report_chromium.sh - `katra report` and `katra diff --html` pages open in
# headless Chromium with no console error and no network request, and their
# script runs (the table and the header are filled in).
#
#   report_chromium.sh KATRA RINGBENCH [--screenshot PNG]
#
# Pages: the golden trace, the memory golden trace, the default run
# (ringbench's frame loop, 50M events, through the capture manager, so the
# page has a capture sidecar), the examples/ program's run (when built) and two runs of it merged (each zone row saying its pid),
# `katra record -- examples/multiproc`'s trace of four processes, whose
# page must show each process `katra stats --json` lists (issue #30);
# the diff of the default run (epoch 1) against a second one (epoch 2).
# The default run's and the examples/ program's pages are also checked
# against `katra stats --json`.  Installs
# Debian's chromium when it is missing.  Console messages come from
# --enable-logging=stderr; requests from a net log (--log-net-log): a request
# the page started has the page as its initiator, where the browser's own
# (updates, accounts) say "not an origin".  A control page that throws and
# fetches must fail both checks, or the checks themselves are broken.
set -euo pipefail
katra=$1 ringbench=$2
shot=
[[ ${3:-} == --screenshot ]] && shot=$4

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  sudo=()
  ((EUID != 0)) && sudo=(sudo)
  # A fresh machine has no package lists yet.
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  browser=$(command -v chromium)
fi

tmp=$(mktemp -d)
trap '[[ -n ${KEEP_TMP:-} ]] || rm -rf "$tmp"' EXIT
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

mkdir "$tmp/captures"
# The default run (ringbench with no workload option: 50M events in 5 s),
# twice: the report and the diff of what `bash scripts/run.sh` makes.
for epoch in 1 2; do
  "$ringbench" --capture-root "$tmp/captures" --run-id report \
    --epoch "$epoch" >"$tmp/ringbench.out" 2>&1
done
capture=$(ls "$tmp"/captures/*.1.*.katra)
second=$(ls "$tmp"/captures/*.2.*.katra)
"$katra" report "$root/data/golden_v1.katra" -o "$tmp/golden.html"
"$katra" report "$root/data/mem_v5.katra" -o "$tmp/mem.html"
"$katra" report "$root/data/samples_v5.katra" -o "$tmp/samples.html"
"$katra" report "$capture" -o "$tmp/run.html"
# The examples/ program, where the build has it (C++ found).
example=$(dirname "$katra")/examples/particles
if [[ -x $example ]]; then
  "$example" --frames 300 --physics-off-from 200 --out "$tmp/particles.katra" >/dev/null
  "$katra" report "$tmp/particles.katra" -o "$tmp/particles.html"
  # A second run merged with the first: two processes with the same names.
  "$example" --frames 30 --out "$tmp/particles2.katra" >/dev/null
  "$katra" merge "$tmp/particles.katra" "$tmp/particles2.katra" -o "$tmp/twice.katra" >/dev/null 2>&1
  "$katra" report "$tmp/twice.katra" -o "$tmp/twice.html"
fi
# Four processes in one trace: a parent, two forked workers (one killed)
# and an exec'd helper.  Crash files: on a loaded machine the killed
# worker's flusher may not have written before the kill (then only its
# crash rings hold its events).
multiproc=$(dirname "$katra")/examples/multiproc
mkdir "$tmp/crash"
"$katra" record --crash-dir "$tmp/crash" -o "$tmp/multiproc.katra" -- "$multiproc" \
  --events 20000 >/dev/null 2>&1
"$katra" report "$tmp/multiproc.katra" -o "$tmp/multiproc.html"
# Exit 0, or 4 when the second run's verdict is "slower": both give a page.
"$katra" diff "$capture" "$second" --fail-on slower --html "$tmp/diff.html" >/dev/null ||
  (($? == 4))
# Two runs of examples/offcpu (scheduler records on): the diff page's
# off-CPU rows, one per zone name.
offcpu=$(dirname "$katra")/examples/offcpu
for side in a b; do "$offcpu" "$tmp/offcpu-$side.katra" 2 >/dev/null 2>&1; done
"$katra" diff "$tmp/offcpu-a.katra" "$tmp/offcpu-b.katra" --html "$tmp/offdiff.html" >/dev/null ||
  (($? == 4))

flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
       --disable-background-networking --disable-sync --disable-component-update
       --allow-file-access-from-files --enable-logging=stderr --v=0)

# Every request a page initiated (the browser's own are "not an origin").
page_requests() { # $1 net log
  python3 - "$1" <<'PY'
import json, sys
text = open(sys.argv[1]).read().rstrip()
try:
    log = json.loads(text)
except ValueError:  # the browser may leave the events array open
    log = json.loads(text.rstrip(",") + "]}")
kinds = {v: k for k, v in log["constants"]["logEventTypes"].items()}
for e in log.get("events", []):
    p = e.get("params") or {}
    if (kinds.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in p
            and p.get("initiator") != "not an origin"):
        print(p.get("initiator"), p.get("url"))
PY
}

# Load $1 in the browser: its DOM, console and net log under $tmp/$2.*
load() {
  "$browser" "${flags[@]}" --user-data-dir="$tmp/profile-$2" \
    --log-net-log="$tmp/$2.netlog" --virtual-time-budget=5000 \
    --dump-dom "file://$1" >"$tmp/$2.dom" 2>"$tmp/$2.log" || true
  grep -E 'CONSOLE|Uncaught|SyntaxError|TypeError|ReferenceError' "$tmp/$2.log" \
    >"$tmp/$2.console" || true
  page_requests "$tmp/$2.netlog" >"$tmp/$2.urls"
}

fail=0
check() { # $1 page, $2 its header's first term
  local page=$1 first=$2 name bad=0
  name=$(basename "$page" .html)
  load "$page" "$name"
  if [[ -s $tmp/$name.console ]]; then
    echo "FAIL $name: console messages:"; cat "$tmp/$name.console"; bad=1
  fi
  if [[ -s $tmp/$name.urls ]]; then
    echo "FAIL $name: network requests:"; cat "$tmp/$name.urls"; bad=1
  fi
  [[ -s $tmp/$name.netlog ]] || { echo "FAIL $name: no net log written"; bad=1; }
  if ! grep -q '<td>' "$tmp/$name.dom" || ! grep -q "<dt>$first</dt>" "$tmp/$name.dom"; then
    echo "FAIL $name: the script did not fill the page"; bad=1
  fi
  ((bad)) && fail=1 || echo "ok $name: no console message, no request, page filled"
}

# The control: an error and a request must both be seen.
cat >"$tmp/control.html" <<'HTML'
<!doctype html><html><body><script>
fetch("http://127.0.0.1:9/katra-control").catch(() => {});
throw new Error("katra-control");
</script></body></html>
HTML
load "$tmp/control.html" control
if ! grep -q katra-control "$tmp/control.console" || ! grep -q katra-control "$tmp/control.urls"; then
  echo "FAIL control: a page's error or request went unseen; the checks are broken"
  fail=1
else
  echo "ok control: an error and a request are seen"
fi
check "$tmp/golden.html" workload
check "$tmp/run.html" workload
check "$tmp/diff.html" method
check "$tmp/offdiff.html" method
# Its off-CPU section was drawn with a row per zone of offcpu's, unless
# this machine refused the scheduler records (then the section stays
# hidden, and the trace says why).
if "$katra" stats --json "$tmp/offcpu-a.katra" | python3 -c '
import json, sys; sys.exit(0 if json.load(sys.stdin)["sched"]["present"] else 1)'; then
  if python3 - "$tmp/offdiff.dom" <<'PY'; then
import html, re, sys
dom = open(sys.argv[1]).read()
assert '<section id="offsec">' in dom, "the off-CPU section is still hidden"
table = dom[dom.index('<table id="off">'):]
table = table[:table.index("</table>")]
names = sorted(html.unescape(m) for m in re.findall(r"<tr><td>(.*?)</td>", table))
assert names == ["mutex", "pinned", "sleep", "spin"], names
print("off-CPU rows: " + ", ".join(names))
PY
    echo "ok offdiff: its off-CPU rows are drawn"
  else
    echo "FAIL offdiff: no off-CPU rows"; fail=1
  fi
else
  echo "skip offdiff's rows: this machine refused the scheduler records"
fi

# A page's numbers against `katra stats --json` of its trace: the frame
# count, the slowest frame, the zone table's rows, the flame graph's root
# total (tests/test_report.c checks the same on small traces).
numbers() { # $1 trace, $2 page
  local name
  name=$(basename "$2" .html)
  "$katra" stats --json "$1" >"$tmp/$name.stats.json"
  if python3 - "$2" "$tmp/$name.stats.json" <<'PY'; then
import json, sys
page = open(sys.argv[1]).read()
mark = '<script type="application/json" id="data">'
data = json.loads(page[page.index(mark) + len(mark):].split("</script>", 1)[0])
st = json.load(open(sys.argv[2]))
mine = data["stats"]
assert mine["frames"] == st["frames"], "frames differ"
assert mine["names"] == st["names"], "zone rows differ"
if st["frames"]["count"]:
    assert data["frames"]["slowest"][0][1] == st["frames"]["max_ns"], "slowest frame"
flame = sum(node[2] for node in data["flame"])
zones = sum(t.get("zones_ns", 0) for t in st["threads"])
# Equal whatever was lost: both count the self time of the zones that
# ended (tools/analysis/stats.h), so a loaded machine's lossy run is compared too.
assert flame == zones, "flame root total (%d events dropped)" % st["dropped"]
print("frames %d, %d names, flame %d ns" % (st["frames"]["count"], len(st["names"]), flame))
PY
    echo "ok $name: its numbers are stats --json's"
  else
    echo "FAIL $name: its numbers differ from stats --json's"; fail=1
  fi
}
numbers "$capture" "$tmp/run.html"
[[ -f $tmp/particles.html ]] && numbers "$tmp/particles.katra" "$tmp/particles.html"
[[ -f $tmp/particles.html ]] && check "$tmp/particles.html" workload
check "$tmp/mem.html" workload
# The merged runs' zone table says whose each "loop" row is: one per pid.
if [[ -f $tmp/twice.html ]]; then
  check "$tmp/twice.html" workload
  "$katra" stats --json "$tmp/twice.katra" >"$tmp/twice.stats.json"
  if python3 - "$tmp/twice.dom" "$tmp/twice.stats.json" <<'PY'; then
import html, json, re, sys
dom = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))
table = dom[dom.index('<table id="zones">'):]
table = table[:table.index("</table>")]
rows = [html.unescape(m) for m in re.findall(r"<tr><td>(.*?)</td>", table)]
want = sorted("loop (pid %d)" % p["pid"] for p in st["processes"])
got = sorted(r for r in rows if r.startswith("loop"))
assert len(want) == 2 and got == want, "rows %s, want %s" % (got, want)
print("zone rows: " + ", ".join(got))
PY
    echo "ok twice: each process's zone row says its pid"
  else
    echo "FAIL twice: the zone rows of two processes are not told apart"; fail=1
  fi
fi
check "$tmp/multiproc.html" workload
# Its processes' section was drawn: a heading per process of the trace,
# "NAME (pid PID)", as `katra stats --json` lists them, and no other.
"$katra" stats --json "$tmp/multiproc.katra" >"$tmp/multiproc.stats.json"
if python3 - "$tmp/multiproc.dom" "$tmp/multiproc.stats.json" <<'PY'; then
import html, json, re, sys
dom = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))
want = ["%s (pid %d)" % (p["name"], p["pid"]) for p in st["processes"]]
got = [html.unescape(h) for h in re.findall(r'<h3 class="proc">(.*?)</h3>', dom)]
assert len(want) == 4, "stats lists %d processes" % len(want)
assert got == want, "the page shows %s, stats lists %s" % (got, want)
assert '<section id="procsec">' in dom, "the section is still hidden"
print("processes: " + ", ".join(got))
PY
  echo "ok multiproc: its four processes are shown"
else
  echo "FAIL multiproc: its processes are not those of stats --json"; fail=1
fi
# The sampled stacks of its slowest frames were drawn (issue #31): the
# fixture's 2 samples of 0x1000 in zone draw (tests/synth_samples.h).
check "$tmp/samples.html" workload
if ! grep -q '<div title="0x1000: 2 samples total, 2 samples self"' "$tmp/samples.dom"; then
  echo "FAIL samples: no flame graph of the slowest frames' samples"; fail=1
fi
# Its memory section was drawn: a pool's summary line is in the DOM.
if ! grep -q 'textures: peak 9216 bytes, 0 live at the end' "$tmp/mem.dom"; then
  echo "FAIL mem: no memory section"; fail=1
fi

if [[ -n $shot ]]; then
  "$browser" "${flags[@]}" --user-data-dir="$tmp/profile-shot" --hide-scrollbars \
    --window-size=1240,2000 --virtual-time-budget=5000 --screenshot="$tmp/shot.png" \
    "file://$tmp/run.html" >/dev/null 2>&1 || true
  cp "$tmp/shot.png" "$shot"
  echo "screenshot: $shot"
fi
exit "$fail"
