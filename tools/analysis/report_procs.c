/*
 * report_procs.c - `katra report`'s section per process and its process
 * filter; report_procs.h says what is kept.  Names and command lines come
 * from the file: text_json_string() repairs them for JSON, text_escape()
 * for the terminal, and the page sets them as text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/report_procs.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/text.h"

#define WHY_PROCESSES 8 /* processes an error names before "..." */

/* Does @p (NULL: the file's own process, which has no entry) match @o? */
static int matches(const struct report_only *o, const struct tables *t, const struct tproc *p)
{
	if (o->by_pid)
		return (p ? p->pid : t->header_pid) == o->pid;
	size_t len = strlen(o->name);
	return p ? p->name_len == len && !memcmp(tables_process_name(t, p), o->name, len) : !len;
}

/* The processes @t has, for an error: "pid 100 (parent), ...". */
static void say_processes(const struct tables *t, char *why, size_t why_len)
{
	size_t at = 0;
	int n = snprintf(why, why_len, "its processes:");
	at = n > 0 && (size_t)n < why_len ? (size_t)n : 0;
	if (!t->nprocs)
		snprintf(why + at, why_len - at, " pid %" PRIu64 " (no process entry)",
			 t->header_pid);
	for (size_t i = 0; i < t->nprocs && at < why_len; i++) {
		const struct tproc *p = &t->procs[i];
		char *e = i < WHY_PROCESSES ? text_escape(tables_process_name(t, p), p->name_len) : NULL;
		n = i >= WHY_PROCESSES ? snprintf(why + at, why_len - at, ", ...")
				       : snprintf(why + at, why_len - at, "%s pid %" PRIu64 " (%s)",
						  i ? "," : "", p->pid, e ? e : "?");
		free(e);
		at += n > 0 ? (size_t)n : 0;
		if (i >= WHY_PROCESSES)
			break;
	}
}

/* The ids of @t's threads whose process matches into @p->threads.
 * Returns the processes matched, or -ENOMEM. */
static long keep_threads(struct report_procs *p, const struct tables *t)
{
	struct idmap procs;
	idmap_init(&procs);
	long matched = 0;
	int added;
	for (size_t i = 0; i < t->nprocs; i++)
		if (matches(&p->only, t, &t->procs[i])) {
			matched++;
			if (!idmap_slot(&procs, t->procs[i].id, 1, &added))
				matched = -ENOMEM;
		}
	if (!t->nprocs && matches(&p->only, t, NULL))
		matched = 1;
	for (size_t i = 0; matched > 0 && i < t->nthreads; i++)
		if ((!t->nprocs || idmap_find(&procs, t->threads[i].process)) &&
		    !idmap_slot(&p->threads, t->threads[i].id, 1, &added))
			matched = -ENOMEM;
	idmap_free(&procs);
	return matched;
}

void report_procs_init(struct report_procs *p)
{
	if (p->ready)
		return;
	idmap_init(&p->threads);
	idmap_init(&p->map);
	p->ready = 1;
}

int report_procs_select(kt_reader *r, const struct report_only *only, struct report_procs *p,
			char *why, size_t why_len)
{
	report_procs_init(p);
	p->only = *only;
	if (!only->by_pid && !only->name)
		return 0;
	struct tables t;
	int rc = tables_load(r, &t);
	kt_reader_rewind(r);
	long matched = rc < 0 ? rc : keep_threads(p, &t);
	if (matched == 0) {
		say_processes(&t, why, why_len);
		rc = -ENOENT;
	} else if (matched < 0) {
		rc = (int)matched;
	} else {
		/* Every process kept: the report is the whole file's. */
		p->filtered = (size_t)matched < (t.nprocs ? t.nprocs : 1);
		rc = 0;
	}
	tables_free(&t);
	return rc;
}

int report_procs_zone(struct report_procs *p, const struct tables *t, uint32_t thread,
		      uint32_t name, uint64_t dur, uint64_t self)
{
	if (!p->have_last || p->last_tid != thread) {
		p->last_tid = thread;
		p->last_proc = tables_thread_process(t, thread);
		p->have_last = 1;
	}
	int added;
	if (grow_array((void **)&p->zones, &p->cap, p->nzones + 1, sizeof(*p->zones)))
		return -ENOMEM;
	uint32_t *i = idmap_slot(&p->map, (uint64_t)p->last_proc << 32 | name,
				 (uint32_t)p->nzones, &added);
	if (!i)
		return -ENOMEM;
	if (added)
		p->zones[p->nzones++] = (struct report_pzone){ .proc = p->last_proc, .name = name };
	struct report_pzone *z = &p->zones[*i];
	z->total_ns += dur;
	z->self_ns += self;
	return hist_add(&z->h, dur);
}

/* @p's command line as an array of its arguments. */
static json_t *cmdline_json(const struct tables *t, const struct tproc *p)
{
	json_t *a = json_array();
	const char *s = tables_process_cmdline(t, p), *end = s + p->cmdline_len;
	while (a && p->cmdline_len && s <= end) {
		size_t n = strnlen(s, (size_t)(end - s));
		if (json_array_append_new(a, text_json_string(s, n)))
			return json_decref(a), NULL;
		s += n + 1;
	}
	return a;
}

/* The zones of process @id, in name id order. */
static json_t *zones_json(const struct report_procs *p, const struct tables *t, uint32_t id)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < p->nzones; i++) {
		const struct report_pzone *z = &p->zones[i];
		if (z->proc != id)
			continue;
		size_t len = 0;
		const char *s = z->name ? tables_name(t, z->name, &len) : NULL;
		json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name",
				      s ? text_json_string(s, len) : json_null(), "count", text_json_u64(z->h.n),
				      "total_ns", text_json_u64(z->total_ns), "self_ns", text_json_u64(z->self_ns),
				      "p50_ns", text_json_u64(hist_pct(&z->h, 0.5)), "p99_ns",
				      text_json_u64(hist_pct(&z->h, 0.99)), "max_ns", text_json_u64(z->h.max));
		if (json_array_append_new(a, o))
			return json_decref(a), NULL;
	}
	return a;
}

/* Process @pr's threads (stats' rows of them) into its object @o, with
 * their events and drops added up.  0 or -ENOMEM. */
static int threads_json(json_t *o, const struct tables *t, const struct tproc *pr,
			const json_t *stats)
{
	json_t *a = json_array(), *th;
	uint64_t events = 0, dropped = 0;
	size_t i;
	json_array_foreach(json_object_get(stats, "threads"), i, th) {
		json_int_t tid = json_integer_value(json_object_get(th, "tid"));
		if (tables_thread_process(t, (uint32_t)tid) != pr->id)
			continue;
		events += (uint64_t)json_integer_value(json_object_get(th, "events"));
		dropped += (uint64_t)json_integer_value(json_object_get(th, "dropped"));
		if (!a || json_array_append(a, th))
			return json_decref(a), -ENOMEM;
	}
	return json_object_set_new(o, "threads", a) || json_object_set_new(o, "events", text_json_u64(events)) ||
			       json_object_set_new(o, "dropped", text_json_u64(dropped))
		       ? -ENOMEM : 0;
}

static int by_proc_name(const void *x, const void *y)
{
	const struct report_pzone *a = x, *b = y;
	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name;
}

void report_procs_finish(struct report_procs *p)
{
	for (size_t i = 0; i < p->nzones; i++)
		hist_finish(&p->zones[i].h);
	if (p->nzones > 1)
		qsort(p->zones, p->nzones, sizeof(*p->zones), by_proc_name);
	/* The map's indices are stale now: no zone is added after the pass. */
	idmap_free(&p->map);
	idmap_init(&p->map);
	p->have_last = 0;
}

json_t *report_procs_json(const struct report_procs *p, const struct tables *t,
			  const json_t *stats)
{
	if (!tables_multiprocess(t))
		return json_null();
	json_t *all = json_array();
	for (size_t i = 0; all && i < t->nprocs; i++) {
		const struct tproc *pr = &t->procs[i];
		if ((p->only.by_pid || p->only.name) && !matches(&p->only, t, pr))
			continue;
		json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:b}", "id",
				      (json_int_t)pr->id, "pid", text_json_u64(pr->pid), "parent_pid",
				      text_json_u64(pr->parent_pid), "name",
				      text_json_string(tables_process_name(t, pr), pr->name_len),
				      "cmdline", cmdline_json(t, pr), "start_ns", text_json_u64(pr->start_ns),
				      "end_ns", text_json_u64(pr->end_ns), "complete",
				      !!(pr->flags & KT_PROCESS_COMPLETE), "recovered",
				      !!(pr->flags & KT_PROCESS_RECOVERED));
		if (!o || threads_json(o, t, pr, stats) ||
		    json_object_set_new(o, "zones", zones_json(p, t, pr->id)) ||
		    json_object_size(o) != 13 || json_array_append_new(all, o)) {
			json_decref(o);
			json_decref(all);
			return NULL;
		}
	}
	return all;
}

json_t *report_procs_filter_json(const struct report_procs *p)
{
	if (p->only.by_pid)
		return json_pack("{s:o}", "pid", text_json_u64(p->only.pid));
	if (p->only.name)
		return json_pack("{s:o}", "process",
				 text_json_string(p->only.name, strlen(p->only.name)));
	return json_null();
}

/* ---- the page's section -------------------------------------------------- */

/* Between the header and the frame times; hidden for a trace of one
 * process. */
const char report_procs_body[] =
	"<section id=\"procsec\" hidden><h2>Processes</h2><p id=\"procsum\" class=\"muted\"></p>"
	"<div id=\"procs\"></div></section>\n";

/* Before report_page.c's script, which calls processes() (it uses that
 * script's helpers: el, sortable, ns, at). */
const char report_procs_script[] =
	"// A merged trace's processes (report_procs.c): a section each, its\n"
	"// threads and its zones (a zone name two processes use is a row in each).\n"
	"function procTable(cols, rows, key) {\n"
	"  const t = el(\"table\"), head = el(\"thead\"), body = el(\"tbody\");\n"
	"  head.append(el(\"tr\"));\n"
	"  t.append(head, body);\n"
	"  sortable(t, cols, rows, { key: key, down: true }, (sorted) => {\n"
	"    for (const r of sorted) {\n"
	"      const tr = el(\"tr\");\n"
	"      cols.forEach(([, f, fmt]) => tr.append(el(\"td\", fmt ? fmt(f(r)) : f(r))));\n"
	"      body.append(tr);\n"
	"    }\n"
	"  });\n"
	"  return t;\n"
	"}\n"
	"function processes() {\n"
	"  const ps = D.processes, f = D.filter;\n"
	"  if (!ps) return;\n"
	"  $(\"procsec\").hidden = false;\n"
	"  $(\"procsum\").textContent = ps.length + (ps.length === 1 ? \" process\" : \" processes\") +\n"
	"    (f ? \" kept by the filter (\" + (f.pid !== undefined ? \"pid \" + f.pid : \"process \" + f.process) + \")\" : \"\") +\n"
	"    \"; times after the trace's first event.\";\n"
	"  const box = $(\"procs\");\n"
	"  for (const p of ps) {\n"
	"    box.append(el(\"h3\", p.name + \" (pid \" + p.pid + \")\", \"proc\"));\n"
	"    const dl = el(\"dl\");\n"
	"    const rows = [[\"process\", p.id], [\"pid\", p.pid], [\"parent pid\", p.parent_pid || \"-\"],\n"
	"      [\"command line\", p.cmdline.length ? p.cmdline.join(\" \") : \"-\"],\n"
	"      [\"started\", p.start_ns ? at(p.start_ns) : \"-\"], [\"ended\", p.end_ns ? at(p.end_ns) : \"-\"],\n"
	"      [\"events\", p.events], [\"dropped\", p.dropped],\n"
	"      [\"file\", (p.complete ? \"complete\" : \"no summary (the process died or was cut short)\") +\n"
	"        (p.recovered ? \", rebuilt from crash files\" : \"\")]];\n"
	"    for (const [k, v] of rows) { dl.append(el(\"dt\", k)); dl.append(el(\"dd\", v)); }\n"
	"    box.append(dl);\n"
	"    box.append(procTable([[\"thread\", (t) => t.name || \"thread \" + t.tid], [\"id\", (t) => t.tid],\n"
	"      [\"events\", (t) => t.events], [\"dropped\", (t) => t.dropped]], p.threads, 2));\n"
	"    if (p.zones.length)\n"
	"      box.append(procTable([[\"zone\", (z) => z.name === null ? \"?\" : z.name], [\"count\", (z) => z.count],\n"
	"        [\"total\", (z) => z.total_ns, ns], [\"self\", (z) => z.self_ns, ns], [\"p50\", (z) => z.p50_ns, ns],\n"
	"        [\"p99\", (z) => z.p99_ns, ns], [\"max\", (z) => z.max_ns, ns]], p.zones, 3));\n"
	"  }\n"
	"}\n";

void report_procs_free(struct report_procs *p)
{
	for (size_t i = 0; i < p->nzones; i++)
		hist_free(&p->zones[i].h);
	free(p->zones);
	idmap_free(&p->threads);
	idmap_free(&p->map);
	memset(p, 0, sizeof(*p));
}
