/*
 * Shared by test_crash.c and test_recover.c: scratch folders, and running
 * the katra command with its output captured (t_ prefix as helpers.h).
 */
#ifndef KATRA_TESTS_CRASH_HELPERS_H
#define KATRA_TESTS_CRASH_HELPERS_H

#include "helpers.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#define KATRA KT_BIN_DIR "/katra"

/* A fresh folder for crash directories and traces: in /dev/shm, where
 * crash files go by default, else in TMPDIR. */
static inline char *scratch(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = NULL;
	struct stat sb;
	if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode))
		cr_assert_geq(asprintf(&dir, "/dev/shm/katra-test-XXXXXX"), 0);
	else
		cr_assert_geq(asprintf(&dir, "%s/katra-test-XXXXXX", tmp && *tmp ? tmp : "/tmp"), 0);
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static inline int t_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static inline void rm_rf(char *dir)
{
	nftw(dir, t_rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static inline char *path_in(const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline char *path_in(const char *dir, const char *fmt, ...)
{
	char name[4096], *p = NULL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

/* How to run katra: all zero is "here, with a 60 s alarm". */
struct t_run {
	const char *cwd;
	unsigned timeout;            /* seconds; 0: 60 */
	rlim_t as_limit;             /* RLIMIT_AS; 0: none */
	int gated;                   /* wait for t_katra_go() before exec */
};

typedef struct t_katra {
	pid_t pid;
	int out_fd;                  /* stdout and stderr together */
	int gate;                    /* write end of the gate, or -1 */
} t_katra;

static inline void t_katra_start(t_katra *k, const struct t_run *o, const char *const *args)
{
	int gate[2] = { -1, -1 };
	k->out_fd = memfd_create("katra-out", MFD_CLOEXEC);
	cr_assert_geq(k->out_fd, 0);
	cr_assert(!o->gated || pipe2(gate, O_CLOEXEC) == 0);
	k->pid = fork();
	cr_assert_geq(k->pid, 0);
	if (k->pid == 0) {
		char c;
		alarm(o->timeout ? o->timeout : 60);
		if (o->gated && read(gate[0], &c, 1) != 1)
			_exit(126);
		struct rlimit rl = { o->as_limit, o->as_limit };
		if ((o->cwd && chdir(o->cwd) < 0) || (o->as_limit && setrlimit(RLIMIT_AS, &rl)))
			_exit(125);
		dup2(k->out_fd, 1);
		dup2(k->out_fd, 2);
		const char *argv[16] = { KATRA };
		for (int i = 0; args[i] && i < 14; i++)
			argv[i + 1] = args[i];
		execv(KATRA, (char *const *)argv);
		_exit(127);
	}
	if (o->gated)
		close(gate[0]);
	k->gate = gate[1];
}

static inline void t_katra_go(t_katra *k)
{
	cr_assert_eq(write(k->gate, "g", 1), 1);
	close(k->gate);
	k->gate = -1;
}

/* Wait for it: its output in @out (NUL-terminated); its exit status. */
static inline int t_katra_wait(t_katra *k, char *out, size_t cap)
{
	int st;
	cr_assert_eq(waitpid(k->pid, &st, 0), k->pid);
	ssize_t n = pread(k->out_fd, out, cap - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(k->out_fd);
	cr_assert(WIFEXITED(st), "katra died of signal %d: %s", WTERMSIG(st), out);
	return WEXITSTATUS(st);
}

/* Run katra as @o says with the NULL-terminated @args; its exit status. */
static inline int katra_run(const struct t_run *o, char *out, size_t cap, const char *const *args)
{
	t_katra k;
	t_katra_start(&k, o, args);
	return t_katra_wait(&k, out, cap);
}

static inline int katra(char *out, size_t cap, const char *const *args)
{
	const struct t_run here = { 0 };
	return katra_run(&here, out, cap, args);
}

/* Call @fn with every frame of @path, which must read whole. */
static inline void t_each_frame(const char *path, void (*fn)(void *ctx, const kt_trace_frame *f),
				void *ctx)
{
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open(path, &err, &r), 0, "%s", err.message);
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		fn(ctx, &f);
	cr_assert_eq(rc, 0, "%s: %s", path, kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
}

/* @len bytes a forked child shares with the test, zeroed. */
static inline void *t_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

/* In a forked child: tell the test it is ready (what it stored before is
 * seen with it), then wait to be killed. */
static inline __attribute__((noreturn)) void t_child_ready(_Atomic int *ready)
{
	/* Release: pairs with t_wait_ready()'s acquire. */
	atomic_store_explicit(ready, 1, memory_order_release);
	for (;;)
		pause();
}

/* Wait for a forked child to set @ready (release), failing the test
 * should it end first. */
static inline void t_wait_ready(_Atomic int *ready, pid_t pid)
{
	/* Acquire: pairs with the child's release of ready. */
	while (!atomic_load_explicit(ready, memory_order_acquire)) {
		int st;
		cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the child ended before it was ready");
		usleep(200);
	}
}

/* SIGKILL a child and reap it: it must die of that signal. */
static inline void t_kill_child(pid_t pid)
{
	int st;
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status 0x%x", st);
}

#endif
