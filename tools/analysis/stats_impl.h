/*
 * stats_impl.h - what tools/analysis/stats.c's pass builds, for the files that
 * print it (stats_json.c).  Private to stats: stats.h is the door.
 */
#ifndef KT_TOOLS_STATS_IMPL_H
#define KT_TOOLS_STATS_IMPL_H

#include <stdint.h>

#include "tools/pipeline/drops.h"
#include "tools/pipeline/hist.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/tables.h"
#include "tools/analysis/schedstats.h"
#include "tools/analysis/trackstats.h"
#include "tools/analysis/valstats.h"
#include "tools/analysis/windows.h"

/* An open zone on a thread's stack. */
struct zone {
	uint64_t ns;
	uint64_t child; /* time of the zones that ended inside it, for self time */
	uint32_t name;
	uint32_t below; /* 1 + the stack index of the next open zone of the same
			 * name below this one; 0 when there is none; and
			 * CROSSED when a drop window began while it was open */
	struct sched_mark sm; /* its thread's off-CPU time at its begin */
};
#define CROSSED (1u << 31) /* stack indices stay below MAX_OPEN_ZONES */

struct sthread {
	uint32_t id;
	uint64_t events, dropped;
	uint64_t first_ns, last_ns; /* the earliest and latest, for the span */
	uint64_t prev_ns;           /* the event before, in the thread's order */
	struct zone *stack;
	size_t depth, cap;
	uint64_t untimed;       /* begins past the cap, still open */
	uint64_t last_frame_ns; /* previous frame mark on this thread */
	uint64_t zones_ns;      /* self time of its zones that ended (stats.h) */
	int have_frame;
	size_t drop_next, drop_end; /* its drop windows not yet passed, in stats.drops */
	uint64_t drop_windows, drop_ns; /* its drop records, the time they cover */
	/* From the earliest of its events and drop windows to the latest: a
	 * snapshot's drop windows lie before its events. */
	uint64_t drop_from_ns, drop_to_ns;
};

struct sname {
	uint32_t id;
	uint64_t count;
	uint64_t total_ns, self_ns; /* of its zones that ended (self: less the
				     * zones that ended inside them) */
	struct hist zone;
	uint64_t across; /* its zones open across a drop window */
	uint64_t begins, ends; /* its zone records, for the text's count */
	uint64_t frames;       /* its frame marks, for the label */
	uint32_t proc;         /* its first event's thread's process entry
				* (a merged trace keeps each process's
				* names apart: SPEC §4.10.1); 0 none */
};

/* A table of elements keyed by a leading uint32_t id, in first-seen order
 * while the pass runs (the map gives the index), sorted by id to print. */
struct table {
	void *a;
	size_t n, cap, size;
	struct idmap map;
	uint32_t last_id, last; /* the last lookup: events come in runs */
	int have_last;
};

struct stats {
	struct table th, names;
	/* (thread index, name id) -> 1 + the stack index of that thread's
	 * innermost open zone of that name, or 0: each zone end finds its
	 * begin in O(1), however deep the stack and whatever it holds. */
	struct idmap tops;
	struct hist frames;
	uint64_t events;
	uint64_t open;          /* zones on every stack */
	uint64_t untimed;       /* zone begins never put on a stack */
	uint64_t backwards;     /* events earlier than the one before on their thread */
	uint64_t negative;      /* durations that ended before they began: 0 */
	struct tables t;
	const struct stats_hooks *hooks;
	uint64_t frames_ns;     /* the sum of the frame intervals, for the mean */
	uint64_t dropped;       /* the reader's count */
	int truncated;          /* no summary frame */
	struct drops drops;     /* by thread; ticks made ns once read */
	uint64_t across;        /* zones open across a drop window */
	struct memstats mem;    /* allocations and frees per pool */
	struct trackstats tracks; /* zones of tracks with a clock of their own */
	struct valstats vals;   /* counters, zones' own values and texts */
	struct windows win;     /* each thread's window and loss (windows.h) */
	struct schedstats sched; /* on-CPU and off-CPU time per zone */
	uint64_t samples;        /* sample records (samples.c shows them) */
	int filtered;           /* only some threads counted (stats_hooks.threads) */
};

/*
 * At most this many open zones over all threads (24 bytes each): a chunk
 * of 64 MiB decodes from a quarter of a megabyte, so without a cap a small
 * file of nested begins would ask for gigabytes.  Begins past it are not
 * timed, and the first ends after them close them (innermost first, as
 * nesting has it); stats says how many there were.
 */
#define MAX_OPEN_ZONES (1u << 22)

static inline struct sthread *thread_at(const struct stats *c, long i)
{
	return &((struct sthread *)c->th.a)[i];
}

static inline struct sname *name_at(const struct stats *c, long i)
{
	return &((struct sname *)c->names.a)[i];
}

/* stats_procs.c: a merged trace's row per process (SPEC §4.10); nothing
 * for a trace of one process.  0 or -ENOMEM; the array, or NULL. */
int stats_text_processes(FILE *f, const struct stats *c);
/* Per row of c->names, 1 where another row of a merged trace's has the
 * same name (two processes' "loop"), so its process is said beside it;
 * calloc'd, or NULL for none (a trace of one process) or no memory
 * (*@rc -ENOMEM). */
uint8_t *stats_name_clashes(const struct stats *c, int *rc);
json_t *stats_json_processes(const struct stats *c);

#endif
