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
	       uint32_t os_tid, const char *s, uint32_t len, uint32_t process)
{
	if (grow_array((void **)arr, cap, *n + 1, sizeof(**arr)) ||
	    grow_array((void **)&t->arena, &t->arena_cap, t->arena_len + len + 1, 1))
		return -ENOMEM;
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = 0;
	(*arr)[(*n)++] = (struct tentry){ id, os_tid, len, process, t->arena_len };
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

/* A process: name and command line into the arena back to back; past
 * KT_MAX_PROCESSES entries only counted. */
static int add_proc(struct tables *t, const kt_process_def *p)
{
	size_t n = (size_t)p->name_len + p->cmdline_len + 2;
	if (t->nprocs >= KT_MAX_PROCESSES) {
		t->procs_left_out++;
		return 0;
	}
	if (grow_array((void **)&t->procs, &t->procs_cap, t->nprocs + 1, sizeof(*t->procs)) ||
	    grow_array((void **)&t->arena, &t->arena_cap, t->arena_len + n, 1))
		return -ENOMEM;
	char *d = t->arena + t->arena_len;
	memcpy(d, p->name, p->name_len + 1);
	memcpy(d + p->name_len + 1, p->cmdline, p->cmdline_len + 1);
	t->procs[t->nprocs++] = (struct tproc){ p->id, p->flags, p->pid, p->parent_pid,
						p->start_ns, p->end_ns, p->name_len,
						p->cmdline_len, t->arena_len };
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
	case KT_FRAME_STACK:
		t->stacks++;
		return 0;
	case KT_FRAME_TRACK:
		return add_track(t, &f->u.track);
	case KT_FRAME_SRCLOC:
		return add_loc(t, &f->u.srcloc);
	case KT_FRAME_NAME:
		return add(t, &t->names, &t->nnames, &t->names_cap, f->u.name.id, 0, f->u.name.str,
			   f->u.name.len, 0);
	case KT_FRAME_THREAD:
		return add(t, &t->threads, &t->nthreads, &t->threads_cap, f->u.thread.thread_id,
			   f->u.thread.os_tid, f->u.thread.name, f->u.thread.name_len,
			   f->u.thread.process);
	case KT_FRAME_PROCESS:
		return add_proc(t, &f->u.process);
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

static int proc_by_id(const void *a, const void *b)
{
	const struct tproc *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

void tables_finish(struct tables *t)
{
	if (t->nprocs > 1) {
		qsort(t->procs, t->nprocs, sizeof(*t->procs), proc_by_id);
		size_t k = 1;
		for (size_t i = 1; i < t->nprocs; i++)
			if (t->procs[i].id != t->procs[k - 1].id)
				t->procs[k++] = t->procs[i];
		t->nprocs = k;
	}
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
	t->header_pid = kt_reader_get_header(r)->process_id;
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

const struct tproc *tables_process(const struct tables *t, uint32_t id)
{
	size_t i = lower_bound_u32(t->procs, t->nprocs, sizeof(*t->procs), id);
	return i < t->nprocs && t->procs[i].id == id ? &t->procs[i] : NULL;
}

uint32_t tables_thread_process(const struct tables *t, uint32_t tid)
{
	const struct tentry *e = find(t->threads, t->nthreads, tid);
	return e ? e->process : 0;
}

uint64_t tables_process_pid(const struct tables *t, uint32_t id)
{
	const struct tproc *p = tables_process(t, id);
	return p ? p->pid : id == 0 ? t->header_pid : 0;
}

void tables_free(struct tables *t)
{
	free(t->procs);
	free(t->locs);
	free(t->names);
	free(t->threads);
	free(t->arena);
	for (uint32_t i = 0; i <= KT_MAX_TRACKS; i++)
		free((void *)t->tracks[i].pairs);
	memset(t, 0, sizeof(*t));
}
