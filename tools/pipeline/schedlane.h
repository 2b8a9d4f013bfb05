/*
 * schedlane.h - a followed thread's scheduling as intervals of one state
 * (running, blocked, preempted, waiting), from a trace's scheduler
 * records (SPEC §4.2.1) in the merged order, for the views that draw
 * states rather than count them: `export --chrome` (slices) and `report`
 * (a state lane per thread).
 *
 * Per followed thread: its state since its last record.  A record ends
 * the interval in progress and starts the next:
 *   follow  - the state is not known until the next record: an out then
 *             says it was running, an in that it was off the CPU for a
 *             reason unknown ("waiting");
 *   out     - it ran until here (running), then blocked or preempted;
 *   in      - it was off the CPU until here, then running;
 *   lost    - the interval in progress ends; nothing is known until the
 *             next in.
 * Two outs (or two ins) in a row keep the first's interval going.  An
 * interval of no length is not given.  An interval's CPU is the one it
 * ran on (running) or left (off the CPU); SLANE_NO_CPU when unknown.
 *
 * Bounded whatever the file: SLANE_THREADS threads (records of others
 * are counted in .ignored), O(1) expected per record (tools/pipeline/idmap.h).
 * One thread per struct slane.
 */
#ifndef KT_TOOLS_SCHEDLANE_H
#define KT_TOOLS_SCHEDLANE_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>
#include "tools/pipeline/idmap.h"

#define SLANE_THREADS (1u << 16)
#define SLANE_NO_CPU UINT32_MAX

enum slane_state { SLANE_NONE, SLANE_FOLLOW, SLANE_RUNNING, SLANE_BLOCKED, SLANE_PREEMPTED,
		   SLANE_WAITING };

/* One interval of a followed thread (@of, a thread id of the file) whose
 * records are in stream @stream. */
struct slane_iv {
	uint32_t of, stream, cpu;
	enum slane_state state;
	uint64_t begin, end; /* ns */
	int cut;             /* ended by the end of the trace, not a record */
};

struct slane_thread {
	uint32_t of, stream, cpu;
	enum slane_state state;
	uint64_t since;
};

struct slane {
	struct slane_thread *t;
	size_t n, cap;
	struct idmap map;
	uint64_t ignored;
};

void slane_init(struct slane *l);

/*
 * slane_event - scheduler record @ev (type 20) at @ns: the interval it
 * ends into @iv.  Returns 1 when there is one, 0 when none, -ENOMEM.
 */
int slane_event(struct slane *l, const kt_event *ev, uint64_t ns, struct slane_iv *iv);

/*
 * slane_finish - each thread's interval in progress, ended at @end ns
 * (.cut set), in turn: call with *@at 0 until it returns 0.
 */
int slane_finish(struct slane *l, uint64_t end, size_t *at, struct slane_iv *iv);

/* slane_name - "running", "blocked", "preempted", "waiting" ("?" else). */
const char *slane_name(enum slane_state s);

void slane_free(struct slane *l);

#endif
