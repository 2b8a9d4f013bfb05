/*
 * bench/ringbench.h - what ringbench's files share: the options, the cost
 * samples, the table's rows and the frame loop (ringbench.c), the
 * producer-only rows with their baselines (ringbench_producer.c) and the
 * command line (ringbench_opts.c).
 */
#ifndef KATRA_BENCH_RINGBENCH_H
#define KATRA_BENCH_RINGBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/ringbench_workloads.h"

#define BATCH 1000 /* events per timed batch of --producer-only */
enum { MAX_THREADS = 16, MAX_NAMES = 4096 };

struct opts {
	double seconds;
	double rate;           /* events/s in total; 0 = as fast as possible */
	int codec;
	int policy;
	size_t ring_size;
	const char *out;
	int json;
	int producer_only;
	int find_max_rate;
	int rate_set;          /* --rate was given: --find-max-rate starts there */
	int codec_only;        /* --codec-only: --find-max-rate skips the raw rows */
	int report_rss;
	int baselines;
	int peer_lttng;
	int recorded;          /* --recorded: rows into the environment's session */
	uint64_t frame_events;  /* --events for the frame loop: a count, not a time */
	unsigned payload;       /* --payload B */
	unsigned names;         /* --names N: the frame loop's inner zones take N names */
	int threads;           /* 0: the workload's own count (the frame loop: 3) */
	const struct rb_workload *workload; /* --workload: in place of the frame loop */
	int io;                /* kt_io_backend */
	uint64_t events;       /* --events for --producer-only */
	int flight;            /* --flight N: snapshots (ringbench_flight.c) */
	int bursts;            /* --burst N (ringbench_burst.c) */
	int first_emit;        /* --first-emit N: threads (ringbench_first.c) */
	unsigned burst_ms;     /* --burst-ms MS */
	/* The capture manager's options (the frame loop without --out). */
	const char *capture_root;
	const char *run_id;
	uint64_t epoch;
	double duration;       /* s; 0: the run's length plus 5 s, at most 30 */
	uint64_t max_bytes;
	int cap_policy;
};

struct stats {
	double *v;
	size_t n, cap;
	uint64_t seen;
	uint64_t rng;
};

struct row {
	const char *name;
	int threads;
	uint64_t events, dropped;
	double seconds;
	double p50, p99, p999;
	uint64_t bytes;
	const char *codec, *io;
};

uint64_t now_ns(void);
/* Add cost sample @x to @s (a reservoir past RESERVOIR samples). */
void stats_add(struct stats *s, double x);
/* The @p quantile of @s's samples (sorts them). */
double pct(struct stats *s, double p);
/* --codec's names, by kt_codec. */
extern const char *const codec_names[5];
const char *codec_name(int codec);
const char *io_name(int io);
/* @capture: the capture's status JSON, put under "capture"; may be NULL. */
void print_rows(const struct opts *o, const struct row *rows, int n, const char *path,
		const char *note, const char *capture);

/* --producer-only and --baselines: the rows side by side.  Exit status. */
int producer_only(const struct opts *o);

/* --first-emit: a new thread's ring, what it costs the thread.  Exit
 * status. */
int first_emit(const struct opts *o, int threads);

void usage(FILE *f);
/* The command line into @o: -1 to go on, or the exit status (0 for --help,
 * 2 for a bad option, said on stderr). */
int rb_parse_opts(int argc, char **argv, struct opts *o);

#endif
