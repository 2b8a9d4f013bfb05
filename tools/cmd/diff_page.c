/*
 * diff_page.c - `katra diff --html`: the verdict table as one page in the
 * report's style (tools/analysis/report_page.h), its data the very object `katra
 * diff --json` prints.  The script builds every element with textContent,
 * so names and paths from the files stay text.
 *
 * long-file: the page's HTML, CSS and script are one string table.
 */
#include "tools/cmd/diff_out.h"
#include "tools/analysis/report_page.h"

static const char diff_css[] =
	".verdict{font-size:15px;margin:10px 0}.v-slower{color:#b00;font-weight:bold}.v-faster{color:#070;font-weight:bold}\n";

static const char diff_body[] =
	"<h1>katra diff</h1>\n"
	"<section><dl id=\"hdr\"></dl><p id=\"verdict\" class=\"verdict\"></p><ul id=\"warnings\" class=\"warn\" hidden></ul></section>\n"
	"<section><h2>Zones and frame time</h2><p class=\"muted\">B against A: each change is B / A - 1 with its interval; the verdict is the p50's (slower when its interval lies above 0 and its change above +threshold); the count's and the total's, per run, likewise; too few: fewer values on a side than the least count, never judged.  Self mean: the change of the zone's mean self time.  Click a column to sort.</p>\n"
	"<table id=\"diff\"><thead><tr></tr></thead><tbody></tbody></table></section>\n"
	"<section id=\"offsec\" hidden><h2>Off-CPU per zone</h2><p class=\"muted\">From the scheduler records every run of both sides has: per zone name, the zones whose time the records cover, the mean off-CPU time of such a zone (blocked and preempted), its change B / A - 1, and each side's off-CPU share of the zones' time.  Totals over each side's runs, not a sample: no interval and no verdict.</p>\n"
	"<table id=\"off\"><thead><tr></tr></thead><tbody></tbody></table></section>\n";

static const char diff_script[] =
	"const V = { \"slower\": \"slower\", \"faster\": \"faster\" };\n"
	"const pct = (v) => v === null || v === undefined ? \"-\" : (v >= 0 ? \"+\" : \"\") + (v * 100).toFixed(1) + \"%\";\n"
	"const change = (c) => pct(c.change) + (c.lo === null ? \"\" : \" [\" + pct(c.lo) + \", \" + pct(c.hi) + \"]\");\n"
	"const allRows = () => (D.frames ? [D.frames] : []).concat(D.zones);\n"
	"const dur = (v) => v === null || v === undefined ? \"-\" : ns(Math.round(v));\n"
	"\n"
	"function header() {\n"
	"  const dl = $(\"hdr\");\n"
	"  const rows = [[\"method\", D.method + \" of the median, p99 and mean: \" + D.resamples + \" resamples of up to \" +\n"
	"    D.sample + \" durations per name per run\"], [\"confidence\", (D.confidence * 100) + \"%\"],\n"
	"    [\"threshold\", (D.threshold * 100) + \"%\"], [\"least count\", String(D.min_count)]];\n"
	"  for (const r of D.runs) {\n"
	"    let v = r.file + (r.run_id !== undefined ? \" (run \" + r.run_id + \", epoch \" + r.epoch + \")\" : \"\");\n"
	"    if (r.dropped) v += \", \" + r.dropped + \" events dropped\";\n"
	"    if (r.truncated) v += \", truncated\";\n"
	"    rows.push([r.side === \"a\" ? \"A (baseline)\" : \"B (new)\", v]);\n"
	"  }\n"
	"  for (const [k, v] of rows) { dl.append(el(\"dt\", k)); dl.append(el(\"dd\", v)); }\n"
	"  const n = { slower: 0, faster: 0, \"no change\": 0, \"too few\": 0 };\n"
	"  for (const r of allRows()) if (r.verdict in n && r.a.count) n[r.verdict]++;\n"
	"  const p = $(\"verdict\");\n"
	"  p.append(el(\"span\", D.verdict, \"v-\" + (V[D.verdict] || \"same\")));\n"
	"  p.append(el(\"span\", \" (\" + n.slower + \" slower, \" + n.faster + \" faster, \" + n[\"no change\"] + \" no change, \" + n[\"too few\"] + \" too few; count: \" +\n"
	"    D.counts.more + \" more, \" + D.counts.fewer + \" fewer; total: \" + D.totals.more + \" more, \" + D.totals.less + \" less)\", \"muted\"));\n"
	"  const w = [], ul = $(\"warnings\");\n"
	"  for (const r of D.runs) {\n"
	"    if (r.dropped) w.push(r.file + \": \" + r.dropped + \" events were dropped: zones and frames may be missing.\");\n"
	"    if (r.truncated) w.push(r.file + \" is truncated: its valid prefix is compared.\");\n"
	"  }\n"
	"  if (D.left_out) w.push(D.left_out + \" zone names left out by --only and --exclude.\");\n"
	"  for (const m of w) ul.append(el(\"li\", m));\n"
	"  ul.hidden = w.length === 0;\n"
	"}\n"
	"\n"
	"function table() {\n"
	"  const cols = [[\"zone\", (r) => (r.name === undefined ? \"(frame time)\" : r.name === null ? \"?\" : r.name) +\n"
	"      (r.process === undefined ? \"\" : \" [\" + r.process + \"]\"), String],\n"
	"    [\"count A\", (r) => r.a.count, String], [\"count B\", (r) => r.b.count, String],\n"
	"    [\"count change\", (r) => r.count_change.change, (v, r) => change(r.count_change)],\n"
	"    [\"p50 A\", (r) => r.a.p50_ns, dur], [\"p50 B\", (r) => r.b.p50_ns, dur],\n"
	"    [\"p50 change [interval]\", (r) => r.p50.change, (v, r) => change(r.p50)],\n"
	"    [\"p99 change\", (r) => r.p99.change, (v, r) => change(r.p99)],\n"
	"    [\"mean change\", (r) => r.mean.change, (v, r) => change(r.mean)],\n"
	"    [\"total change\", (r) => r.total_change.change, (v, r) => change(r.total_change)],\n"
	"    [\"self mean\", (r) => r.name === undefined ? null : r.self_mean_change, (v) => pct(v)],\n"
	"    [\"verdict\", (r) => r.verdict, String], [\"count\", (r) => r.count_verdict, String],\n"
	"    [\"total\", (r) => r.total_verdict, String]];\n"
	"  const body = document.querySelector(\"#diff tbody\");\n"
	"  sortable($(\"diff\"), cols, allRows(), { key: -1, down: true }, (sorted) => {\n"
	"    for (const r of sorted) {\n"
	"      const tr = el(\"tr\");\n"
	"      const cut = r.verdict === \"only in A\" || r.verdict === \"only in B\" || !r.a.count;\n"
	"      cols.forEach(([, f, show], i) => {\n"
	"        if (cut && i > 2 && i < 11) { if (i === 3) { const td = el(\"td\", \"-\"); td.colSpan = 8; tr.append(td); } return; }\n"
	"        const td = el(\"td\", show(f(r), r));\n"
	"        if (i === 11) td.className = \"v-\" + (V[r.verdict] || \"same\");\n"
	"        tr.append(td);\n"
	"      });\n"
	"      body.append(tr);\n"
	"    }\n"
	"  });\n"
	"}\n"
	"\n"
	"// The off-CPU rows (diff_sched.h): null unless every run has scheduler records.\n"
	"function offcpu() {\n"
	"  if (!Array.isArray(D.offcpu) || D.offcpu.length === 0) return;\n"
	"  const share = (x) => x.off_cpu_share === null ? \"-\" : (x.off_cpu_share * 100).toFixed(1) + \"%\";\n"
	"  const cols = [[\"zone\", (r) => r.name === null ? \"?\" : r.name, String],\n"
	"    [\"zones A\", (r) => r.a.zones, String], [\"zones B\", (r) => r.b.zones, String],\n"
	"    [\"off mean A\", (r) => r.a.off_cpu_mean_ns, dur], [\"off mean B\", (r) => r.b.off_cpu_mean_ns, dur],\n"
	"    [\"change\", (r) => r.off_cpu_mean_change, (v) => pct(v)],\n"
	"    [\"blocked A\", (r) => r.a.blocked_ns, dur], [\"blocked B\", (r) => r.b.blocked_ns, dur],\n"
	"    [\"preempted A\", (r) => r.a.preempted_ns, dur], [\"preempted B\", (r) => r.b.preempted_ns, dur],\n"
	"    [\"share A\", (r) => r.a.off_cpu_share, (v, r) => share(r.a)], [\"share B\", (r) => r.b.off_cpu_share, (v, r) => share(r.b)]];\n"
	"  const body = document.querySelector(\"#off tbody\");\n"
	"  sortable($(\"off\"), cols, D.offcpu, { key: -1, down: true }, (sorted) => {\n"
	"    for (const r of sorted) {\n"
	"      const tr = el(\"tr\");\n"
	"      for (const [, f, show] of cols) tr.append(el(\"td\", show(f(r), r)));\n"
	"      body.append(tr);\n"
	"    }\n"
	"  });\n"
	"  $(\"offsec\").hidden = false;\n"
	"}\n"
	"\n"
	"header(); table(); offcpu();\n"
	"</script>\n"
	"</body></html>\n";

int diff_page(FILE *f, const json_t *data)
{
	static const struct page diff = { "katra diff", diff_css, diff_body, diff_script };
	return page_write(f, &diff, data);
}
