/*
 * fmt_mid.h - the middle of an event's line for tools/pipeline/fmt.c: the thread,
 * the type, the name and what goes with them (a zone's source location, a
 * message's severity, a named frame's phase), escaped, for each output
 * format.  fmt.c caches it per (thread, name, type, flags).
 *
 * Any thread; no state.
 */
#ifndef KT_TOOLS_FMT_MID_H
#define KT_TOOLS_FMT_MID_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

#include "tools/pipeline/fmt.h"

/* Whether @type is a zone argument (SPEC §4.2, types 10-13). */
static inline int fmt_is_arg(uint8_t type)
{
	return type >= KT_EV_ARG_I64 && type <= KT_EV_ARG_STR;
}

/* An allocation or a free: its name is a pool, 0 the default one. */
static inline int fmt_is_mem(uint8_t type)
{
	return type == KT_EV_ALLOC || type == KT_EV_FREE;
}

/* A track record (types 16-19): its flags are its track. */
static inline int fmt_is_track(uint8_t type)
{
	return type >= KT_EV_TRACK_BEGIN && type <= KT_EV_TRACK_COUNTER_F64;
}

/* The flags @ev's middle depends on (a flow's phase, a frame's, a
 * message's severity, a track record's track), 0 for other types: a
 * mask of those types, one test. */
static inline uint32_t fmt_mid_flags(const kt_event *ev)
{
	const uint64_t typed = (UINT64_C(1) << KT_EV_FLOW) | (UINT64_C(1) << KT_EV_FRAME) |
			       (UINT64_C(1) << KT_EV_MESSAGE) |
			       ((UINT64_C(1) << (KT_EV_TRACK_COUNTER_F64 + 1)) -
				(UINT64_C(1) << KT_EV_TRACK_BEGIN));
	return ev->type < 64 && (typed >> ev->type & 1) ? ev->flags : 0;
}

/*
 * fmt_track_tail - the end of a track record's text or JSON line at @d:
 * its time on the track's clock, that time on katra's (CLOCK_MONOTONIC
 * ns, left out when the track has no entry or no calibration) and a
 * counter's value.  At most FMT_TRACK_TAIL bytes.  Returns the new end.
 */
#define FMT_TRACK_TAIL 96
char *fmt_track_tail(char *d, const struct fmt_job *j, const kt_event *ev);

/*
 * fmt_build_mid - the middle of @ev's line for @j->kind into *@buf
 * (malloc'd).  For Chrome, *@split is where the head (before the time)
 * ends.  Returns asprintf()'s result: the length, or -1 when out of
 * memory.
 */
int fmt_build_mid(char **buf, size_t *split, const struct fmt_job *j, const kt_event *ev);

#endif
