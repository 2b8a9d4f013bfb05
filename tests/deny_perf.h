/*
 * deny_perf.h - a seccomp filter failing perf_event_open() with EPERM on
 * every thread of the process, as a container's may, and a session run
 * under it: for the tests of a session that asked for scheduler records
 * or samples and was refused them (test_sched.c, test_sample.c).  The
 * filter cannot be taken off: it is installed in a child of the test's.
 * t_ prefix, as in helpers.h.
 */
#ifndef KATRA_TESTS_DENY_PERF_H
#define KATRA_TESTS_DENY_PERF_H

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <katra/katra.h>

/* Install the filter; _exit(20) when it cannot be. */
static inline void t_deny_perf(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog))
		_exit(20);
}

/* In a child of its own, perf_event_open refused: a session of options @o
 * writes three zones @name, each around @body(), to @path, its stderr to
 * @errpath.  The session must start and end well and have written its 6
 * events. */
static inline void t_refused_session(const char *path, const char *errpath,
                                     const kt_session_options *o, const char *name,
                                     void (*body)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (!freopen(errpath, "w", stderr))
			_exit(21);
		setvbuf(stderr, NULL, _IONBF, 0); /* _exit() flushes nothing */
		t_deny_perf();
		kt_session_options opts = *o;
		kt_session *s;
		if (kt_session_start(path, &opts, &s) != 0)
			_exit(11);
		uint32_t z = kt_name(name);
		for (int i = 0; i < 3; i++) {
			kt_zone_begin(z);
			body();
			kt_zone_end(z);
		}
		kt_summary sum;
		if (kt_session_stop(s, &sum) != 0)
			_exit(12);
		_exit(sum.events_written == 6 ? 0 : 13);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died");
	cr_assert_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
}

#endif
