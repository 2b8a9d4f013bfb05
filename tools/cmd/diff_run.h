/*
 * diff_run.h - one run (trace) read for `katra diff`: its header's run id
 * and epoch, its drops, and a bounded sample of each zone name's durations
 * and of its frame times (tools/analysis/diff.h), from the stats pass
 * (tools/analysis/stats.h).
 *
 * A zone name is sampled per process of the trace (a merged trace's,
 * SPEC §4.10): diff_out.c makes one row of it, or a row per process name
 * where two processes of a run have it (tools/cmd/diff_procs.h).
 *
 * Bounded: at most DIFF_NAMES names are sampled per run (16 KiB each at
 * most, so 16 MiB a run, and never more than 8 bytes per zone read); the
 * zones of names past that are counted, not compared.  The stats pass's
 * tables are freed when the run is read: a run keeps its samples and the
 * bytes of its sampled names.
 *
 * diff_runs_read() reads two runs at a time, each on its own thread (every
 * struct diff_run is touched by one thread until they are joined).
 */
#ifndef KT_TOOLS_DIFF_RUN_H
#define KT_TOOLS_DIFF_RUN_H

#include <stdint.h>

#include "tools/analysis/diff.h"
#include "tools/cmd/diff_sched.h"
#include "tools/pipeline/idmap.h"
#include "tools/analysis/stats.h"

#define DIFF_NAMES 1024
#define DIFF_READERS 2 /* runs read at once (each pass is two threads itself) */

struct diff_name {
	uint32_t id;
	char *name;                /* its bytes, copied when the pass ends */
	size_t len;
	uint32_t proc;             /* its zones' process (SPEC §4.10; 0: the file's own) */
	char *process;             /* that process's name, copied ("" when none) */
	size_t plen;
	struct diff_sample s;
};

struct diff_run {
	const char *path;
	int side;                  /* 0: A, 1: B */
	int order;                 /* its place on the command line */
	int captured;              /* the header names a run id */
	char run_id[129], capture_id[65];
	uint64_t epoch;
	uint64_t dropped;
	int truncated;
	struct diff_name *names;
	size_t nnames, cap;
	struct idmap ids;          /* process << 32 | name id -> index in names */
	struct stats **pass;       /* the pass's stats while it runs, for its tables */
	uint32_t last_tid, last_proc; /* the last zone's thread and its process */
	int have_last;
	uint64_t unsampled;        /* zones of names past DIFF_NAMES */
	uint32_t keep;             /* values kept per name, diff_runs_read()'s */
	struct diff_sample frames;
	struct diff_sched sched;   /* off-CPU time per zone: diff_sched.h */
};

/*
 * diff_run_read - read @run->path as a trace into @run (zeroed but for
 * path, side and order), drawing the progress bar when @progress (the bar
 * is process-wide: never with another pass running).  Returns 0, or the
 * exit status after saying why not (tools/cmd/cli.h).
 */
int diff_run_read(struct diff_run *run, int progress);

/*
 * diff_runs_read - diff_run_read() each of @runs[@n], DIFF_READERS at a
 * time (one on the calling thread), with the progress bar only when there
 * is one run; after a run fails no other is started.  Each run keeps up to
 * DIFF_POOL / (the runs on its side) values per name, at most DIFF_SAMPLE,
 * so a side keeps at most max(DIFF_POOL, 4 * DIFF_SAMPLE) per name.  What each run holds
 * does not depend on the threads' timing: each keeps its own samples and
 * seeds.  Returns 0, or the exit status of the first run (in @runs' order)
 * that failed; each failure is said.
 */
int diff_runs_read(struct diff_run *runs, size_t n);

void diff_run_free(struct diff_run *run);

#endif
