/*
 * katra never hurts its host, the red-team cases (issue #12): a pipe
 * reader that stops reading, a thread cancelled inside katra, a library
 * unloaded under live threads.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include <katra/katra.h>

/* ---- a reader that stops reading --------------------------------------------- */

#define STALL_EVENTS 200000

/*
 * A session writing into a pipe that nobody reads (the reader is alive:
 * stopped, paused in a pager).  The pipe fills; the flusher must give up
 * after io_timeout_ns, so the emits (BLOCK waits for ring space the
 * flusher frees) and kt_session_stop() return.  Before, both hung and the
 * test's timeout failed it.
 */
static void stalled_reader(int policy)
{
	kt_config cfg = { .overflow = policy, .ring_size = 64 << 10 };
	cr_assert_eq(kt_init(&cfg), 0);
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	/* A one-page pipe and raw chunks (24 bytes a counter): the trace
	 * outgrows the pipe whatever the flusher drains before the drops
	 * begin.  Compact chunks of a counting loop can fit a 64 KiB pipe
	 * whole, and the stop then has nothing to wait for. */
	cr_assert_geq(fcntl(fds[1], F_SETPIPE_SZ, 4096), 4096);
	kt_session_options o = { .fd = fds[1], .given = KT_GIVEN_FD | KT_GIVEN_CODEC,
				 .io_timeout_ns = 200000000, .codec = KT_CODEC_NONE };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t id = kt_name("count");
	for (int64_t i = 0; i < STALL_EVENTS; i++)
		kt_counter(id, i);
	kt_summary sum;
	int rc = kt_session_stop(s, &sum);
	cr_assert_eq(rc, -ETIMEDOUT, "stop: %d (%s)", rc, kt_strerror(rc));
	cr_assert_eq(sum.io_error, -ETIMEDOUT);
	cr_assert_eq(sum.events_written + sum.events_dropped, STALL_EVENTS);
	/* A pipe cannot be read back: nothing is proven written. */
	cr_assert_eq(sum.events_written, 0);
	kt_summary_release(&sum);
	/* The reader wakes up: what it finds is the start of a trace. */
	uint8_t magic[8];
	cr_assert_eq(read(fds[0], magic, sizeof(magic)), 8);
	cr_assert_eq(memcmp(magic, "\x89KTR\r\n\x1a\n", 8), 0);
	close(fds[0]);
	close(fds[1]);
}

Test(stall, a_pipe_nobody_reads_bounds_stop_drop, .timeout = 60)
{
	stalled_reader(KT_OVERFLOW_DROP);
}

Test(stall, a_pipe_nobody_reads_bounds_block_emitters_and_stop, .timeout = 60)
{
	stalled_reader(KT_OVERFLOW_BLOCK);
}

/* ---- a thread cancelled inside katra ---------------------------------------- */

struct cancelled {
	const char *path;
	kt_session *s;      /* in: the session to stop; out: the one started */
	int rc;
};

/* Cancelled before it starts a session: the cancel is pending, and the
 * first cancellation point acts on it (open() under katra's lock, before). */
static void *start_cancelled(void *arg)
{
	struct cancelled *c = arg;
	pthread_cancel(pthread_self());
	c->rc = kt_session_start(c->path, NULL, &c->s);
	pthread_testcancel();
	return NULL;
}

/* The same for a stop (pthread_join inside it, before). */
static void *stop_cancelled(void *arg)
{
	struct cancelled *c = arg;
	pthread_cancel(pthread_self());
	c->rc = kt_session_stop(c->s, NULL);
	pthread_testcancel();
	return NULL;
}

static void run_cancelled(void *(*fn)(void *), struct cancelled *c)
{
	pthread_t th;
	void *ret = NULL;
	cr_assert_eq(pthread_create(&th, NULL, fn, c), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(c->rc, 0);
}

/*
 * pthread_cancel() of a thread inside kt_session_start() or
 * kt_session_stop() (a deferred cancel, the default) acts only once the
 * call is done: no katra lock dies with the thread (before, every later
 * start, stop and fork() waited for ever on session_lock), and no session
 * is left half stopped.  The next start and stop then work.
 */
Test(cancel, a_cancelled_start_and_stop_leave_no_lock_held, .timeout = 30)
{
	char dir[] = "/tmp/kt-cancel-XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.katra", dir);
	cr_assert_eq(kt_init(NULL), 0);
	struct cancelled c = { .path = path, .rc = -1 };
	run_cancelled(start_cancelled, &c);
	cr_assert_not_null(c.s);
	c.rc = -1;
	run_cancelled(stop_cancelled, &c);
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0, "%s", kt_session_get_start_error());
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	unlink(path);
	rmdir(dir);
}

/* With a cancel pending, a new name (its crash-log writev() under the
 * names lock) and a first emit (its crash ring file's open() under the
 * registry lock): both cancellation points, neither may act in there. */
static void *emit_cancelled(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	kt_instant(kt_name("named while a cancel is pending"));
	pthread_testcancel();
	return NULL;
}

/*
 * The same for the ring's locks, with crash files (whose writes and opens
 * happen under them): 50 threads, each cancelled inside its first name and
 * its first emit, die only at their own cancellation point.  Before, the
 * first one died holding the names lock or the registry's, and every
 * later name, first emit, flusher pass and stop waited for ever.
 */
Test(cancel, a_cancelled_first_emit_leaves_no_ring_lock_held, .timeout = 60)
{
	char dir[] = "/tmp/kt-cancel-XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.katra", dir);
	kt_session *s;
	kt_session_options o = { .crash_dir = dir };
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	for (int i = 0; i < 50; i++) {
		pthread_t th;
		void *ret = NULL;
		cr_assert_eq(pthread_create(&th, NULL, emit_cancelled, NULL), 0);
		cr_assert_eq(pthread_join(th, &ret), 0);
		cr_assert_eq(ret, PTHREAD_CANCELED);
	}
	kt_instant(kt_name("after the cancels"));
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	/* Every cancelled thread's one instant, and this thread's. */
	cr_assert_eq(sum.events_written, 51);
	cr_assert_eq(sum.events_dropped, 0);
	kt_summary_release(&sum);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

struct snapped {
	kt_session *s;
	const char *path;
	int rc;
};

/* A flight snapshot with a cancel pending: its first cancellation point is
 * the open() of its file, with the session's snapshot lock held. */
static void *snapshot_cancelled(void *arg)
{
	struct snapped *c = arg;
	pthread_cancel(pthread_self());
	c->rc = kt_session_snapshot(c->s, c->path, -1, 0, 0, NULL);
	pthread_testcancel();
	return NULL;
}

/*
 * The same for kt_session_snapshot(), which a host thread calls and which
 * opens and writes its file holding the session's snapshot lock, then the
 * names', categories' and tracks' locks in turn: the cancel acts only once
 * the snapshot is written.  Before, the thread died in open() holding the
 * snapshot lock: the next snapshot waited on it for ever (and a stop, for
 * the snapshot to end).
 */
Test(cancel, a_cancelled_snapshot_leaves_no_lock_held, .timeout = 30)
{
	char dir[] = "/tmp/kt-cancel-XXXXXX", a[64], b[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a.katra", dir);
	snprintf(b, sizeof(b), "%s/b.katra", dir);
	kt_session *s;
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_instant(kt_name("before the snapshot"));
	struct snapped c = { s, a, -1 };
	pthread_t th;
	void *ret = NULL;
	cr_assert_eq(pthread_create(&th, NULL, snapshot_cancelled, &c), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(c.rc, 0);
	cr_assert_eq(access(a, F_OK), 0);
	kt_snapshot_result res;
	cr_assert_eq(kt_session_snapshot(s, b, -1, 0, 0, &res), 0);
	cr_assert_eq(res.events, 1);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

/* ---- a snapshot past the file size limit ----------------------------------- */

static volatile sig_atomic_t xfsz_seen;
static void on_xfsz(int sig)
{
	(void)sig;
	xfsz_seen = 1;
}

/* In a child: a flight session of 100000 counters (about 2 MB raw),
 * then a 64 KiB RLIMIT_FSIZE and a snapshot to a file.  Exit status 0 when
 * the snapshot failed with EFBIG and no SIGXFSZ reached the host. */
static int snapshot_past_fsize(const char *path)
{
	alarm(20);
	signal(SIGXFSZ, on_xfsz);
	struct rlimit rl = { 65536, 65536 };
	kt_session *s;
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .given = KT_GIVEN_CODEC,
				 .codec = KT_CODEC_NONE };
	if (kt_session_start(NULL, &o, &s))
		return 10;
	uint32_t id = kt_name("count");
	for (int64_t i = 0; i < 100000; i++)
		kt_counter(id, i);
	/* After the ring is made: its memfd obeys the limit too. */
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 10;
	/* The host's own action is the default one: SIGXFSZ would end it. */
	signal(SIGXFSZ, SIG_DFL);
	int rc = kt_session_snapshot(s, path, -1, 0, 0, NULL);
	signal(SIGXFSZ, on_xfsz);
	if (rc != -EFBIG)
		return 11;
	if (kt_session_stop(s, NULL))
		return 12;
	return xfsz_seen ? 13 : 0;
}

/*
 * kt_session_snapshot() writes its file on the caller's thread: past
 * RLIMIT_FSIZE the kernel sends that thread SIGXFSZ, whose default action
 * ends the host.  The snapshot fails with EFBIG and the host lives (its
 * own handler never runs).  Before, the child was killed by SIGXFSZ.
 */
Test(limits, a_snapshot_past_the_file_size_limit_never_signals_the_host, .timeout = 60)
{
	char dir[] = "/tmp/kt-fsize-XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/snap.katra", dir);
	int st = t_in_child(snapshot_past_fsize, path);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	unlink(path);
	rmdir(dir);
}

/* ---- a daemon with fds 0-2 closed ------------------------------------------- */

/* In a child with 0, 1 and 2 closed: a session by path, with crash files.
 * Exit status: 0, or the step that failed. */
static int closed_stdio_child(const char *dir)
{
	close(0);
	close(1);
	close(2);
	char path[96];
	snprintf(path, sizeof(path), "%s/t.katra", dir);
	kt_session *s;
	kt_session_options o = { .crash_dir = dir };
	if (kt_session_start(path, &o, &s))
		return 10;
	kt_instant(kt_name("daemon"));
	/* None of katra's descriptors (trace file, io_uring, crash files,
	 * rings) may sit where the daemon's next stderr write would go. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			return 20 + fd;
	kt_summary sum;
	if (kt_session_stop(s, &sum))
		return 30;
	int ok = sum.events_written == 1;
	kt_summary_release(&sum);
	return ok ? 0 : 31;
}

/*
 * A daemon with stdin, stdout and stderr closed traces: katra's files all
 * land on fd 3 or above.  Before, the trace file took fd 0 (and the
 * io_uring instance fd 1), so the daemon's next write to stderr went into
 * katra's files.
 */
Test(fds, a_daemon_with_stdio_closed_gets_no_katra_fd_at_0_to_2, .timeout = 60)
{
	char dir[] = "/tmp/kt-daemon-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	int st = t_in_child(closed_stdio_child, dir);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* ---- a library unloaded under a live thread --------------------------------- */

/*
 * A plugin host dlopen()s libkatra, traces from a thread, stops and
 * dlclose()s it; the thread exits after.  Its ring's key destructor is in
 * the library, which therefore must stay mapped (-z nodelete).  Before,
 * the library went and the host died with SIGSEGV.  The probe runs with
 * room for libkatra's initial-exec TLS, which a dlopen() needs (F7).
 */
Test(unload, dlclose_then_a_traced_thread_exits, .timeout = 60)
{
	char dir[] = "/tmp/kt-dlclose-XXXXXX", trace[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(trace, sizeof(trace), "%s/t.katra", dir);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=200000", 1);
		execl(KT_BIN_DIR "/tests/dlclose_probe", "dlclose_probe", KT_BIN_DIR "/libkatra.so",
		      trace, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the host died by signal %d", WTERMSIG(st));
	cr_assert_eq(WEXITSTATUS(st), 0, "probe step %d failed", WEXITSTATUS(st));
	kt_reader *r;
	cr_assert_eq(kt_reader_open(trace, NULL, &r), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_close(r);
	unlink(trace);
	rmdir(dir);
}
