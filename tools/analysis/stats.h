/*
 * stats.h - `katra stats`: per thread (events, drops, span, rate, time in
 * zones), per name (count, zone durations, total and self time) and frame
 * times, as text or JSON; and the same pass for the commands built on it
 * (report, diff), which see each event, zone and frame as it is counted.
 *
 * One pass for names, threads and drop records, then one merged pass over
 * the events (no payload copied).  Every table is keyed by
 * the ids the events use (tools/pipeline/idmap.h), zones are matched in O(1) each
 * whatever their nesting, and histograms start sparse (tools/pipeline/hist.h): time
 * and memory follow the file's events, never the values of its ids.
 * Strings from the file are escaped as tools/pipeline/text.h says.
 *
 * A zone's self time is its duration less the durations of the zones that
 * ended inside it on its thread.  A zone closed with an outer one (its end
 * was dropped or sliced away) is not timed: its own time stays in the
 * outer one's self time (the zones that ended inside it counted already).  Each thread's zones_ns is the sum of the self times
 * of its zones that ended, so the self times of all names sum to the
 * threads' zones_ns, and so does a flame graph of the same zones
 * (collapse.h), whatever was lost: a zone that never ended (its end was
 * dropped, or the trace stops first) is left out, and the zones that
 * ended inside it are not.  On a trace where every zone ended, zones_ns
 * is the time of the thread's outermost zones.
 *
 * One thread per call (it runs tools/pipeline/pipe.h's second thread itself).
 */
#ifndef KT_TOOLS_STATS_H
#define KT_TOOLS_STATS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/pipeline/idmap.h"
#include "tools/pipeline/tables.h"

struct stats;

/* What a command built on the stats pass sees, on the pass's calling
 * thread, in the pass's order.  Any hook may be NULL; a non-zero return
 * ends the pass with that result. */
struct stats_hooks {
	/* Every event, before it is counted. */
	int (*event)(void *ctx, const kt_event *ev, uint64_t ns);
	/* A zone that ended: its thread, name id, begin, duration and self time. */
	int (*zone)(void *ctx, uint32_t thread, uint32_t name, uint64_t begin, uint64_t dur,
		    uint64_t self);
	/* A frame mark after the first on its thread: the interval before it. */
	int (*frame)(void *ctx, uint32_t thread, uint64_t ns, uint64_t interval);
	/* An allocation or free counted: its pool and the pool's live bytes
	 * now (tools/pipeline/memstats.h). */
	int (*mem)(void *ctx, uint32_t pool, uint64_t ns, uint64_t live);
	void *ctx;
	int payloads;   /* the event hook needs payloads (counter values) */
	/* When not NULL, only the events and drop records of the threads whose
	 * ids it holds as keys are seen and counted (a process filter,
	 * tools/analysis/report_procs.h); the drops are theirs. */
	const struct idmap *threads;
};

/*
 * stats_collect - read @r (just opened) and count it, calling @hooks (may
 * be NULL) on the way.  *@out is set even on failure (stats_free() it).
 *
 * Return: 0; a negative code from the reader (its last error says where
 * and why), -ENOMEM, or a hook's non-zero result.
 */
int stats_collect(kt_reader *r, const struct stats_hooks *hooks, struct stats **out);

/* stats_print - the stats as text or (@json) JSON to @out, headed with
 * @label (the file's name).  Returns 0, -ENOMEM, or -EIO when @out could
 * not be written. */
int stats_print(const struct stats *s, const char *label, int json, FILE *out);

/* stats_json - the object `katra stats --json` prints; NULL when out of memory. */
json_t *stats_json(const struct stats *s, const char *label);

/* stats_samples - how many sample records the pass read (SPEC §4.2.2). */
uint64_t stats_samples(const struct stats *s);

/* stats_tables - the names and threads the file defines. */
const struct tables *stats_tables(const struct stats *s);

/* A zone name's on-CPU and off-CPU time (schedstats.h's, for its covered
 * zones). */
struct stats_offcpu {
	uint32_t name;
	uint64_t zones, on_ns, blocked_ns, preempted_ns;
};

/* stats_offcpu - whether the file has scheduler records (KT_HDR_SCHED)
 * into *@present; then the first @cap names' rows into @rows.  Returns
 * how many names have a row. */
size_t stats_offcpu(const struct stats *s, int *present, struct stats_offcpu *rows, size_t cap);

/* stats_truncated - 1 when the file has no summary (it was cut short). */
int stats_truncated(const struct stats *s);

/* stats_free - release @s (NULL is fine). */
void stats_free(struct stats *s);

/*
 * stats_run - stats_collect() and stats_print() of @r.  *@truncated is
 * set when the file has no summary.  Returns as those do, with nothing
 * printed when the pass failed.
 */
int stats_run(kt_reader *r, const char *label, int json, FILE *out, int *truncated);

#endif
