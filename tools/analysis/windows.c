/*
 * windows.c - each thread's window and its loss before it; windows.h
 * says what they are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/bsearch.h"
#include "tools/pipeline/text.h"
#include "tools/analysis/windows.h"

/* @id's row, added when new; NULL when out of memory.  Found through the
 * id map, never by a walk over the rows: a file's threads (up to the
 * reader's million) each add one, and each zone end with no begin looks
 * its thread up. */
static struct win_thread *row(struct windows *w, uint32_t id)
{
	if (!w->ids.mul)
		idmap_init(&w->ids);
	int added;
	uint32_t *at = idmap_slot(&w->ids, id, (uint32_t)w->n, &added);
	if (!at)
		return NULL;
	if (!added)
		return &w->t[*at];
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct win_thread *p = reallocarray(w->t, cap, sizeof(*p));
		if (!p) {
			idmap_free(&w->ids); /* holds an index with no row */
			return NULL;
		}
		w->t = p;
		w->cap = cap;
	}
	w->t[w->n] = (struct win_thread){ .id = id };
	return &w->t[w->n++];
}

int windows_unbegun(struct windows *w, uint32_t id, uint32_t name, uint64_t ns)
{
	struct win_thread *x = row(w, id);
	if (!x)
		return -ENOMEM;
	x->unbegun++;
	if (w->nopen < WIN_OPEN_MAX)
		w->open[w->nopen++] = (struct win_open){ id, name, ns };
	return 0;
}

/* The window of thread @id (every thread with an open zone has one), once
 * windows_finish() sorted the rows. */
static const struct win_thread *find(const struct windows *w, uint32_t id)
{
	size_t i = lower_bound_u32(w->t, w->n, sizeof(*w->t), id);
	return i < w->n && w->t[i].id == id ? &w->t[i] : NULL;
}

int windows_add(struct windows *w, uint32_t id, uint64_t first_ns, uint64_t last_ns)
{
	struct win_thread *x = row(w, id);
	if (!x)
		return -ENOMEM;
	x->first_ns = first_ns;
	x->last_ns = last_ns;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct win_thread *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

void windows_finish(struct windows *w, const struct drops *d, kt_reader *r)
{
	w->origin_ns = kt_reader_get_header(r)->clock.mono_ns;
	/* The map's indexes go stale: rows are only found by id from here. */
	idmap_free(&w->ids);
	if (w->n > 1)
		qsort(w->t, w->n, sizeof(*w->t), by_id);
	for (size_t i = 0; i < w->n; i++) {
		struct win_thread *x = &w->t[i];
		size_t k, end;
		drops_thread(d, x->id, &k, &end);
		for (; k < end; k++) {
			uint64_t a = kt_reader_get_time_ns(r, d->d[k].first_ts);
			uint64_t b = kt_reader_get_time_ns(r, d->d[k].last_ts);
			/* Only drops wholly before the window are its loss; one
			 * inside it is a hole, which stats' drop table says. */
			if (b >= x->first_ns)
				continue;
			x->lost_first_ns = x->lost ? x->lost_first_ns : a;
			x->lost_last_ns = b;
			x->lost += d->d[k].count;
			w->any = 1;
		}
	}
}

/* @ns since the session's start (0 for an instant before it). */
static uint64_t since(const struct windows *w, uint64_t ns)
{
	return ns > w->origin_ns ? ns - w->origin_ns : 0;
}

/* The zones open from their thread's window start, as a table. */
static int open_text(FILE *f, const struct windows *w, const struct tables *t)
{
	if (!w->nopen)
		return 0;
	fprintf(f, "\nzones open from their thread's window start (begun before it; the "
		   "first %u):\n%-8s %-24s %14s %14s\n", WIN_OPEN_MAX, "tid", "name", "end",
		"since start");
	for (size_t i = 0; i < w->nopen; i++) {
		const struct win_open *z = &w->open[i];
		const struct win_thread *x = find(w, z->tid);
		size_t n = 1;
		const char *name = tables_name(t, z->name, &n);
		char *e = text_escape(name ? name : "?", name ? n : 1);
		if (!e)
			return -ENOMEM;
		uint64_t from = x && x->first_ns < z->end_ns ? x->first_ns : z->end_ns;
		fprintf(f, "%-8u %-24s %14" PRIu64 " %14" PRIu64 "\n", z->tid, e,
			since(w, z->end_ns), z->end_ns - from);
		free(e);
	}
	return 0;
}

int windows_text(FILE *f, const struct windows *w, const struct tables *t)
{
	if (!w->any)
		return 0;
	fprintf(f, "\nthread windows: ns since the session's start; every event of a thread "
		   "from its start to its end is here, its lost ones were overwritten before\n"
		   "%-8s %-20s %14s %14s %14s %10s %14s %14s %8s\n",
		"tid", "thread", "start", "end", "window ns", "lost", "lost from", "lost to",
		"unbegun");
	for (size_t i = 0; i < w->n; i++) {
		const struct win_thread *x = &w->t[i];
		size_t n = 0;
		const char *name = tables_thread(t, x->id, &n);
		char *e = text_escape(name ? name : "", n);
		if (!e)
			return -ENOMEM;
		fprintf(f, "%-8u %-20s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %10" PRIu64
			   " %14" PRIu64 " %14" PRIu64 " %8" PRIu64 "\n",
			x->id, e, since(w, x->first_ns), since(w, x->last_ns),
			x->last_ns - x->first_ns, x->lost, x->lost ? since(w, x->lost_first_ns) : 0,
			x->lost ? since(w, x->lost_last_ns) : 0, x->unbegun);
		free(e);
	}
	return open_text(f, w, t);
}

static json_t *num(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Thread @x's zones open from its window start: [name, end, since start]. */
static json_t *open_json(const struct windows *w, const struct win_thread *x,
			 const struct tables *t)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < w->nopen; i++) {
		const struct win_open *z = &w->open[i];
		size_t n = 0;
		const char *name = z->tid == x->id ? tables_name(t, z->name, &n) : NULL;
		uint64_t from = x->first_ns < z->end_ns ? x->first_ns : z->end_ns;
		if (z->tid == x->id &&
		    json_array_append_new(a, json_pack("[o,o,o]", name ? text_json_string(name, n)
							       : json_null(),
						       num(since(w, z->end_ns)),
						       num(z->end_ns - from)))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *windows_json(const struct windows *w, const struct tables *t)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < w->n; i++) {
		const struct win_thread *x = &w->t[i];
		size_t n = 0;
		const char *name = tables_thread(t, x->id, &n);
		json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tid",
				      (json_int_t)x->id, "name", text_json_string(name ? name : "", n),
				      "start_ns", num(since(w, x->first_ns)), "end_ns",
				      num(since(w, x->last_ns)), "window_ns",
				      num(x->last_ns - x->first_ns), "lost", num(x->lost),
				      "lost_first_ns", num(x->lost ? since(w, x->lost_first_ns) : 0),
				      "lost_last_ns", num(x->lost ? since(w, x->lost_last_ns) : 0),
				      "unbegun", num(x->unbegun), "open_from_start",
				      open_json(w, x, t));
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

void windows_free(struct windows *w)
{
	idmap_free(&w->ids);
	free(w->t);
	memset(w, 0, sizeof(*w));
}
