/*
 * report_procs.h - `katra report` of a trace of several processes (SPEC
 * §4.10, a merged trace): a section per process (its entry, its threads,
 * its zones), and the process filter (--pid, --process) that keeps one
 * process's threads out of the others'.
 *
 * A process's zones are keyed by (process, name id): in a merged trace
 * each input's names are renumbered apart, so a zone name two processes
 * use is two rows there, one in each process's section.  Bounded by the
 * zones' (process, name) pairs, as the stats pass's names are.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_REPORT_PROCS_H
#define KT_TOOLS_REPORT_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/hist.h"
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

/* Which processes a report keeps: every one (neither given), those of a
 * pid, or those of a name (every process of that name). */
struct report_only {
	int by_pid;
	uint64_t pid;
	const char *name;
};

/* A process's zones of one name. */
struct report_pzone {
	uint32_t proc, name;
	uint64_t total_ns, self_ns;
	struct hist h;
};

struct report_procs {
	struct report_only only; /* as given, for the page */
	int filtered;            /* threads holds the kept threads' ids */
	struct idmap threads;
	struct idmap map;        /* process << 32 | name id -> index in zones */
	struct report_pzone *zones;
	size_t nzones, cap;
	uint32_t last_tid, last_proc; /* the last zone's thread: zones come in runs */
	int have_last;
	int ready;               /* report_procs_init() ran */
};

/* report_procs_init - ready @p (zeroed, or ready already) for a report of
 * every process. */
void report_procs_init(struct report_procs *p);

/*
 * report_procs_select - @p (zeroed) keeps what @only selects of @r (just
 * opened), read once for its processes and threads and left rewound.
 * When every process of the file matches, nothing is filtered.
 *
 * Return: 0; -ENOENT when no process matches (@why, @why_len bytes, says
 * which processes the file has); a reader's negative code; -ENOMEM.
 */
int report_procs_select(kt_reader *r, const struct report_only *only, struct report_procs *p,
			char *why, size_t why_len);

/* report_procs_zone - a zone that ended (the stats pass's zone hook) on
 * @thread, @t the pass's tables.  0 or -ENOMEM. */
int report_procs_zone(struct report_procs *p, const struct tables *t, uint32_t thread,
		      uint32_t name, uint64_t dur, uint64_t self);

/* report_procs_finish - after the pass: the zones in (process, name) order,
 * their percentiles ready. */
void report_procs_finish(struct report_procs *p);

/*
 * report_procs_json - the page's "processes": an object per process kept
 * (pid, parent, name, command line, start and end, complete, recovered,
 * its threads' rows of @stats, stats_json()'s, its events, drops and
 * zones), or json null for a trace of one process.  NULL when out of
 * memory.
 */
json_t *report_procs_json(const struct report_procs *p, const struct tables *t,
			  const json_t *stats);

/* report_procs_filter_json - the filter as given (null when none). */
json_t *report_procs_filter_json(const struct report_procs *p);

/* The page's section: its HTML and the script that fills it. */
extern const char report_procs_body[], report_procs_script[];

void report_procs_free(struct report_procs *p);

#endif
