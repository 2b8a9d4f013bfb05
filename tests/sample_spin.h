/*
 * sample_spin.h - the sampled tests' busy loop (test_sample.c and
 * sample_procs.c): this thread's CPU time, and the zone "sampled" that
 * spends 9/10 of it in kt_sample_heavy() and 1/10 in kt_sample_light()
 * (sample_lib.c, built with frame pointers).
 */
#ifndef KT_TEST_SAMPLE_SPIN_H
#define KT_TEST_SAMPLE_SPIN_H

#include <stdint.h>
#include <time.h>

#include <katra/katra.h>

#include "sample_lib.h"

/* This thread's CPU time, in ns. */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The zone "sampled", 9 parts heavy and 1 part light, until @ns of this
 * thread's CPU.  Returns the functions' sum: a caller that keeps it keeps
 * the calls from being folded away. */
static inline unsigned sample_spin_zone(uint64_t ns)
{
	unsigned sum = 0;
	uint32_t z = kt_name("sampled");
	kt_zone_begin(z);
	/* Each round a few microseconds, far under the sampling period, so
	 * that the samples cannot fall in step with the rounds; the clock read
	 * once in 16 rounds, so that the loop itself takes ~1% of them. */
	for (uint64_t end = thread_cpu_ns() + ns; thread_cpu_ns() < end;)
		for (int i = 0; i < 16; i++)
			sum += kt_sample_heavy(9 * 4000) + kt_sample_light(4000);
	kt_zone_end(z);
	return sum;
}

#endif
