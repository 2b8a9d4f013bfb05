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

#include "sample_lib.h"

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static unsigned spin(void)
{
	unsigned sum = 0;
	uint32_t z = kt_name("sampled");
	kt_zone_begin(z);
	for (uint64_t end = cpu_ns() + 300000000u; cpu_ns() < end;)
		for (int i = 0; i < 16; i++)
			sum += kt_sample_heavy(9 * 4000) + kt_sample_light(4000);
	kt_zone_end(z);
	return sum;
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
