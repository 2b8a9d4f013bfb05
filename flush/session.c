/*
 * Sessions and the flusher thread.
 *
 * One flusher per session wakes every flush period, or when a producer
 * crosses a ring's high watermark, and drains each ring's span [tail, head)
 * into chunk frames.  It walks the span once to count the records, find
 * their first and last timestamps and split it at drop markers, which
 * become drop frames.
 *
 * The writer encodes frames into staging buffers that a sink writes: the
 * io_uring sink (registered buffers, several writes in flight) or, where
 * io_uring is refused or not wanted, the pwrite sink.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "flush/flush.h"
#include "format/format.h"
#include "format/reader_internal.h"
#include "recover/recover.h"
#include "ring/ring.h"

#define CHUNK_MAX (256u << 10) /* raw bytes per chunk: LZ4 works well here */
#define URING_BUFS 8            /* staging buffers in flight at most */
#define URING_BUF_SIZE (1u << 20)

struct sthread {
	uint32_t thread_id;
	uint32_t os_tid;
	char *name;
	uint64_t written;
	uint64_t dropped;
	/* Lost to the byte cap and not yet in a drop record. */
	uint64_t cap_lost, cap_first, cap_last;
};

struct kt_session {
	kt_writer *w;
	int fd;
	int own_fd;
	int kfd;                /* the io_uring instance's fd while its sink
				 * lives, else -1; under fd_lock */
	pthread_t thread;
	int stop;
	int stopping;           /* kt_session_stop() has it; under session_lock */
	int codec;
	int level;
	uint64_t period_ns;
	uint64_t fsync_ns;
	int error;              /* first I/O error; then events count as dropped */
	int io_backend;         /* kt_io_backend that writes the file */

	kt__ring_list rings;
	struct sthread *threads; /* sorted by thread_id */
	size_t nthreads, cap_threads;

	kt_clock_calibration c0, c1;
	uint64_t chunks, bytes_raw, refused, on_disk;
	uint64_t seg_bytes;     /* written to segments before the current one */
	uint32_t names_written; /* names [1, n] are in the current file */
	uint32_t names_sized;   /* names [1, n] are counted in names_bytes */
	uint64_t names_bytes;   /* what their entries take, for the reserve */
	uint64_t cpu_ns;        /* the flusher thread's CPU time */
	uint64_t gen;           /* this session's ring generation */
	uint64_t start_off;     /* where the trace starts in the file */

	/* The byte cap (kt_session_options.max_bytes) and its segments. */
	uint64_t max_bytes;     /* 0: none */
	uint64_t seg_limit;     /* bytes one file (segment) may reach */
	uint64_t reserve;       /* kept free for the end of the file */
	size_t chunk_max;       /* raw bytes per chunk */
	int cap_policy;
	int capped;
	uint32_t seg;           /* current segment */
	uint64_t seg_last[KT_CAP_SEGMENTS]; /* last tick written, by segment % N */
	void (*on_cap)(void *ctx);
	int (*open_segment)(void *ctx, uint32_t index);
	void (*retire_segment)(void *ctx, uint32_t index, uint64_t last_tick);
	void *cap_ctx;
	kt_header hdr;          /* for each new segment; strings owned below */
	char host[256];
	char *hdr_strings[3];
	char **hdr_notes;

	struct kt__crash *crash; /* crash files, or NULL */
};

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static kt_session *current;
/* Guards current->kfd, so a fork()ed child closes the instance's fd only
 * while it is still that (see fork_child()).  Held for a store only. */
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
/* Why the calling thread's last kt_session_start() failed. */
static __thread char start_error[256];

int kt__thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t mask;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	sigfillset(&mask);
	/* Faults are delivered to the thread that caused them whatever its
	 * mask, and a blocked one kills the process: leave them alone. */
	static const int sync_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	for (size_t i = 0; i < sizeof(sync_signals) / sizeof(*sync_signals); i++)
		sigdelset(&mask, sync_signals[i]);
	rc = pthread_attr_setsigmask_np(&attr, &mask);
	if (!rc)
		rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -rc;
}

/* The sink is about to close its io_uring instance: a child forked from
 * now on must not close that fd number, which may soon name another file. */
static void forget_kfd(kt_session *s)
{
	pthread_mutex_lock(&fd_lock);
	s->kfd = -1;
	pthread_mutex_unlock(&fd_lock);
}

/* ---- fork -------------------------------------------------------------- */

/*
 * The child of a fork() sees no session (ring.c's handlers take its rings
 * away).  The parent's session goes on in the parent; in the child its
 * descriptors are only a cost - a pipe's reader would wait for the child
 * to close its end too, an io_uring instance would keep its pinned
 * buffers - so the child closes those it can name for sure.  The session's
 * memory is the parent's: the child leaves it alone.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&session_lock);
	pthread_mutex_lock(&fd_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&session_lock);
}

static void fork_child(void)
{
	kt_session *s = current;
	current = NULL;
	if (s && s->kfd >= 0)
		close(s->kfd);
	/* Closed only after current is cleared (kt_session_stop()). */
	if (s && s->own_fd)
		close(s->fd);
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&session_lock);
}

static void register_fork(void)
{
	/* Registered after ring.c's (kt__ensure_init() runs first), so these
	 * run first before a fork and last after: session_lock, then the
	 * registry's, the order every other path takes them in. */
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

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

static void note_error(kt_session *s, int rc)
{
	if (rc && !s->error)
		s->error = rc;
}

static void ref_done(void *ctx, int res)
{
	(void)res; /* a failed write is the session's error; the space is free either way */
	kt__ring_unhold(ctx);
}

/*
 * A sink for @fd: io_uring where the kernel and any seccomp policy allow it
 * and @io does not refuse it; the pwrite sink does the same work otherwise.
 * io_uring writes at explicit offsets with several in flight: only a
 * regular file or a block device without O_APPEND keeps them in place.
 * Pipes, sockets and append-mode files take the pwrite sink, which writes
 * in order.
 */
static int new_sink(int fd, int io, kt__sink **out)
{
	struct stat sb;
	int flags = fcntl(fd, F_GETFL);
	int positional = fstat(fd, &sb) == 0 && (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode)) &&
			 flags >= 0 && !(flags & O_APPEND);
	*out = NULL;
	if (io == KT_IO_URING && !positional)
		return -EINVAL;
	if (io != KT_IO_PWRITE && positional) {
		int rc = kt__uring_sink_new(fd, URING_BUFS, URING_BUF_SIZE, out);
		if (rc && io == KT_IO_URING)
			return rc;
	}
	if (!*out && !(*out = kt__fd_sink_new(fd)))
		return -ENOMEM;
	return 0;
}

/* Events lost to the byte cap: a drop record at the end of the file
 * (whose room is reserved) accounts for them. */
static void cap_note(struct sthread *t, uint64_t count, uint64_t first, uint64_t last)
{
	if (!t->cap_lost)
		t->cap_first = first;
	t->cap_lost += count;
	t->cap_last = last;
}

static void name_bytes_cb(void *ctx, uint32_t id, const char *str, size_t len)
{
	(void)id;
	(void)str;
	*(uint64_t *)ctx += 32 + len;
}

/*
 * What the end of the file may take: every name, a thread entry, a drop
 * record and a summary row per thread, the summary, and slack for threads
 * that have not shown up yet.
 */
static void update_reserve(kt_session *s)
{
	/* Names only grow: size the new ones, not all of them each pass. */
	s->names_sized = kt__names_after(s->names_sized, name_bytes_cb, &s->names_bytes);
	uint64_t n = 8192 + s->names_bytes;
	size_t threads = s->nthreads > s->rings.len ? s->nthreads : s->rings.len;
	for (size_t i = 0; i < s->nthreads; i++)
		n += s->threads[i].name ? strlen(s->threads[i].name) : 0;
	s->reserve = n + threads * (64 + 64 + 32 + 64);
}

/*
 * Start the next segment (KT_CAP_KEEP_NEWEST): close this one, which
 * waits for its writes in flight and so gives back the ring space that
 * zero-copy writes still read, then write the header into the next, and
 * let the owner delete the segment that falls out of the window.
 */
static int rotate(kt_session *s)
{
	if (!s->open_segment || s->error)
		return -1;
	int fd = s->open_segment(s->cap_ctx, s->seg + 1);
	if (fd < 0)
		return fd;
	s->seg_bytes += kt_writer_bytes(s->w);
	/* The sink goes on to the next file: setting up another io_uring
	 * with its registered buffers would stall the flusher for ~10 ms. */
	kt__sink *sink = NULL;
	note_error(s, kt__writer_release(s->w, &sink));
	s->w = NULL;
	int rc = s->error ? s->error : sink->retarget(sink, fd);
	if (!rc)
		rc = kt__writer_open_sink(&s->w, sink, fd, 0, 0, &s->hdr);
	if (rc) {
		forget_kfd(s);
		if (sink)
			sink->close(sink);
		note_error(s, rc);
		return rc;
	}
	s->fd = fd;
	s->start_off = 0;
	s->names_written = 0; /* every segment carries every name */
	uint32_t next = s->seg + 1;
	if (next >= KT_CAP_SEGMENTS && s->retire_segment)
		s->retire_segment(s->cap_ctx, next - KT_CAP_SEGMENTS,
				  s->seg_last[next % KT_CAP_SEGMENTS]);
	s->seg_last[next % KT_CAP_SEGMENTS] = 0;
	s->seg = next;
	return 0;
}

/* Whether a frame of about @need bytes may go into the file under the cap. */
static int room(kt_session *s, uint64_t need)
{
	if (!s->max_bytes)
		return 1;
	if (s->capped)
		return 0;
	if (kt_writer_bytes(s->w) + need + s->reserve <= s->seg_limit)
		return 1;
	if (s->cap_policy == KT_CAP_KEEP_NEWEST && rotate(s) == 0 &&
	    kt_writer_bytes(s->w) + need + s->reserve <= s->seg_limit)
		return 1;
	s->capped = 1;
	if (s->on_cap)
		s->on_cap(s->cap_ctx);
	return 0;
}

static void seg_saw(kt_session *s, uint64_t last)
{
	uint64_t *l = &s->seg_last[s->seg % KT_CAP_SEGMENTS];
	if (last > *l)
		*l = last;
}

/* The records of @span from ring position @pos, @len bytes, as a chunk. */
static void put_chunk(kt_session *s, struct sthread *t, struct kt__ring *r, const kt__span *span,
		      uint64_t pos, size_t len, uint32_t count, uint64_t first, uint64_t last)
{
	const uint8_t *p = span->bytes + (pos - span->from);
	struct kt__ring_ref *hold;
	if (!count)
		return;
	if (!s->error &&
	    !room(s, 128 + (s->codec == KT_CODEC_NONE ? len : (size_t)LZ4_compressBound((int)len)))) {
		t->dropped += count;
		cap_note(t, count, first, last);
		return;
	}
	if (!s->error && s->codec == KT_CODEC_NONE && (hold = kt__ring_hold(r, pos))) {
		/* Raw chunks are written straight from the ring; its space
		 * comes back when the write completes.  Until then nothing
		 * can change these bytes under the kernel (or between the
		 * checksum and the write): they are below head, which only
		 * their thread moves and only forward; the hold keeps tail
		 * from passing them; a signal handler's emit inside an emit
		 * is refused (katra.h, kt__emit); and a fork()ed child has no
		 * mapping of them (ring.c, map_halves). */
		note_error(s, kt__writer_chunk_ref(s->w, t->thread_id, p, len, count, first, last,
						   ref_done, hold));
	} else if (!s->error) {
		note_error(s, kt__writer_chunk_known(s->w, t->thread_id, (unsigned)s->codec, s->level,
						     p, len, count, first, last));
	}
	if (s->error) {
		/* The file is gone bad: these events are lost, and say so. */
		t->dropped += count;
		return;
	}
	t->written += count;
	s->chunks++;
	s->bytes_raw += len;
	seg_saw(s, last);
}

static void put_drop(kt_session *s, struct sthread *t, uint64_t count, uint64_t first,
		     uint64_t last)
{
	t->dropped += count;
	if (s->error)
		return;
	if (!room(s, 64)) {
		cap_note(t, count, first, last);
		return;
	}
	note_error(s, kt_writer_drop(s->w, t->thread_id, count, first, last));
	seg_saw(s, last);
}

/*
 * Drain one ring's published span into chunk frames, cut where the chunk
 * is full and at drop markers, which become drop frames.
 */
static void drain(kt_session *s, struct kt__ring *r)
{
	kt__span span;
	if (!kt__ring_peek(r, &span))
		return;
	struct sthread *t = thread_of(s, r);
	if (!t)
		return; /* out of memory: try again next period */
	kt__ring_iter it;
	kt__ring_rec rec;
	uint64_t start = span.from, first = 0, last = 0;
	uint32_t count = 0;

	kt__ring_iter_init(&it, r, &span);
	while (kt__ring_next(&it, &rec)) {
		uint64_t end = rec.pos + rec.size;
		if (!rec.bytes) {
			put_chunk(s, t, r, &span, start, rec.pos - start, count, first, last);
			count = 0;
			if (!rec.stale)
				put_drop(s, t, rec.count, rec.first_ts, rec.last_ts);
			start = end;
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
	kt__ring_read(r, span.to);
	if (!s->crash)
		kt__ring_done(r);
	kt__ring_release(r);
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

static void name_cb(void *ctx, uint32_t id, const char *str, size_t len)
{
	kt_session *s = ctx;
	if (!s->error)
		note_error(s, kt_writer_name(s->w, id, str, len));
}

static void drain_all(kt_session *s)
{
	/* Completed zero-copy writes give their ring space back here, even
	 * when no ring has anything new: a BLOCK producer may be waiting on
	 * exactly that space. */
	if (s->w)
		kt__writer_poll(s->w);
	if (kt__registry_snapshot(&s->rings))
		return;
	if (s->max_bytes)
		update_reserve(s);
	/* Names as they come, so that a file cut short by a crash still
	 * names its events; the end of the file adds only the newer ones. */
	/* Not once capped: the room kept for the end holds the names known
	 * then, and the end writes whatever is new. */
	if (s->w && !s->error && !s->capped)
		s->names_written = kt__names_after(s->names_written, name_cb, s);
	int retired_seen = 0;
	for (size_t i = 0; i < s->rings.len; i++) {
		struct kt__ring *r = s->rings.rings[i];
		/* Before draining: a retired ring drained after this holds
		 * nothing more. */
		int retired = kt__ring_retired(r);
		drain(s, r);
		if (retired) {
			settle_ring(s, r, 1);
			retired_seen = 1;
		}
	}
	if (s->crash)
		crash_commit(s);
	if (retired_seen)
		kt__registry_reap();
}


static int is_regular(int fd)
{
	struct stat sb;
	return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
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
	s->names_written = kt__names_after(s->names_written, name_cb, s);
	for (size_t i = 0; i < s->nthreads && !s->error; i++)
		note_error(s, kt_writer_thread(s->w, s->threads[i].thread_id, s->threads[i].os_tid,
					       s->threads[i].name));
	kt_file_summary fs;
	memset(&fs, 0, sizeof(fs));
	fs.end_wall_ns = kt__wall_ns();
	fs.end_mono_ns = kt__mono_ns();
	fs.clock_ticks1 = s->c1.ticks;
	fs.clock_ns1 = s->c1.mono_ns;
	fs.io_backend = (uint8_t)s->io_backend;
	if (!s->error)
		note_error(s, kt_writer_finish(s->w, &fs));
	if (!s->error)
		note_error(s, kt__writer_sync(s->w, 1));
	uint64_t handed = kt_writer_bytes(s->w);
	/* Closing waits for every write in flight and reports their errors. */
	forget_kfd(s);
	note_error(s, kt_writer_close(s->w));
	s->w = NULL;
	s->on_disk = s->seg_bytes + (s->error ? bytes_landed(s, handed) : handed);
	/* A segmented file cannot be read back whole: its counts stand. */
	if (s->error && !s->seg)
		recount_after_error(s);
}

static void *flusher_main(void *arg)
{
	kt_session *s = arg;
	uint64_t last_sync = kt__mono_ns();

	/* Acquire pairs with the release in kt_session_stop(): once stop is
	 * seen, everything emitted before the stop call is in the rings. */
	while (!kt__load_acquire(&s->stop)) {
		drain_all(s);
		if (s->fsync_ns && !s->error && kt__mono_ns() - last_sync >= s->fsync_ns) {
			note_error(s, kt__writer_sync(s->w, 0));
			last_sync = kt__mono_ns();
		}
		uint32_t seen = kt__ring_sleep_begin();
		/* Acquire, as for the loop condition. */
		if (!kt__load_acquire(&s->stop))
			kt__ring_sleep(seen, s->period_ns);
		kt__ring_sleep_end();
	}
	drain_all(s);
	finish_file(s);
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		s->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}


/* No more crash files: new rings go back to memfds, and the directory
 * goes (rings keep their mappings of the unlinked files). */
static void stop_crash(kt_session *s)
{
	if (!s->crash)
		return;
	kt__registry_set_backing(NULL);
	kt__crash_finish(s->crash);
	s->crash = NULL;
}

static void session_free(kt_session *s)
{
	stop_crash(s);
	if (s->w)
		kt_writer_close(s->w);
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	for (size_t i = 0; i < s->nthreads; i++)
		free(s->threads[i].name);
	free(s->threads);
	free(s->rings.rings);
	for (size_t i = 0; i < 3; i++)
		free(s->hdr_strings[i]);
	for (uint32_t i = 0; s->hdr_notes && i < s->hdr.note_count; i++)
		free(s->hdr_notes[i]);
	free(s->hdr_notes);
	free(s);
}

/* Keep a copy of the header, strings and all, for the segments to come. */
static int keep_header(kt_session *s, const kt_header *h)
{
	s->hdr = *h;
	snprintf(s->host, sizeof(s->host), "%s", h->host ? h->host : "");
	s->hdr.host = s->host;
	const char **str[3] = { &s->hdr.workload, &s->hdr.run_id, &s->hdr.capture_id };
	for (size_t i = 0; i < 3; i++)
		if (*str[i] && !(*str[i] = s->hdr_strings[i] = strdup(*str[i])))
			return -ENOMEM;
	if (h->note_count) {
		s->hdr.note_count = 0;
		if (!(s->hdr_notes = calloc(h->note_count, sizeof(char *))))
			return -ENOMEM;
		s->hdr.notes = (const char *const *)s->hdr_notes;
		for (uint32_t i = 0; i < h->note_count; i++, s->hdr.note_count++)
			if (!(s->hdr_notes[i] = strdup(h->notes[i] ? h->notes[i] : "")))
				return -ENOMEM;
	}
	return 0;
}

/* Say why the start failed, for kt_session_start_error(): "@what: why".
 * Returns @rc. */
__attribute__((format(printf, 2, 3))) static int start_fail(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(start_error, sizeof(start_error), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(start_error))
		snprintf(start_error + n, sizeof(start_error) - (size_t)n, ": %s", kt_strerror(rc));
	return rc;
}

const char *kt_session_start_error(void)
{
	return start_error;
}

static int uses_fd(const kt_session_options *o)
{
	return o->use_fd || o->fd > 0;
}

static uint64_t seg_limit_of(const kt_session_options *o)
{
	return o->cap_policy == KT_CAP_KEEP_NEWEST ? o->max_bytes / KT_CAP_SEGMENTS : o->max_bytes;
}

/* @opts with the environment's KT_IO applied, into *@o, checked. */
static int check_options(const char *path, const kt_session_options *opts, kt_session_options *o)
{
	*o = opts ? *opts : (kt_session_options){ 0 };
	if (o->codec < KT_CODEC_NONE || o->codec > KT_CODEC_LZ4_DELTA)
		return start_fail(-EINVAL, "codec %d", o->codec);
	const char *env = getenv("KT_IO");
	if (env && *env) {
		if (!strcmp(env, "pwrite"))
			o->io = KT_IO_PWRITE;
		else if (!strcmp(env, "uring"))
			o->io = KT_IO_URING;
		else if (!strcmp(env, "auto"))
			o->io = KT_IO_AUTO;
		else
			return start_fail(-EINVAL, "KT_IO is not pwrite, uring or auto");
	}
	if (o->io != KT_IO_AUTO && o->io != KT_IO_URING && o->io != KT_IO_PWRITE)
		return start_fail(-EINVAL, "I/O backend %d", o->io);
	if (uses_fd(o) ? o->fd < 0 : !path)
		return start_fail(-EINVAL, "no trace file (a path, or an fd with use_fd)");
	if (o->cap_policy != KT_CAP_STOP && o->cap_policy != KT_CAP_KEEP_NEWEST)
		return start_fail(-EINVAL, "cap policy %d", o->cap_policy);
	/* Below 64 KiB a file holds little more than its own end. */
	if (o->max_bytes && (seg_limit_of(o) < (64u << 10) ||
			     (o->cap_policy == KT_CAP_KEEP_NEWEST && !o->open_segment)))
		return start_fail(-EINVAL, "byte cap (max_bytes, open_segment)");
	return 0;
}

static kt_session *session_new(const kt_session_options *o)
{
	kt_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = s->kfd = -1;
	s->codec = o->codec;
	s->level = o->codec_level > 0 ? o->codec_level : 1;
	s->period_ns = o->flush_period_ns ? o->flush_period_ns : 1000000;
	s->fsync_ns = o->fsync_interval_ns;
	s->max_bytes = o->max_bytes;
	s->seg_limit = seg_limit_of(o);
	s->cap_policy = o->cap_policy;
	s->on_cap = o->on_cap;
	s->open_segment = o->open_segment;
	s->retire_segment = o->retire_segment;
	s->cap_ctx = o->cap_ctx;
	/* Small caps take small chunks, so a segment holds several. */
	s->chunk_max = CHUNK_MAX;
	if (o->max_bytes && s->seg_limit / 8 < CHUNK_MAX)
		s->chunk_max = s->seg_limit / 8;
	return s;
}

/*
 * The trace's file, opened without touching what it holds: it is cut only
 * once every other step of the start has worked (truncate_output()), so a
 * start that fails leaves an existing file as it was, and removes one it
 * created (*@created).  O_NONBLOCK only for the open: a FIFO without a
 * reader fails at once (ENXIO) instead of blocking the caller for one.
 */
static int open_output(kt_session *s, const char *path, const kt_session_options *o,
		       int *created)
{
	*created = 0;
	if (uses_fd(o)) {
		s->fd = o->fd;
		return fcntl(s->fd, F_GETFL) < 0 ? start_fail(-errno, "trace fd %d", s->fd) : 0;
	}
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	s->fd = open(path, flags | O_CREAT | O_EXCL, 0644);
	*created = s->fd >= 0;
	if (s->fd < 0 && errno == EEXIST)
		s->fd = open(path, flags);
	if (s->fd < 0 && errno == ENOENT) /* a dangling symlink: as O_CREAT does */
		s->fd = open(path, flags | O_CREAT, 0644);
	if (s->fd < 0)
		return start_fail(-errno, "trace file %s", path);
	s->own_fd = 1;
	int fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || fcntl(s->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return start_fail(-errno, "trace file %s", path);
	return 0;
}

/* What O_TRUNC would have done at the open, now that nothing can fail
 * short of the file itself. */
static int truncate_output(kt_session *s, const char *path)
{
	if (s->own_fd && is_regular(s->fd) && ftruncate(s->fd, 0) < 0)
		return start_fail(-errno, "trace file %s", path);
	return 0;
}

/* Crash files, if asked for: the option, else a non-empty KT_CRASH_DIR.
 * The registry backs every ring with them from then on. */
static int start_crash(kt_session *s, const kt_session_options *o)
{
	const char *dir = o->crash_dir ? o->crash_dir : getenv("KT_CRASH_DIR");
	if (!dir || (!o->crash_dir && !*dir))
		return 0;
	int rc = kt__crash_start(&s->crash, dir, s->fd, s->start_off);
	if (!rc && (rc = kt__registry_set_backing(kt__crash_backing(s->crash))))
		stop_crash(s);
	if (rc)
		return start_fail(rc, "crash directory in %s (%s)", *dir ? dir : "/dev/shm",
				  o->crash_dir ? "crash_dir" : "KT_CRASH_DIR");
	return 0;
}

/* The file header; its strings point into @o and @host. */
static void build_header(kt_session *s, const kt_session_options *o, kt_header *h,
			 const char *host)
{
	kt_header_init(h);
	kt__clock_calibrate(&s->c0);
	h->clock = s->c0;
	h->start_wall_ns = kt__wall_ns();
	h->start_mono_ns = kt__mono_ns();
	h->process_id = (uint64_t)getpid();
	h->host = host;
	h->workload = o->workload;
	h->capture.ring_size = kt__ring_size();
	h->capture.overflow = (uint8_t)kt__overflow_policy();
	h->capture.codec = (uint8_t)s->codec;
	h->capture.io = (uint8_t)o->io;
	h->capture.codec_level = s->level;
	h->capture.flush_period_ns = s->period_ns;
	h->capture.fsync_interval_ns = s->fsync_ns;
	h->capture.max_bytes = o->max_bytes;
	h->capture.max_duration_ns = o->max_duration_ns;
	if (o->run_id && o->run_id[0]) {
		h->flags |= KT_HDR_CAPTURE;
		h->run_id = o->run_id;
		h->capture_id = o->capture_id;
		h->epoch = o->epoch;
	}
	h->note_count = o->note_count;
	h->notes = o->notes;
}

/*
 * Everything that can fail for a reason other than the file comes before
 * truncate_output(): the options, the sink, crash files, the header.  Under
 * session_lock.  On failure the caller frees @s; @sink is freed here.
 */
static int start_locked(kt_session *s, const char *path, const kt_session_options *o)
{
	char host[256] = "";
	kt_header h;
	kt__sink *sink = NULL;
	int rc;

	if ((rc = new_sink(s->fd, o->io, &sink)))
		return start_fail(rc, "I/O backend (io_uring set-up)");
	s->io_backend = sink->backend;
	kt__registry_set_session(1);
	gethostname(host, sizeof(host) - 1);
	build_header(s, o, &h, host);
	if ((rc = start_crash(s, o)))
		goto err;
	if ((rc = kt__header_validate(&h))) {
		start_fail(rc, "trace header (workload, run id, capture id or notes)");
		goto err;
	}
	if ((s->cap_policy == KT_CAP_KEEP_NEWEST && s->max_bytes && (rc = keep_header(s, &h))) ||
	    (rc = truncate_output(s, path)))
		goto err;
	if ((rc = kt__writer_open_sink(&s->w, sink, s->fd, 0, s->start_off, &h))) {
		start_fail(rc, "trace writer");
		goto err;
	}
	s->kfd = kt__uring_sink_fd(sink);
	sink = NULL;
	/* Crash files: the header is on disk before any event can be. */
	if (s->crash && (rc = kt__writer_sync(s->w, -1))) {
		start_fail(rc, "trace file %s", path ? path : "(fd)");
		goto err;
	}
	s->gen = kt__registry_reset_for_session();
	if (s->crash && (rc = kt__crash_publish(s->crash, &h, s->gen))) {
		start_fail(rc, "crash directory %s", kt__crash_dir(s->crash));
		goto err;
	}
	if ((rc = kt__thread_start(&s->thread, flusher_main, s))) {
		start_fail(rc, "flusher thread");
		goto err;
	}
	return 0;
err:
	if (sink)
		sink->close(sink);
	kt__registry_set_session(0);
	return rc;
}

int kt_session_start(const char *path, const kt_session_options *opts, kt_session **out)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	kt_session_options o;
	int rc, created = 0;

	*out = NULL;
	start_error[0] = 0;
	if ((rc = check_options(path, opts, &o)))
		return rc;
	if ((rc = kt__ensure_init()))
		return start_fail(rc, "katra's configuration");
	pthread_once(&fork_once, register_fork);

	pthread_mutex_lock(&session_lock);
	kt_session *s = NULL;
	if (current)
		rc = start_fail(KT_EBUSY, "this process");
	else if (!(s = session_new(&o)))
		rc = start_fail(-ENOMEM, "session");
	else if (!(rc = open_output(s, path, &o, &created))) {
		off_t start = lseek(s->fd, 0, SEEK_CUR);
		s->start_off = start > 0 ? (uint64_t)start : 0;
		rc = start_locked(s, path, &o);
	}
	if (rc) {
		if (created)
			unlink(path);
		if (s)
			session_free(s);
		pthread_mutex_unlock(&session_lock);
		return rc;
	}
	current = s;
	/* Release: a producer that sees the session on also sees the rings
	 * reset above (it re-reads tail with acquire in any case). */
	kt__store_release(&kt__active, 1);
	pthread_mutex_unlock(&session_lock);
	*out = s;
	return 0;
}

static void fill_summary(const kt_session *s, kt_summary *sum)
{
	sum->io_backend = s->io_backend;
	sum->io_error = s->error;
	sum->chunks = s->chunks;
	sum->bytes_raw = s->bytes_raw;
	sum->bytes_on_disk = s->on_disk;
	sum->flusher_cpu_ns = s->cpu_ns;
	sum->events_refused = s->refused;
	sum->clock_start = s->c0;
	sum->clock_stop = s->c1;
	sum->capped = s->capped;
	sum->segments = s->seg + 1;
	sum->threads = calloc(s->nthreads ? s->nthreads : 1, sizeof(*sum->threads));
	if (sum->threads)
		sum->thread_count = (uint32_t)s->nthreads;
	for (size_t i = 0; i < s->nthreads; i++) {
		sum->events_written += s->threads[i].written;
		sum->events_dropped += s->threads[i].dropped;
		if (sum->threads) {
			sum->threads[i].thread_id = s->threads[i].thread_id;
			sum->threads[i].written = s->threads[i].written;
			sum->threads[i].dropped = s->threads[i].dropped;
		}
	}
}

int kt_session_stop(kt_session *s, kt_summary *sum)
{
	if (sum)
		memset(sum, 0, sizeof(*sum));
	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&session_lock);
	if (s != current || s->stopping) {
		pthread_mutex_unlock(&session_lock);
		return KT_ENOSESSION;
	}
	s->stopping = 1;
	/* Relaxed: producers that still see it on write into their rings,
	 * which the final drain reads or the next session discards. */
	kt__store_relaxed(&kt__active, 0);
	/* Release pairs with the flusher's acquire of stop. */
	kt__store_release(&s->stop, 1);
	kt__ring_wake_consumer();
	/* Not held across the drain: a fork() waits for session_lock (its
	 * prepare handler), and must not wait for a slow disk.  current stays
	 * set, so no other session starts meanwhile. */
	pthread_mutex_unlock(&session_lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&session_lock);
	kt__registry_reap();
	kt__registry_set_session(0);
	/* A clean stop leaves nothing to recover: the directory goes. */
	stop_crash(s);
	current = NULL;
	pthread_mutex_unlock(&session_lock);

	int rc = s->error;
	if (sum)
		fill_summary(s, sum);
	session_free(s);
	return rc;
}

void kt_summary_release(kt_summary *sum)
{
	if (!sum)
		return;
	free(sum->threads);
	sum->threads = NULL;
	sum->thread_count = 0;
}
