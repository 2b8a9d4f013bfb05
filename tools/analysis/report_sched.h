/*
 * report_sched.h - `katra report`'s state lanes: per followed thread
 * (scheduler records, SPEC §4.2.1), the ns of each time bin of the
 * report's timeline (report.h) it spent running, blocked, preempted or
 * waiting (off the CPU, reason unknown), from tools/pipeline/schedlane.h's
 * intervals, each spread over the bins it covers.  The page draws them as
 * a lane under each thread's row.  When two bins merge into one (the
 * timeline's halving), their ns add.
 *
 * Bounded: REPORT_THREADS lanes (intervals of other threads counted in
 * .other); an interval costs at most REPORT_BINS steps.
 * The report's one thread.
 */
#ifndef KT_TOOLS_REPORT_SCHED_H
#define KT_TOOLS_REPORT_SCHED_H

#include <stdint.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/schedlane.h"

struct report;

/* One followed thread's ns per bin, by state (running, blocked,
 * preempted, waiting). */
struct rsched_lane {
	uint32_t of;
	double ns[4][512];
};

struct report_sched {
	int asked, present; /* the header's KT_HDR_SCHED or _ABSENT; KT_HDR_SCHED */
	const char *why;    /* absent: the note's reason (the header's), or NULL */
	struct slane lanes;
	struct rsched_lane *lane;
	size_t nlane;
	uint64_t last_ns, other;
};

/* report_sched_new - @h says whether there are records.  NULL on -ENOMEM. */
struct report_sched *report_sched_new(const kt_header *h);

/* report_sched_event - any event at @ns of @rep's pass (a scheduler
 * record's interval into its lane).  0 or -ENOMEM. */
int report_sched_event(struct report *rep, const kt_event *ev, uint64_t ns);

/* report_sched_finish - the intervals in progress, ended at the last
 * event.  0 or -ENOMEM. */
int report_sched_finish(struct report *rep);

/* report_sched_halve - bins 2i and 2i + 1 into bin i. */
void report_sched_halve(struct report_sched *s);

/* report_sched_json - the page's "sched": null when not asked; {"present":
 * false, "why"} when refused; else {"present": true, "threads": [{"id",
 * "name", "running", "blocked", "preempted", "waiting"}]} each an array
 * of @bins ns.  NULL when out of memory. */
json_t *report_sched_json(const struct report *rep, size_t bins);

void report_sched_free(struct report_sched *s);

#endif
