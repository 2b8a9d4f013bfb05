/*
 * Sessions: starting one (its options, its file, its sink, crash files,
 * the header, the flusher thread), stopping it, and what fork() does to
 * it.  The flusher thread is flusher.c's; what the file may take and the
 * files after it are the output's (kt__output, asked through output.c).
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flush/live.h"
#include "flush/session_impl.h"

#define URING_BUFS 8 /* staging buffers in flight at most */
#define URING_BUF_SIZE (1u << 20)

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
void kt__session_forget_kfd(kt_session *s)
{
	pthread_mutex_lock(&fd_lock);
	s->kfd = -1;
	pthread_mutex_unlock(&fd_lock);
}

static void forget_kfd(void *s)
{
	kt__session_forget_kfd(s);
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
	/* First: a thread of katra's in its work may take session_lock (a
	 * snapshot request) or the registry's before it pauses. */
	kt__work_fork(0);
	pthread_mutex_lock(&session_lock);
	pthread_mutex_lock(&fd_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&session_lock);
	kt__work_fork(1);
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
	if (s)
		kt__control_fork_child(s);
	if (s)
		kt__sched_fork_child(s->sched);
	if (s)
		kt__sample_fork_child(s->sample);
	kt__live_fork_child();
	pthread_mutex_unlock(&fd_lock);
	pthread_mutex_unlock(&session_lock);
	kt__work_fork(2);
	/* Last: under `katra record` the child starts a session of its own. */
	kt__autostart_child(s);
}

/*
 * At load, before any thread can hold session_lock: registered later at
 * run time, a fork() racing the registration could run ring's handlers
 * without these, and the child would inherit session_lock held.  Priority
 * 102, after ring.c's 101, so these run first before a fork and last
 * after: session_lock, then the registry's, the order every other path
 * takes them in.
 */
__attribute__((constructor(102))) static void register_fork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	kt__fd_sink_set_idle(kt__work_pause, kt__work_resume);
}

/*
 * A sink for @fd: io_uring where the kernel and any seccomp policy allow it
 * and @io does not refuse it; the pwrite sink does the same work otherwise.
 * io_uring writes at explicit offsets with several in flight: only a
 * regular file or a block device without O_APPEND keeps them in place.
 * Pipes, sockets and append-mode files take the pwrite sink, which writes
 * in order.
 */
static int new_sink(kt_session *s, int io, kt__sink **out)
{
	int fd = s->fd;
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
	if (!*out) {
		if (!(*out = kt__fd_sink_new(fd)))
			return -ENOMEM;
		kt__fd_sink_set_timeout(*out, s->io_timeout, &s->stop_at);
	}
	return 0;
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
	kt__control_stop(s);
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
	kt__snapshot_free(s);
	kt__sched_free(s->sched);
	kt__sample_free(s->sample);
	kt__live_stop(s->live);
	pthread_mutex_destroy(&s->snap_lock);
	pthread_cond_destroy(&s->snap_done);
	free(s);
}

/* Say why the start failed, for kt_session_get_start_error(): "@what: why".
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

const char *kt_session_get_start_error(void)
{
	return start_error;
}

static int uses_fd(const kt_session_options *o)
{
	return (o->given & KT_GIVEN_FD) || o->fd > 0;
}

/* @opts with the environment's KT_IO applied, into *@o, checked. */
static int check_options(const char *path, const kt_session_options *opts, kt_session_options *o)
{
	*o = opts ? *opts : (kt_session_options){ 0 };
	if (o->given & ~(unsigned)KT_GIVEN_ALL)
		return start_fail(-EINVAL, "given bits %#x", o->given);
	/* Zero is the default, compact, unless it was given: raw. */
	if (o->codec == KT_CODEC_NONE && !(o->given & KT_GIVEN_CODEC))
		o->codec = KT_CODEC_COMPACT;
	else if (o->codec < KT_CODEC_NONE || o->codec > KT_CODEC_COMPACT_ZSTD)
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
	if (o->stop_sync != KT_STOP_SYNC_DATA && o->stop_sync != KT_STOP_SYNC_NONE)
		return start_fail(-EINVAL, "stop sync %d", o->stop_sync);
	if (o->mode != KT_SESSION_NORMAL && o->mode != KT_SESSION_FLIGHT)
		return start_fail(-EINVAL, "session mode %d", o->mode);
	const char *sched = getenv("KT_SCHED");
	if (sched && *sched)
		o->sched = strcmp(sched, "0") ? KT_SCHED_ON : KT_SCHED_OFF;
	if (o->sched != KT_SCHED_OFF && o->sched != KT_SCHED_ON)
		return start_fail(-EINVAL, "sched %d", o->sched);
	if (kt__sample_env(&o->sample_hz))
		return start_fail(-EINVAL, "sample rate (KT_SAMPLE_HZ) over %u", KT_SAMPLE_HZ_MAX);
	if (o->mode == KT_SESSION_FLIGHT)
		return 0; /* no file: the rest is about writing one */
	if (uses_fd(o) ? o->fd < 0 : !path)
		return start_fail(-EINVAL, "no trace file (a path, or an fd with KT_GIVEN_FD)");
	return 0;
}

/* Below 64 KiB a file holds little more than its own end. */
static int check_output(const kt__output *out)
{
	if (out && out->file_bytes &&
	    (out->file_bytes < (64u << 10) || !out->room || !out->full ||
	     (out->next && !out->started)))
		return start_fail(-EINVAL, "byte cap (the output's file size or callbacks)");
	return 0;
}

static kt_session *session_new(const kt_session_options *o, const kt__output *out)
{
	kt_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = s->kfd = -1;
	s->flight = o->mode == KT_SESSION_FLIGHT;
	s->ctl_fd = -1;
	pthread_mutex_init(&s->snap_lock, NULL);
	pthread_cond_init(&s->snap_done, NULL);
	s->codec = o->codec;
	s->level = o->codec_level > 0 ? o->codec_level : 1;
	s->period_ns = o->flush_period_ns ? o->flush_period_ns : 1000000;
	/* A period the caller set is kept; the default stretches. */
	s->sleep_max_ns = o->flush_period_ns ? s->period_ns : KT__FLUSH_STRETCH * s->period_ns;
	s->fsync_ns = o->fsync_interval_ns;
	s->stop_sync = o->stop_sync != KT_STOP_SYNC_NONE;
	s->io_timeout = o->io_timeout_ns ? o->io_timeout_ns : KT_IO_TIMEOUT_DEFAULT_NS;
	if (s->io_timeout == UINT64_MAX)
		s->io_timeout = 0;
	if (out)
		s->out = *out;
	/* Small files take small chunks, so a file holds several. */
	s->chunk_max = KT__CHUNK_MAX;
	if (s->out.file_bytes && s->out.file_bytes / 8 < KT__CHUNK_MAX)
		s->chunk_max = s->out.file_bytes / 8;
	return s;
}

/*
 * The trace's file, opened without touching what it holds: it is cut only
 * once every other step of the start has worked (truncate_output()), so a
 * start that fails leaves an existing file as it was, and removes one it
 * created (*@created).  O_NONBLOCK only for the open: a FIFO without a
 * reader fails at once (ENXIO) instead of blocking the caller for one.
 */
static int open_output(kt_session *s, const char *path, const kt_session_options *o, int *created)
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
	/* Not at 0-2 in a daemon with them closed: its stderr would write
	 * into the trace. */
	if ((s->fd = kt__fd_high(s->fd)) < 0)
		return start_fail(s->fd, "trace file %s", path);
	s->own_fd = 1;
	int fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || fcntl(s->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return start_fail(-errno, "trace file %s", path);
	return 0;
}

/*
 * Where the trace starts in its file: the fd's offset, but the file's end
 * for O_APPEND, where every write lands whatever its offset (pwrite too,
 * on Linux).  The crash control, the recount after an error and
 * bytes_on_disk all count from here.  fstat, not lseek: the caller's
 * offset stays as it was.
 */
static uint64_t trace_start(int fd)
{
	struct stat sb;
	int fl = fcntl(fd, F_GETFL);
	off_t start = lseek(fd, 0, SEEK_CUR);
	if (fl >= 0 && (fl & O_APPEND) && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
		start = sb.st_size;
	return start > 0 ? (uint64_t)start : 0;
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
static void build_header(kt_session *s, const kt_session_options *o, kt_header *h, const char *host)
{
	kt_header_init(h);
	kt__categories_start();
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
	h->capture.max_bytes = s->out.max_bytes;
	h->capture.max_duration_ns = o->max_duration_ns;
	if (o->run_id && o->run_id[0]) {
		h->flags |= KT_HDR_CAPTURE;
		h->run_id = o->run_id;
		h->capture_id = o->capture_id;
		h->epoch = o->epoch;
		s->run_of_env = kt__autostart_run_is_env(o->run_id, o->epoch);
	}
	h->note_count = o->note_count;
	h->notes = o->notes;
}

void kt__header_add_note(kt_header *h, const char ***notes, const char *note)
{
	const char **n;
	if (h->note_count >= KT_MAX_NOTES ||
	    !(n = realloc(*notes, (h->note_count + 1) * sizeof(char *))))
		return;
	if (!*notes)
		for (uint32_t i = 0; i < h->note_count; i++)
			n[i] = h->notes[i];
	n[h->note_count] = note;
	*notes = n;
	h->notes = n;
	h->note_count++;
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
	const char **notes = NULL;
	int rc;

	if ((rc = new_sink(s, o->io, &sink)))
		return start_fail(rc, "I/O backend (io_uring set-up)");
	s->io_backend = sink->backend;
	kt__registry_set_session(1);
	gethostname(host, sizeof(host) - 1);
	build_header(s, o, &h, host);
	kt__sched_start(s, o, &h, &notes);
	static char snote[200]; /* the header keeps a pointer to it */
	if (kt__sample_setup(s, o->sample_hz, snote, sizeof(snote)))
		kt__header_add_note(&h, &notes, snote);
	if ((rc = start_crash(s, o)))
		goto err;
	if ((rc = kt__header_validate(&h))) {
		start_fail(rc, "trace header (workload, run id, capture id or notes)");
		goto err;
	}
	if ((s->out.next && (rc = kt__session_keep_header(s, &h))) ||
	    (rc = truncate_output(s, path)))
		goto err;
	if ((rc = kt__writer_open_sink(&s->w, sink, s->fd, 0, s->start_off, &h)) ||
	    (rc = kt__write_self_process(s->w, h.start_mono_ns))) {
		start_fail(rc, "trace writer");
		goto err;
	}
	s->kfd = kt__uring_sink_fd(sink);
	kt__uring_sink_on_close(sink, forget_kfd, s);
	sink = NULL;
	/* Crash files: the header is on disk before any event can be. */
	if (s->crash && (rc = kt__writer_sync(s->w, -1))) {
		start_fail(rc, "trace file %s", path ? path : "(fd)");
		goto err;
	}
	s->gen = kt__registry_reset_for_session();
	if (s->crash && (rc = kt__crash_publish(s->crash, &h, s->gen, 0))) {
		start_fail(rc, "crash directory %s", kt__crash_dir(s->crash));
		goto err;
	}
	if ((rc = kt__work_thread_start(&s->thread, kt__flusher_main, s))) {
		start_fail(rc, "flusher thread");
		goto err;
	}
	free(notes);
	return 0;
err:
	free(notes);
	if (sink)
		sink->close(sink);
	kt__registry_set_session(0);
	return rc;
}

/*
 * A flight session: the header is kept for the snapshots, the rings are
 * reset and switched to overwriting; no file, no flusher.  With crash
 * files the rings live in them, and `katra recover` rebuilds each one's
 * window after a crash.  Under session_lock; on failure the caller frees
 * @s, which removes the crash directory and the socket.
 */
static int start_flight(kt_session *s, const kt_session_options *o)
{
	char host[256] = "";
	kt_header h;
	const char **notes = NULL;
	gethostname(host, sizeof(host) - 1);
	build_header(s, o, &h, host);
	kt__sched_start(s, o, &h, &notes); /* its records kept for the snapshots */
	/* Samples name stack entries the flusher writes as they come; a
	 * flight session has no flusher and keeps no stacks for its
	 * snapshots (yet): said, not silently left out. */
	if (o->sample_hz) {
		fprintf(stderr, "katra: samples absent from this trace: a flight session does "
				"not sample\n");
		kt__header_add_note(&h, &notes, "samples: absent: a flight session does not sample");
	}
	int rc = kt__header_validate(&h);
	if (!rc)
		rc = kt__session_keep_header(s, &h);
	free(notes);
	if (rc)
		return start_fail(rc, "trace header (workload, run id, capture id or notes)");
	if ((rc = start_crash(s, o)))
		return rc;
	if (o->listen && (rc = kt__control_start(s)))
		return start_fail(rc, "snapshot socket");
	if ((rc = kt__snapshot_reserve(s)))
		return start_fail(rc, "snapshot memory");
	kt__registry_set_session(1);
	kt__ring_set_flight(1);
	s->gen = kt__registry_reset_for_session();
	if (s->crash && (rc = kt__crash_publish(s->crash, &h, s->gen, KT__CRASH_FLIGHT))) {
		kt__ring_set_flight(0);
		kt__registry_set_session(0);
		return start_fail(rc, "crash directory %s", kt__crash_dir(s->crash));
	}
	s->live_flight = kt__live_flight_start(&s->c0); /* NULL: no page, the session goes on */
	kt__sched_flight_start(s);
	return 0;
}

static int session_start(const char *path, const kt_session_options *opts, const kt__output *to,
                         kt_session **out)
{
	kt_session_options o;
	int rc, created = 0;

	*out = NULL;
	start_error[0] = 0;
	if ((rc = check_options(path, opts, &o)) || (rc = check_output(to)))
		return rc;
	if ((rc = kt__init_with(o.ring_size, o.overflow, !!(o.given & KT_GIVEN_OVERFLOW))) ==
	    -EINVAL)
		return start_fail(rc, "ring size %zu or overflow policy %d", o.ring_size,
		                  o.overflow);
	if (rc)
		return start_fail(rc, "katra's configuration");

	pthread_mutex_lock(&session_lock);
	kt_session *s = NULL;
	if (current)
		rc = start_fail(KT_EBUSY, "this process");
	else if (!(s = session_new(&o, to)))
		rc = start_fail(-ENOMEM, "session");
	else if (s->flight)
		rc = start_flight(s, &o);
	else if (!(rc = open_output(s, path, &o, &created))) {
		s->start_off = trace_start(s->fd);
		rc = start_locked(s, path, &o);
	}
	if (rc) {
		/* path too: a session on an output (no path) never creates a
		 * file, and saying so keeps Release's -Wnonnull quiet. */
		if (created && path)
			unlink(path);
		if (s)
			session_free(s);
		pthread_mutex_unlock(&session_lock);
		return rc;
	}
	/* Best effort: a thread with no spare makes its own ring. */
	(void)kt__registry_spare(o.spare_rings);
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
			sum->threads[i].overwritten = s->threads[i].overwritten;
		}
	}
}

int kt__session_snap_enter(kt_session *s)
{
	pthread_mutex_lock(&session_lock);
	int ok = s && s == current && !s->stopping && s->flight;
	if (ok)
		s->snap_users++;
	pthread_mutex_unlock(&session_lock);
	if (!ok)
		return KT_ENOSESSION;
	/* Not under session_lock: a snapshot may take a while, and a fork()
	 * or a stop must not wait for it holding that. */
	pthread_mutex_lock(&s->snap_lock);
	return 0;
}

void kt__session_snap_leave(kt_session *s)
{
	pthread_mutex_unlock(&s->snap_lock);
	pthread_mutex_lock(&session_lock);
	if (!--s->snap_users)
		pthread_cond_broadcast(&s->snap_done);
	pthread_mutex_unlock(&session_lock);
}

/* The summary's row for @r's thread, if its ring overwrote events. */
static void note_overwritten(kt_session *s, struct kt__ring *r)
{
	kt__flight_span over = { 0 };
	kt__ring_flight_over(r, &over);
	if (!over.over)
		return;
	struct sthread *t = kt__idtab_get((void **)&s->threads, &s->nthreads, &s->cap_threads,
	                                  sizeof(*t), kt__ring_thread_id(r), SIZE_MAX);
	if (t)
		t->overwritten = over.over;
}

/*
 * A flight session stops: once the snapshots in progress are done, every
 * ring is given back and settled (its refusals and losses counted), so
 * retired ones can be recycled.  Called with session_lock, s->stopping set.
 */
static int stop_flight(kt_session *s, kt_summary *sum)
{
	while (s->snap_users)
		pthread_cond_wait(&s->snap_done, &session_lock);
	kt__ring_set_flight(0);
	if (!kt__registry_snapshot(&s->rings)) {
		for (size_t i = 0; i < s->rings.len; i++) {
			struct kt__ring *r = s->rings.rings[i];
			kt__ring_losses l;
			int retired = kt__ring_retired(r);
			note_overwritten(s, r);
			kt__ring_flight_discard(r);
			kt__ring_settle(r, retired, &l);
			s->refused += l.refused;
		}
	}
	kt__registry_reap();
	kt__registry_set_session(0);
	kt__clock_calibrate(&s->c1);
	current = NULL;
	pthread_mutex_unlock(&session_lock);
	if (sum)
		fill_summary(s, sum);
	session_free(s);
	return 0;
}

static int session_stop(kt_session *s, kt_summary *sum)
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
	if (s->flight) {
		/* Not under session_lock: a request in progress takes it. */
		pthread_mutex_unlock(&session_lock);
		kt__control_stop(s);
		/* Its last look is before the rings are given back. */
		kt__live_flight_stop(s->live_flight);
		s->live_flight = NULL;
		kt__sched_flight_stop(s->sched); /* it looks at the rings too */
		pthread_mutex_lock(&session_lock);
		return stop_flight(s, sum);
	}
	/* Relaxed: a deadline alone, which the flusher's next wait reads. */
	if (s->io_timeout)
		kt__store_relaxed(&s->stop_at, kt__mono_ns() + s->io_timeout);
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

/*
 * A deferred pthread_cancel() acts at a cancellation point: open(),
 * fdatasync(), pthread_join()... all of which a start or a stop makes,
 * some under session_lock.  Acting there would leave the lock held for
 * ever (every later start, stop and fork() waits on it) or a session half
 * stopped.  So none acts inside; a pending cancel acts at the caller's
 * next cancellation point.
 */
static int start_no_cancel(const char *path, const kt_session_options *opts, const kt__output *to,
                           kt_session **out)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	int rc = session_start(path, opts, to, out);
	pthread_setcancelstate(old, NULL);
	return rc;
}

/* The program's own session wins over a recorded one (autostart.c). */
int kt_session_start(const char *path, const kt_session_options *opts, kt_session **out)
{
	kt__autostart_yield();
	return start_no_cancel(path, opts, NULL, out);
}

int kt__session_start_plain(const char *path, const kt_session_options *opts, kt_session **out)
{
	return start_no_cancel(path, opts, NULL, out);
}

int kt__session_start_output(const kt_session_options *o, const kt__output *out, kt_session **s)
{
	kt__autostart_yield();
	return start_no_cancel(NULL, o, out, s);
}

int kt_session_stop(kt_session *s, kt_summary *sum)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	int rc = session_stop(s, sum);
	pthread_setcancelstate(old, NULL);
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
