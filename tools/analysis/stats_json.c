/*
 * stats_json.c - `katra stats --json`: the object stats_json() makes of
 * stats.c's pass (stats.h says what is counted).
 */
#include <string.h>

#include "tools/analysis/stats.h"
#include "tools/analysis/stats_impl.h"
#include "tools/pipeline/text.h"

/* A count or ns as a JSON integer, which is an int64: values past
 * INT64_MAX (ns near 2^64 from a crafted clock) saturate, never wrap to
 * negative numbers. */
static json_t *json_u64(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *json_thread(const struct sthread *th, const struct tables *t)
{
	size_t n = 0;
	const char *name = tables_thread(t, th->id, &n);
	double span = (double)(th->last_ns - th->first_ns) / 1e9;
	json_t *j = json_object();
	json_object_set_new(j, "tid", json_integer(th->id));
	json_object_set_new(j, "name", text_json_string(name ? name : "", n));
	json_object_set_new(j, "events", json_u64(th->events));
	json_object_set_new(j, "dropped", json_u64(th->dropped));
	json_object_set_new(j, "span_ns", json_u64(th->last_ns - th->first_ns));
	json_object_set_new(j, "events_per_s",
			    json_real(span > 0 ? (double)th->events / span : 0));
	json_object_set_new(j, "zones_ns", json_u64(th->zones_ns));
	/* Only with drop records: an ordinary file's keys stay as they were. */
	if (th->drop_windows) {
		json_object_set_new(j, "drop_windows", json_u64(th->drop_windows));
		json_object_set_new(j, "drop_ns", json_u64(th->drop_ns));
		json_object_set_new(j, "drop_span_ns", json_u64(th->drop_to_ns > th->drop_from_ns
								? th->drop_to_ns - th->drop_from_ns
								: 0));
	}
	return j;
}

/* Whether @h's percentiles are exact, and the bound of their error. */
static void json_pct_exact(json_t *o, const struct hist *h)
{
	json_object_set_new(o, "pct_exact", json_boolean(hist_exact(h)));
	json_object_set_new(o, "pct_max_error", json_real(hist_exact(h) ? 0 : HIST_ERROR));
}

static json_t *json_name(const struct sname *nm, const struct tables *t)
{
	size_t n = 0;
	const char *name = nm->id ? tables_name(t, nm->id, &n) : NULL;
	json_t *j = json_object();
	json_object_set_new(j, "id", json_integer(nm->id));
	json_object_set_new(j, "name", name ? text_json_string(name, n) : json_null());
	json_object_set_new(j, "count", json_u64(nm->count));
	/* A merged trace's: whose name it is ("processes"' "process"). */
	if (tables_multiprocess(t))
		json_object_set_new(j, "process", json_integer(nm->proc));
	if (nm->zone.n) {
		const struct hist *h = &nm->zone;
		json_t *z = json_object();
		json_object_set_new(z, "count", json_u64(h->n));
		json_object_set_new(z, "min_ns", json_u64(h->min));
		json_object_set_new(z, "p50_ns", json_u64(hist_pct(h, 0.5)));
		json_object_set_new(z, "p99_ns", json_u64(hist_pct(h, 0.99)));
		json_object_set_new(z, "max_ns", json_u64(h->max));
		json_object_set_new(z, "total_ns", json_u64(nm->total_ns));
		json_object_set_new(z, "self_ns", json_u64(nm->self_ns));
		json_pct_exact(z, h);
		json_object_set_new(j, "zone", z);
	}
	if (nm->frames)
		json_object_set_new(j, "frame_marks", json_u64(nm->frames));
	if (nm->across)
		json_object_set_new(j, "open_across_drops", json_u64(nm->across));
	const struct tloc *l = tables_loc(t, nm->id);
	if (l) {
		json_t *o = json_object();
		json_object_set_new(o, "file", text_json_string(tloc_file(t, l), l->file_len));
		json_object_set_new(o, "line", json_integer(l->line));
		json_object_set_new(o, "function",
				    text_json_string(tloc_function(t, l), l->function_len));
		/* Incomplete (out of memory): left out, which fails the
		 * name's key count. */
		if (o && json_object_size(o) == 3)
			json_object_set_new(j, "location", o);
		else
			json_decref(o);
	}
	return j;
}

/* A key whose value could not be made (out of memory) is missing: the
 * document is refused as a whole rather than printed without it. */
static int json_complete(json_t *o, size_t keys)
{
	return o && json_object_size(o) == keys;
}

json_t *stats_json(const struct stats *c, const char *label)
{
	json_t *o = json_object(), *ths = json_array(), *names = json_array(), *fr = json_object();
	int ok = o && ths && names && fr;
	json_object_set_new(o, "file", text_json_string(label, strlen(label)));
	json_object_set_new(o, "events", json_u64(c->events));
	json_object_set_new(o, "dropped", json_u64(c->dropped));
	json_object_set_new(o, "truncated", json_boolean(c->truncated));
	if (ok && tables_multiprocess(&c->t)) {
		json_t *procs = stats_json_processes(c);
		ok = procs && !json_object_set_new(o, "processes", procs);
	}
	for (size_t i = 0; i < c->th.n && ok; i++) {
		json_t *j = json_thread(thread_at(c, (long)i), &c->t);
		ok = json_complete(j, 7 + 3 * !!thread_at(c, (long)i)->drop_windows) &&
		     !json_array_append_new(ths, j);
	}
	for (size_t i = 0; i < c->names.n && ok; i++) {
		struct sname *nm = name_at(c, (long)i);
		json_t *j = json_name(nm, &c->t);
		size_t keys = 3 + !!tables_multiprocess(&c->t) + !!nm->zone.n + !!tables_loc(&c->t, nm->id) + !!nm->across +
			      !!nm->frames;
		ok = json_complete(j, keys) && !json_array_append_new(names, j);
	}
	json_object_set_new(fr, "count", json_u64(c->frames.n));
	json_object_set_new(fr, "p50_ns", json_u64(hist_pct(&c->frames, 0.5)));
	json_object_set_new(fr, "p99_ns", json_u64(hist_pct(&c->frames, 0.99)));
	json_object_set_new(fr, "max_ns", json_u64(c->frames.max));
	json_object_set_new(fr, "total_ns", json_u64(c->frames_ns));
	json_pct_exact(fr, &c->frames);
	json_object_set_new(o, "threads", ths);
	json_object_set_new(o, "names", names);
	json_object_set_new(o, "frames", fr);
	/* Only when there are any: the keys of an ordinary file stay as they were. */
	if (c->untimed)
		json_object_set_new(o, "zones_not_timed", json_u64(c->untimed));
	if (c->backwards) {
		json_object_set_new(o, "ts_backwards", json_u64(c->backwards));
		json_object_set_new(o, "negative_durations", json_u64(c->negative));
	}
	if (c->mem.n)
		json_object_set_new(o, "memory", memstats_json(&c->mem, &c->t));
	size_t nt = trackstats_ntracks(&c->t);
	if (nt)
		json_object_set_new(o, "tracks", trackstats_json(&c->tracks, &c->t));
	if (c->win.any)
		json_object_set_new(o, "windows", windows_json(&c->win, &c->t));
	/* Only when the file was asked for scheduler records: absent or not. */
	if (c->sched.asked)
		json_object_set_new(o, "sched", schedstats_json(&c->sched, &c->t));
	int vk = valstats_json(o, &c->vals, &c->t);
	size_t keys = 7 + !!c->untimed + 2 * !!c->backwards + !!c->mem.n + !!nt + !!c->win.any +
		      !!c->sched.asked + (size_t)vk + !!tables_multiprocess(&c->t);
	if (ok && vk >= 0 && json_complete(o, keys) && json_complete(fr, 7))
		return o;
	json_decref(o);
	return NULL;
}
