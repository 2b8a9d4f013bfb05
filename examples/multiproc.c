/*
 * multiproc - a program of several processes, as `katra record` traces
 * them (issue #30).  It has no session code: run it as
 *
 *     katra record -o multiproc.katra -- ./multiproc
 *
 * The parent forks two workers that emit zones at full rate, execs one
 * helper (this program again, `multiproc helper`) and kills the second
 * worker with SIGKILL while it runs.  Each process's events go to its own
 * file in the record's directory; `katra record` makes them one trace.
 *
 *     multiproc [--events N]     the first worker's zones (default 200000)
 *     multiproc --own PATH       the parent starts its own session into
 *                                PATH (which wins: README, "katra record")
 *     multiproc --until-signal   the parent emits until SIGINT or SIGTERM,
 *                                then exits 0 (for the forwarding test)
 *     multiproc --capture ROOT   a harness: a capture of the run KT_RUN_ID,
 *                                KT_EPOCH in ROOT (the capture manager),
 *                                100 zones, a fork()ed worker's 1000
 *                                during the run, 100 more; the worker's
 *                                500 after the run's end (katra record
 *                                --run-id: the worker joins the capture,
 *                                trimmed to the run)
 *     multiproc --pair           so does a child it forks, stopped with
 *                                SIGTERM once the parent is (for
 *                                katra record --flight and katra snapshot)
 *     multiproc helper           the exec'd helper: 1000 zones
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <katra/capture.h>
#include <katra/katra.h>

#define HELPER_ZONES 1000

static volatile sig_atomic_t stop_now;

static void on_stop(int sig)
{
	(void)sig;
	stop_now = 1;
}

static void zones(const char *name, long n)
{
	uint32_t id = kt_name(name);
	for (long i = 0; i < n; i++) {
		kt_zone_begin(id);
		kt_zone_end(id);
	}
}

/* Emits until killed; says on @ready that it has begun. */
static void doomed_worker(int ready)
{
	kt_thread_name("doomed");
	uint32_t id = kt_name("doomed_zone");
	for (long i = 0;; i++) {
		kt_zone_begin(id);
		kt_zone_end(id);
		if (i == 1000 && write(ready, "r", 1) != 1)
			_exit(1);
	}
}

static pid_t spawn_worker(long events, int ready)
{
	pid_t pid = fork();
	if (pid)
		return pid;
	if (ready >= 0)
		doomed_worker(ready);
	kt_thread_name("worker");
	zones("worker_zone", events);
	exit(0); /* exit(), not _exit(): the recorded session stops at exit */
}

static pid_t spawn_helper(const char *self)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "helper", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int wait_all(const pid_t *pids, int n, pid_t doomed)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
		if (pids[i] == doomed ? !killed : !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			bad = 1;
	}
	return bad;
}

static void until_signal(void)
{
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	uint32_t id = kt_name("parent_tick");
	while (!stop_now) {
		kt_zone_begin(id);
		usleep(1000);
		kt_zone_end(id);
	}
}

/* The capture manager has no compiled-out form: with KATRA_DISABLE the
 * harness below is not built. */
#ifndef KATRA_DISABLE
static uint64_t wall_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The run's worker: 1000 zones in the run; then, once told the run has
 * ended, 500 more after it (which the capture's trim cuts away). */
static void run_worker(int ready, int go)
{
	char c;
	kt_thread_name("run_worker");
	zones("run_worker_zone", 1000);
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(1);
	zones("late_zone", 500);
	exit(0);
}

/* A harness: one capture of the environment's run around a worker. */
static int capture(const char *root)
{
	const char *run = getenv("KT_RUN_ID"), *ep = getenv("KT_EPOCH");
	uint64_t epoch = ep ? strtoull(ep, NULL, 10) : 0;
	kt_manager *m;
	int ready[2], go[2];
	char c;
	if (!run || pipe(ready) || pipe(go) ||
	    kt_manager_new(&(kt_manager_options){ .root = root }, &m))
		return 1;
	kt_capture_ref ref;
	kt_manager_start(m, &(kt_start_request){ .run_id = run, .epoch = epoch,
						 .validity = "valid", .boundary_at = wall_ns() },
			 &ref);
	kt_thread_name("harness");
	zones("harness_zone", 100);
	pid_t w = fork();
	if (w == 0)
		run_worker(ready[1], go[0]);
	int st = 1, bad = w < 0 || read(ready[0], &c, 1) != 1;
	zones("harness_zone", 100);
	kt_manager_request_stop(m, &(kt_stop_request){ .run_id = run, .epoch = epoch,
						       .boundary_at = wall_ns() },
				&ref);
	kt_capture_status cs;
	int rc = kt_manager_await(m, &ref, UINT64_MAX, &cs);
	kt_manager_close(m);
	bad |= write(go[1], "g", 1) != 1;
	while (w > 0 && waitpid(w, &st, 0) < 0 && errno == EINTR)
		;
	return bad || rc || cs.state != KT_STATE_PUBLISHED || !WIFEXITED(st) || WEXITSTATUS(st);
}
#else
static int capture(const char *root)
{
	(void)root;
	fprintf(stderr, "multiproc: --capture: built with KATRA_DISABLE\n");
	return 1;
}
#endif

/* Parent and child emit until stopped; the child by the parent. */
static int pair(void)
{
	pid_t child = fork();
	if (child < 0)
		return 1;
	kt_thread_name(child ? "pair_parent" : "pair_child");
	until_signal();
	if (!child)
		exit(0);
	kill(child, SIGTERM);
	int st;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	long events = 200000;
	kt_session *own = NULL;
	if (argc > 1 && !strcmp(argv[1], "helper")) {
		kt_thread_name("helper");
		zones("helper_zone", HELPER_ZONES);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--until-signal")) {
		until_signal();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--pair"))
		return pair();
	if (argc > 2 && !strcmp(argv[1], "--capture"))
		return capture(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--events"))
		events = strtol(argv[2], NULL, 10);
	if (argc > 2 && !strcmp(argv[1], "--own") && kt_session_start(argv[2], NULL, &own)) {
		fprintf(stderr, "multiproc: %s\n", kt_session_get_start_error());
		return 1;
	}
	kt_thread_name("parent");
	zones("parent_zone", 100);
	int ready[2];
	if (pipe(ready))
		return 1;
	pid_t pids[3];
	pids[0] = spawn_worker(events, -1);
	pids[1] = spawn_worker(0, ready[1]);
	pids[2] = spawn_helper("/proc/self/exe");
	/* Only the doomed worker's end stays open: should it die first, the
	 * read below sees the end of the pipe instead of waiting for ever. */
	close(ready[1]);
	char c;
	/* Killed mid-run: after it has emitted, while it still does. */
	if (read(ready[0], &c, 1) == 1) {
		usleep(5000); /* its flusher (a 1 ms period) has written some */
		kill(pids[1], SIGKILL);
	}
	int bad = wait_all(pids, 3, pids[1]);
	zones("parent_zone", 100);
	if (own && kt_session_stop(own, NULL))
		bad = 1;
	return bad;
}
