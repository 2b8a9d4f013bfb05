/*
 * ringbench_api.h - ringbench --producer-only's rows for the profiler API
 * (issue #15): a call site's zone, a zone in a category that is on and
 * one that is off, a zone argument, an allocation (a 32-byte
 * record: pointer and size) and a track zone's begin (a 24-byte record:
 * the track's own time, katra/track.h).  ringbench.c runs them beside
 * its floor, in the same rounds.
 */
#ifndef KT_BENCH_RINGBENCH_API_H
#define KT_BENCH_RINGBENCH_API_H

#include <stdint.h>

/* Emits per batch: ringbench.c's BATCH, which it asserts equal. */
#define API_BATCH 1000

enum { API_SRCLOC, API_CAT_ON, API_CAT_OFF, API_ARG, API_ALLOC, API_TRACK, API_ROWS };

/* The rows' names, in the order above. */
#define API_ROW_NAMES                                                                     \
	"katra_srcloc", "katra_cat_on", "katra_cat_off", "katra_arg", "katra_alloc",      \
		"katra_track_zone"

/* api_batch - API_BATCH emits of row @row (an API_* value); @id names the
 * argument of API_ARG.  One thread. */
void api_batch(int row, uint32_t id);

#endif
