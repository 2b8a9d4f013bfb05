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
#include "format/reader_impl.h"
#include "format/reader_internal.h"

#define NONE SIZE_MAX

/* Every chunk of the file, in file order, each linked to the next chunk of
 * its thread: 24 bytes a chunk, whatever the threads. */
struct chunk_ref {
	uint64_t offset;
	uint64_t first_ts;
	size_t next;                /* index of the thread's next chunk, or NONE */
};

struct cursor {
	uint32_t thread_id;         /* first: the key of kt__merge.cursors */
	size_t next;                /* refs index of the chunk to load, or NONE */
	size_t last;                /* refs index of the thread's last chunk */
	uint8_t *events;            /* the loaded chunk, decoded */
	size_t events_cap;
	kt_chunk_iter it;
	kt_event ev;                /* the event at the front */
	int loaded;
};

/* A heap entry carries its cursor's key, so ordering the heap reads
 * nothing else. */
struct hent {
	uint64_t ts;
	uint32_t thread_id;
	uint32_t cursor;
};

struct kt__merge {
	struct kt__idmap cursors;   /* struct cursor, by thread id */
	struct chunk_ref *refs;
	size_t nrefs, refs_cap;
	struct hent *heap;          /* the cursors with events left */
	size_t nheap;
	uint64_t tables;            /* bytes of cursors, refs and heap */
	int error;                  /* from the index pass: reported at the end */
	int fatal;                  /* out of memory, or the file changed */
	int started;
	uint8_t *deferred;          /* a spent chunk's buffer: the event
				     * returned last still points into it */
	size_t deferred_cap;
	size_t deferred_by;         /* index of the cursor it came from */
	kt_file_summary stop;       /* the summary's stop calibration, if any */
	int have_stop;
	struct kt__conv conv;       /* ticks to ns, set once the index is built */
	struct hent lim;            /* set_limit() */
	int lim_valid;
};

static struct cursor *cursor_at(const struct kt__merge *m, size_t i)
{
	return KT__IDMAP_AT(&m->cursors, struct cursor, i);
}

/* The key a cursor sits in the heap by: its front event's timestamp, or
 * its next chunk's first one before that chunk is loaded. */
static uint64_t front_ts(const struct kt__merge *m, const struct cursor *c)
{
	return c->loaded ? c->ev.ts : m->refs[c->next].first_ts;
}

static int key_less(const struct hent *x, const struct hent *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return x->thread_id < y->thread_id;
}

static void sift_down(struct kt__merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		if (l < m->nheap && key_less(&m->heap[l], &m->heap[min]))
			min = l;
		if (r < m->nheap && key_less(&m->heap[r], &m->heap[min]))
			min = r;
		if (min == i)
			return;
		struct hent t = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = t;
		i = min;
	}
}

struct kt__merge *kt__merge_new(kt_reader *r)
{
	struct kt__merge *m = kt__calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	kt__idmap_init(&m->cursors, sizeof(struct cursor));
	m->tables = sizeof(*m);
	kt__reader_account(r, (int64_t)m->tables);
	return m;
}

/*
 * The event returned last no longer points into the spent chunk's buffer.
 * It goes back to its cursor when the cursor has chunks left, for the
 * reader to decode the next one into (so a long read neither allocates
 * nor faults in a buffer per chunk); else it is freed.  Either way a
 * cursor holds at most one buffer, as when it is loaded.
 */
static void drop_deferred(kt_reader *r, struct kt__merge *m)
{
	struct cursor *c = cursor_at(m, m->deferred_by);
	if (c->next != NONE && !c->events) {
		c->events = m->deferred;
		c->events_cap = m->deferred_cap;
	} else {
		free(m->deferred);
		kt__reader_account(r, -(int64_t)m->deferred_cap);
	}
	m->deferred = NULL;
	m->deferred_cap = 0;
}

void kt__merge_free(kt_reader *r, struct kt__merge *m)
{
	if (!m)
		return;
	uint64_t held = m->tables + m->deferred_cap;
	for (size_t i = 0; i < m->cursors.len; i++) {
		free(cursor_at(m, i)->events);
		held += cursor_at(m, i)->events_cap;
	}
	kt__idmap_free(&m->cursors);
	free(m->refs);
	free(m->heap);
	free(m->deferred);
	free(m);
	kt__reader_account(r, -(int64_t)held);
}

/* Bring the accounting of the tables up to date. */
static void sync_tables(kt_reader *r, struct kt__merge *m)
{
	uint64_t now = sizeof(*m) + kt__idmap_bytes(&m->cursors) +
		       m->refs_cap * sizeof(*m->refs) + (m->heap ? m->cursors.len : 0) * sizeof(*m->heap);
	kt__reader_account(r, (int64_t)(now - m->tables));
	m->tables = now;
}

/* Record chunk @f: 0 or -ENOMEM. */
static int index_chunk(kt_reader *r, struct kt__merge *m, const kt_trace_frame *f)
{
	struct cursor *c;
	/* The pass has refused a file with too many threads already. */
	int rc = kt__idmap_get(&m->cursors, f->u.chunk.thread_id, KT_MAX_SUMMARY_THREADS,
			       (void **)&c);
	if (rc < 0)
		return rc;
	if (kt__grow((void **)&m->refs, &m->refs_cap, m->nrefs, sizeof(*m->refs), 64))
		return -ENOMEM;
	size_t i = m->nrefs++;
	m->refs[i] = (struct chunk_ref){ f->offset, f->u.chunk.first_ts, NONE };
	if (rc == 1)
		c->next = i;
	else
		m->refs[c->last].next = i;
	c->last = i;
	sync_tables(r, m);
	return 0;
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
		if (f.kind == KT_FRAME_CHUNK && index_chunk(r, m, &f)) {
			rc = kt__reader_fail(r, -ENOMEM, f.offset, "the merge's table of chunks");
			break;
		}
	}
	kt__reader_set_headers_only(r, 0);
	if (rc == -ENOMEM)
		return rc; /* not a fault of the file: no event is returned */
	m->error = rc;
	kt__conv_init(&m->conv, &kt_reader_get_header(r)->clock, m->have_stop ? &m->stop : NULL);
	m->heap = kt__malloc((m->cursors.len ? m->cursors.len : 1) * sizeof(*m->heap));
	if (!m->heap)
		return kt__reader_fail(r, -ENOMEM, 0, "the merge's heap");
	sync_tables(r, m);
	for (size_t i = 0; i < m->cursors.len; i++) {
		const struct cursor *c = cursor_at(m, i);
		m->heap[m->nheap++] = (struct hent){ front_ts(m, c), c->thread_id, (uint32_t)i };
	}
	for (size_t i = m->nheap / 2; i-- > 0;)
		sift_down(m, i);
	return 0;
}

/* Decode the cursor's next chunk and keep it, without a copy. */
static int load(kt_reader *r, struct cursor *c, const struct chunk_ref *ref)
{
	kt_trace_frame f;
	int rc = kt__reader_frame_at(r, ref->offset, &f);
	if (rc < 0)
		return rc;
	if (f.kind != KT_FRAME_CHUNK || f.u.chunk.thread_id != c->thread_id)
		return kt__reader_fail(r, KT_EFRAME, ref->offset,
				       "the file changed while it was read");
	f.u.chunk.events = kt__reader_steal_events(r, &f, &c->events, &c->events_cap);
	kt_chunk_iter_init(&c->it, &f);
	c->next = ref->next;
	c->loaded = kt_chunk_next(&c->it, &c->ev);
	return 0;
}

/* The smallest key among the heap top's children: the top cursor may emit
 * every event below it without touching the heap. */
static void set_limit(struct kt__merge *m)
{
	m->lim_valid = m->nheap > 1;
	if (m->lim_valid)
		m->lim = m->nheap > 2 && key_less(&m->heap[2], &m->heap[1]) ? m->heap[2] : m->heap[1];
}

/*
 * The top cursor @c moved on: its key is updated in place, or, when its
 * thread has nothing left, it leaves the heap.  Then the heap is restored.
 */
static void requeue(struct kt__merge *m, const struct cursor *c)
{
	if (c->loaded || c->next != NONE)
		m->heap[0].ts = front_ts(m, c);
	else
		m->heap[0] = m->heap[--m->nheap];
	if (m->nheap) {
		sift_down(m, 0);
		set_limit(m);
	}
}

/*
 * The top cursor's chunk is spent: its buffer waits in m->deferred until
 * the caller is done with the event that points into it, so a cursor
 * holds a buffer only while it has events left.
 */
static void spent(kt_reader *r, struct kt__merge *m, size_t i)
{
	struct cursor *c = cursor_at(m, i);
	if (m->deferred)
		drop_deferred(r, m);
	m->deferred_by = i;
	m->deferred = c->events;
	m->deferred_cap = c->events_cap;
	c->events = NULL;
	c->events_cap = 0;
}

static int start(kt_reader *r, struct kt__merge *m)
{
	m->started = 1;
	int rc = build_index(r, m);
	if (rc)
		m->fatal = rc;
	return rc;
}

static int next_merged(kt_reader *r, kt_event *ev);

int kt_reader_next(kt_reader *r, kt_event *ev)
{
	int rc;
	/* r->filtered is read here, not only in kt__reader_keeps(): a
	 * call per event costs the unfiltered read ~1 ns of its ~20. */
	while ((rc = next_merged(r, ev)) > 0 && r->filtered && !kt__reader_keeps(r, ev))
		;
	return rc;
}

static int next_merged(kt_reader *r, kt_event *ev)
{
	struct kt__merge *m = r->merge ? r->merge : kt__reader_merge(r);
	int rc;

	if (!m)
		return kt__reader_fail(r, -ENOMEM, 0, "the merge's state");
	if (m->fatal)
		return m->fatal;
	if (m->deferred)
		drop_deferred(r, m);
	if (!m->started && (rc = start(r, m)))
		return rc;
	while (m->nheap) {
		struct cursor *c = cursor_at(m, m->heap[0].cursor);
		if (!c->loaded) {
			if ((rc = load(r, c, &m->refs[c->next])) &&
			    !kt__reader_salvage(r, rc, m->refs[c->next].offset, 0))
				return m->fatal = rc;
			if (rc) /* salvaged: the thread goes on at its next chunk */
				c->next = m->refs[c->next].next;
			if (!c->loaded) /* cannot be: the reader checked every
					 * chunk holds an event */
				spent(r, m, m->heap[0].cursor);
			requeue(m, c);
			continue;
		}
		*ev = c->ev;
		c->loaded = kt__chunk_next(&c->it, &c->ev);
		if (c->loaded) {
			/* Still below every other cursor: no heap work. */
			struct hent next = { c->ev.ts, c->thread_id, 0 };
			if (!m->lim_valid || key_less(&next, &m->lim)) {
				m->heap[0].ts = c->ev.ts;
				return 1;
			}
		} else {
			spent(r, m, m->heap[0].cursor);
		}
		requeue(m, c);
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

uint64_t kt_reader_get_time_ns(kt_reader *r, uint64_t ticks)
{
	/* r->merge read here, not through kt__reader_merge(): a call per
	 * event costs a reader that converts every event (all of them) a few
	 * percent. */
	struct kt__merge *m = r->merge ? r->merge : kt__reader_merge(r);
	if (m && m->started)
		return kt__conv_apply(&m->conv, ticks);
	return kt_ticks_to_ns(&kt_reader_get_header(r)->clock, NULL, ticks);
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
		uint64_t ns = kt_reader_get_time_ns(r, ev.ts);
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
