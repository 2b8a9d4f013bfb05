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
	kt_session_options o = { .fd = fds[1], .use_fd = 1, .io_timeout_ns = 200000000 };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_start_error());
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
	cr_assert_eq(kt_session_start(path, NULL, &s), 0, "%s", kt_session_start_error());
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	unlink(path);
	rmdir(dir);
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
	cr_assert_eq(kt_reader_open(&r, trace, NULL), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_close(r);
	unlink(trace);
	rmdir(dir);
}
