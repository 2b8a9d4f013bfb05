/*
 * The clock: the TSC where the CPU says it is invariant (constant rate, not
 * stopped in deep C-states), CLOCK_MONOTONIC otherwise.  The TSC's rate is
 * measured once against CLOCK_MONOTONIC; each session records a tick/ns
 * pair at start and at stop so readers can convert exactly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "ring/ring.h"

KT_API int kt__clock_tsc;
static uint64_t tsc_hz;

uint64_t kt__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t kt__wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

KT_API uint64_t kt__now_slow(void)
{
	return kt__mono_ns();
}

static int tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	/* CPUID 0x80000007 EDX bit 8: invariant TSC, which Linux reports as
	 * constant_tsc + nonstop_tsc. */
	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

/* One tick/ns pair: the ns reading bracketed by two tick reads, keeping the
 * tightest of a few tries so a preemption does not skew it. */
static void pair(uint64_t *ticks, uint64_t *ns)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = __rdtsc();
		uint64_t n = kt__mono_ns();
		uint64_t t1 = __rdtsc();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*ticks = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
#else
	*ticks = *ns = kt__mono_ns();
#endif
}

int kt__clock_setup(int requested)
{
	const char *env = getenv("KT_CLOCK");
	if (env && !strcmp(env, "tsc"))
		requested = KT_CLOCK_TSC;
	else if (env && !strcmp(env, "monotonic"))
		requested = KT_CLOCK_MONOTONIC;

	int inv = tsc_invariant();
	if (requested == KT_CLOCK_TSC && !inv)
		return -EINVAL;
	if (requested == KT_CLOCK_MONOTONIC || !inv) {
		kt__clock_tsc = 0;
		return 0;
	}
	if (!tsc_hz) {
		uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		pair(&t0, &n0);
		nanosleep(&nap, NULL);
		pair(&t1, &n1);
		if (n1 <= n0 || t1 <= t0)
			return -EINVAL;
		tsc_hz = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (n1 - n0));
	}
	kt__clock_tsc = 1;
	return 0;
}

void kt__clock_calibrate(kt_clock_calibration *c)
{
	memset(c, 0, sizeof(*c));
	if (kt__clock_tsc) {
		c->source = KT_CLOCK_TSC;
		c->tick_hz = tsc_hz;
		pair(&c->ticks, &c->mono_ns);
	} else {
		c->source = KT_CLOCK_MONOTONIC;
		c->tick_hz = 1000000000u;
		c->ticks = c->mono_ns = kt__mono_ns();
	}
}
