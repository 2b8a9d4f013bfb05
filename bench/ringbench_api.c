/*
 * ringbench_api.c - the profiler API's --producer-only rows (see
 * ringbench_api.h).  Each loop is unrolled as ringbench.c's katra and
 * floor loops are, and emits one record per iteration (the off row
 * none), so its per-iteration cost compares with theirs directly.
 */
#include <katra/katra.h>
#include <katra/track.h>

#include "bench/ringbench_api.h"

/* What KT_ZONE's begin does once its site is interned: read the cached
 * id, then kt_zone_begin(). */
static void srcloc_batch(void)
{
	KT__SITE(site, NULL, "bench_zone");
#pragma GCC unroll 8
	for (int i = 0; i < API_BATCH; i++)
		kt__site_begin(&site);
}

/* KT_ZONE_C's begin: the category's flag through the site's cached
 * pointer, then the same. */
static void category_batch(void)
{
	KT__SITE(site, "bench_category", "bench_zone");
#pragma GCC unroll 8
	for (int i = 0; i < API_BATCH; i++)
		kt__site_begin_c(&site);
}

static void arg_batch(uint32_t id)
{
#pragma GCC unroll 8
	for (int i = 0; i < API_BATCH; i++)
		kt_arg_i64(id, i);
}

/* kt_alloc() of made-up pointers 64 bytes apart: never dereferenced. */
static void alloc_batch(void)
{
	static uintptr_t next = 0x10000;
#pragma GCC unroll 8
	for (int i = 0; i < API_BATCH; i++) {
		kt_alloc((const void *)next, 64);
		next += 64;
	}
}

/* A GPU's results as they come back: zone begins at explicit track times
 * 100 track ticks apart, on a track made by the first batch (the slow
 * path, once). */
static void track_batch(uint32_t id)
{
	static int track;
	static uint64_t ts;
	if (!track)
		track = kt_track_create("bench gpu", 19200000);
#pragma GCC unroll 8
	for (int i = 0; i < API_BATCH; i++) {
		kt_track_zone_begin((uint32_t)track, id, ts);
		ts += 100;
	}
}

void api_batch(int row, uint32_t id)
{
	static int last = -1;

	switch (row) {
	case API_SRCLOC:
		srcloc_batch();
		break;
	case API_CAT_ON:
	case API_CAT_OFF:
		/* Only when the row changes: switching takes a lock, which is
		 * not what the rows measure. */
		if (row != last) {
			kt_category_enable("bench_category", row == API_CAT_ON);
			last = row;
		}
		category_batch();
		break;
	case API_ALLOC:
		alloc_batch();
		break;
	case API_TRACK:
		track_batch(id);
		break;
	default:
		arg_batch(id);
		break;
	}
}
