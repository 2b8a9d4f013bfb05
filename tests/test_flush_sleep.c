/*
 * The flusher's sleep (flush/flusher.c, kt__flush_sleep): the default
 * flush period stretches, up to KT__FLUSH_STRETCH periods, while no ring
 * fills most of a chunk in a period; a period the caller sets is kept.
 */
#include "helpers.h"

#include <dirent.h>
#include <criterion/criterion.h>

#include <katra/katra.h>
#include "flush/flush.h"
#include "tmp_path.h"

#define MS 1000000ull
#define CHUNK (256u << 10)
#define WANT (CHUNK - CHUNK / 8) /* 7/8 of a chunk: 229,376 bytes */

Test(sleep, a_ring_filling_a_chunk_a_period_keeps_the_period)
{
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, WANT, 1 * MS), 1 * MS);
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 4 * WANT, 1 * MS), 1 * MS);
	/* A chunk's worth after a longer sleep: back to the period. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, WANT, 3 * MS), 1 * MS);
	/* Just under: just over the period. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, WANT - 8, 1 * MS), 1000034);
}

Test(sleep, a_slower_ring_is_left_until_it_holds_seven_eighths_of_a_chunk)
{
	/* 80 KiB a millisecond (a renderer's tile thread at 5M events/s):
	 * 7/8 of a chunk in 2.8 ms. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 80u << 10, 1 * MS), 2800000);
	/* The same rate measured over a longer sleep. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 160u << 10, 2 * MS), 2800000);
	/* Slower still: the stretch's bound. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 1u << 10, 1 * MS), 4 * MS);
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 0, 1 * MS), 4 * MS);
	/* A small file's chunks (chunk_max an eighth of it) ask less. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, 64u << 10, 28u << 10, 1 * MS), 2 * MS);
}

Test(sleep, a_period_the_caller_set_is_not_stretched)
{
	/* session.c gives max == period when flush_period_ns is set. */
	cr_assert_eq(kt__flush_sleep(5 * MS, 5 * MS, CHUNK, 0, 5 * MS), 5 * MS);
	cr_assert_eq(kt__flush_sleep(5 * MS, 5 * MS, CHUNK, 1u << 10, 5 * MS), 5 * MS);
	/* A long gap (a stopped clock, a suspended guest) cannot overflow. */
	cr_assert_eq(kt__flush_sleep(1 * MS, 4 * MS, CHUNK, 1, UINT64_MAX / 2), 1 * MS);
}

/* Voluntary context switches of the threads not in @before (a list of
 * tids ending in 0). */
static long new_threads_switches(const long *before)
{
	long sum = 0;
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		long tid = atol(e->d_name);
		int old = tid == 0;
		for (const long *b = before; *b && !old; b++)
			old = *b == tid;
		if (old)
			continue;
		char path[64], line[128];
		snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
		FILE *f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += atol(line + 24);
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static void tids(long *out, size_t cap)
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d)) && n + 1 < cap;)
		if (atol(e->d_name))
			out[n++] = atol(e->d_name);
	out[n] = 0;
	closedir(d);
}

/*
 * An idle session of the default options: its flusher wakes every 4 ms,
 * not every 1 ms: at most 300 / 4 wakes in 300 ms, and a margin (with
 * the period kept, 300 come on an idle machine; a loaded one only makes
 * wakes later, fewer).
 */
Test(sleep, an_idle_default_session_wakes_every_four_periods, .timeout = 60)
{
	char path[128];
	tmp_path(path, sizeof(path), "flush-sleep.katra");
	long before[256];
	tids(before, 256);
	kt_session_options o = { .io = KT_IO_PWRITE }; /* no io_uring worker */
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0);
	usleep(20000); /* the flusher's first drain and the live page */
	long a = new_threads_switches(before);
	usleep(300000);
	long b = new_threads_switches(before);
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	unlink(path);
	cr_assert_leq(b - a, 110, "%ld wakes in 300 ms", b - a);
	cr_assert_geq(b - a, 1);
}
