/*
 * trackstats.h - the zones of tracks with a clock of their own (SPEC
 * §4.9) per track and zone name, for `katra stats`: count, total, mean
 * and longest, in ns on katra's clock, matched as tools/pipeline/tracks.h says.
 *
 * Bounded whatever the file: tracks.h's stacks, and one row per (track,
 * name) pair met (at most TRACKSTAT_ROWS; zones of other pairs are only
 * counted), found in O(1) expected (tools/pipeline/idmap.h).
 *
 * One thread per struct trackstats.
 */
#ifndef KT_TOOLS_TRACKSTATS_H
#define KT_TOOLS_TRACKSTATS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"
#include "tools/pipeline/tracks.h"

#define TRACKSTAT_ROWS (1u << 16)

struct track_row {
	uint32_t track, name;
	uint64_t count, total_ns, max_ns;
};

struct trackstats {
	struct tracks k;
	kt_reader *r;            /* for ticks to ns */
	struct track_row *rows;
	size_t n, cap;
	struct idmap ids;        /* track << 32 | name -> index in rows */
	uint64_t other;          /* zones past TRACKSTAT_ROWS rows */
	uint64_t counters;       /* counter records of known tracks */
};

/* trackstats_init - empty, over @t's tracks and @r's clock. */
void trackstats_init(struct trackstats *s, const struct tables *t, kt_reader *r);

/* trackstats_event - take @ev when it is a track record.  0 or -ENOMEM. */
int trackstats_event(struct trackstats *s, const kt_event *ev);

/* trackstats_finish - close the zones left open and sort the rows by
 * track, then name.  0 or -ENOMEM. */
int trackstats_finish(struct trackstats *s);

/* trackstats_text - the track section of `katra stats`, nothing when the
 * trace has no track entry.  0 or -EIO. */
int trackstats_text(FILE *f, const struct trackstats *s, const struct tables *t);

/* trackstats_json - the "tracks" array of `katra stats --json`: one
 * object per track entry with its zones; NULL when out of memory. */
json_t *trackstats_json(const struct trackstats *s, const struct tables *t);

/* trackstats_ntracks - how many tracks the file defines. */
size_t trackstats_ntracks(const struct tables *t);

void trackstats_free(struct trackstats *s);

#endif
