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

/* One ring's copy and the records in it. */
struct snap_ring {
	struct kt__ring *ring;
	uint8_t *buf;              /* mmap()ed, buf_len bytes */
	size_t buf_len;
	kt__flight_span span;
	uint32_t *offs;            /* where each record starts in span */
	size_t n;                  /* records (drop markers included) */
	size_t cut;                /* the first record kept */
};

struct snap {
	kt_session *s;
	struct snap_ring *rings;
	size_t n, cap;
	uint64_t newest;           /* the newest timestamp copied */
};

static uint64_t rec_ts(const struct snap_ring *t, size_t i)
{
	uint64_t ts;
	memcpy(&ts, t->span.bytes + t->offs[i] + KT_REC_TS, 8);
	return ts;
}

/* Index the records of a copied span: they are the producer's, whole and
 * valid, so the walk only stops early if memory runs out. */
static int index_records(struct snap_ring *t)
{
	size_t cap = t->span.len / KT_REC_HEAD + 1;
	if (!(t->offs = malloc(cap * sizeof(*t->offs))))
		return -ENOMEM;
	kt__ring_rec rec;
	size_t pos = 0;
	while (pos < t->span.len && t->n < cap &&
	       kt__ring_decode(t->span.bytes + pos, t->span.len - pos, 0, &rec) == 1) {
		t->offs[t->n++] = (uint32_t)pos;
		pos += rec.size;
	}
	return 0;
}

/* Memory for a ring's copy, its pages faulted in now rather than during
 * the copy, which would then take longer and lap more. */
static uint8_t *copy_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Copy every ring, back to back once all the memory is ready: the copies
 * end at nearly the same time, so the threads' windows overlap as much as
 * they can.  Rings with nothing left are skipped.
 */
static int copy_rings(struct snap *sn, const kt__ring_list *list)
{
	if (!(sn->rings = calloc(list->len ? list->len : 1, sizeof(*sn->rings))))
		return -ENOMEM;
	sn->cap = list->len;
	for (size_t i = 0; i < list->len; i++) {
		struct snap_ring *t = &sn->rings[i];
		t->ring = list->rings[i];
		t->buf_len = kt__ring_bytes(t->ring);
		if (!(t->buf = copy_buf(t->buf_len)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < list->len; i++)
		kt__ring_flight_copy(sn->rings[i].ring, sn->rings[i].buf, &sn->rings[i].span);
	for (size_t i = 0; i < list->len; i++) {
		struct snap_ring *t = &sn->rings[i];
		if (!t->span.len)
			continue;
		if (i != sn->n) {
			sn->rings[sn->n] = *t;
			*t = (struct snap_ring){ 0 };
			t = &sn->rings[sn->n];
		}
		sn->n++;
		if (index_records(t))
			return -ENOMEM;
		if (t->n && rec_ts(t, t->n - 1) > sn->newest)
			sn->newest = rec_ts(t, t->n - 1);
	}
	return 0;
}

static void free_snap(struct snap *sn)
{
	for (size_t i = 0; i < sn->cap; i++) {
		if (sn->rings[i].buf)
			munmap(sn->rings[i].buf, sn->rings[i].buf_len);
		free(sn->rings[i].offs);
	}
	free(sn->rings);
}

/* The first record of @t at or after @ts (timestamps grow along a ring). */
static size_t lower_bound(const struct snap_ring *t, uint64_t ts)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rec_ts(t, mid) < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Ring bytes kept if the window starts at @ts. */
static uint64_t bytes_from(const struct snap *sn, uint64_t ts)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < sn->n; i++) {
		const struct snap_ring *t = &sn->rings[i];
		size_t k = lower_bound(t, ts);
		sum += k < t->n ? t->span.len - t->offs[k] : 0;
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
 * @max_age_ns before the newest event, and late enough for @max_bytes.
 */
static uint64_t window_start(struct snap *sn, uint64_t max_age_ns, uint64_t max_bytes,
			     kt_snapshot_result *res)
{
	uint64_t hz = sn->s->c0.tick_hz, w = 0;
	for (size_t i = 0; i < sn->n; i++)
		if (!sn->rings[i].span.whole && sn->rings[i].n && rec_ts(&sn->rings[i], 0) > w)
			w = rec_ts(&sn->rings[i], 0);
	if (max_age_ns) {
		uint64_t age = ns_to_ticks(max_age_ns, hz);
		uint64_t want = sn->newest > age ? sn->newest - age : 0;
		if (w > want)
			res->head_loss_ns = ticks_to_ns(w - want, hz);
		else
			w = want;
	}
	if (max_bytes && bytes_from(sn, w) > max_bytes) {
		/* The earliest start that fits: bytes_from() only falls as
		 * the start moves later. */
		uint64_t lo = w, hi = sn->newest + 1;
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
};

static void put(struct out *o, int rc)
{
	if (rc && !o->rc)
		o->rc = rc;
}

static void name_cb(void *ctx, uint32_t id, const char *str, size_t len)
{
	struct out *o = ctx;
	if (!o->rc)
		put(o, kt_writer_name(o->w, id, str, len));
}

/* Records [@from, @to) of @t (events only) as one chunk. */
static void put_chunk(struct out *o, const struct snap_ring *t, size_t from, size_t to)
{
	if (from == to || o->rc)
		return;
	size_t end = to < t->n ? t->offs[to] : t->span.len;
	put(o, kt__writer_chunk_known(o->w, kt__ring_thread_id(t->ring), (unsigned)o->s->codec,
				      o->s->level, t->span.bytes + t->offs[from],
				      end - t->offs[from], (uint32_t)(to - from),
				      rec_ts(t, from), rec_ts(t, to - 1)));
	o->events += to - from;
	o->chunks++;
	o->bytes_raw += end - t->offs[from];
}

/* The kept records of one ring: chunks cut where they are full and at
 * drop markers, which become drop frames (those of this session). */
static void put_ring(struct out *o, const struct snap_ring *t)
{
	size_t start = t->cut;
	kt__ring_rec rec;
	for (size_t i = t->cut; i < t->n && !o->rc; i++) {
		kt__ring_decode(t->span.bytes + t->offs[i], t->span.len - t->offs[i], 0, &rec);
		if (!rec.bytes) {
			put_chunk(o, t, start, i);
			start = i + 1;
			if (rec.marker_gen == (uint32_t)o->s->gen)
				put(o, kt_writer_drop(o->w, kt__ring_thread_id(t->ring), rec.count,
						      rec.first_ts, rec.last_ts));
		} else if (t->offs[i] + rec.size - t->offs[start] >= CHUNK_MAX) {
			put_chunk(o, t, start, i + 1);
			start = i + 1;
		}
	}
	put_chunk(o, t, start, t->n);
	if (o->rc)
		return;
	char *name = kt__ring_name_dup(t->ring);
	put(o, kt_writer_thread(o->w, kt__ring_thread_id(t->ring), kt__ring_os_tid(t->ring), name));
	free(name);
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
	}
	if (!o.rc)
		kt__names_after(0, name_cb, &o);
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
	return o.rc;
}

/* Cut every ring at @w and count what that leaves out. */
static void cut_rings(struct snap *sn, uint64_t w, kt_snapshot_result *res)
{
	res->window_start = UINT64_MAX;
	for (size_t i = 0; i < sn->n; i++) {
		struct snap_ring *t = &sn->rings[i];
		t->cut = lower_bound(t, w);
		res->events_trimmed += t->cut;
		res->bytes_lapped += t->span.lapped;
		if (t->cut < t->n) {
			uint64_t first = rec_ts(t, t->cut), last = rec_ts(t, t->n - 1);
			if (first < res->window_start)
				res->window_start = first;
			if (last > res->window_end)
				res->window_end = last;
		}
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

static int snapshot(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
		    uint64_t max_bytes, kt_snapshot_result *res)
{
	struct snap sn = { .s = s };
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

int kt_session_snapshot(kt_session *s, const char *path, int fd, uint64_t max_age_ns,
			uint64_t max_bytes, kt_snapshot_result *res)
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
	rc = snapshot(s, path, fd, max_age_ns, max_bytes, res);
	kt__session_snap_leave(s);
	return rc;
}
