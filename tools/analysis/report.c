/*
 * report.c - one pass over a trace for `katra report`; report.h says what
 * is kept and how it stays bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/grow.h"
#include "tools/analysis/report.h"
#include "tools/analysis/report_samples.h"
#include "tools/analysis/report_sched.h"

/* ---- time bins ----------------------------------------------------------- */

/* Two bins into one, doubling their width: counts add, a counter keeps its
 * later value, a pool its higher live bytes. */
static void bins_halve(struct report *rep)
{
	for (size_t s = 0; s < rep->nseries; s++) {
		struct report_series *x = &rep->series[s];
		for (size_t i = 0; i < REPORT_BINS / 2; i++) {
			size_t a = 2 * i, b = a + 1;
			if (x->counter == SERIES_THREAD)
				x->v[i] = x->v[a] + x->v[b];
			else if (x->counter == SERIES_POOL && x->set[a] && x->set[b])
				x->v[i] = x->v[a] > x->v[b] ? x->v[a] : x->v[b];
			else
				x->v[i] = x->set[b] ? x->v[b] : x->v[a];
			x->set[i] = x->set[a] | x->set[b];
		}
		memset(x->v + REPORT_BINS / 2, 0, sizeof(x->v) / 2);
		memset(x->set + REPORT_BINS / 2, 0, sizeof(x->set) / 2);
	}
	report_sched_halve(rep->sched);
	rep->shift++;
}

size_t report_bin_of(struct report *rep, uint64_t ns)
{
	if (!rep->have_origin) {
		rep->origin = ns;
		rep->shift = 10; /* ~1 us, doubled as the trace goes on */
		rep->have_origin = 1;
	}
	uint64_t d = ns > rep->origin ? ns - rep->origin : 0;
	while ((d >> rep->shift) >= REPORT_BINS)
		bins_halve(rep);
	return (size_t)(d >> rep->shift);
}

/* The series of @kind (SERIES_*) for @id; NULL past the caps.  *@err is
 * set when out of memory. */
static struct report_series *series_of(struct report *rep, uint32_t id, int counter, int *err)
{
	static const size_t caps[] = { REPORT_THREADS, REPORT_COUNTERS, REPORT_POOLS };
	for (size_t i = rep->nseries; i-- > 0;)
		if (rep->series[i].id == id && rep->series[i].counter == counter)
			return &rep->series[i];
	size_t *n = counter == SERIES_POOL ? &rep->npools
		    : counter == SERIES_COUNTER ? &rep->ncounters : &rep->nthreads;
	if (*n == caps[counter])
		return NULL;
	rep->have_last = 0; /* the array may move */
	struct report_series *p = realloc(rep->series, (rep->nseries + 1) * sizeof(*p));
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	rep->series = p;
	p = &rep->series[rep->nseries++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->counter = counter;
	++*n;
	return p;
}

static double counter_value(const kt_event *ev)
{
	kt_value v;
	kt_event_get_value(ev, &v);
	return v.kind == KT_VALUE_F64 ? v.f64 : v.kind == KT_VALUE_I64 ? (double)v.i64 : 0;
}

/* A series per thread and per counter name, looked up by a one-entry cache
 * first: events come in runs of one thread. */
static int timeline_event(struct report *rep, const kt_event *ev, uint64_t ns)
{
	size_t bin = report_bin_of(rep, ns);
	int err = 0;
	struct report_series *t = rep->have_last && rep->series[rep->last].id == ev->thread_id
		? &rep->series[rep->last] : series_of(rep, ev->thread_id, SERIES_THREAD, &err);
	if (t) {
		rep->last = (size_t)(t - rep->series);
		rep->have_last = 1;
	}
	if (t) {
		t->v[bin]++;
		t->set[bin] = 1;
	} else {
		rep->other_threads++;
	}
	if (!err && (ev->type == KT_EV_COUNTER_I64 || ev->type == KT_EV_COUNTER_F64)) {
		struct report_series *c = series_of(rep, ev->name_id, SERIES_COUNTER, &err);
		if (c) {
			c->v[bin] = counter_value(ev);
			c->set[bin] = 1;
		} else {
			rep->other_counters++;
		}
	}
	return err;
}

/* A pool's live bytes after an allocation or a free (stats' mem hook): the
 * bin keeps the highest. */
static int on_mem(void *ctx, uint32_t pool, uint64_t ns, uint64_t live)
{
	struct report *rep = ctx;
	size_t bin = report_bin_of(rep, ns);
	int err = 0;
	struct report_series *m = series_of(rep, pool, SERIES_POOL, &err);
	if (!m) {
		rep->other_pools += !err;
		return err;
	}
	if (!m->set[bin] || (double)live > m->v[bin])
		m->v[bin] = (double)live;
	m->set[bin] = 1;
	return 0;
}

/* ---- frames -------------------------------------------------------------- */

static void slowest_add(struct report *rep, const struct report_frame *f)
{
	size_t n = rep->nslowest;
	if (n == REPORT_SLOWEST && f->len <= rep->slowest[n - 1].len)
		return;
	size_t i = n < REPORT_SLOWEST ? n++ : n - 1;
	while (i > 0 && rep->slowest[i - 1].len < f->len) {
		rep->slowest[i] = rep->slowest[i - 1];
		i--;
	}
	rep->slowest[i] = *f;
	rep->nslowest = n;
}

/* Each point is the slowest of @stride frames in a row; when the points
 * are full, pairs merge and the stride doubles. */
static void points_add(struct report *rep, const struct report_frame *f)
{
	if (!rep->stride)
		rep->stride = 1;
	if (rep->pending) {
		struct report_frame *p = &rep->points[rep->npoints - 1];
		if (f->len > p->len)
			*p = *f;
	} else {
		if (rep->npoints == REPORT_POINTS) {
			for (size_t i = 0; i < REPORT_POINTS / 2; i++) {
				struct report_frame *a = &rep->points[2 * i], *b = a + 1;
				rep->points[i] = b->len > a->len ? *b : *a;
			}
			rep->npoints = REPORT_POINTS / 2;
			rep->stride *= 2;
		}
		rep->points[rep->npoints++] = *f;
	}
	if (++rep->pending >= rep->stride)
		rep->pending = 0;
}

static int on_frame(void *ctx, uint32_t thread, uint64_t ns, uint64_t interval)
{
	struct report_frame f = { ns, interval, thread };
	slowest_add(ctx, &f);
	points_add(ctx, &f);
	return 0;
}

static int on_zone(void *ctx, uint32_t thread, uint32_t name, uint64_t begin, uint64_t dur,
		   uint64_t self)
{
	struct report *rep = ctx;
	(void)begin;
	return report_procs_zone(&rep->procs, stats_tables(rep->stats), thread, name, dur, self);
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns)
{
	struct report *rep = ctx;
	int rc = collapse_event(rep->flame, ev, ns);
	if (!rc)
		rc = report_sched_event(rep, ev, ns);
	return rc ? rc : timeline_event(rep, ev, ns);
}

int report_collect(kt_reader *r, struct report *rep)
{
	rep->flame = collapse_new(&rep->flame_res);
	rep->sched = report_sched_new(kt_reader_get_header(r));
	if (!rep->flame || !rep->sched)
		return -ENOMEM;
	report_procs_init(&rep->procs);
	struct stats_hooks hooks = { .event = on_event, .frame = on_frame, .mem = on_mem,
				     .zone = on_zone, .ctx = rep, .payloads = 1,
				     .threads = rep->procs.filtered ? &rep->procs.threads : NULL };
	int rc = stats_collect(r, &hooks, &rep->stats);
	collapse_end(rep->flame);
	report_procs_finish(&rep->procs);
	rc = rc ? rc : report_sched_finish(rep);
	return rc ? rc : report_samples_collect(r, rep);
}

void report_free(struct report *rep)
{
	stats_free(rep->stats);
	collapse_free(rep->flame);
	free(rep->series);
	report_procs_free(&rep->procs);
	report_sched_free(rep->sched);
	report_samples_free(rep->samples);
	memset(rep, 0, sizeof(*rep));
}
