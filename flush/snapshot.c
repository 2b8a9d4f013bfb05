/*
 * Flight sessions' snapshots: copy the newest records of every ring while
 * their producers go on (ring/flight.c), cut them to the window in which
 * every thread is complete and to the caller's age and byte limits, and
 * write them as a trace through the same writer and encoder as a session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flush/session_impl.h"

/* A run of one ring's copied records: the events of one chunk to be, or
 * one drop marker.  Each ring's copy is walked once, after all are done
 * (walking each piece in between would make the copies take longer and
 * the producers lap more of them); the runs are what is kept of it. */
struct run {
	uint64_t from, to;         /* ring positions */
	uint64_t first, last;      /* timestamps (a marker's: of the event
				    * after it) */
	uint32_t count;            /* events; 0: a drop marker */
	uint32_t before;           /* records before it (markers included) */
};

/* One ring's copy and the records in it. */
struct snap_ring {
	struct kt__ring *ring;
	kt__flight_copy cp;        /* its copy, and what of it is intact */
	int more;                  /* older pieces remain to be copied */
	struct run *runs;          /* in ring order */
	size_t nruns, cap;
	size_t cut, cut_off;       /* the first record kept, and where */
	size_t cut_run;            /* the run it lies in (nruns: none) */
};

struct snap {
	kt_session *s;
	kt_snapshot_thread *rows;  /* the caller's, @cap of them */
	uint32_t cap;
	struct snap_ring *rings;
	size_t n;
	uint64_t now;              /* the clock when the copies were done */
};

static uint64_t ts_at(const struct snap_ring *t, size_t off)
{
	uint64_t ts;
	memcpy(&ts, t->cp.span.bytes + off + KT_REC_TS, 8);
	return ts;
}

/* Add @r, the ring's next run, counting the records before it. */
static int add_run(struct snap_ring *t, struct run r)
{
	if (t->nruns == t->cap) {
		struct run *more = reallocarray(t->runs, 2 * t->cap + 64, sizeof(*more));
		if (!more)
			return -ENOMEM;
		t->runs = more;
		t->cap = 2 * t->cap + 64;
	}
	const struct run *last = t->nruns ? &t->runs[t->nruns - 1] : NULL;
	r.before = last ? last->before + (last->count ? last->count : 1) : 0;
	t->runs[t->nruns++] = r;
	return 0;
}

/* The events of @r, if any, as a run ending at @to; @r then starts at
 * @next. */
static int close_run(struct snap_ring *t, struct run *r, uint64_t to, uint64_t next)
{
	int rc = 0;
	if (r->count)
		rc = add_run(t, (struct run){ r->from, to, r->first, r->last, r->count, 0 });
	*r = (struct run){ .from = next };
	return rc;
}

/*
 * Walk the records copied, ring positions [@a, @b) (@a is where @t's copy
 * begins), into runs: cut where they reach CHUNK_MAX bytes and at drop
 * markers.  The records are the producer's, whole and valid.
 *
 * The next record's position depends on this one's length, a load: as a
 * data dependency every record would wait for the one before.  So the
 * step is a branch on "the same size as the record before" (runs of one
 * size are the common case), which the processor predicts and runs ahead
 * of; the empty asm keeps the compiler from folding the two arms back
 * into one addition.
 */
static int walk_runs(struct snap_ring *t, uint64_t a, uint64_t b)
{
	const uint8_t *p = t->cp.span.bytes;
	struct run r = { .from = a };
	uint64_t pos = a;
	size_t prev = KT_REC_HEAD;
	int rc = 0;
	while (pos < b && !rc) {
		const uint8_t *q = p + (pos - a);
		uint16_t len;
		uint64_t ts;
		memcpy(&len, q + KT_REC_LEN, 2);
		memcpy(&ts, q + KT_REC_TS, 8);
		if (q[KT_REC_TYPE] == KT__EV_DROP_MARK) {
			rc = close_run(t, &r, pos, pos + KT__DROP_MARK_SIZE);
			if (!rc)
				rc = add_run(t, (struct run){ pos, pos + KT__DROP_MARK_SIZE, ts, ts,
							       0, 0 });
			pos += KT__DROP_MARK_SIZE;
			continue;
		}
		size_t size = kt_event_size(len);
		if (size > b - pos)
			break;
		r.first = r.count++ ? r.first : ts;
		r.last = ts;
		if (size == prev) {
			__asm__("" : "+r"(prev));
			pos += prev;
		} else {
			pos += size;
			prev = size;
		}
		if (pos - r.from >= CHUNK_MAX)
			rc = close_run(t, &r, pos, pos);
	}
	return rc ? rc : close_run(t, &r, pos, pos);
}

/* Memory for every ring's copy: kept by the session from one snapshot to
 * the next, so only the first pays to fault it in, and never during a
 * copy (which would then take longer and lap more). */
static uint8_t *arena(kt_session *s, size_t len)
{
	if (s->snap_arena_len >= len)
		return s->snap_arena;
	if (s->snap_arena)
		munmap(s->snap_arena, s->snap_arena_len);
	s->snap_arena_len = 0;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (p == MAP_FAILED)
		return s->snap_arena = NULL;
	s->snap_arena_len = len;
	return s->snap_arena = p;
}

/* The oldest event @t holds so far (ts_at(t, 0) when it holds any). */
static uint64_t oldest_ts(const struct snap_ring *t)
{
	return t->cp.span.len ? ts_at(t, 0) : UINT64_MAX;
}

int kt__snapshot_reserve(kt_session *s)
{
	kt__ring_list list = { 0 };
	size_t total = 0;
	int rc = kt__registry_snapshot(&list);
	for (size_t i = 0; !rc && i < list.len; i++)
		total += kt__ring_bytes(list.rings[i]);
	free(list.rings);
	return rc ? rc : total && !arena(s, total) ? -ENOMEM : 0;
}

/*
 * Copy every ring, newest pieces first: each ring's newest piece, back to
 * back so that the copies begin at nearly the same time, then always the
 * next older piece of the ring whose copy reaches the least far back, so
 * that they go back in time together and each stops where its producer's
 * overwrites meet it (ring/flight.c): the threads' windows overlap as
 * much as they can, and nothing the producers overwrite is copied first.
 * Rings with nothing left are dropped from the list.
 */
static int copy_rings(struct snap *sn, const kt__ring_list *list)
{
	size_t total = 0;
	if (!(sn->rings = calloc(list->len ? list->len : 1, sizeof(*sn->rings))))
		return -ENOMEM;
	for (size_t i = 0; i < list->len; i++)
		total += kt__ring_bytes(list->rings[i]);
	uint8_t *buf = arena(sn->s, total ? total : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < list->len; i++) {
		struct snap_ring *t = &sn->rings[i];
		t->ring = list->rings[i];
		t->more = kt__ring_flight_begin(t->ring, buf, &t->cp);
		buf += kt__ring_bytes(t->ring);
	}
	for (;;) {
		struct snap_ring *next = NULL;
		for (size_t i = 0; i < list->len; i++)
			if (sn->rings[i].more && (!next || oldest_ts(&sn->rings[i]) > oldest_ts(next)))
				next = &sn->rings[i];
		if (!next)
			break;
		next->more = kt__ring_flight_older(&next->cp);
	}
	sn->now = kt_now();
	for (size_t i = 0; i < list->len; i++)
		if (sn->rings[i].cp.span.len > 0)
			sn->rings[sn->n++] = sn->rings[i];
	for (size_t i = 0; i < sn->n; i++) {
		const kt__flight_span *sp = &sn->rings[i].cp.span;
		if (walk_runs(&sn->rings[i], sp->from, sp->from + sp->len))
			return -ENOMEM;
	}
	return 0;
}

static void free_snap(struct snap *sn)
{
	for (size_t i = 0; sn->rings && i < sn->n; i++)
		free(sn->rings[i].runs);
	free(sn->rings);
}

/* Where @t is cut to start at @ts: its first record at or after @ts
 * (timestamps grow along a ring), as its index, offset and run. */
struct cut {
	size_t idx, off, run;
};

static struct cut lower_bound(const struct snap_ring *t, uint64_t ts)
{
	size_t k = 0, hi = t->nruns;
	/* The first run whose last record is at or after @ts... */
	while (k < hi) {
		size_t mid = k + (hi - k) / 2;
		if (t->runs[mid].last < ts)
			k = mid + 1;
		else
			hi = mid;
	}
	if (k == t->nruns)
		return (struct cut){ t->nruns ? t->runs[k - 1].before + (t->runs[k - 1].count
				     ? t->runs[k - 1].count : 1) : 0, t->cp.span.len, k };
	/* ...and in it, the first such record. */
	const struct run *r = &t->runs[k];
	struct cut c = { r->before, (size_t)(r->from - t->cp.span.from), k };
	kt__ring_rec rec;
	while (ts_at(t, c.off) < ts &&
	       kt__ring_decode(t->cp.span.bytes + c.off, t->cp.span.len - c.off, 0, &rec) == 1) {
		c.off += rec.size;
		c.idx++;
	}
	return c;
}

/* Ring bytes kept if the window starts at @ts. */
static uint64_t bytes_from(const struct snap *sn, uint64_t ts)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < sn->n; i++) {
		sum += sn->rings[i].cp.span.len - lower_bound(&sn->rings[i], ts).off;
	}
	return sum;
}

static uint64_t ns_to_ticks(uint64_t ns, uint64_t hz)
{
	unsigned __int128 t = (unsigned __int128)ns * hz / 1000000000u;
	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

static uint64_t ticks_to_ns(uint64_t ticks, uint64_t hz)
{
	unsigned __int128 n = (unsigned __int128)ticks * 1000000000u / hz;
	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

/*
 * Where the window starts: no earlier than the latest first event of a
 * ring that lost its head (before it, that thread has a hole), nor than
 * @max_age_ns before the copies, and late enough for @max_bytes.
 */
static uint64_t window_start(struct snap *sn, uint64_t max_age_ns, uint64_t max_bytes,
			     kt_snapshot_result *res)
{
	uint64_t hz = sn->s->c0.tick_hz, w = 0, newest = sn->now;
	for (size_t i = 0; i < sn->n; i++)
		if (!sn->rings[i].cp.span.whole && ts_at(&sn->rings[i], 0) > w)
			w = ts_at(&sn->rings[i], 0);
	if (max_age_ns) {
		/* Spans, not instants: on a machine up for less than
		 * @max_age_ns the asked start lies before the clock's zero,
		 * and the loss is still what the window lacks of the age. */
		uint64_t age = ns_to_ticks(max_age_ns, hz);
		uint64_t kept = newest > w ? newest - w : 0;
		if (w && kept < age)
			res->head_loss_ns = ticks_to_ns(age - kept, hz);
		else
			w = newest > age ? newest - age : 0;
	}
	if (max_bytes && bytes_from(sn, w) > max_bytes) {
		/* The earliest start that fits: bytes_from() only falls as
		 * the start moves later. */
		uint64_t lo = w, hi = newest + 1;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (bytes_from(sn, mid) > max_bytes)
				lo = mid + 1;
			else
				hi = mid;
		}
		w = lo;
	}
	return w;
}

/* The file being written. */
struct out {
	kt_session *s;
	kt_writer *w;
	int rc;                    /* first error */
	uint64_t events, chunks, bytes_raw;
	uint64_t newest;           /* the last event's timestamp */
};

static void put(struct out *o, int rc)
{
	if (rc && !o->rc)
		o->rc = rc;
}

static void name_cb(void *ctx, uint32_t id, const char *str, size_t len, const kt_srcloc *loc)
{
	struct out *o = ctx;
	if (!o->rc)
		put(o, kt_writer_name(o->w, id, str, len));
	if (loc && !o->rc)
		put(o, kt_writer_srcloc(o->w, loc));
}

static void category_cb(void *ctx, uint32_t id, uint32_t flags)
{
	struct out *o = ctx;
	if (!o->rc)
		put(o, kt_writer_category(o->w, id, flags));
}

static void track_cb(void *ctx, const kt_track_def *t)
{
	struct out *o = ctx;
	if (!o->rc)
		put(o, kt_writer_track(o->w, t));
}

/* The @count events at [@from, @to) of @t as one chunk. */
static void put_chunk(struct out *o, const struct snap_ring *t, size_t from, size_t to,
		      uint32_t count, uint64_t first, uint64_t last)
{
	if (!count || o->rc)
		return;
	put(o, kt__writer_chunk_known(o->w, kt__ring_thread_id(t->ring), (unsigned)o->s->codec,
				      o->s->level, t->cp.span.bytes + from, to - from, count, first,
				      last));
	o->events += count;
	o->chunks++;
	if (last > o->newest)
		o->newest = last;
	o->bytes_raw += to - from;
}

/* The kept records of one ring: its runs from the cut, each event run a
 * chunk, each drop marker a drop frame (those of this session). */
static void put_ring(struct out *o, const struct snap_ring *t)
{
	for (size_t k = t->cut_run; k < t->nruns && !o->rc; k++) {
		const struct run *r = &t->runs[k];
		size_t from = (size_t)(r->from - t->cp.span.from), to = (size_t)(r->to - t->cp.span.from);
		kt__ring_rec rec = { 0 };
		if (r->count) {
			/* The run the cut lies in is kept from the cut. */
			size_t skip = k == t->cut_run ? t->cut - r->before : 0;
			from = k == t->cut_run ? t->cut_off : from;
			put_chunk(o, t, from, to, r->count - (uint32_t)skip,
				  skip ? ts_at(t, from) : r->first, r->last);
		} else if (kt__ring_decode(t->cp.span.bytes + from, to - from, 0, &rec) == 1 &&
			   !rec.bytes && rec.marker_gen == (uint32_t)o->s->gen) {
			put(o, kt_writer_drop(o->w, kt__ring_thread_id(t->ring), rec.count,
					      rec.first_ts, rec.last_ts));
		}
	}
	/* Events the ring overwrote were lost to a full ring: a drop record,
	 * timed before the window. */
	if (t->cp.span.over && !o->rc)
		put(o, kt_writer_drop(o->w, kt__ring_thread_id(t->ring), t->cp.span.over,
				      t->cp.span.over_first, t->cp.span.over_last));
	if (o->rc)
		return;
	char *name = kt__ring_name_dup(t->ring);
	put(o, kt_writer_thread(o->w, kt__ring_thread_id(t->ring), kt__ring_os_tid(t->ring), name));
	free(name);
}

/* The caller's row for @t, if it has room and the thread is in the file. */
static void put_row(const struct snap *sn, kt_snapshot_result *res, const struct snap_ring *t,
		    uint64_t events)
{
	res->events_overwritten += t->cp.span.over;
	if (res->thread_rows >= sn->cap || !(events || t->cp.span.over))
		return;
	sn->rows[res->thread_rows++] = (kt_snapshot_thread){
		.thread_id = kt__ring_thread_id(t->ring), .events = events,
		.overwritten = t->cp.span.over };
}

/* Write the trace to @fd: header, every kept record, names, threads and
 * the summary.  Returns 0 or the first error. */
static int write_trace(struct snap *sn, int fd, kt_snapshot_result *res)
{
	struct out o = { .s = sn->s };
	kt_header h = sn->s->hdr;
	int rc = kt_writer_open_fd(&o.w, fd, &h);
	if (rc)
		return rc;
	for (size_t i = 0; i < sn->n && !o.rc; i++) {
		uint64_t before = o.events;
		put_ring(&o, &sn->rings[i]);
		res->thread_count += o.events > before;
		put_row(sn, res, &sn->rings[i], o.events - before);
	}
	if (!o.rc)
		kt__names_after(0, name_cb, &o);
	kt__categories_each(category_cb, &o);
	kt__tracks_each(track_cb, &o);
	kt_file_summary fs;
	memset(&fs, 0, sizeof(fs));
	kt_clock_calibration c1;
	kt__clock_calibrate(&c1);
	fs.end_wall_ns = kt__wall_ns();
	fs.end_mono_ns = kt__mono_ns();
	fs.clock_ticks1 = c1.ticks;
	fs.clock_ns1 = c1.mono_ns;
	fs.io_backend = KT_IO_PWRITE;
	if (!o.rc)
		put(&o, kt_writer_finish(o.w, &fs));
	res->bytes_on_disk = kt_writer_get_bytes(o.w);
	put(&o, kt_writer_close(o.w));
	res->events = o.events;
	res->window_end = o.newest;
	return o.rc;
}

/* Cut every ring at @w and count what that leaves out. */
static void cut_rings(struct snap *sn, uint64_t w, kt_snapshot_result *res)
{
	res->window_start = UINT64_MAX;
	for (size_t i = 0; i < sn->n; i++) {
		struct snap_ring *t = &sn->rings[i];
		struct cut c = lower_bound(t, w);
		t->cut = c.idx;
		t->cut_off = c.off;
		t->cut_run = c.run;
		res->events_trimmed += t->cut;
		res->bytes_lapped += t->cp.span.lapped;
		res->bytes_overwritten += t->cp.span.from - t->cp.span.origin;
		if (t->cut_off < t->cp.span.len && ts_at(t, t->cut_off) < res->window_start)
			res->window_start = ts_at(t, t->cut_off);
	}
	if (res->window_start == UINT64_MAX)
		res->window_start = 0;
}

/* Create @path for the snapshot, or use @fd. */
static int open_out(const char *path, int fd)
{
	if (!path)
		return fd < 0 ? -EINVAL : fd;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	return fd < 0 ? -errno : fd;
}

static int snapshot(struct snap sn, const char *path, int fd, uint64_t max_age_ns,
		    uint64_t max_bytes, kt_snapshot_result *res)
{
	kt__ring_list list = { 0 };
	int rc = kt__registry_snapshot(&list);
	if (!rc)
		rc = copy_rings(&sn, &list);
	free(list.rings);
	if (!rc) {
		cut_rings(&sn, window_start(&sn, max_age_ns, max_bytes, res), res);
		int out = open_out(path, fd);
		rc = out < 0 ? out : write_trace(&sn, out, res);
		if (path && out >= 0) {
			if (rc)
				unlink(path);
			close(out);
		}
	}
	free_snap(&sn);
	return rc;
}

int kt_session_snapshot_threads(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
				uint64_t max_bytes, kt_snapshot_result *res, kt_snapshot_thread *rows,
				uint32_t cap)
{
	kt_snapshot_result scratch;
	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));
	if (!path && fd < 0)
		return -EINVAL;
	int rc = kt__session_snap_enter(s);
	if (rc)
		return rc;
	struct snap sn = { .s = s, .rows = rows, .cap = rows ? cap : 0 };
	rc = snapshot(sn, path, fd, max_age_ns, max_bytes, res);
	kt__session_snap_leave(s);
	return rc;
}

int kt_session_snapshot(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
			uint64_t max_bytes, kt_snapshot_result *res)
{
	return kt_session_snapshot_threads(s, path, fd, max_age_ns, max_bytes, res, NULL, 0);
}
