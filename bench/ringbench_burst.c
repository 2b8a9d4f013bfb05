/*
 * ringbench --burst: the shape of an instrumented interpreter (issue #14).
 * Lua's fib(32) instrumented on every call and return emits ~14M events in
 * 0.4 s and then stops; a renderer's inner loop does the same once a
 * frame.  So: bursts of deep call trees of empty zones at the producer's
 * full speed for --burst-ms, each followed by a pause as long, on one
 * thread, into a plain session with every default of kt_init() and of
 * kt_session_options (ring size, overflow policy, codec, flush period):
 * what a new user gets, unless --ring-size, --policy or --codec say
 * otherwise.  The table gives each burst's events and rate and
 * the run's drops, and the file is checked as `katra verify` would.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include "bench/ringbench_burst.h"

#define NAMES 32        /* functions of the "interpreter" */
#define TREE_DEPTH 12   /* a tree is 2^13 - 1 calls: 16382 events */

static uint32_t names[NAMES];

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A call and its two callees, as fib's recursion: 2 events per call. */
static uint64_t tree(unsigned depth, unsigned fn)
{
	uint32_t id = names[fn % NAMES];
	uint64_t n = 2;
	kt_zone_begin(id);
	if (depth) {
		n += tree(depth - 1, fn * 2 + 1);
		n += tree(depth - 1, fn * 2 + 2);
	}
	kt_zone_end(id);
	return n;
}

/* One burst of @ns: whole trees until the time is up.  Returns its events. */
static uint64_t burst(uint64_t ns, uint64_t *took)
{
	uint64_t t0 = mono_ns(), n = 0, t;
	do {
		n += tree(TREE_DEPTH, 0);
		t = mono_ns();
	} while (t - t0 < ns);
	*took = t - t0;
	return n;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts))
		;
}

/* The file holds every event written, and its checksums hold. */
static int verified(const char *path, uint64_t written)
{
	kt_reader *r;
	kt_reader_error err;
	kt_reader_status st = { 0 };
	if (kt_reader_open(path, &err, &r))
		return 0;
	kt_trace_frame f;
	while (kt_reader_next_frame(r, &f) > 0)
		;
	kt_reader_get_status(r, &st);
	kt_reader_close(r);
	return st.complete && !st.error && st.events == written;
}

int ringbench_burst(const char *path, int bursts, unsigned burst_ms, const kt_config *cfg,
		    int codec)
{
	kt_session *s;
	/* Compact, the default, is left unset: what a new user gets. */
	int dflt = codec == KT_CODEC_COMPACT;
	kt_session_options so = { .codec = dflt ? 0 : codec, .given = dflt ? 0 : KT_GIVEN_CODEC };
	int rc = kt_init(cfg);
	if (rc || (rc = kt_session_start(path, &so, &s))) {
		fprintf(stderr, "ringbench: burst session: %s\n", kt_strerror(rc));
		return 1;
	}
	char fn[16];
	for (int i = 0; i < NAMES; i++) {
		snprintf(fn, sizeof(fn), "fn%02d", i);
		names[i] = kt_name(fn);
	}
	uint64_t ns = (uint64_t)burst_ms * 1000000u, biggest = 0, total = 0;
	printf("ringbench: %d bursts of %u ms (call trees %d deep, %d names), each then a "
	       "pause as long; ring %zu KiB, %s%s\n", bursts, burst_ms, TREE_DEPTH + 1, NAMES,
	       (cfg->ring_size ? cfg->ring_size : KT_RING_DEFAULT) >> 10,
	       kt_overflow_name((unsigned)cfg->overflow),
	       !cfg->ring_size && !cfg->overflow && dflt ? " (every default)" : "");
	printf("burst         events    seconds   Mevents/s\n");
	for (int b = 0; b < bursts; b++) {
		uint64_t took, n = burst(ns, &took);
		total += n;
		biggest = n > biggest ? n : biggest;
		printf("%-5d %14" PRIu64 " %10.3f %11.1f\n", b + 1, n, (double)took / 1e9,
		       (double)n / (double)took * 1e3);
		nap(ns);
	}
	kt_summary sum;
	if ((rc = kt_session_stop(s, &sum))) {
		fprintf(stderr, "ringbench: burst session stop: %s\n", kt_strerror(rc));
		return 1;
	}
	int ok = verified(path, sum.events_written);
	printf("\n  emitted      %" PRIu64 " events, largest burst %" PRIu64 " in %u ms\n", total,
	       biggest, burst_ms);
	printf("  written      %" PRIu64 " events, dropped %" PRIu64 "\n", sum.events_written,
	       sum.events_dropped);
	printf("  on disk      %" PRIu64 " bytes, %.2f bytes/event\n", sum.bytes_on_disk,
	       sum.events_written ? (double)sum.bytes_on_disk / (double)sum.events_written : 0.0);
	printf("  file         %s (%s)\n", path, ok ? "verified" : "NOT VALID");
	kt_summary_release(&sum);
	return ok ? 0 : 1;
}
