/*
 * diff_sched.h - `katra diff`'s off-CPU rows: when every run of both
 * sides has scheduler records (SPEC §4.2.1, the header's KT_HDR_SCHED),
 * per zone name the off-CPU time of its covered zones
 * (tools/analysis/schedstats.h: on-CPU, blocked and preempted ns) summed
 * over each side's runs, the mean off-CPU ns per zone of each side, its
 * change (B / A - 1) and each side's off-CPU share.  Totals, not a
 * sample: no interval and no verdict (a zone's off-CPU time is mostly
 * zero with rare long waits, which a bootstrap of so few non-zero values
 * would not bound); `diff`'s verdicts are the durations'.  When some run
 * has none, no rows: the text says which side lacks them (nothing when
 * no run has them), the JSON's "offcpu" is null.
 *
 * Bounded: DIFF_NAMES names per run are kept (the rest counted).
 * A run's struct diff_sched is touched by its reading thread, then by
 * the command's.
 */
#ifndef KT_TOOLS_DIFF_SCHED_H
#define KT_TOOLS_DIFF_SCHED_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include "tools/analysis/stats.h"

struct diff_run;

/* One zone name's off-CPU time in a run (or a side). */
struct diff_offcpu {
	char *name;
	size_t len;
	uint64_t zones, on_ns, blocked_ns, preempted_ns;
	int side;
};

struct diff_sched {
	int present;            /* the run's header has KT_HDR_SCHED */
	struct diff_offcpu *z;
	size_t n;
	uint64_t left_out;      /* names past DIFF_NAMES */
};

/* diff_sched_take - @s's per zone off-CPU time into @d.  0 or -ENOMEM. */
int diff_sched_take(struct diff_sched *d, const struct stats *s);

/* diff_sched_text - the rows (or why there are none) to @f.  0, -ENOMEM. */
int diff_sched_text(FILE *f, const struct diff_run *runs, size_t n);

/* diff_sched_json - the "offcpu" rows, or null (json_null()) unless every
 * run has scheduler records; NULL when out of memory. */
json_t *diff_sched_json(const struct diff_run *runs, size_t n);

void diff_sched_free(struct diff_sched *d);

#endif
