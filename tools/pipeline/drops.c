/*
 * drops.c - a trace's drop records; drops.h says what and why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/bsearch.h"
#include "tools/pipeline/drops.h"
#include "tools/pipeline/grow.h"

int drops_add(struct drops *d, const kt_trace_frame *f)
{
	if (d->n >= DROPS_MAX) {
		d->unkept++;
		return 0;
	}
	if (grow_array((void **)&d->d, &d->cap, d->n + 1, sizeof(*d->d)))
		return -ENOMEM;
	d->d[d->n++] = (struct xdrop){ f->u.drop.thread_id, f->u.drop.count, f->u.drop.first_ts,
				       f->u.drop.last_ts };
	return 0;
}

int drops_load(kt_reader *r, struct drops *d)
{
	kt_trace_frame f;
	int rc;
	memset(d, 0, sizeof(*d));
	kt_reader_rewind(r);
	kt_reader_skip_events(r, 1);
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_DROP)
			continue;
		if ((rc = drops_add(d, &f)) < 0)
			break;
	}
	kt_reader_skip_events(r, 0);
	kt_reader_rewind(r);
	return rc < 0 ? rc : 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int by_thread(const void *a, const void *b)
{
	const struct xdrop *x = a, *y = b;
	if (x->thread_id != y->thread_id)
		return x->thread_id < y->thread_id ? -1 : 1;
	return cmp_u64(x->first_ts, y->first_ts);
}

static int by_time(const void *a, const void *b)
{
	const struct xdrop *x = a, *y = b;
	if (x->first_ts != y->first_ts)
		return cmp_u64(x->first_ts, y->first_ts);
	return cmp_u64(x->thread_id, y->thread_id);
}

void drops_sort_thread(struct drops *d)
{
	if (d->n > 1)
		qsort(d->d, d->n, sizeof(*d->d), by_thread);
}

void drops_sort_time(struct drops *d)
{
	if (d->n > 1)
		qsort(d->d, d->n, sizeof(*d->d), by_time);
}

void drops_thread(const struct drops *d, uint32_t id, size_t *begin, size_t *end)
{
	size_t b = lower_bound_u32(d->d, d->n, sizeof(*d->d), id), e = b;
	while (e < d->n && d->d[e].thread_id == id)
		e++;
	*begin = b;
	*end = e;
}

void drops_free(struct drops *d)
{
	free(d->d);
	memset(d, 0, sizeof(*d));
}
