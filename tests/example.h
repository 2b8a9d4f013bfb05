/*
 * example.h - run the examples/ program (KT_EXAMPLE, its path, set by
 * tests/CMakeLists.txt where C++ builds it) into a trace, as a user does.
 */
#ifndef KATRA_TESTS_EXAMPLE_H
#define KATRA_TESTS_EXAMPLE_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>

/* particles --frames @frames --physics-off-from @off --out @out; asserts
 * it exits 0.  Its stdout goes to /dev/null. */
static inline void t_run_example(const char *out, int frames, int off)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		char nframes[16], noff[16];
		snprintf(nframes, sizeof(nframes), "%d", frames);
		snprintf(noff, sizeof(noff), "%d", off);
		execl(KT_EXAMPLE, KT_EXAMPLE, "--frames", nframes, "--physics-off-from", noff,
		      "--out", out, (char *)NULL);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "particles failed: %d", st);
}

#endif
