/*
 * tracks.h - the zones of tracks with a clock of their own (SPEC §4.9),
 * matched per track, for `katra stats` and the exports.
 *
 * Events come in the merged order (kt_reader_next()); a track record's
 * time is its track time on katra's clock (tables_track_ticks()).  Per
 * track, an end closes the innermost open zone of its name, and zones
 * opened inside it that are still open close with it (counted); an end
 * with no open zone of its name is skipped (counted); zones open at the
 * end of the pass close at their track's latest time (counted).  So every
 * zone handed out has a begin and an end, and on one track they nest.
 * Records of a track with no entry, or whose time cannot be converted, are
 * skipped (counted).
 *
 * Bounded whatever the trace: per track (at most KT_MAX_TRACKS) a stack of
 * at most TRACK_OPEN open zones; a begin past it is skipped (counted).
 * An end finds its begin in O(1), as a thread's zone end does (stats.c):
 * a map from (track, name) to the innermost open zone of that name, each
 * open zone linked to the next one of its name below it.  Each zone is
 * pushed and popped once, whatever the order of begins and ends.
 *
 * One thread per struct tracks.
 */
#ifndef KT_TOOLS_TRACKS_H
#define KT_TOOLS_TRACKS_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

#define TRACK_OPEN 1024u

/* A track's row in the exports that draw it as a thread (Chrome's tid,
 * FXT's koid): a tid no katra thread has (they count up from 1) nor,
 * below 2^22, any Linux thread. */
#define TRACK_TID(id) (0xffffff00u | (id))

struct track_open {
	uint32_t name;
	uint32_t below;   /* 1 + the stack index of the next open zone of the
			   * same name below this one; 0 when none */
	uint64_t begin;   /* ticks */
};

/* What a pass through the tracks skipped or repaired. */
struct track_counts {
	uint64_t unknown;      /* records of a track with no entry */
	uint64_t unconverted;  /* records whose time could not be converted */
	uint64_t unbegun;      /* ends with no open zone of their name */
	uint64_t inner_closed; /* zones closed by an outer zone's end */
	uint64_t unended;      /* zones closed at the end of the pass */
	uint64_t deep;         /* begins past TRACK_OPEN open zones */
};

/* A zone handed out: its track, name, times (ticks) and depth (0 at the
 * track's top). */
struct track_zone {
	uint32_t track, name;
	uint64_t begin, end;
	size_t depth;
};

typedef int (*track_zone_fn)(void *ctx, const struct track_zone *z);

struct tracks {
	const struct tables *t;
	track_zone_fn zone;      /* called at each zone's end */
	track_zone_fn open;      /* optional: called as each zone opens (its
				  * end and depth not known yet: 0) */
	void *ctx;
	struct track_open *stack[KT_MAX_TRACKS + 1];
	size_t depth[KT_MAX_TRACKS + 1];
	uint64_t last[KT_MAX_TRACKS + 1]; /* the latest time seen per track */
	struct idmap tops;       /* (track, name) -> 1 + its innermost open
				  * zone's stack index, 0 when none open */
	uint64_t steps;          /* stack entries an end looked at, popped
				  * ones included: at most one per begin */
	struct track_counts n;
};

/* tracks_init - an empty matcher over @t's track entries, handing each
 * zone to @zone(@ctx, ...); set k->open after it to hear of begins too. */
void tracks_init(struct tracks *k, const struct tables *t, track_zone_fn zone, void *ctx);

/*
 * tracks_event - take @ev if it is a track record: a zone's begin or end,
 * or a counter (whose converted time goes to *@ticks).  Returns 1 for a
 * counter with *@ticks set, 0 otherwise (any other event, a zone record,
 * or a skipped one), -ENOMEM, or what @zone returned when not 0.
 */
int tracks_event(struct tracks *k, const kt_event *ev, uint64_t *ticks);

/* tracks_finish - close every zone still open.  Returns 0 or what @zone
 * returned. */
int tracks_finish(struct tracks *k);

/* tracks_free - release @k's stacks and map. */
void tracks_free(struct tracks *k);

#endif
