/*
 * sample_procs - a program of two processes for test_sample_paths.c, with
 * no session code: `katra record` with KT_SAMPLE_HZ samples both.  Each
 * process spends 300 ms of its CPU in zone "sampled", 9 parts in
 * kt_sample_heavy() and 1 in kt_sample_light() (tests/sample_lib.c).
 *
 *     sample_procs          the parent forks its twin (the same mappings)
 *     sample_procs exec     the child execs this program again (a process
 *                           of its own, its libraries where ASLR put them)
 *     sample_procs one      one process, the zone only
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>

#include "sample_spin.h"

/* 300 ms of this process's CPU in the zone. */
static unsigned spin(void)
{
	return sample_spin_zone(300000000u);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "one"))
		return spin() == 1; /* the sum is never 1: kept, not folded away */
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		if (!strcmp(mode, "exec"))
			execl("/proc/self/exe", argv[0], "one", (char *)NULL);
		exit(spin() == 1); /* exit(): the session ends and writes its file */
	}
	unsigned sum = spin();
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 3;
	return sum == 1;
}
