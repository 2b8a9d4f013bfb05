/*
 * Merged reading: every thread's events in one timestamp order, and replay.
 *
 * A first pass indexes the chunks (offset, thread, first timestamp); no
 * event is held.  The merge then keeps one cursor per thread over that
 * thread's chunks in file order, and a heap of cursors keyed by (next
 * timestamp, thread id).  A thread's events already come in order, so ties
 * fall to the thread id and then to the order within the thread.  A cursor
 * holds at most one decoded chunk, and only while it has events left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <katra/reader.h>
#include "format/format.h"
#include "format/reader_internal.h"

struct chunk_ref {
	uint64_t offset;
	uint64_t first_ts;
};

struct cursor {
	uint32_t thread_id;
	struct chunk_ref *chunks;   /* this thread's chunks, in file order */
	size_t nchunks, cap, next;  /* next chunk to load */
	uint8_t *events;            /* the loaded chunk, decoded */
	size_t events_cap;
	kt_chunk_iter it;
	kt_event ev;                /* the event at the front */
	int loaded;
};

struct kt__merge {
	struct cursor *cursors;     /* sorted by thread_id while indexing */
	size_t ncursors, cap;
	size_t *heap;               /* indexes into cursors */
	size_t nheap;
	int error;                  /* from the index pass: reported at the end */
	int started;
	uint8_t *deferred;          /* a finished thread's buffer: the event
				     * returned last still points into it */
	kt_file_summary stop;       /* the summary's stop calibration, if any */
	int have_stop;
	struct kt__conv conv;       /* ticks to ns, set once the index is built */
	uint64_t lim_ts;            /* set_limit() */
	uint32_t lim_tid;
	int lim_valid;
};

static int key_less(const struct kt__merge *m, size_t a, size_t b)
{
	const struct cursor *x = &m->cursors[a], *y = &m->cursors[b];
	uint64_t tx = x->loaded ? x->ev.ts : x->chunks[x->next].first_ts;
	uint64_t ty = y->loaded ? y->ev.ts : y->chunks[y->next].first_ts;
	if (tx != ty)
		return tx < ty;
	return x->thread_id < y->thread_id;
}

static void sift_down(struct kt__merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		if (l < m->nheap && key_less(m, m->heap[l], m->heap[min]))
			min = l;
		if (r < m->nheap && key_less(m, m->heap[r], m->heap[min]))
			min = r;
		if (min == i)
			return;
		size_t t = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = t;
		i = min;
	}
}

struct kt__merge *kt__merge_new(void)
{
	return calloc(1, sizeof(struct kt__merge));
}

void kt__merge_free(struct kt__merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ncursors; i++) {
		free(m->cursors[i].chunks);
		free(m->cursors[i].events);
	}
	free(m->cursors);
	free(m->heap);
	free(m->deferred);
	free(m);
}

static struct cursor *cursor_of(struct kt__merge *m, uint32_t tid)
{
	return kt__idtab_get((void **)&m->cursors, &m->ncursors, &m->cap, sizeof(struct cursor),
			     tid, KT_MAX_SUMMARY_THREADS);
}

/* Pass 1: where every chunk is.  Stops at the end or at corruption, whose
 * error is kept for after the events before it. */
static int build_index(kt_reader *r, struct kt__merge *m)
{
	kt_trace_frame f;
	int rc;
	kt__reader_restart(r);
	kt__reader_set_headers_only(r, 1);
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_SUMMARY) {
			m->stop = f.u.summary;
			m->stop.threads = NULL; /* the rows die with the frame */
			m->have_stop = 1;
		}
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		struct cursor *c = cursor_of(m, f.u.chunk.thread_id);
		if (!c) {
			kt__reader_set_headers_only(r, 0);
			return -ENOMEM;
		}
		if (c->nchunks == c->cap) {
			size_t n = c->cap ? c->cap * 2 : 8;
			void *p = realloc(c->chunks, n * sizeof(*c->chunks));
			if (!p) {
				kt__reader_set_headers_only(r, 0);
				return -ENOMEM;
			}
			c->chunks = p;
			c->cap = n;
		}
		c->chunks[c->nchunks++] = (struct chunk_ref){ f.offset, f.u.chunk.first_ts };
	}
	kt__reader_set_headers_only(r, 0);
	m->error = rc;
	kt__conv_init(&m->conv, &kt_reader_header(r)->clock, m->have_stop ? &m->stop : NULL);
	m->heap = malloc((m->ncursors ? m->ncursors : 1) * sizeof(*m->heap));
	if (!m->heap)
		return -ENOMEM;
	for (size_t i = 0; i < m->ncursors; i++)
		m->heap[m->nheap++] = i;
	for (size_t i = m->nheap / 2; i-- > 0;)
		sift_down(m, i);
	return 0;
}

/* Decode the cursor's next chunk and keep it, without a copy. */
static int load(kt_reader *r, struct cursor *c)
{
	kt_trace_frame f;
	int rc = kt__reader_frame_at(r, c->chunks[c->next].offset, &f);
	if (rc < 0)
		return rc;
	if (f.kind != KT_FRAME_CHUNK || f.u.chunk.thread_id != c->thread_id)
		return KT_EFRAME; /* the file changed under us */
	f.u.chunk.events = kt__reader_steal_events(r, &f, &c->events, &c->events_cap);
	kt_chunk_iter_init(&c->it, &f);
	c->next++;
	c->loaded = kt_chunk_next(&c->it, &c->ev);
	return 0;
}

/* The smallest key among the heap top's children: the top cursor may emit
 * every event below it without touching the heap. */
static void set_limit(struct kt__merge *m)
{
	m->lim_valid = 0;
	for (size_t k = 1; k <= 2 && k < m->nheap; k++) {
		const struct cursor *x = &m->cursors[m->heap[k]];
		uint64_t ts = x->loaded ? x->ev.ts : x->chunks[x->next].first_ts;
		if (!m->lim_valid || ts < m->lim_ts || (ts == m->lim_ts && x->thread_id < m->lim_tid)) {
			m->lim_ts = ts;
			m->lim_tid = x->thread_id;
			m->lim_valid = 1;
		}
	}
}

int kt_reader_next(kt_reader *r, kt_event *ev)
{
	struct kt__merge *m = kt__reader_merge(r);
	int rc;

	if (!m)
		return -ENOMEM;
	if (m->deferred) {
		free(m->deferred);
		m->deferred = NULL;
	}
	if (!m->started) {
		m->started = 1;
		if ((rc = build_index(r, m)))
			return rc;
	}
	while (m->nheap) {
		struct cursor *c = &m->cursors[m->heap[0]];
		if (!c->loaded) {
			if ((rc = load(r, c)))
				return rc;
			if (!c->loaded && c->next == c->nchunks) /* cannot be: chunks hold events */
				m->heap[0] = m->heap[--m->nheap];
			sift_down(m, 0);
			set_limit(m);
			continue;
		}
		*ev = c->ev;
		c->loaded = kt__chunk_next(&c->it, &c->ev);
		if (c->loaded) {
			/* Still below every other cursor: no heap work. */
			if (!m->lim_valid || c->ev.ts < m->lim_ts ||
			    (c->ev.ts == m->lim_ts && c->thread_id < m->lim_tid))
				return 1;
		} else if (c->next == c->nchunks) {
			/* The thread is done: drop it, and its buffer once the
			 * caller is done with the event that points into it. */
			m->deferred = c->events;
			c->events = NULL;
			c->events_cap = 0;
			m->heap[0] = m->heap[--m->nheap];
		}
		/* ev points into c->events, which stays valid until this
		 * cursor loads again; that happens only on a later call. */
		if (m->nheap) {
			sift_down(m, 0);
			set_limit(m);
		}
		return 1;
	}
	return m->error < 0 ? m->error : 0;
}

static void sleep_until(uint64_t mono_ns)
{
	struct timespec ts = { (time_t)(mono_ns / 1000000000u), (long)(mono_ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

uint64_t kt_reader_ticks_to_ns(kt_reader *r, uint64_t ticks)
{
	struct kt__merge *m = kt__reader_merge(r);
	if (m && m->started)
		return kt__conv_apply(&m->conv, ticks);
	return kt_ticks_to_ns(&kt_reader_header(r)->clock, NULL, ticks);
}

int kt_replay(kt_reader *r, kt_replay_fn fn, void *ctx, const kt_replay_options *opts)
{
	double speed = opts && opts->speed > 0 ? opts->speed : 1.0;
	int pace = !(opts && opts->max);
	uint64_t first_ns = 0, start = 0;
	int have_first = 0, rc;
	kt_event ev;

	while ((rc = kt_reader_next(r, &ev)) > 0) {
		/* The index pass has seen the summary by now, if there is one:
		 * convert with both calibration points, as katra info does. */
		uint64_t ns = kt_reader_ticks_to_ns(r, ev.ts);
		if (pace) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
			if (!have_first) {
				first_ns = ns;
				start = t;
				have_first = 1;
			}
			/* A file's times need not increase across threads' clocks
			 * (nor, if crafted, at all): an earlier one is due now, and
			 * no wait is longer than a day. */
			double wait = ns > first_ns ? (double)(ns - first_ns) / speed : 0;
			if (wait > 86400e9)
				wait = 86400e9;
			uint64_t due = start + (uint64_t)wait;
			if (due > t)
				sleep_until(due);
		}
		int stop = fn(ctx, &ev, ns);
		if (stop)
			return stop;
	}
	return rc;
}
