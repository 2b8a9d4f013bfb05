/*
 * report.h - what `katra report` summarises from one pass over a trace:
 * the stats (tools/analysis/stats.h), the flame tree of self time (tools/analysis/collapse.h),
 * the frame times as a downsampled series with the slowest frames exact,
 * and per thread event counts and per counter values over time in a fixed
 * number of bins.
 *
 * Bounded whatever the trace: REPORT_POINTS frame points (a pair of points
 * merges into the slower one as the series grows), REPORT_SLOWEST slowest
 * frames, REPORT_BINS time bins (two merge into one, doubling their width,
 * as the trace goes on), REPORT_THREADS threads, REPORT_COUNTERS
 * counters and REPORT_POOLS memory pools with series (the rest are
 * counted), and REPORT_FLAME_NODES
 * stacks in the page (smaller ones fold into their parent, time kept).
 *
 * The command's one thread (the stats pass runs pipe.h's second thread).
 */
#ifndef KT_TOOLS_REPORT_H
#define KT_TOOLS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <katra/reader.h>
#include "tools/analysis/collapse.h"
#include "tools/analysis/report_procs.h"
#include "tools/analysis/stats.h"

#define REPORT_POINTS 4096
#define REPORT_SLOWEST 10
#define REPORT_BINS 512
#define REPORT_THREADS 64
#define REPORT_COUNTERS 32
#define REPORT_POOLS 32
#define REPORT_FLAME_NODES 5000

/* A frame: the time it ended (its mark) and its length. */
struct report_frame {
	uint64_t ns, len;
	uint32_t thread;
};

enum { SERIES_THREAD, SERIES_COUNTER, SERIES_POOL };

/* One series over the bins: events of a thread, a counter's value, or a
 * memory pool's live bytes. */
struct report_series {
	uint32_t id;             /* thread id, counter name id or pool id */
	int counter;             /* SERIES_* */
	double v[REPORT_BINS];   /* events per bin; a counter's last value; a
				  * pool's highest live bytes in the bin */
	uint8_t set[REPORT_BINS];
};

struct report {
	struct stats *stats;
	struct collapse *flame;
	struct collapse_result flame_res;
	struct report_frame points[REPORT_POINTS];
	size_t npoints;
	uint64_t stride, pending; /* frames per point now; frames in the last point */
	struct report_frame slowest[REPORT_SLOWEST];
	size_t nslowest;
	uint64_t origin;          /* the bins: bin i starts at origin + (i << shift) ns */
	unsigned shift;
	int have_origin;
	struct report_series *series;
	size_t nseries, nthreads, ncounters, npools;
	size_t last;              /* the series of the last event's thread */
	int have_last;
	uint64_t other_threads, other_counters, other_pools; /* events not in a series */
	struct report_procs procs; /* per process, and the filter (report_procs.h) */
	struct report_sched *sched; /* state lanes: report_sched.h */
	struct report_samples *samples; /* in the slowest frames: report_samples.h */
};

/* A node of a flame tree for the page: its parent's index (COLLAPSE_ROOT
 * for a root; a parent before its children), what names it, its own
 * weight (ns or samples) and, filled in, its subtree's. */
struct fnode {
	uint32_t parent, name;
	uint64_t self, incl;
	uint32_t out;     /* index in the page's array, or COLLAPSE_ROOT when folded */
};

/* report_flame_rows - the page's rows of @n (@count): the roots and the
 * REPORT_FLAME_NODES heaviest other nodes (a folded node's weight goes to
 * its nearest kept ancestor), each row @row(@ctx, node i, its parent's
 * row or -1) with i's .self as folded.  NULL when out of memory. */
json_t *report_flame_rows(struct fnode *n, size_t count,
			  json_t *(*row)(void *ctx, size_t i, json_int_t parent), void *ctx);

/* report_bin_of - the time bin of @ns, the bins halved until it fits. */
size_t report_bin_of(struct report *rep, uint64_t ns);

/*
 * report_collect - one pass over @r (just opened, or left by
 * report_procs_select() on @rep->procs) into @rep (zeroed but for that):
 * only the kept processes' threads when it filters.
 * Returns 0, a reader's negative code, or -ENOMEM; report_free() either way.
 */
int report_collect(kt_reader *r, struct report *rep);

/* report_json - the page's data: the header of @h, @sidecar (a capture's
 * status object or NULL), the stats of @label and the summaries above.
 * NULL when out of memory. */
json_t *report_json(const struct report *rep, const kt_header *h, json_t *sidecar,
		    const char *label);

/* report_page - the HTML page holding @data to @f.  0, -ENOMEM or -EIO. */
int report_page(FILE *f, const json_t *data);

void report_free(struct report *rep);

#endif
