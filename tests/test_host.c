/*
 * katra never hurts its host: a traced program that forks (children that
 * emit, with memfd rings and with crash files), execs, takes a profiling
 * timer whose handler emits, and loses the reader of its pipe, many times
 * each, with every trace read back and the parent's accounting exact.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <criterion/criterion.h>

#include <katra/katra.h>

#include "ring/private.h"

/* Under ThreadSanitizer (T_TSAN, helpers.h) a child of a multi-threaded
 * fork() dies when it starts a thread, unless told otherwise. */
/* Under AddressSanitizer (clang 14, gcc 12) the allocator takes no lock
 * around fork(): a child whose parent had another thread inside malloc()
 * waits forever on the first malloc() of its own.  ThreadSanitizer's
 * runtime does the same in a child that starts a thread (seen: the child's
 * session hung until its alarm).  POSIX allows a child of a multi-threaded
 * fork only async-signal-safe calls, so this is the sanitizers' right;
 * under them the children emit but start no session. */
#if T_SANITIZED
#define T_CHILD_SESSIONS 0
#endif
#ifndef T_CHILD_SESSIONS
#define T_CHILD_SESSIONS 1
#endif
#if T_TSAN
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif

static void tmp_dir(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/kt-host-XXXXXX");
	cr_assert_not_null(mkdtemp(buf));
}

static void rm_tree(const char *path)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

/*
 * Read @path back: it must verify whole, and hold on each thread exactly
 * the counters 0, 1, 2, ... that thread emitted (named @id), and nothing
 * else.  Returns the events read; *@threads gets how many threads had any.
 */
static uint64_t check_counters(const char *path, uint32_t id, int *threads)
{
	enum { MAXT = 64 };
	int64_t next[MAXT] = { 0 };
	kt_reader *r;
	kt_reader_error e;
	cr_assert_eq(kt_reader_open(path, &e, &r), 0, "%s", e.message);
	kt_trace_frame f;
	int rc;
	uint64_t n = 0;
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		uint32_t tid = f.u.chunk.thread_id;
		cr_assert_lt(tid, MAXT);
		kt_chunk_iter it;
		kt_event ev;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev)) {
			int64_t v;
			cr_assert_eq(ev.type, KT_EV_COUNTER_I64);
			cr_assert_eq(ev.name_id, id);
			memcpy(&v, ev.payload, 8);
			cr_assert_eq(v, next[tid], "thread %u: counter %lld where %lld was due", tid,
				     (long long)v, (long long)next[tid]);
			next[tid]++;
			n++;
		}
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.complete, 1);
	cr_assert_eq(st.events, n);
	kt_reader_close(r);
	*threads = 0;
	for (int t = 0; t < MAXT; t++)
		*threads += next[t] > 0;
	return n;
}

/* ---- fork ------------------------------------------------------------------ */

#define FORKS 50
#define PARENT_PER_FORK 2000
#define THREAD_EVENTS 400000
#define CHILD_EVENTS 100000  /* far more than a 64 KiB ring holds */

struct emitter {
	uint32_t id;
	uint64_t n;
	atomic_int done;
};

static void *emit_counters(void *arg)
{
	struct emitter *e = arg;
	for (uint64_t i = 0; i < e->n; i++)
		kt_counter(e->id, (int64_t)i);
	atomic_store(&e->done, 1);
	return NULL;
}

/*
 * The child of a fork() taken while the parent traces: it must see no
 * session, so none of its emits may reach the parent's rings (or, with
 * BLOCK, wait on a ring no flusher drains); every fifth starts a session
 * of its own and traces into it.  Exit status: 0, or the step that failed.
 */
static int child_of_fork(const char *dir, int k, uint32_t id)
{
	alarm(20); /* a child that blocks fails instead of hanging the test */
	for (int64_t i = 0; i < CHILD_EVENTS; i++)
		kt_counter(id, -1 - i);
	if (kt__load_stale(&kt__active) != 0 || kt__tls_ring != NULL)
		return 10;
	if (k % 5 || !T_CHILD_SESSIONS)
		return 0;
	char path[128];
	snprintf(path, sizeof(path), "%s/child-%d.katra", dir, k);
	kt_session *s;
	if (kt_session_start(path, &(kt_session_options){ .crash_dir = NULL }, &s))
		return 11;
	for (int64_t i = 0; i < 1000; i++)
		kt_counter(id, i);
	kt_summary sum;
	if (kt_session_stop(s, &sum))
		return 12;
	int ok = sum.events_written == 1000 && sum.events_dropped == 0;
	kt_summary_release(&sum);
	return ok ? 0 : 13;
}

static void fifty_forks(int crash_files)
{
	kt_config cfg = { .ring_size = 64 << 10, .overflow = KT_OVERFLOW_BLOCK };
	cr_assert_eq(kt_init(&cfg), 0);
	char dir[64], path[128];
	tmp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/parent.katra", dir);
	kt_session_options o = { .crash_dir = crash_files ? dir : NULL };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t id = kt_name("count");
	/* Another thread emits all along, so forks land mid-emit there too. */
	struct emitter em = { id, THREAD_EVENTS, 0 };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emit_counters, &em), 0);
	int64_t mine = 0;
	for (int k = 0; k < FORKS; k++) {
		for (int i = 0; i < PARENT_PER_FORK; i++)
			kt_counter(id, mine++);
		fflush(NULL);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			_exit(child_of_fork(dir, k, id));
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %#x", k, st);
	}
	pthread_join(th, NULL);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	uint64_t emitted = (uint64_t)FORKS * PARENT_PER_FORK + THREAD_EVENTS;
	cr_assert_eq(sum.events_written, emitted);
	cr_assert_eq(sum.events_dropped, 0);
	cr_assert_eq(sum.events_refused, 0);
	cr_assert_eq(sum.thread_count, 2);
	kt_summary_release(&sum);
	int threads;
	cr_assert_eq(check_counters(path, id, &threads), emitted);
	cr_assert_eq(threads, 2);
	/* Each child that traced wrote a trace of its own, from 0 again. */
	for (int k = 0; T_CHILD_SESSIONS && k < FORKS; k += 5) {
		snprintf(path, sizeof(path), "%s/child-%d.katra", dir, k);
		cr_assert_eq(check_counters(path, id, &threads), 1000);
		cr_assert_eq(threads, 1);
	}
	rm_tree(dir);
}

Test(fork, fifty_children_emit_and_the_parent_trace_stays_exact, .timeout = 600)
{
	fifty_forks(0);
}

Test(fork, fifty_children_emit_with_crash_files, .timeout = 600)
{
	fifty_forks(1);
}

/* ---- exec ------------------------------------------------------------------ */

/* What a program exec()ed now holds open, as "fd -> target" lines. */
static void exec_fd_list(char *out, size_t size)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/bin/sh", "sh", "-c",
		      "for f in /proc/$$/fd/*; do echo \"$f -> $(readlink $f)\"; done", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < size && (k = read(p[0], out + n, size - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sh: status %#x", st);
}

Test(exec, a_program_execed_mid_session_inherits_no_katra_fd, .timeout = 120)
{
	char dir[64], path[128];
	tmp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/katra-exec.katra", dir);
	/* Every kind of descriptor katra opens: the trace, io_uring, memfd
	 * rings, crash files (control, names, ring-N). */
	kt_session_options o = { .crash_dir = dir };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	uint32_t id = kt_name("count");
	struct emitter em = { id, 200000, 0 };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emit_counters, &em), 0);
	for (int k = 0; k < 10; k++) {
		char fds[8192];
		exec_fd_list(fds, sizeof(fds));
		cr_assert(strstr(fds, "/proc/") != NULL, "no fd listed: %s", fds);
		cr_assert_null(strstr(fds, "katra"), "inherited:\n%s", fds);
		cr_assert_null(strstr(fds, "io_uring"), "inherited:\n%s", fds);
	}
	pthread_join(th, NULL);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.events_written + sum.events_dropped, 200000);
	kt_summary_release(&sum);
	rm_tree(dir);
}

/* ---- a profiling timer whose handler emits ---------------------------------- */

#define TIMER_RUNS 20
#define MAIN_EVENTS 400000

static struct {
	uint32_t id;
	volatile sig_atomic_t counting;
	volatile sig_atomic_t emitted; /* by the handler, while counting */
} prof;

static void prof_handler(int sig)
{
	(void)sig;
	if (!prof.counting)
		return;
	int saved = errno;
	kt_instant(prof.id);
	kt_counter(prof.id, prof.emitted);
	prof.emitted += 2;
	errno = saved;
}

/*
 * Arm SIGPROF: in odd runs the profiling timer (ITIMER_PROF, every tick of
 * CPU time, to whichever thread runs), in even ones a 20 us CLOCK_MONOTONIC
 * timer aimed at this thread, which lands inside its emits far more often.
 * Returns the POSIX timer to delete, or NULL.
 */
static timer_t *arm_prof(int run, timer_t *t)
{
	if (run % 2) {
		struct itimerval it = { { 0, 50 }, { 0, 50 } };
		cr_assert_eq(setitimer(ITIMER_PROF, &it, NULL), 0);
		return NULL;
	}
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGPROF };
	ev._sigev_un._tid = gettid();
	cr_assert_eq(timer_create(CLOCK_MONOTONIC, &ev, t), 0);
	struct itimerspec its = { { 0, 20000 }, { 0, 20000 } };
	cr_assert_eq(timer_settime(*t, 0, &its, NULL), 0);
	return t;
}

static void disarm_prof(timer_t *t)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	if (t)
		cr_assert_eq(timer_delete(*t), 0);
	else
		cr_assert_eq(setitimer(ITIMER_PROF, &off, NULL), 0);
}

static uint64_t refused_total, handler_total;

/* One run: the main thread emits counters and messages while SIGPROF's
 * handler emits in between, and inside, its emits. */
static void timer_run(int run, const char *dir)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/timer-%d.katra", dir, run);
	/* Raw chunks through io_uring are written straight from the ring:
	 * the bytes the kernel reads must be the ones checksummed. */
	kt_session_options o = { .given = KT_GIVEN_CODEC,
				 .codec = run % 2 ? KT_CODEC_LZ4_DELTA : KT_CODEC_NONE,
				 .io = run % 2 ? KT_IO_PWRITE : KT_IO_AUTO };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	uint32_t id = kt_name("main"), msg = kt_name("text");
	kt_counter(id, 0); /* the ring exists before the first signal */
	prof.emitted = 0;
	prof.counting = 1;
	timer_t timer;
	timer_t *armed = arm_prof(run, &timer);
	char text[64];
	for (int64_t i = 1; i < MAIN_EVENTS; i++) {
		if (i % 7 == 0) {
			int n = snprintf(text, sizeof(text), "line %lld", (long long)i);
			kt_message(msg, text, (size_t)n);
		} else {
			kt_counter(id, i);
		}
	}
	/* No handler emits after this: the count is final before stop. */
	sigset_t prof_set;
	sigemptyset(&prof_set);
	sigaddset(&prof_set, SIGPROF);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &prof_set, NULL), 0);
	prof.counting = 0;
	disarm_prof(armed);
	cr_assert_eq(pthread_sigmask(SIG_UNBLOCK, &prof_set, NULL), 0);
	uint64_t emitted = MAIN_EVENTS + (uint64_t)prof.emitted;

	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	/* BLOCK: nothing is lost to a full ring; every loss is a nested emit,
	 * refused and counted. */
	cr_assert_eq(sum.events_written + sum.events_dropped, emitted,
		     "run %d: %llu written + %llu dropped, %llu emitted", run,
		     (unsigned long long)sum.events_written, (unsigned long long)sum.events_dropped,
		     (unsigned long long)emitted);
	cr_assert_eq(sum.events_dropped, sum.events_refused);
	refused_total += sum.events_refused;
	handler_total += (uint64_t)prof.emitted;
	kt_summary_release(&sum);

	/* The file verifies, and the main thread's records are all there, in
	 * order, none written over. */
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_event ev;
	int rc;
	int64_t next = 0;
	uint64_t n = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		n++;
		if (ev.name_id == prof.id)
			continue;
		if (ev.name_id == msg) {
			int len = snprintf(text, sizeof(text), "line %lld", (long long)next);
			cr_assert_eq(ev.payload_len, len);
			cr_assert_eq(memcmp(ev.payload, text, (size_t)len), 0);
		} else {
			int64_t v;
			cr_assert_eq(ev.name_id, id);
			memcpy(&v, ev.payload, 8);
			cr_assert_eq(v, next);
		}
		next++;
	}
	cr_assert_eq(rc, 0, "run %d: %s", run, kt_reader_get_last_error(r)->message);
	cr_assert_eq(next, MAIN_EVENTS);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.complete, 1);
	cr_assert_eq(st.events, n);
	kt_reader_close(r);
	unlink(path);
}

Test(signals, a_profiling_timer_whose_handler_emits_twenty_runs, .timeout = 600)
{
	kt_config cfg = { .ring_size = 1 << 20, .overflow = KT_OVERFLOW_BLOCK };
	cr_assert_eq(kt_init(&cfg), 0);
	char dir[64];
	tmp_dir(dir, sizeof(dir));
	prof.id = kt_name("from the handler");
	struct sigaction sa = { .sa_handler = prof_handler, .sa_flags = SA_RESTART }, old;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGPROF, &sa, &old), 0);
	for (int run = 0; run < TIMER_RUNS; run++)
		timer_run(run, dir);
	cr_log_info("%llu handler emits, %llu refused as nested",
		    (unsigned long long)handler_total, (unsigned long long)refused_total);
	cr_assert_eq(sigaction(SIGPROF, &old, NULL), 0);
	rm_tree(dir);
}

/* ---- a reader that goes away ---------------------------------------------------- */

#define PIPE_RUNS 10
#define PIPE_EVENTS 300000

/*
 * A session writing into @fds[1] (a pipe or a socket) whose reader,
 * @fds[0], reads a little and closes.  The flusher's next write fails with
 * EPIPE: that must not raise SIGPIPE, whose default action would end the
 * program; the session ends with -EPIPE and every event is accounted.  A
 * socket whose peer closed with unread data answers with a reset instead
 * (ECONNRESET), which is the same departure in TCP/unix-socket terms.
 */
static void reader_leaves(int fds[2], int sock)
{
	signal(SIGPIPE, SIG_DFL);
	kt_session_options o = { .fd = fds[1], .given = KT_GIVEN_FD };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	struct emitter em = { kt_name("count"), PIPE_EVENTS, 0 };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emit_counters, &em), 0);
	char buf[4096];
	size_t got = 0;
	/* Read a little, or all there is: on a loaded machine the ring may
	 * drop nearly everything, and the session then writes less than
	 * 16 KiB before it stops. */
	while (got < 16384) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		if (poll(&pfd, 1, 200) == 0) {
			if (atomic_load(&em.done))
				break;
			continue;
		}
		ssize_t k = read(fds[0], buf, sizeof(buf));
		cr_assert_gt(k, 0);
		got += (size_t)k;
	}
	close(fds[0]);
	pthread_join(th, NULL);
	kt_summary sum;
	int rc = kt_session_stop(s, &sum);
	cr_assert(rc == -EPIPE || (sock && rc == -ECONNRESET), "stop: %d (%s)", rc,
		  kt_strerror(rc));
	cr_assert_eq(sum.io_error, rc);
	cr_assert_eq(sum.events_written + sum.events_dropped, PIPE_EVENTS);
	/* A pipe cannot be read back: nothing is proven written. */
	cr_assert_eq(sum.events_written, 0);
	cr_assert_eq(sum.bytes_on_disk, 0);
	kt_summary_release(&sum);
	close(fds[1]);
}

Test(pipes, the_reader_of_a_pipe_leaves_mid_session, .timeout = 300)
{
	kt_config cfg = { .overflow = KT_OVERFLOW_BLOCK, .ring_size = 64 << 10 };
	cr_assert_eq(kt_init(&cfg), 0);
	for (int run = 0; run < PIPE_RUNS; run++) {
		int fds[2];
		cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
		reader_leaves(fds, 0);
	}
}

Test(pipes, the_peer_of_a_socket_leaves_mid_session, .timeout = 300)
{
	kt_config cfg = { .overflow = KT_OVERFLOW_DROP, .ring_size = 64 << 10 };
	cr_assert_eq(kt_init(&cfg), 0);
	for (int run = 0; run < PIPE_RUNS; run++) {
		int fds[2];
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
		reader_leaves(fds, 1);
	}
}

/* ---- a handler's first emit on a thread ------------------------------------------ */

#if !T_SANITIZED
/*
 * Count the allocations a thread makes while t_watch is set, by standing
 * in for the allocator (exported, so glibc's own calls reach these too).  Not under the
 * sanitizers, whose allocators these would bypass.
 */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
static __thread volatile int t_watch, t_allocs;

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	t_allocs += t_watch;
	return __libc_malloc(n);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
	t_allocs += t_watch;
	return __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
	t_allocs += t_watch;
	return __libc_realloc(p, n);
}

static uint32_t first_emit_id;
static int handler_allocs = -1;

static void first_emit_handler(int sig)
{
	(void)sig;
	t_watch = 1;
	kt_counter(first_emit_id, 7);
	t_watch = 0;
	handler_allocs = t_allocs;
}

static void *signal_self(void *arg)
{
	(void)arg;
	pthread_kill(pthread_self(), SIGUSR1);
	return NULL;
}

/*
 * The host made 40 thread keys before katra's first session (C++ runtimes
 * and plugins do): a handler's first emit on a fresh thread must still not
 * call the allocator, which the handler may have interrupted holding its
 * lock.
 */
Test(signals, a_handlers_first_emit_allocates_nothing_after_the_host_made_keys)
{
	pthread_key_t keys[40];
	for (int i = 0; i < 40; i++)
		cr_assert_eq(pthread_key_create(&keys[i], NULL), 0);
	char dir[64], path[128];
	tmp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/first.katra", dir);
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0, "%s", kt_session_get_start_error());
	first_emit_id = kt_name("count");
	struct sigaction sa = { .sa_handler = first_emit_handler };
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, signal_self, NULL), 0);
	pthread_join(th, NULL);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(handler_allocs, 0);
	cr_assert_eq(sum.events_written, 1);
	cr_assert_eq(sum.events_refused, 0);
	kt_summary_release(&sum);
	rm_tree(dir);
}
#endif

/* ---- fork before katra's first initialisation ------------------------------------ */

static atomic_int fork_begun, in_log, fork_done;

/* The names log runs under the names lock: hold it there until the main
 * thread is about to fork. */
static void slow_log(void *ctx, uint32_t id, const char *s, size_t len, const kt_srcloc *loc)
{
	(void)ctx, (void)id, (void)s, (void)len, (void)loc;
	atomic_store(&in_log, 1);
	while (!atomic_load(&fork_begun))
		usleep(1000);
	usleep(50000); /* let fork() start: only makes the old failure likelier */
}

static void *name_once(void *arg)
{
	(void)arg;
	kt_name("first pass");
	/* Alive until fork() returned: a thread that had ended unjoined
	 * would be a leak in ThreadSanitizer's copy of the process. */
	while (!atomic_load(&fork_done))
		usleep(1000);
	return NULL;
}

/*
 * A fork() while another thread interns a name, before any kt_init or
 * session: the child must not inherit the names lock held.  Its kt_name,
 * kt_init and a session of its own all work.
 */
Test(fork, before_the_first_init_while_a_name_is_interned)
{
	kt__names_set_log(slow_log, NULL);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, name_once, NULL), 0);
	while (!atomic_load(&in_log))
		usleep(1000);
	atomic_store(&fork_begun, 1);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(10); /* a child that hangs fails instead of hanging the test */
		_exit(kt_name("child") != 0 && kt_init(NULL) == 0 ? 0 : 1);
	}
	atomic_store(&fork_done, 1);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	pthread_join(th, NULL);
	kt__names_set_log(NULL, NULL);
}

/* ---- the host's resource limits ---------------------------------------------------- */

#include <sys/resource.h>

/*
 * In a child under RLIMIT_FSIZE of @limit bytes (the trace's header fits,
 * a ring does not): start a session (crash files in @crash_dir if set),
 * emit from this thread and stop.  Returns the child's wait status.  It
 * must live: katra's own file growth may not raise SIGXFSZ in the host.
 */
static int emit_under_fsize(const char *dir, const char *crash_dir, rlim_t limit)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(20);
		struct rlimit rl = { limit, limit };
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		char path[128];
		snprintf(path, sizeof(path), "%s/fsize-%s.katra", dir, crash_dir ? "crash" : "memfd");
		kt_session *s;
		if (kt_session_start(path, &(kt_session_options){ .crash_dir = crash_dir }, &s))
			_exit(11);
		uint32_t id = kt_name("count");
		for (int64_t i = 0; i < 100; i++)
			kt_counter(id, i);
		kt_summary sum;
		if (kt_session_stop(s, &sum))
			_exit(12);
		_exit(sum.events_written == 0 ? 0 : 13);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

Test(limits, a_file_size_limit_below_the_ring_size_never_kills_the_host)
{
	char dir[64];
	tmp_dir(dir, sizeof(dir));
	int st = emit_under_fsize(dir, NULL, 100000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "memfd rings: status %#x", st);
	st = emit_under_fsize(dir, dir, 100000);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crash files: status %#x", st);
	rm_tree(dir);
}

/*
 * The crash files' names log grows on the thread that interns a name: in
 * a child whose RLIMIT_FSIZE (64 KiB) the log passes, 400 names of 300
 * bytes (120 KB of log) are interned during a session with crash files.
 * The host lives, and its own SIGXFSZ handler never runs.
 */
static volatile sig_atomic_t xfsz_seen;
static void on_xfsz(int sig)
{
	(void)sig;
	xfsz_seen = 1;
}

Test(limits, a_names_log_past_the_file_size_limit_never_signals_the_host)
{
	char dir[64];
	tmp_dir(dir, sizeof(dir));
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(20);
		signal(SIGXFSZ, on_xfsz);
		struct rlimit rl = { 65536, 65536 };
		char path[128], name[301];
		snprintf(path, sizeof(path), "%s/names.katra", dir);
		kt_session *s;
		if (setrlimit(RLIMIT_FSIZE, &rl) ||
		    kt_session_start(path, &(kt_session_options){ .crash_dir = dir }, &s))
			_exit(10);
		signal(SIGXFSZ, SIG_DFL);
		for (int i = 0; i < 400; i++) {
			snprintf(name, sizeof(name), "%0300d", i);
			kt_name(name);
		}
		signal(SIGXFSZ, on_xfsz);
		/* The trace's own names pass the limit too: the flusher, whose
		 * thread blocks SIGXFSZ, then fails the file with EFBIG. */
		kt_summary sum;
		int rc = kt_session_stop(s, &sum);
		if (rc && rc != -EFBIG)
			_exit(12);
		if (!rc)
			kt_summary_release(&sum);
		_exit(xfsz_seen ? 13 : 0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	rm_tree(dir);
}

#include <sched.h>
#include <sys/mount.h>

#define SHM_THREADS 4
#define SHM_EVENTS 20000 /* each thread writes its 64 KiB ring round many times */

static void *emit_many(void *arg)
{
	for (int64_t i = 0; i < SHM_EVENTS; i++)
		kt_counter(*(uint32_t *)arg, i);
	return NULL;
}

/*
 * In a child with a 128 KiB tmpfs of its own (a mount namespace) as the
 * crash directory, SHM_THREADS threads with 64 KiB rings emit: the files
 * of the first ring fit, the second's do not.  Exit status 0 when the
 * session stopped whole with every event accounted, 77 when no tmpfs
 * could be mounted.
 */
static int small_tmpfs_child(const char *dir)
{
	alarm(30);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=128k"))
		return 77;
	kt_config cfg = { .ring_size = 64 << 10 };
	if (kt_init(&cfg))
		return 10;
	kt_session *s;
	if (kt_session_start("/dev/null", &(kt_session_options){ .crash_dir = dir }, &s))
		return 11;
	uint32_t id = kt_name("count");
	for (int t = 0; t < SHM_THREADS; t++) {
		pthread_t th;
		if (pthread_create(&th, NULL, emit_many, &id))
			return 12;
		pthread_join(th, NULL);
	}
	kt_summary sum;
	if (kt_session_stop(s, &sum))
		return 13;
	/* Rings that could not be had refused their events: still counted. */
	return sum.events_written + sum.events_dropped == SHM_THREADS * SHM_EVENTS ? 0 : 14;
}

Test(limits, a_full_crash_directory_never_raises_sigbus)
{
	char dir[64];
	tmp_dir(dir, sizeof(dir));
	int st = t_in_child(small_tmpfs_child, dir);
	rm_tree(dir);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		cr_skip_test("no tmpfs could be mounted: not root or no mount namespace");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

static void *emit_hundred(void *arg)
{
	for (int64_t i = 0; i < 100; i++)
		kt_counter(*(uint32_t *)arg, i);
	return NULL;
}

/* The child of lost_emits_are_counted: 0 when its summary is exact. */
static int fsize_accounting_child(const char *path)
{
	alarm(20);
	struct rlimit rl = { 100000, 100000 };
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 10;
	kt_session *s;
	if (kt_session_start(path, NULL, &s))
		return 11;
	uint32_t id = kt_name("count");
	pthread_t th[3];
	for (int t = 0; t < 3; t++)
		if (pthread_create(&th[t], NULL, emit_hundred, &id))
			return 12;
	for (int t = 0; t < 3; t++)
		pthread_join(th[t], NULL);
	kt_summary sum;
	if (kt_session_stop(s, &sum))
		return 13;
	if (sum.events_written != 0 || sum.events_dropped != 300 || sum.events_refused != 300)
		return 14;
	return sum.thread_count == 3 ? 0 : 15;
}

/*
 * Threads whose rings cannot be made (here: RLIMIT_FSIZE below the ring
 * size) lose their events: the summary and the file count every one, as
 * refused and dropped, under each thread.
 */
Test(limits, emits_of_threads_without_a_ring_are_counted)
{
	char dir[64], path[128];
	tmp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/lost.katra", dir);
	int st = t_in_child(fsize_accounting_child, path);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(t_drain(r, NULL), 0);
	kt_reader_status st2;
	kt_reader_get_status(r, &st2);
	cr_assert_eq(st2.complete, 1);
	cr_assert_eq(st2.events, 0);
	cr_assert_eq(st2.dropped, 300);
	kt_reader_close(r);
	rm_tree(dir);
}

/* ---- descriptors ----------------------------------------------------------------- */

#define FD_THREADS 8

static pthread_barrier_t fd_barrier;
static int stdio_crash; /* closed_stdio_child uses crash files */

static void *emit_and_wait(void *arg)
{
	kt_counter(*(uint32_t *)arg, 1);
	pthread_barrier_wait(&fd_barrier); /* emitted */
	pthread_barrier_wait(&fd_barrier); /* looked at */
	return NULL;
}

/* 1 when the fd list has a ring's file (memfd or crash file) open, or a
 * crash directory's file at fd 0, 1 or 2. */
static int ring_fds_held(void)
{
	int bad = 0;
	for (int fd = 0; fd < 1024 && !bad; fd++) {
		char link[64], target[512];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		bad = strstr(target, "katra-ring") || strstr(target, "/ring-") ||
		      (fd < 3 && strstr(target, "/katra-"));
	}
	return bad;
}

/*
 * A daemon with fds 0-2 closed: FD_THREADS threads emit and stay alive.
 * No ring keeps a descriptor (EMFILE for a host with many threads), and
 * nothing of katra's crash files lands on 0-2, where the host's stderr
 * would write into it.  Exit status 0 when so.
 */
static int closed_stdio_child(const char *dir)
{
	alarm(20);
	close(0);
	close(1);
	close(2);
	char path[128];
	snprintf(path, sizeof(path), "%s/stdio.katra", dir);
	kt_session *s;
	if (kt_session_start(path, &(kt_session_options){ .crash_dir = stdio_crash ? dir : NULL },
			     &s))
		return 10;
	uint32_t id = kt_name("count");
	pthread_barrier_init(&fd_barrier, NULL, FD_THREADS + 1);
	pthread_t th[FD_THREADS];
	for (int t = 0; t < FD_THREADS; t++)
		if (pthread_create(&th[t], NULL, emit_and_wait, &id))
			return 11;
	pthread_barrier_wait(&fd_barrier);
	int held = ring_fds_held();
	pthread_barrier_wait(&fd_barrier);
	for (int t = 0; t < FD_THREADS; t++)
		pthread_join(th[t], NULL);
	kt_summary sum;
	if (kt_session_stop(s, &sum))
		return 12;
	if (held)
		return 13;
	return sum.events_written == FD_THREADS ? 0 : 14;
}

Test(fds, rings_keep_no_descriptor_and_none_lands_on_stdio)
{
	char dir[64];
	tmp_dir(dir, sizeof(dir));
	for (stdio_crash = 0; stdio_crash < 2; stdio_crash++) {
		int st = t_in_child(closed_stdio_child, dir);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crash files %d: status %#x",
			  stdio_crash, st);
	}
	rm_tree(dir);
}
