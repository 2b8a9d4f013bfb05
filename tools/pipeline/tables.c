/*
 * tables.c - names and thread names by id; tables.h says how.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/bsearch.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/tables.h"

static int add(struct tables *t, struct tentry **arr, size_t *n, size_t *cap, uint32_t id,
	       uint32_t os_tid, const char *s, uint32_t len)
{
	if (grow_array((void **)arr, cap, *n + 1, sizeof(**arr)) ||
	    grow_array((void **)&t->arena, &t->arena_cap, t->arena_len + len + 1, 1))
		return -ENOMEM;
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = 0;
	(*arr)[(*n)++] = (struct tentry){ id, os_tid, len, t->arena_len };
	t->arena_len += (size_t)len + 1;
	return 0;
}

/* A location: its two strings go into the arena back to back. */
static int add_loc(struct tables *t, const kt_srcloc *l)
{
	size_t n = (size_t)l->file_len + l->function_len + 2;
	if (grow_array((void **)&t->locs, &t->locs_cap, t->nlocs + 1, sizeof(*t->locs)) ||
	    grow_array((void **)&t->arena, &t->arena_cap, t->arena_len + n, 1))
		return -ENOMEM;
	char *d = t->arena + t->arena_len;
	memcpy(d, l->file, l->file_len + 1);
	memcpy(d + l->file_len + 1, l->function, l->function_len + 1);
	t->locs[t->nlocs++] = (struct tloc){ l->id, l->line, l->category, l->file_len,
					     l->function_len, t->arena_len };
	t->arena_len += n;
	return 0;
}

/* A track: the first entry of an id wins, as for names. */
static int add_track(struct tables *t, const kt_track_def *d)
{
	if (d->id > KT_MAX_TRACKS || t->tracks[d->id].id)
		return 0;
	kt_track_pair *p = NULL;
	if (d->pair_count && !(p = malloc(d->pair_count * sizeof(*p))))
		return -ENOMEM;
	if (p)
		memcpy(p, d->pairs, d->pair_count * sizeof(*p));
	t->tracks[d->id] = *d;
	t->tracks[d->id].pairs = p;
	return 0;
}

int tables_track_ticks(const struct tables *t, const kt_event *ev, kt_track_event *te,
		       uint64_t *ticks)
{
	if (!kt_event_get_track(ev, te))
		return 1;
	const kt_track_def *d = tables_track(t, te->track);
	return d ? kt_track_to_ticks(d, t->tick_hz, te->track_ts, ticks) : -ENOENT;
}

int tables_add(struct tables *t, const kt_trace_frame *f)
{
	switch (f->kind) {
	case KT_FRAME_TRACK:
		return add_track(t, &f->u.track);
	case KT_FRAME_SRCLOC:
		return add_loc(t, &f->u.srcloc);
	case KT_FRAME_NAME:
		return add(t, &t->names, &t->nnames, &t->names_cap, f->u.name.id, 0, f->u.name.str,
			   f->u.name.len);
	case KT_FRAME_THREAD:
		return add(t, &t->threads, &t->nthreads, &t->threads_cap, f->u.thread.thread_id,
			   f->u.thread.os_tid, f->u.thread.name, f->u.thread.name_len);
	case KT_FRAME_SUMMARY:
		t->summary = f->u.summary;
		t->summary.threads = NULL;
		t->have_summary = 1;
		return 0;
	default:
		return 0;
	}
}

/* By id, then by file order (arena offsets grow with it): qsort is not
 * stable, and the first definition must win. */
static int by_id(const void *a, const void *b)
{
	const struct tentry *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int loc_by_id(const void *a, const void *b)
{
	const struct tloc *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static size_t sort_unique(struct tentry *e, size_t n)
{
	if (n < 2)
		return n;
	qsort(e, n, sizeof(*e), by_id);
	size_t k = 1;
	for (size_t i = 1; i < n; i++)
		if (e[i].id != e[k - 1].id)
			e[k++] = e[i];
	return k;
}

void tables_finish(struct tables *t)
{
	t->nnames = sort_unique(t->names, t->nnames);
	t->nthreads = sort_unique(t->threads, t->nthreads);
	if (t->nlocs > 1) {
		qsort(t->locs, t->nlocs, sizeof(*t->locs), loc_by_id);
		size_t k = 1;
		for (size_t i = 1; i < t->nlocs; i++)
			if (t->locs[i].id != t->locs[k - 1].id)
				t->locs[k++] = t->locs[i];
		t->nlocs = k;
	}
}

int tables_load(kt_reader *r, struct tables *t)
{
	kt_trace_frame f;
	int rc;
	memset(t, 0, sizeof(*t));
	t->tick_hz = kt_reader_get_header(r)->clock.tick_hz;
	/* Only the other frames matter here: the events pass that follows
	 * decodes (and checks) every chunk anyway. */
	kt_reader_skip_events(r, 1);
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		if ((rc = tables_add(t, &f)) < 0)
			break;
	kt_reader_skip_events(r, 0);
	tables_finish(t);
	return rc;
}

static const struct tentry *find(const struct tentry *e, size_t n, uint32_t id)
{
	size_t i = lower_bound_u32(e, n, sizeof(*e), id);
	return i < n && e[i].id == id ? &e[i] : NULL;
}

const char *tables_name(const struct tables *t, uint32_t id, size_t *len)
{
	const struct tentry *e = find(t->names, t->nnames, id);
	if (e && len)
		*len = e->len;
	return e ? tables_str(t, e) : NULL;
}

const char *tables_thread(const struct tables *t, uint32_t id, size_t *len)
{
	const struct tentry *e = find(t->threads, t->nthreads, id);
	if (e && len)
		*len = e->len;
	return e ? tables_str(t, e) : NULL;
}

const struct tloc *tables_loc(const struct tables *t, uint32_t id)
{
	size_t i = lower_bound_u32(t->locs, t->nlocs, sizeof(*t->locs), id);
	return i < t->nlocs && t->locs[i].id == id ? &t->locs[i] : NULL;
}

void tables_free(struct tables *t)
{
	free(t->locs);
	free(t->names);
	free(t->threads);
	free(t->arena);
	for (uint32_t i = 0; i <= KT_MAX_TRACKS; i++)
		free((void *)t->tracks[i].pairs);
	memset(t, 0, sizeof(*t));
}
