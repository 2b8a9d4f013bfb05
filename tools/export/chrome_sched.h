/*
 * chrome_sched.h - scheduler records (SPEC §4.2.1) in `export --chrome`:
 * a followed thread's states as complete ("X") events, category "sched",
 * named "running", "blocked", "preempted" or "waiting" (off the CPU for a
 * reason unknown: after a follow), with args {"cpu": N} when the CPU is
 * known (tools/pipeline/schedlane.h makes the intervals).  They go on the
 * row of the thread's scheduler stream ("katra.sched TID", its tid the
 * stream's id), not on the thread's own row: a state interval does not
 * nest with zones (a zone spans a switch), and a viewer draws the slices
 * of one row as one stack.  An interval still in progress at the end
 * ends at the export's last event, with args "cut": "end".  Follow and
 * loss records make no object of their own: they end an interval.
 *
 * One thread per struct chsched.
 */
#ifndef KT_TOOLS_CHROME_SCHED_H
#define KT_TOOLS_CHROME_SCHED_H

#include <stdint.h>

#include "tools/pipeline/fmt.h"
#include "tools/pipeline/schedlane.h"
#include "tools/pipeline/tables.h"

struct chsched {
	struct slane lanes;
	uint64_t pid; /* the trace's own process id */
};

void chsched_init(struct chsched *s, uint64_t pid);

/* chsched_event - scheduler record @ev at @ns: the interval it ends as an
 * object into @fm.  0, -ENOMEM or a write's error. */
int chsched_event(struct chsched *s, struct fmt *fm, const struct tables *t, const kt_event *ev,
		  uint64_t ns);

/* chsched_finish - the intervals in progress, ended at @end ns. */
int chsched_finish(struct chsched *s, struct fmt *fm, const struct tables *t, uint64_t end);

void chsched_free(struct chsched *s);

#endif
