/*
 * report_page.c - the page of `katra report`: one HTML file with its CSS
 * and script inline and the data in a <script type="application/json">
 * block, so it opens from disk with nothing fetched (its
 * Content-Security-Policy forbids any request).  The script builds every
 * element with textContent, never markup, so strings from the trace stay
 * text.  The data's '<', '>' and '&' are written as \u003c, \u003e and
 * \u0026 (JSON escapes, valid in strings, the only place they occur), so
 * no string can close the script element.
 *
 * The CSP, the CSS and the data's escaping are shared with `katra diff
 * --html`'s page (tools/analysis/report_page.h).
 *
 * long-file: the page's HTML, CSS and script are one string table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/report.h"
#include "tools/analysis/report_page.h"
#include "tools/analysis/report_procs.h"
#include "tools/analysis/report_samples.h"
#include "tools/pipeline/text.h"

/* Before the title: every request forbidden but inline style and script. */
static const char page_top[] =
	"<!doctype html>\n"
	"<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";

/* The pages' shared look. */
static const char page_css[] =
	"body{font:13px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:12px 20px;color:#222;background:#fafafa}\n"
	"h1{font-size:20px;margin:4px 0 8px}h2{font-size:16px;margin:22px 0 6px;border-bottom:1px solid #ddd}\n"
	"dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dt{color:#666}dd{margin:0;font-family:monospace}\n"
	".warn{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin:8px 0;list-style:none}\n"
	".warn li{margin:2px 0}canvas{background:#fff;border:1px solid #ddd;width:100%;display:block}\n"
	"table{border-collapse:collapse;width:100%;font-family:monospace;font-size:12px}\n"
	"th{cursor:pointer;text-align:right;background:#eee;padding:3px 6px;user-select:none}th:first-child,td:first-child{text-align:left}\n"
	"td{text-align:right;padding:2px 6px;border-bottom:1px solid #eee}tr:hover td{background:#f0f6ff}\n"
	"#slowest button{font:12px monospace;margin:2px 4px 2px 0;cursor:pointer}\n"
	"#flame,#smflame{position:relative;background:#fff;border:1px solid #ddd;overflow:hidden}\n"
	"#flame div,#smflame div{position:absolute;height:17px;font:11px/17px monospace;overflow:hidden;white-space:nowrap;\n"
	" box-sizing:border-box;border:1px solid #fff;padding-left:3px;cursor:pointer;color:#222}\n"
	".muted{color:#777}.row{display:flex;gap:8px;align-items:center;margin:4px 0}\n";

static const char report_body_head[] =
	"<h1>katra report</h1>\n"
	"<section><dl id=\"hdr\"></dl><ul id=\"warnings\" class=\"warn\" hidden></ul></section>\n";

static const char report_body[] =
	"<section><h2>Frame times</h2><p id=\"frsum\" class=\"muted\"></p>\n"
	"<canvas id=\"frames\" width=\"1160\" height=\"260\"></canvas><p id=\"frinfo\" class=\"muted\"></p><div id=\"slowest\"></div></section>\n"
	"<section><h2>Zones</h2><p class=\"muted\">Click a column to sort.  Self: the zone's time less the zones that ended inside it.</p>\n"
	"<table id=\"zones\"><thead><tr></tr></thead><tbody></tbody></table></section>\n"
	"<section><h2>Flame graph of self time</h2>\n"
	"<div class=\"row\"><select id=\"flthread\"></select><button id=\"flreset\">reset zoom</button><span id=\"flinfo\" class=\"muted\"></span></div>\n"
	"<div id=\"flame\"></div></section>\n";

/* After the sampled stacks' section (report_samples.c). */
static const char report_body_tail[] =
	"<section><h2>Threads over time</h2><p id=\"tlsum\" class=\"muted\"></p><canvas id=\"activity\" width=\"1160\" height=\"60\"></canvas></section>\n"
	"<section id=\"schedsec\" hidden><h2>Thread states over time</h2><p id=\"schedsum\" class=\"muted\"></p><canvas id=\"states\" width=\"1160\" height=\"60\"></canvas></section>\n"
	"<section><h2>Counters over time</h2><div id=\"counters\"></div></section>\n"
	"<section id=\"memsec\" hidden><h2>Memory per pool over time</h2><div id=\"memory\"></div></section>\n";

/* The data's element is between a page's body and this. */
static const char page_script[] =
	"</script>\n"
	"<script>\n"
	"\"use strict\";\n"
	"const D = JSON.parse(document.getElementById(\"data\").textContent);\n"
	"const $ = (id) => document.getElementById(id);\n"
	"function el(tag, text, cls) {\n"
	"  const e = document.createElement(tag);\n"
	"  if (text !== undefined) e.textContent = String(text);\n"
	"  if (cls) e.className = cls;\n"
	"  return e;\n"
	"}\n"
	"function ns(v) {\n"
	"  if (v === null || v === undefined) return \"-\";\n"
	"  if (v >= 1e9) return (v / 1e9).toFixed(3) + \" s\";\n"
	"  if (v >= 1e6) return (v / 1e6).toFixed(3) + \" ms\";\n"
	"  if (v >= 1e3) return (v / 1e3).toFixed(2) + \" us\";\n"
	"  return v + \" ns\";\n"
	"}\n"
	"// A table whose header sorts it: cols [[name, key of a row], ...]; s.key\n"
	"// the column sorted on (-1: none yet), s.down its order; fill(rows) writes the body.\n"
	"function sortable(table, cols, rows, s, fill) {\n"
	"  const head = table.querySelector(\"thead tr\");\n"
	"  function render() {\n"
	"    const k = s.key, by = k < 0 ? rows : rows.slice().sort((a, b) => {\n"
	"      const x = cols[k][1](a), y = cols[k][1](b);\n"
	"      return (x < y ? -1 : x > y ? 1 : 0) * (s.down ? -1 : 1);\n"
	"    });\n"
	"    table.querySelector(\"tbody\").replaceChildren();\n"
	"    fill(by);\n"
	"  }\n"
	"  cols.forEach(([name], i) => {\n"
	"    const th = el(\"th\", name);\n"
	"    th.addEventListener(\"click\", () => { s.down = s.key === i ? !s.down : i !== 0; s.key = i; render(); });\n"
	"    head.append(th);\n"
	"  });\n"
	"  render();\n"
	"}\n";

static const char report_script[] =
	"const T0 = D.timeline.origin_ns;\n"
	"function at(t) { return ns(Math.max(0, t - T0)); }\n"
	"\n"
	"function header() {\n"
	"  const h = D.header, s = D.stats, sc = h.sidecar, dl = $(\"hdr\"), w = [];\n"
	"  let span = 0;\n"
	"  for (const t of s.threads) span = Math.max(span, t.span_ns);\n"
	"  const rows = [[\"workload\", h.workload], [\"host\", h.host],\n"
	"    [\"run\", h.run_id ? h.run_id + \", epoch \" + h.epoch + \", capture \" + h.capture_id : \"-\"],\n"
	"    [\"file\", s.file], [\"started\", new Date(h.start_wall_ns / 1e6).toISOString()],\n"
	"    [\"events\", s.events], [\"dropped\", s.dropped], [\"truncated\", s.truncated ? \"yes\" : \"no\"]];\n"
	"  if (sc) {\n"
	"    rows.push([\"window\", (sc.boundary_start || \"?\") + \" .. \" + (sc.boundary_finish || \"?\")]);\n"
	"    rows.push([\"head loss\", ns(sc.head_loss_ns)]);\n"
	"    rows.push([\"capture state\", (sc.state || \"?\") + (sc.complete ? \", complete\" : \", incomplete\")]);\n"
	"    if (sc.head_loss_ns > 0) w.push(\"The capture lacks the first \" + ns(sc.head_loss_ns) + \" of the run (head loss).\");\n"
	"  } else {\n"
	"    rows.push([\"window\", ns(span) + \" (no capture sidecar)\"]);\n"
	"  }\n"
	"  for (const [k, v] of rows) { dl.append(el(\"dt\", k)); dl.append(el(\"dd\", v)); }\n"
	"  if (s.dropped > 0) w.push(s.dropped + \" events were dropped: zones and frames may be missing.\");\n"
	"  if (s.truncated) w.push(\"The trace is truncated (no summary): what follows is its valid prefix.\");\n"
	"  if (s.zones_not_timed) w.push(s.zones_not_timed + \" zones were not timed (too many open at once).\");\n"
	"  if (s.ts_backwards) w.push(s.ts_backwards + \" events are earlier than the event before them on their thread.\");\n"
	"  for (const x of s.windows || []) w.push(\"Thread \" + x.name + \" (\" + x.tid + \") has its own window: \" + ns(x.window_ns) + \" from \" + ns(x.start_ns) + \" to \" + ns(x.end_ns) + \" after the start\" + (x.lost ? \", \" + x.lost + \" older events overwritten\" : \", nothing lost\") + (x.unbegun ? \", \" + x.unbegun + \" zones begun before it\" : \"\") + \".\");\n"
	"  const fl = D.flame_left_out;\n"
	"  if (fl.unended) w.push(fl.unended + \" zones never ended and are left out of the flame graph.\");\n"
	"  if (fl.folded) w.push(fl.folded + \" zones past the flame graph's depth or stack caps folded into their parents.\");\n"
	"  const tl = D.timeline;\n"
	"  if (tl.other_thread_events || tl.other_counter_events || tl.other_memory_events) w.push(\"Threads, counters or memory pools past the page's caps are left out of the time series.\");\n"
	"  const ul = $(\"warnings\");\n"
	"  for (const m of w) ul.append(el(\"li\", m));\n"
	"  ul.hidden = w.length === 0;\n"
	"}\n"
	"\n"
	"function frames() {\n"
	"  const fr = D.stats.frames, pts = D.frames.points, slow = D.frames.slowest;\n"
	"  const c = $(\"frames\"), g = c.getContext(\"2d\"), W = c.width, H = c.height;\n"
	"  $(\"frsum\").textContent = fr.count ? fr.count + \" frames: p50 \" + ns(fr.p50_ns) + \", p99 \" + ns(fr.p99_ns) +\n"
	"    \", slowest \" + ns(fr.max_ns) + (D.frames.stride > 1 ? \"; each point is the slowest of \" + D.frames.stride + \" frames in a row\" : \"\") +\n"
	"    \"; log scale\" : \"No frame marks in this trace.\";\n"
	"  if (!pts.length) return;\n"
	"  const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1);\n"
	"  const lo = Math.log(Math.max(1, Math.min(...pts.map((p) => p[1])))), hi = Math.log(Math.max(2, fr.max_ns)) + 0.1;\n"
	"  const X = (t) => 40 + (W - 50) * (t - t0) / (t1 - t0);\n"
	"  const Y = (v) => H - 10 - (H - 20) * (Math.log(Math.max(1, v)) - lo) / Math.max(hi - lo, 1e-9);\n"
	"  function draw(mark) {\n"
	"    g.clearRect(0, 0, W, H);\n"
	"    g.fillStyle = \"#4a7ab8\";\n"
	"    for (const p of pts) g.fillRect(X(p[0]) - 1, Y(p[1]) - 1, 2, 2);\n"
	"    for (const [v, col, name] of [[fr.p50_ns, \"#2a2\", \"p50\"], [fr.p99_ns, \"#d80\", \"p99\"]]) {\n"
	"      g.strokeStyle = col; g.beginPath(); g.moveTo(40, Y(v)); g.lineTo(W - 10, Y(v)); g.stroke();\n"
	"      g.fillStyle = col; g.fillText(name + \" \" + ns(v), 2, Y(v) - 2);\n"
	"    }\n"
	"    g.strokeStyle = \"#c22\";\n"
	"    for (const s of slow) { g.beginPath(); g.arc(X(s[0]), Y(s[1]), 4, 0, 7); g.stroke(); }\n"
	"    if (mark) { g.strokeStyle = \"#000\"; g.beginPath(); g.moveTo(X(mark[0]), 0); g.lineTo(X(mark[0]), H); g.stroke(); }\n"
	"  }\n"
	"  draw(null);\n"
	"  const show = (s) => { draw(s); $(\"frinfo\").textContent = \"frame ending at \" + at(s[0]) + \" on thread \" + s[2] + \": \" + ns(s[1]); };\n"
	"  const box = $(\"slowest\");\n"
	"  box.append(el(\"span\", \"Slowest frames: \", \"muted\"));\n"
	"  slow.forEach((s, i) => {\n"
	"    const b = el(\"button\", \"#\" + (i + 1) + \" \" + ns(s[1]) + \" at \" + at(s[0]));\n"
	"    b.addEventListener(\"click\", () => show(s));\n"
	"    box.append(b);\n"
	"  });\n"
	"  c.addEventListener(\"click\", (e) => {\n"
	"    const r = c.getBoundingClientRect(), x = (e.clientX - r.left) * W / r.width;\n"
	"    let best = pts[0];\n"
	"    for (const p of pts) if (Math.abs(X(p[0]) - x) < Math.abs(X(best[0]) - x)) best = p;\n"
	"    show(best);\n"
	"  });\n"
	"}\n"
	"\n"
	"// The zone column of a row: a name two processes of a merged trace have\n"
	"// says whose in each row.\n"
	"function zoneLabels(rows) {\n"
	"  const procs = new Map(), pid = new Map((D.stats.processes || []).map((q) => [q.process, q.pid]));\n"
	"  for (const m of rows) procs.set(m.name, (procs.get(m.name) || new Set()).add(m.process));\n"
	"  return (n) => (n.name === null ? \"?\" : n.name) + (n.process !== undefined && procs.get(n.name).size > 1 ? \" (pid \" + pid.get(n.process) + \")\" : \"\");\n"
	"}\n"
	"\n"
	"function zones() {\n"
	"  const cols = [[\"zone\", zoneLabels(D.stats.names)], [\"count\", (n) => n.zone.count],\n"
	"    [\"total\", (n) => n.zone.total_ns], [\"self\", (n) => n.zone.self_ns], [\"p50\", (n) => n.zone.p50_ns],\n"
	"    [\"p99\", (n) => n.zone.p99_ns], [\"max\", (n) => n.zone.max_ns]];\n"
	"  const rows = D.stats.names.filter((n) => n.zone), body = document.querySelector(\"#zones tbody\");\n"
	"  sortable($(\"zones\"), cols, rows, { key: 3, down: true }, (sorted) => {\n"
	"    for (const n of sorted) {\n"
	"      const tr = el(\"tr\");\n"
	"      cols.forEach(([, f], i) => tr.append(el(\"td\", i === 0 ? f(n) : i === 1 ? f(n) : ns(f(n)))));\n"
	"      body.append(tr);\n"
	"    }\n"
	"  });\n"
	"}\n"
	"\n"
	"// The trees of rows [[parent index or -1, name, self, ...], ...] (a parent\n"
	"// first): their roots, each node {name, self, total, kids, row}.\n"
	"function flameTree(rows) {\n"
	"  const nodes = rows.map((row) => ({ p: row[0], name: row[1], self: row[2], row, kids: [], total: 0 }));\n"
	"  const roots = [];\n"
	"  nodes.forEach((n) => (n.p < 0 ? roots : nodes[n.p].kids).push(n));\n"
	"  const sum = (n) => (n.total = n.self + n.kids.reduce((a, k) => a + sum(k), 0));\n"
	"  roots.forEach(sum);\n"
	"  return roots;\n"
	"}\n"
	"\n"
	"// A zoomable flame graph of @roots: ids [select, box, reset button, info];\n"
	"// the select shows @all (their children merged by name) or one root;\n"
	"// fmt(v) writes a weight.\n"
	"function flameView(ids, roots, all, fmt) {\n"
	"  const [sel, box, reset, info] = ids.map($);\n"
	"  function merge(into, from) {\n"
	"    for (const k of from.kids) {\n"
	"      let m = into.kids.find((x) => x.name === k.name);\n"
	"      if (!m) { m = { name: k.name, self: 0, total: 0, kids: [] }; into.kids.push(m); }\n"
	"      m.self += k.self; m.total += k.total; merge(m, k);\n"
	"    }\n"
	"  }\n"
	"  const merged = { name: all, self: 0, total: 0, kids: [] };\n"
	"  for (const r of roots) { merged.total += r.total; merge(merged, r); }\n"
	"  sel.append(new Option(all + \" (merged)\", \"-1\"));\n"
	"  roots.forEach((r, i) => sel.append(new Option(r.name + \" (\" + fmt(r.total) + \")\", String(i))));\n"
	"  let top = merged;\n"
	"  const color = (s) => { let h = 0; for (const ch of s) h = (h * 31 + ch.charCodeAt(0)) >>> 0; return \"hsl(\" + (20 + h % 40) + \",75%,\" + (62 + h % 15) + \"%)\"; };\n"
	"  function render() {\n"
	"    box.replaceChildren();\n"
	"    const W = box.clientWidth || 1000;\n"
	"    let depth = 0;\n"
	"    function put(n, x, w, d) {\n"
	"      if (w < 0.5) return;\n"
	"      depth = Math.max(depth, d);\n"
	"      const e = el(\"div\", n.name);\n"
	"      e.style.left = x + \"px\"; e.style.width = w + \"px\"; e.style.top = d * 18 + \"px\";\n"
	"      e.style.background = color(n.name);\n"
	"      e.title = n.name + \": \" + fmt(n.total) + \" total, \" + fmt(n.self) + \" self\";\n"
	"      e.addEventListener(\"click\", () => { top = n; render(); });\n"
	"      box.append(e);\n"
	"      let cx = x;\n"
	"      for (const k of n.kids.slice().sort((a, b) => b.total - a.total)) { const kw = w * k.total / Math.max(n.total, 1); put(k, cx, kw, d + 1); cx += kw; }\n"
	"    }\n"
	"    put(top, 0, W, 0);\n"
	"    box.style.height = (depth + 1) * 18 + 4 + \"px\";\n"
	"    info.textContent = top.name + \": \" + fmt(top.total);\n"
	"  }\n"
	"  sel.addEventListener(\"change\", () => { top = sel.value === \"-1\" ? merged : roots[+sel.value]; render(); });\n"
	"  reset.addEventListener(\"click\", () => { sel.dispatchEvent(new Event(\"change\")); });\n"
	"  render();\n"
	"}\n"
	"\n"
	"function flame() {\n"
	"  flameView([\"flthread\", \"flame\", \"flreset\", \"flinfo\"], flameTree(D.flame), \"all threads\", ns);\n"
	"}\n"
	"\n"
	"function timeline() {\n"
	"  const tl = D.timeline, th = tl.threads, c = $(\"activity\");\n"
	"  $(\"tlsum\").textContent = \"Events per \" + ns(tl.width_ns) + \" bin, one row per thread (darker: more).\";\n"
	"  const rowH = 18, W = c.width;\n"
	"  c.height = Math.max(1, th.length) * rowH + 4;\n"
	"  const g = c.getContext(\"2d\");\n"
	"  th.forEach((t, r) => {\n"
	"    const max = Math.max(1, ...t.v.map((x) => x || 0)), n = Math.max(1, t.v.length), bw = (W - 120) / n;\n"
	"    g.fillStyle = \"#222\"; g.fillText((t.name || \"thread \" + t.id).slice(0, 18), 2, r * rowH + 13);\n"
	"    t.v.forEach((v, i) => { if (v) { g.fillStyle = \"rgba(40,90,170,\" + (0.15 + 0.85 * v / max) + \")\"; g.fillRect(120 + i * bw, r * rowH + 2, Math.max(bw, 1), rowH - 4); } });\n"
	"  });\n"
	"  const box = $(\"counters\");\n"
	"  if (!tl.counters.length) box.append(el(\"p\", \"No counters in this trace.\", \"muted\"));\n"
	"  lines(box, tl.counters, \"counter \");\n"
	"  memory();\n"
	"}\n"
	"\n"
	"function lines(box, list, what) {\n"
	"  for (const k of list) {\n"
	"    box.append(el(\"div\", k.name || what + k.id));\n"
	"    const cv = el(\"canvas\"); cv.width = 1160; cv.height = 60; box.append(cv);\n"
	"    const vals = k.v.filter((x) => x !== null), lo = Math.min(...vals), hi = Math.max(...vals);\n"
	"    const cg = cv.getContext(\"2d\"), n = Math.max(1, k.v.length);\n"
	"    cg.strokeStyle = \"#4a7ab8\"; cg.beginPath();\n"
	"    let first = true;\n"
	"    k.v.forEach((v, i) => {\n"
	"      if (v === null) return;\n"
	"      const x = 1160 * i / n, y = 55 - 50 * (v - lo) / Math.max(hi - lo, 1e-9);\n"
	"      if (first) cg.moveTo(x, y); else cg.lineTo(x, y);\n"
	"      first = false;\n"
	"    });\n"
	"    cg.stroke(); cg.fillText(lo + \" .. \" + hi, 4, 10);\n"
	"  }\n"
	"}\n"
	"\n"
	"function memory() {\n"
	"  const pools = D.stats.memory || [], sec = $(\"memsec\");\n"
	"  if (!pools.length) return;\n"
	"  sec.hidden = false;\n"
	"  const box = $(\"memory\");\n"
	"  for (const p of pools)\n"
	"    box.append(el(\"p\", (p.id ? p.name || \"pool \" + p.id : \"default\") + \": peak \" + p.peak_live + \" bytes, \" +\n"
	"      p.live_at_end + \" live at the end, \" + p.allocs + \" allocations, \" + p.frees + \" frees (\" + p.unknown_frees + \" unknown)\"));\n"
	"  box.append(el(\"p\", \"Live bytes, the highest in each bin:\", \"muted\"));\n"
	"  lines(box, D.timeline.memory, \"pool \");\n"
	"}\n"
	"\n"
	"// Each followed thread's lane (D.timeline.sched, report_sched.h): the\n"
	"// share of each bin it ran, blocked, was preempted or waited, stacked,\n"
	"// on the bins of the rows above.\n"
	"function states() {\n"
	"  const s = D.timeline.sched, sec = $(\"schedsec\");\n"
	"  if (!s) return;\n"
	"  sec.hidden = false;\n"
	"  if (!s.present) {\n"
	"    $(\"schedsum\").textContent = \"Scheduler data absent\" + (s.why ? \" (\" + s.why + \")\" : \"\") + \": no thread states, which is not zero off-CPU time.\";\n"
	"    $(\"states\").hidden = true;\n"
	"    return;\n"
	"  }\n"
	"  const col = { running: \"#3a9a4a\", blocked: \"#c8463c\", preempted: \"#e89a2c\", waiting: \"#999\" };\n"
	"  const w = D.timeline.width_ns, c = $(\"states\"), rowH = 18, W = c.width, th = s.threads;\n"
	"  $(\"schedsum\").textContent = \"Per \" + ns(w) + \" bin, the share each followed thread spent running (green), blocked (red), preempted (orange) or off the CPU for a reason unknown (grey), on the bins of the rows above.\";\n"
	"  c.height = Math.max(1, th.length) * rowH + 4;\n"
	"  const g = c.getContext(\"2d\");\n"
	"  th.forEach((t, r) => {\n"
	"    const n = Math.max(1, t.running.length), bw = (W - 120) / n;\n"
	"    g.fillStyle = \"#222\"; g.fillText((t.name || \"thread \" + t.id).slice(0, 18), 2, r * rowH + 13);\n"
	"    for (let i = 0; i < n; i++) {\n"
	"      let y = r * rowH + 2;\n"
	"      for (const k of [\"running\", \"blocked\", \"preempted\", \"waiting\"]) {\n"
	"        const h = (rowH - 4) * Math.min(1, (t[k][i] || 0) / w);\n"
	"        if (h > 0) { g.fillStyle = col[k]; g.fillRect(120 + i * bw, y, Math.max(bw, 1), h); y += h; }\n"
	"      }\n"
	"    }\n"
	"  });\n"
	"}\n"
	"\n"
	"header(); processes(); frames(); zones(); flame(); samples(); timeline(); states();\n"
	"</script>\n"
	"</body></html>\n";

/* @s with '<', '>' and '&' as JSON escapes.  0, or -1 when a write failed. */
static int put_json_safe(FILE *f, const char *s)
{
	for (const char *p; (p = strpbrk(s, "<>&")); s = p + 1) {
		if (fwrite(s, 1, (size_t)(p - s), f) != (size_t)(p - s) ||
		    fputs(*p == '<' ? "\\u003c" : *p == '>' ? "\\u003e" : "\\u0026", f) < 0)
			return -1;
	}
	return fputs(s, f) < 0 ? -1 : 0;
}

int page_write(FILE *f, const struct page *p, const json_t *data)
{
	/* Compact, to stay small; ASCII, so no byte of it can be misread
	 * whatever the browser guesses. */
	char *s = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	if (!s)
		return -ENOMEM;
	int bad = fputs(page_top, f) < 0 || fprintf(f, "<title>%s</title>\n<style>\n", p->title) < 0 ||
		  fputs(page_css, f) < 0 || fputs(p->css ? p->css : "", f) < 0 ||
		  fputs("</style></head><body>\n", f) < 0 || fputs(p->body, f) < 0 ||
		  fputs("<script type=\"application/json\" id=\"data\">", f) < 0 ||
		  put_json_safe(f, s) || fputs(page_script, f) < 0 || fputs(p->script, f) < 0;
	free(s);
	return bad || ferror(f) ? -EIO : 0;
}

/* The @n strings @part end to end, malloc'd; NULL when out of memory. */
static char *joined(const char *const *part, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(part[i]);
	char *s = malloc(len), *at = s;
	for (size_t i = 0; s && i < n; i++) {
		size_t k = strlen(part[i]);
		memcpy(at, part[i], k);
		at += k;
	}
	if (s)
		*at = 0;
	return s;
}

int report_page(FILE *f, const json_t *data)
{
	/* The processes' section (report_procs.c) after the header's, the
	 * sampled stacks' (report_samples.c) after the flame graph. */
	static const char *const body[] = { report_body_head, report_procs_body, report_body,
					    report_samples_body, report_body_tail };
	static const char *const script[] = { report_procs_script, report_samples_script,
					      report_script };
	char *b = joined(body, sizeof(body) / sizeof(body[0]));
	char *sc = joined(script, sizeof(script) / sizeof(script[0]));
	struct page report = { "katra report", NULL, b, sc };
	int rc = b && sc ? page_write(f, &report, data) : -ENOMEM;
	free(b);
	free(sc);
	return rc;
}
