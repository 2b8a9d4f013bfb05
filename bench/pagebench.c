/*
 * pagebench: what a first store to each page of a new mapping costs on this
 * machine, without katra.  The producer's stores (a TSC stamp and a word, 16
 * bytes, as ringbench's floor row) run in passes over a memfd mapped as a
 * ring's bytes are (posix_fallocate, MAP_SHARED | MAP_POPULATE): its first
 * pass, a second pass, a first pass over the same pages mapped again, and a
 * first pass after one load per page.  Where the host builds its own entry
 * for a page only at the first access through a mapping (a hypervisor that
 * shadows the guest's page tables), first passes cost more than second ones
 * however populated the mapping is, and the load per page takes that away.
 *
 * Usage: pagebench [MIB [ROUNDS]]  (default 64 MiB, 5 rounds; the median
 * of the rounds per column, ns per 16-byte store).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One pass of 16-byte stores over @len bytes at @b: ns per store. */
static double pass(uint8_t *b, size_t len)
{
	double t0 = now_ns();
	for (size_t o = 0; o < len; o += 16) {
		uint64_t rec[2] = { __rdtsc(), o };
		memcpy(b + o, rec, 16);
		__asm__ __volatile__("" ::"r"(b) : "memory");
	}
	return (now_ns() - t0) / (double)(len / 16);
}

static uint8_t *map(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("pagebench: mmap");
		exit(1);
	}
	return p;
}

/* A load of one word per page: ms taken. */
static double touch(const uint8_t *b, size_t len)
{
	double t0 = now_ns();
	uint64_t sum = 0;
	for (size_t o = 0; o < len; o += 4096)
		sum += *(const volatile uint64_t *)(const void *)(b + o);
	__asm__ __volatile__("" ::"r"(sum));
	return (now_ns() - t0) / 1e6;
}

enum { FIRST, SECOND, REMAPPED, TOUCHED, TOUCH_MS, COLS };

/* One round: a new memfd, its four passes and the touch's time. */
static void round_once(size_t len, double out[COLS])
{
	int fd = memfd_create("pagebench", MFD_CLOEXEC);
	if (fd < 0 || posix_fallocate(fd, 0, (off_t)len)) {
		perror("pagebench: memfd");
		exit(1);
	}
	uint8_t *b = map(fd, len);
	out[FIRST] = pass(b, len);
	out[SECOND] = pass(b, len);
	munmap(b, len);
	b = map(fd, len); /* the same pages, already written */
	out[REMAPPED] = pass(b, len);
	munmap(b, len);
	b = map(fd, len);
	out[TOUCH_MS] = touch(b, len);
	out[TOUCHED] = pass(b, len);
	munmap(b, len);
	close(fd);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (mib == 0 || mib > 4096 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: pagebench [MIB (1-4096) [ROUNDS (1-99)]]\n");
		return 2;
	}
	static double v[COLS][99];
	for (int r = 0; r < rounds; r++) {
		double out[COLS];
		round_once(mib << 20, out);
		for (int c = 0; c < COLS; c++)
			v[c][r] = out[c];
	}
	for (int c = 0; c < COLS; c++)
		qsort(v[c], (size_t)rounds, sizeof(double), cmp);
	int m = rounds / 2;
	printf("%zu MiB, %d rounds, median ns per 16-byte store:\n"
	       "first pass %.2f  second pass %.2f  same pages mapped again %.2f  "
	       "first pass after a load per page %.2f (the loads: %.1f ms)\n",
	       mib, rounds, v[FIRST][m], v[SECOND][m], v[REMAPPED][m], v[TOUCHED][m],
	       v[TOUCH_MS][m]);
	return 0;
}
