/*
 * The flusher thread: one per session, it wakes every flush period, or
 * when a producer crosses a ring's high watermark, and drains each ring
 * through ring/'s consumer side: the records of a span become chunk
 * frames, cut where a chunk is full and at drop markers, which become
 * drop frames.  At the stop it settles every ring and writes the end of
 * the file.
 *
 * The writer encodes frames into staging buffers that a sink writes: the
 * io_uring sink (registered buffers, several writes in flight) or, where
 * io_uring is refused or not wanted, the pwrite sink.  A raw chunk is
 * written straight from the ring, which a hold keeps until the write is
 * done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>

#include <katra/reader.h>
#include "flush/live.h"
#include "flush/session_impl.h"
#include "format/compact.h"
#include "format/reader_internal.h"

static struct sthread *thread_of(kt_session *s, struct kt__ring *r)
{
	struct sthread *t = kt__idtab_get((void **)&s->threads, &s->nthreads, &s->cap_threads,
					  sizeof(*t), kt__ring_thread_id(r), SIZE_MAX);
	if (t && !t->os_tid)
		t->os_tid = kt__ring_os_tid(r);
	return t;
}

static void refresh_name(struct sthread *t, struct kt__ring *r)
{
	char *name = kt__ring_name_dup(r);
	if (!name)
		return;
	if (t->name && !strcmp(t->name, name)) {
		free(name);
		return;
	}
	free(t->name);
	t->name = name;
}

static void ref_done(void *ctx, int res)
{
	(void)res; /* a failed write is the session's error; the space is free either way */
	kt__ring_unhold(ctx);
}

/* Whether a chunk of @bound bytes at most fits the output's byte cap; if
 * not its @count events are dropped, and noted for a drop record. */
static int chunk_room(kt_session *s, struct sthread *t, size_t bound, uint32_t count,
		      uint64_t first, uint64_t last)
{
	if (s->error || kt__out_room(s, 128 + bound))
		return 1;
	t->dropped += count;
	kt__out_note(t, count, first, last);
	return 0;
}

/* A chunk of @len bytes of records handed to the writer (or lost, after
 * the file went bad). */
static void chunk_done(kt_session *s, struct sthread *t, size_t len, uint32_t count,
		       uint64_t last)
{
	if (s->error) {
		/* The file is gone bad: these events are lost, and say so. */
		t->dropped += count;
		return;
	}
	t->written += count;
	s->chunks++;
	s->bytes_raw += len;
	kt__out_wrote(s, last);
}

/* The records of @span from ring position @pos, @len bytes, as a chunk. */
static void put_chunk(kt_session *s, struct sthread *t, struct kt__ring *r, const kt__span *span,
		      uint64_t pos, size_t len, uint32_t count, uint64_t first, uint64_t last)
{
	const uint8_t *p = span->bytes + (pos - span->from);
	size_t bound = s->codec == KT_CODEC_LZ4 || s->codec == KT_CODEC_LZ4_DELTA
			       ? (size_t)LZ4_compressBound((int)len)
			       : len; /* raw, or compact: never more than raw */
	struct kt__ring_ref *hold;
	if (!count || !chunk_room(s, t, bound, count, first, last))
		return;
	if (s->live) /* while the records are in cache */
		kt__live_records(s->live, r, p, len, count);
	if (!s->error && s->codec == KT_CODEC_NONE && (hold = kt__ring_hold(r, pos))) {
		/* Raw chunks are written straight from the ring; its space
		 * comes back when the write completes.  Until then nothing
		 * can change these bytes under the kernel (or between the
		 * checksum and the write): they are below head, which only
		 * their thread moves and only forward; the hold keeps tail
		 * from passing them; a signal handler's emit inside an emit
		 * is refused (katra.h, kt__emit); and a fork()ed child has no
		 * mapping of them (ring/memory.c, map_halves). */
		note_error(s, kt__writer_chunk_ref(s->w, t->thread_id, p, len, count, first, last,
						   ref_done, hold));
	} else if (!s->error) {
		note_error(s, kt__writer_chunk_known(s->w, t->thread_id, (unsigned)s->codec, s->level,
						     p, len, count, first, last));
	}
	chunk_done(s, t, len, count, last);
}

void kt__flush_records(kt_session *s, uint32_t thread_id, uint32_t os_tid, const char *name,
		       const uint8_t *p, size_t len, uint32_t count, uint64_t first, uint64_t last)
{
	struct sthread *t = kt__idtab_get((void **)&s->threads, &s->nthreads, &s->cap_threads,
					  sizeof(*t), thread_id, SIZE_MAX);
	if (!t)
		return; /* out of memory: these records are lost */
	if (!t->name)
		t->name = strdup(name);
	t->os_tid = os_tid;
	if (!count || !chunk_room(s, t, len, count, first, last))
		return;
	if (!s->error)
		note_error(s, kt__writer_chunk_known(s->w, thread_id, (unsigned)s->codec, s->level, p,
						     len, count, first, last));
	chunk_done(s, t, len, count, last);
}

/*
 * The compact codec's encoder and its output, the flusher thread's own:
 * with it a chunk's records are found and encoded in one pass
 * (kt__compact_encode_upto), where the generic drain walks them to cut
 * chunks and the writer's encoder walks them again.  Made on the first
 * compact drain, freed when the flusher ends (flush_enc_free).  The
 * session's, not the thread's: in a fork()ed child, which has no
 * flusher, the blocks stay reachable from the session (LeakSanitizer
 * scans no thread-local of a thread the child does not have).
 */
static void flush_enc_free(kt_session *s)
{
	kt__compact_enc_free(s->fe.enc);
	free(s->fe.out);
	memset(&s->fe, 0, sizeof(s->fe));
}

/* The encoder at @level, or NULL (the generic drain then). */
static kt__compact_enc *flush_enc(kt_session *s, int level)
{
	struct kt__flush_enc *fe = &s->fe;
	if (!fe->enc && !fe->failed) {
		fe->max = KT__CHUNK_MAX + kt_event_size(UINT16_MAX);
		fe->out = malloc(fe->max);
		if (!fe->out || kt__compact_enc_new(&fe->enc, fe->max) ||
		    kt__codec_compact.enc_level(fe->enc, level)) {
			flush_enc_free(s);
			fe->failed = 1;
			return NULL;
		}
		fe->level = level;
	}
	if (fe->enc && level != fe->level && !kt__codec_compact.enc_level(fe->enc, level))
		fe->level = level;
	return fe->enc;
}

/* A chunk @e encoded (@n bytes), or raw (-ENOSPC: what the encoder cannot
 * shrink goes raw, as the writer stores it). */
static int put_encoded(kt_session *s, struct sthread *t, const uint8_t *p, long n,
		       const kt__compact_run *run)
{
	if (n > 0)
		return kt__writer_chunk_stored(s->w, t->thread_id, KT_CODEC_COMPACT, s->fe.out,
					       (size_t)n, run->used, run->count, run->first,
					       run->last);
	return kt__writer_chunk_stored(s->w, t->thread_id, KT_CODEC_NONE, p, run->used, run->used,
				       run->count, run->first, run->last);
}

/*
 * Chunks of the compact codec from ring position @pos of @span on, each
 * found and encoded in one pass, up to the span's end or the first record
 * the format does not know (a drop marker).  Returns where it stopped.
 */
static uint64_t drain_compact(kt_session *s, struct sthread *t, struct kt__ring *r,
			      const kt__span *span, uint64_t pos)
{
	kt__compact_enc *e = flush_enc(s, s->level);
	size_t limit = s->chunk_max & ~(size_t)7;
	if (!e || limit == 0 || limit > KT__CHUNK_MAX)
		return pos;
	kt__compact_enc_skip(e, t->skip); /* unset below: @t moves as threads come */
	while (pos < span->to) {
		const uint8_t *p = span->bytes + (pos - span->from);
		kt__compact_run run;
		long n = kt__compact_encode_upto(e, p, (size_t)(span->to - pos), limit, s->fe.out,
						 s->fe.max, &run);
		if (run.used == 0 || (n < 0 && n != -ENOSPC))
			break;
		if (chunk_room(s, t, run.used, run.count, run.first, run.last)) {
			if (s->live) /* while the records are in cache */
				kt__live_records(s->live, r, p, run.used, run.count);
			if (!s->error)
				note_error(s, put_encoded(s, t, p, n, &run));
			chunk_done(s, t, run.used, run.count, run.last);
		}
		pos += run.used;
	}
	kt__compact_enc_skip(e, NULL);
	return pos;
}

static void put_drop(kt_session *s, struct sthread *t, uint64_t count, uint64_t first,
		     uint64_t last)
{
	t->dropped += count;
	if (s->error)
		return;
	if (!kt__out_room(s, 64)) {
		kt__out_note(t, count, first, last);
		return;
	}
	note_error(s, kt_writer_drop(s->w, t->thread_id, count, first, last));
	kt__out_wrote(s, last);
}

/*
 * Drain one ring's published span into chunk frames, cut where the chunk
 * is full and at drop markers, which become drop frames.  Returns the
 * span's bytes.
 */
static uint64_t drain(kt_session *s, struct kt__ring *r)
{
	kt__span span;
	if (!kt__ring_peek(r, &span))
		return 0;
	struct sthread *t = thread_of(s, r);
	if (!t)
		return 0; /* out of memory: try again next period */
	kt__ring_iter it;
	kt__ring_rec rec;
	uint64_t start = span.from, first = 0, last = 0;
	uint32_t count = 0;

	kt__ring_iter_init(&it, r, &span);
	if (s->live)
		kt__live_ring_begin(s->live, r, span.to - span.from);
	if (s->codec == KT_CODEC_COMPACT)
		start = it.pos = drain_compact(s, t, r, &span, span.from);
	while (kt__ring_next(&it, &rec)) {
		uint64_t end = rec.pos + rec.size;
		if (!rec.bytes) {
			put_chunk(s, t, r, &span, start, rec.pos - start, count, first, last);
			count = 0;
			if (!rec.stale)
				put_drop(s, t, rec.count, rec.first_ts, rec.last_ts);
			start = end;
			/* The events after the marker: one pass again. */
			if (s->codec == KT_CODEC_COMPACT)
				start = it.pos = drain_compact(s, t, r, &span, end);
			continue;
		}
		if (!count)
			first = rec.ts;
		last = rec.ts;
		count++;
		if (end - start >= s->chunk_max) {
			put_chunk(s, t, r, &span, start, end - start, count, first, last);
			count = 0;
			start = end;
		}
	}
	put_chunk(s, t, r, &span, start, span.to - start, count, first, last);
	if (s->live)
		kt__live_ring(s->live, r, t->dropped);
	kt__ring_read(r, span.to);
	if (!s->crash)
		kt__ring_done(r);
	kt__ring_release(r);
	return span.to - span.from;
}

/*
 * Account what a drained ring holds outside its records: losses no marker
 * carried, refusals (records emitted and not in the file: losses too, and
 * a drop record says so), and its name.  Runs for a retired ring before it
 * is recycled and for every ring at stop.
 */
static void settle_ring(kt_session *s, struct kt__ring *r, int retired)
{
	struct sthread *t = thread_of(s, r);
	kt__ring_losses l;
	if (!t)
		return;
	kt__ring_settle(r, retired, &l);
	if (l.lost)
		put_drop(s, t, l.lost, l.lost_first, l.lost_last);
	if (l.refused) {
		s->refused += l.refused;
		put_drop(s, t, l.refused, l.refused_first, l.refused_last);
	}
	refresh_name(t, r);
}

/*
 * Crash files: once every frame so far is written, the rings' space behind
 * them may be reused, and a checkpoint tells a recovery where the file's
 * share of each ring ends.
 */
static void crash_commit(kt_session *s)
{
	if (!s->error)
		note_error(s, kt__writer_sync(s->w, -1));
	for (size_t i = 0; i < s->rings.len; i++) {
		struct kt__ring *r = s->rings.rings[i];
		struct sthread *t = s->error ? NULL : thread_of(s, r);
		if (t)
			kt__ring_checkpoint(r, t->written);
		kt__ring_done(r);
		kt__ring_release(r);
	}
}

static void name_cb(void *ctx, uint32_t id, const char *str, size_t len, const kt_srcloc *loc)
{
	kt_session *s = ctx;
	if (!s->error)
		note_error(s, kt_writer_name(s->w, id, str, len));
	if (loc && !s->error)
		note_error(s, kt_writer_srcloc(s->w, loc));
}

static void category_cb(void *ctx, uint32_t id, uint32_t flags)
{
	kt_session *s = ctx;
	if (!s->error)
		note_error(s, kt_writer_category(s->w, id, flags));
}

static void track_cb(void *ctx, const kt_track_def *t)
{
	kt_session *s = ctx;
	if (!s->error)
		note_error(s, kt_writer_track(s->w, t));
}

/* Drain every ring; returns the most bytes one ring gave. */
static uint64_t drain_all(kt_session *s)
{
	uint64_t fullest = 0;

	/* Completed zero-copy writes give their ring space back here, even
	 * when no ring has anything new: a BLOCK producer may be waiting on
	 * exactly that space. */
	if (s->w)
		kt__writer_poll(s->w);
	if (kt__registry_snapshot(&s->rings))
		return 0;
	if (s->out.file_bytes)
		kt__out_size_tail(s);
	/* Names as they come, so that a file cut short by a crash still
	 * names its events; the end of the file adds only the newer ones. */
	/* Not once capped: the room kept for the end holds the names known
	 * then, and the end writes whatever is new. */
	if (s->w && !s->error && !s->capped) {
		/* A write under the names lock, which a fork takes: not paused. */
		kt__work_hold(1);
		s->names_written = kt__names_after(s->names_written, name_cb, s);
		kt__work_hold(0);
	}
	int retired_seen = 0;
	for (size_t i = 0; i < s->rings.len; i++) {
		struct kt__ring *r = s->rings.rings[i];
		/* Before draining: a retired ring drained after this holds
		 * nothing more. */
		int retired = kt__ring_retired(r);
		uint64_t n = drain(s, r);
		fullest = n > fullest ? n : fullest;
		if (retired) {
			settle_ring(s, r, 1);
			retired_seen = 1;
		}
	}
	/* After the rings, with the same snapshot: a retired ring's thread
	 * has its last switches read before its ring can be recycled. */
	if (s->sched)
		kt__sched_poll(s);
	if (s->sample)
		kt__sample_poll(s);
	if (s->crash)
		crash_commit(s);
	else if (s->w && !s->error)
		/* Encoded chunks, names and drops wait in the writer's buffer
		 * (raw chunks go straight from the rings): hand them over each
		 * period, so a process that dies leaves them in its file. */
		note_error(s, kt__writer_push(s->w));
	if (retired_seen)
		kt__registry_reap();
	if (s->live && s->w)
		kt__live_publish(s->live, s->seg_bytes + kt_writer_get_bytes(s->w), 0);
	return fullest;
}

/*
 * How long the flusher sleeps (flush/flush.h): while the fullest ring
 * fills slower than 7/8 of a chunk a period, until it is predicted to
 * hold that much.  Each wake costs the same whatever it drains (the
 * timer, the futex, io_uring's submission: microseconds in a guest where
 * each is an exit), and a span short of a chunk is cut into smaller
 * chunks than the codec wants.  A burst that comes meanwhile wakes the
 * flusher at the ring's watermark, as always.
 */
uint64_t kt__flush_sleep(uint64_t period_ns, uint64_t max_ns, size_t chunk_max, uint64_t fullest,
			 uint64_t since_ns)
{
	uint64_t want = chunk_max - chunk_max / 8;
	if (max_ns <= period_ns || want == 0)
		return period_ns;
	if (fullest == 0)
		return max_ns;
	if (fullest >= want || since_ns > UINT64_MAX / want)
		return period_ns;
	uint64_t t = since_ns * want / fullest;
	return t < period_ns ? period_ns : t > max_ns ? max_ns : t;
}

/* Scheduler and sample buffers are sized for the period: not stretched. */
static uint64_t next_sleep(const kt_session *s, uint64_t fullest, uint64_t since_ns)
{
	if (s->sched || s->sample)
		return s->period_ns;
	return kt__flush_sleep(s->period_ns, s->sleep_max_ns, s->chunk_max, fullest, since_ns);
}

/*
 * After an I/O error, what the current file holds of the @handed bytes
 * written to it: a regular file's size past the trace's start (the io_uring
 * sink cuts the file where the good bytes end); nothing for anything else
 * (a pipe, /dev/full), as recount_after_error() counts no event there.
 */
static uint64_t bytes_landed(kt_session *s, uint64_t handed)
{
	struct stat sb;
	if (fstat(s->fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size <= s->start_off)
		return 0;
	uint64_t n = (uint64_t)sb.st_size - s->start_off;
	return n < handed ? n : handed;
}

/*
 * After an I/O error, "written" must mean "in the file": read back the
 * prefix that landed and count each thread's events in it; whatever the
 * session handled beyond that was lost.  A file that cannot be read back
 * proves nothing written: anything but a regular file (opening a pipe's
 * other end would take bytes from its reader, or wait for a writer).
 */
static void recount_after_error(kt_session *s)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->fd);
	int fd = is_regular(s->fd) ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	kt_reader *r = NULL;
	uint64_t *in_file = calloc(s->nthreads ? s->nthreads : 1, sizeof(*in_file));
	if (!in_file)
		return;
	if (fd >= 0 && kt__reader_open_fd_at(&r, fd, s->start_off, NULL) == 0) {
		kt_trace_frame f;
		while (kt_reader_next_frame(r, &f) > 0) {
			if (f.kind != KT_FRAME_CHUNK)
				continue;
			for (size_t i = 0; i < s->nthreads; i++)
				if (s->threads[i].thread_id == f.u.chunk.thread_id)
					in_file[i] += f.u.chunk.event_count;
		}
		kt_reader_close(r);
	}
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sthread *t = &s->threads[i];
		uint64_t handled = t->written + t->dropped;
		t->written = in_file[i] < handled ? in_file[i] : handled;
		t->dropped = handled - t->written;
	}
	free(in_file);
}

/*
 * The end of the file, written by the flusher thread like everything
 * before it: an io_uring request belongs to the task that submitted it, so
 * one thread issues all of a session's I/O and waits for it before exiting.
 */
static void finish_file(kt_session *s)
{
	if (!kt__registry_snapshot(&s->rings))
		for (size_t i = 0; i < s->rings.len; i++)
			settle_ring(s, s->rings.rings[i], kt__ring_retired(s->rings.rings[i]));
	kt__clock_calibrate(&s->c1);
	if (!s->w)
		return; /* a segment could not be started: s->error says why */
	for (size_t i = 0; i < s->nthreads && !s->error; i++) {
		struct sthread *t = &s->threads[i];
		if (t->cap_lost)
			note_error(s, kt_writer_drop(s->w, t->thread_id, t->cap_lost, t->cap_first,
						     t->cap_last));
		t->cap_lost = 0;
	}
	/* Writes under the tables' locks, which a fork takes: not paused. */
	kt__work_hold(1);
	s->names_written = kt__names_after(s->names_written, name_cb, s);
	kt__categories_each(category_cb, s);
	kt__tracks_each(track_cb, s);
	kt__work_hold(0);
	for (size_t i = 0; i < s->nthreads && !s->error; i++)
		note_error(s, kt_writer_thread(s->w, s->threads[i].thread_id, s->threads[i].os_tid,
					       s->threads[i].name));
	kt_file_summary fs;
	memset(&fs, 0, sizeof(fs));
	fs.end_wall_ns = kt__wall_ns();
	fs.end_mono_ns = kt__mono_ns();
	fs.clock_ticks1 = s->c1.ticks;
	fs.clock_ns1 = s->c1.mono_ns;
	s->io_backend = kt__writer_backend(s->w);
	fs.io_backend = (uint8_t)s->io_backend;
	if (!s->error)
		note_error(s, kt_writer_finish(s->w, &fs));
	if (!s->error && s->stop_sync)
		note_error(s, kt__writer_sync(s->w, 1));
	uint64_t handed = kt_writer_get_bytes(s->w);
	/* Closing waits for every write in flight and reports their errors. */
	kt__session_forget_kfd(s);
	note_error(s, kt_writer_close(s->w));
	s->w = NULL;
	s->on_disk = s->seg_bytes + (s->error ? bytes_landed(s, handed) : handed);
	/* A segmented file cannot be read back whole: its counts stand. */
	if (s->error && !s->seg)
		recount_after_error(s);
}

void *kt__flusher_main(void *arg)
{
	kt_session *s = arg;
	uint64_t last_sync = kt__mono_ns(), last_drain = last_sync;

	kt__work_adopt();
	/* Here, not on the host's thread: past a file size limit the page's
	 * memfd raises SIGXFSZ, which this thread blocks.  NULL: no page. */
	s->live = kt__live_start(&s->c0);
	/* Acquire pairs with the release in kt_session_stop(): once stop is
	 * seen, everything emitted before the stop call is in the rings. */
	while (!kt__load_acquire(&s->stop)) {
		uint64_t now = kt__mono_ns(), fullest = drain_all(s);
		uint64_t nap = next_sleep(s, fullest, now - last_drain);
		last_drain = now;
		if (s->fsync_ns && !s->error && kt__mono_ns() - last_sync >= s->fsync_ns) {
			note_error(s, kt__writer_sync(s->w, 0));
			last_sync = kt__mono_ns();
		}
		uint32_t seen = kt__ring_sleep_begin();
		/* Acquire, as for the loop condition. */
		if (!kt__load_acquire(&s->stop)) {
			int was = kt__work_pause();
			kt__ring_sleep(seen, nap);
			kt__work_resume(was);
		}
		kt__ring_sleep_end();
	}
	drain_all(s);
	kt__sched_end(s);
	kt__sample_end(s);
	finish_file(s);
	kt__live_publish(s->live, s->on_disk, 1);
	flush_enc_free(s);
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		s->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	kt__work_end();
	return NULL;
}
