/*
 * fork_busy_host DIR - fork() while katra's threads are busy, under an
 * allocator that is not fork-safe (ctest's fork_busy; plain builds only:
 * a sanitizer's runtime has its own malloc).
 *
 * This program's malloc() family takes one lock that nothing releases
 * across fork(), as clang 14's ASan allocator does, and on any thread but
 * the main one holds it 200 us: a thread of katra's inside malloc() at a
 * fork leaves the child that lock held, and the child's first allocation
 * waits for ever.  Three checks, each a child that must exit 0 within
 * 60 s (else "hung" and exit 1):
 *
 *   busy:   two threads in katra's work loop (kt__work_begin(), malloc,
 *           free, kt__work_end(), again at once) and a session's flusher,
 *           while the main thread forks 100 times; each child starts a
 *           session of its own, emits, stops.  The two threads must have
 *           worked between the forks (no starvation either way).
 *   block:  a thread in its work blocks writing to a full pipe through
 *           the fd sink; only the main thread, after fork(), reads it.
 *   inside: a thread in its work forks (a callback of katra's thread that
 *           forks must not wait for itself).
 *   start:  50 times a thread started by kt__work_thread_start() that
 *           allocates at once (as ASan's first steps in a thread do),
 *           and a fork right after pthread_create() returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>
#include "flush/flush.h"

/* ---- an allocator that is not fork-safe -------------------------------- */

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);
void *memalign(size_t align, size_t n);

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int main_thread;

static void heap_take(void)
{
	pthread_mutex_lock(&heap_lock);
	if (!main_thread) {
		struct timespec t = { 0, 200000 };
		nanosleep(&t, NULL);
	}
}

static void heap_drop(void)
{
	pthread_mutex_unlock(&heap_lock);
}

void *malloc(size_t n)
{
	heap_take();
	void *p = __libc_malloc(n);
	heap_drop();
	return p;
}

void *calloc(size_t n, size_t size)
{
	heap_take();
	void *p = __libc_calloc(n, size);
	heap_drop();
	return p;
}

void *realloc(void *q, size_t n)
{
	heap_take();
	void *p = __libc_realloc(q, n);
	heap_drop();
	return p;
}

void *memalign(size_t align, size_t n)
{
	heap_take();
	void *p = __libc_memalign(align, n);
	heap_drop();
	return p;
}

void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void free(void *p)
{
	if (!p)
		return;
	heap_take();
	__libc_free(p);
	heap_drop();
}

/* ---- the checks -------------------------------------------------------- */

static const char *dir;

static void fail(const char *what)
{
	fprintf(stderr, "fork_busy_host: %s\n", what);
	exit(1);
}

/* Wait for @pid up to 60 s: its exit status, or fail as hung. */
static void reap(pid_t pid, const char *what)
{
	for (int i = 0; i < 60000; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				fail(what);
			return;
		}
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fprintf(stderr, "fork_busy_host: %s: child %d hung\n", what, (int)pid);
	exit(1);
}

/* A child's life: a session of its own (a new flusher: pthread_create
 * allocates), an event, the stop. */
static void child_session(int i)
{
	char path[512];
	kt_session *s;
	snprintf(path, sizeof(path), "%s/child-%d.katra", dir, i);
	if (kt_session_start(path, NULL, &s))
		_exit(2);
	KT_MESSAGE("log", "child");
	_exit(kt_session_stop(s, NULL) ? 3 : 0);
}

static int stop_workers;
static unsigned long periods[2];

static void *worker(void *arg)
{
	unsigned long *n = arg;
	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED)) {
		kt__work_begin();
		free(malloc(64));
		kt__work_end();
		__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void check_busy(void)
{
	char path[512];
	kt_session *s;
	pthread_t t[2];
	snprintf(path, sizeof(path), "%s/parent.katra", dir);
	if (kt_session_start(path, NULL, &s))
		fail("busy: the parent's session");
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &periods[i]);
	for (int i = 0; i < 100; i++) {
		unsigned long before[2] = { __atomic_load_n(&periods[0], __ATOMIC_RELAXED),
					    __atomic_load_n(&periods[1], __ATOMIC_RELAXED) };
		KT_MESSAGE("log", "fork");
		pid_t pid = fork();
		if (pid == 0)
			child_session(i);
		if (pid < 0)
			fail("busy: fork");
		reap(pid, "busy");
		/* Both workers go on between forks: wait for a period each. */
		for (int w = 0; w < 2; w++)
			while (__atomic_load_n(&periods[w], __ATOMIC_RELAXED) == before[w])
				sched_yield();
	}
	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (kt_session_stop(s, NULL))
		fail("busy: the parent's stop");
}

static int pipe_fds[2];

static void *blocked_writer(void *arg)
{
	(void)arg;
	static uint8_t buf[1 << 20];
	kt__sink *sink = kt__fd_sink_new(pipe_fds[1]);
	kt__work_begin();
	/* More than the pipe holds: blocks until the main thread reads. */
	int rc = sink ? sink->write(sink, buf, sizeof(buf), 0) : -1;
	kt__work_end();
	if (sink)
		sink->close(sink);
	return (void *)(long)rc;
}

static void check_block(void)
{
	pthread_t t;
	void *rc;
	if (pipe(pipe_fds))
		fail("block: pipe");
	pthread_create(&t, NULL, blocked_writer, NULL);
	/* Once the pipe is full the writer is blocked in its work: fork()
	 * must not wait for it, or nothing ever reads the pipe. */
	int size = fcntl(pipe_fds[0], F_GETPIPE_SZ), queued = 0;
	while (size > 0 && !ioctl(pipe_fds[0], FIONREAD, &queued) && queued < size)
		sched_yield();
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		fail("block: fork");
	reap(pid, "block");
	static char sink_buf[65536];
	size_t got = 0;
	while (got < (1u << 20)) {
		ssize_t k = read(pipe_fds[0], sink_buf, sizeof(sink_buf));
		if (k <= 0)
			fail("block: read");
		got += (size_t)k;
	}
	pthread_join(t, &rc);
	if (rc)
		fail("block: the write");
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void *forker(void *arg)
{
	(void)arg;
	kt__work_begin();
	pid_t pid = fork();
	if (pid == 0) {
		main_thread = 1; /* the child's only thread */
		child_session(1000);
	}
	kt__work_end();
	return (void *)(long)pid;
}

static void check_inside(void)
{
	pthread_t t;
	void *pid;
	pthread_create(&t, NULL, forker, NULL);
	pthread_join(t, &pid);
	if ((long)pid <= 0)
		fail("inside: fork");
	reap((pid_t)(long)pid, "inside");
}

/* The files of the checks go, then their directory. */
static void clean(void)
{
	char path[512];
	for (int i = 0; i <= 1001; i++) {
		if (i < 1000)
			snprintf(path, sizeof(path), "%s/child-%d.katra", dir, i);
		else
			snprintf(path, sizeof(path), "%s/%s.katra", dir,
				 i == 1000 ? "child-1000" : "parent");
		unlink(path);
	}
	if (rmdir(dir))
		fail("a file left in the directory");
}

static void *starter(void *arg)
{
	(void)arg;
	free(malloc(64)); /* before its own first line, under ASan */
	kt__work_adopt();
	kt__work_end();
	return NULL;
}

static void check_start(void)
{
	for (int i = 0; i < 50; i++) {
		pthread_t t;
		if (kt__work_thread_start(&t, starter, NULL))
			fail("start: thread");
		pid_t pid = fork();
		if (pid == 0)
			_exit(malloc(64) ? 0 : 1);
		if (pid < 0)
			fail("start: fork");
		reap(pid, "start");
		pthread_join(t, NULL);
	}
}

int main(int argc, char **argv)
{
	static char tmp[512];
	main_thread = 1;
	if (argc != 2)
		fail("usage: fork_busy_host DIR");
	snprintf(tmp, sizeof(tmp), "%s/fork-busy-XXXXXX", argv[1]);
	if (!(dir = mkdtemp(tmp)))
		fail("mkdtemp");
	check_busy();
	check_block();
	check_inside();
	check_start();
	clean();
	printf("fork_busy_host: 100 forks, worker periods %lu %lu\n", periods[0], periods[1]);
	return 0;
}
