/*
 * report_json.c - the data of `katra report`'s page as one JSON object:
 * the header, the stats, the frames, the flame tree and the time bins.
 * Strings from the file go through text_json_string() (tools/pipeline/text.h);
 * the page escapes the rest (report_page.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/report.h"
#include "tools/analysis/report_samples.h"
#include "tools/analysis/report_sched.h"
#include "tools/pipeline/text.h"

static json_t *u64(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *str(const char *s)
{
	return text_json_string(s ? s : "", s ? strlen(s) : 0);
}

static json_t *header_json(const kt_header *h, json_t *sidecar)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "workload", str(h->workload),
			 "host", str(h->host), "run_id", str(h->run_id), "epoch", u64(h->epoch),
			 "capture_id", str(h->capture_id), "tool_version", str(h->tool_version),
			 "process_id", u64(h->process_id), "start_wall_ns", u64(h->start_wall_ns),
			 "sidecar", sidecar ? json_incref(sidecar) : json_null());
}

static json_t *frame_json(const struct report_frame *f)
{
	return json_pack("[o,o,I]", u64(f->ns), u64(f->len), (json_int_t)f->thread);
}

static json_t *frames_json(const struct report *rep)
{
	json_t *pts = json_array(), *slow = json_array();
	for (size_t i = 0; pts && i < rep->npoints; i++)
		if (json_array_append_new(pts, frame_json(&rep->points[i])))
			return json_decref(pts), json_decref(slow), NULL;
	for (size_t i = 0; slow && i < rep->nslowest; i++)
		if (json_array_append_new(slow, frame_json(&rep->slowest[i])))
			return json_decref(pts), json_decref(slow), NULL;
	return json_pack("{s:o,s:o,s:o}", "stride", u64(rep->stride ? rep->stride : 1), "points",
			 pts, "slowest", slow);
}

/* ---- the flame tree ------------------------------------------------------ */

struct weight {
	uint64_t incl;
	uint32_t i;
};

/* Heaviest first; a parent (lower index) before a child of equal weight. */
static int by_weight(const void *x, const void *y)
{
	const struct weight *a = x, *b = y;
	if (a->incl != b->incl)
		return a->incl > b->incl ? -1 : 1;
	return a->i < b->i ? -1 : 1;
}

/* Keep the roots and the heaviest stacks (a parent is never lighter than
 * its child, so kept nodes form trees); a folded node's weight goes to
 * its nearest kept ancestor.  0 or -ENOMEM. */
static int report_flame_fold(struct fnode *n, size_t count)
{
	for (size_t i = count; i-- > 0;) {
		n[i].incl += n[i].self;
		if (n[i].parent != COLLAPSE_ROOT)
			n[n[i].parent].incl += n[i].incl;
	}
	struct weight *order = malloc((count ? count : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	size_t roots = 0;
	for (size_t i = 0; i < count; i++) {
		order[i] = (struct weight){ n[i].incl, (uint32_t)i };
		roots += n[i].parent == COLLAPSE_ROOT;
	}
	qsort(order, count, sizeof(*order), by_weight);
	size_t budget = REPORT_FLAME_NODES > roots ? REPORT_FLAME_NODES - roots : 0;
	for (size_t k = 0; k < count; k++) {
		struct fnode *x = &n[order[k].i];
		int keep = x->parent == COLLAPSE_ROOT || (budget && x->incl > 0);
		budget -= keep && x->parent != COLLAPSE_ROOT;
		x->out = keep ? 0 : COLLAPSE_ROOT;
	}
	free(order);
	for (size_t i = count; i-- > 0;)
		if (n[i].out == COLLAPSE_ROOT)
			n[n[i].parent].self += n[i].self;
	return 0;
}

static json_t *node_name(const struct tables *t, const struct fnode *x)
{
	size_t len = 0;
	const char *s = x->parent == COLLAPSE_ROOT ? tables_thread(t, x->name, &len)
		      : x->name ? tables_name(t, x->name, &len) : NULL;
	if (x->parent == COLLAPSE_ROOT && (!s || !len)) {
		char buf[32];
		snprintf(buf, sizeof(buf), "thread %u", x->name);
		return json_string(buf);
	}
	return s ? text_json_string(s, len) : json_string("?");
}

json_t *report_flame_rows(struct fnode *n, size_t count,
			  json_t *(*row)(void *ctx, size_t i, json_int_t parent), void *ctx)
{
	json_t *a = json_array();
	if (!a || report_flame_fold(n, count))
		return json_decref(a), NULL;
	uint32_t out = 0;
	for (size_t i = 0; i < count; i++) {
		if (n[i].out == COLLAPSE_ROOT)
			continue;
		json_int_t p = n[i].parent == COLLAPSE_ROOT ? -1 : (json_int_t)n[n[i].parent].out;
		if (json_array_append_new(a, row(ctx, i, p)))
			return json_decref(a), NULL;
		n[i].out = out++;
	}
	return a;
}

struct zone_rows {
	const struct tables *t;
	const struct fnode *n;
};

/* [parent row or -1, name, self ns, thread id or null] */
static json_t *zone_row(void *ctx, size_t i, json_int_t parent)
{
	const struct zone_rows *z = ctx;
	const struct fnode *x = &z->n[i];
	return json_pack("[I,o,o,o]", parent, node_name(z->t, x), u64(x->self),
			 parent < 0 ? json_integer(x->name) : json_null());
}

static json_t *flame_json(const struct report *rep)
{
	size_t count = collapse_nodes(rep->flame);
	struct fnode *n = calloc(count ? count : 1, sizeof(*n));
	if (!n)
		return NULL;
	for (size_t i = 0; i < count; i++)
		collapse_node(rep->flame, i, &n[i].parent, &n[i].name, &n[i].self);
	struct zone_rows z = { stats_tables(rep->stats), n };
	json_t *a = report_flame_rows(n, count, zone_row, &z);
	free(n);
	return a;
}

/* ---- time bins ----------------------------------------------------------- */

static json_t *series_json(const struct report *rep, const struct report_series *x, size_t bins)
{
	const struct tables *t = stats_tables(rep->stats);
	size_t len = 0;
	const char *s = x->counter == SERIES_THREAD ? tables_thread(t, x->id, &len)
			: x->counter == SERIES_POOL && !x->id ? "default"
							     : tables_name(t, x->id, &len);
	if (x->counter == SERIES_POOL && !x->id)
		len = strlen(s);
	json_t *v = json_array();
	for (size_t i = 0; v && i < bins; i++)
		if (json_array_append_new(v, x->set[i] ? json_real(x->v[i]) : json_null()))
			return json_decref(v), NULL;
	return json_pack("{s:I,s:o,s:o}", "id", (json_int_t)x->id, "name",
			 s ? text_json_string(s, len) : json_string(""), "v", v);
}

static json_t *timeline_json(const struct report *rep)
{
	size_t bins = 0;
	for (size_t s = 0; s < rep->nseries; s++)
		for (size_t i = 0; i < REPORT_BINS; i++)
			if (rep->series[s].set[i] && i + 1 > bins)
				bins = i + 1;
	json_t *kind[3] = { json_array(), json_array(), json_array() };
	for (size_t s = 0; kind[0] && kind[1] && kind[2] && s < rep->nseries; s++)
		if (json_array_append_new(kind[rep->series[s].counter],
					  series_json(rep, &rep->series[s], bins))) {
			for (int k = 0; k < 3; k++)
				json_decref(kind[k]);
			return NULL;
		}
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "origin_ns", u64(rep->origin),
			 "width_ns", u64(UINT64_C(1) << rep->shift), "threads", kind[SERIES_THREAD],
			 "counters", kind[SERIES_COUNTER], "memory", kind[SERIES_POOL],
			 "other_thread_events", u64(rep->other_threads), "other_counter_events",
			 u64(rep->other_counters), "other_memory_events", u64(rep->other_pools),
			 "sched", report_sched_json(rep, bins));
}

json_t *report_json(const struct report *rep, const kt_header *h, json_t *sidecar,
		    const char *label)
{
	const struct collapse_result *c = &rep->flame_res;
	json_t *caps = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "points", REPORT_POINTS,
				 "slowest", REPORT_SLOWEST, "bins", REPORT_BINS, "threads",
				 REPORT_THREADS, "counters", REPORT_COUNTERS, "pools", REPORT_POOLS,
				 "flame_nodes", REPORT_FLAME_NODES);
	json_t *fl = json_pack("{s:o,s:o,s:o,s:o}", "folded", u64(c->folded), "untimed",
			       u64(c->untimed), "unended", u64(c->unended), "unbegun",
			       u64(c->unbegun));
	json_t *st = stats_json(rep->stats, label);
	json_t *procs = st ? report_procs_json(&rep->procs, stats_tables(rep->stats), st) : NULL;
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "header",
			 header_json(h, sidecar), "stats", st, "processes", procs, "filter",
			 report_procs_filter_json(&rep->procs), "frames", frames_json(rep), "flame",
			 flame_json(rep), "flame_left_out", fl, "timeline", timeline_json(rep),
			 "samples", report_samples_json(rep), "caps", caps);
}
