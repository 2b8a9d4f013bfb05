/*
 * ringbench --workload NAME: the corpus of bench/workloads.h through the
 * producer API, run by the frame loop's machinery (its pacing, session or
 * capture, summary and --find-max-rate) in place of the frame loop's units.
 */
#ifndef KATRA_BENCH_RINGBENCH_WORKLOADS_H
#define KATRA_BENCH_RINGBENCH_WORKLOADS_H

#include <stdint.h>

struct rb_workload {
	const char *name;
	const char *label;     /* the trace header's workload string */
	int threads;           /* the default producer count */
	/* Intern the workload's names (and its category's site); once per
	 * session, before the producers start. */
	void (*setup)(void);
	/* Thread @thread of @threads: its name, and its unit @n (the
	 * records emitted). */
	const char *(*thread_name)(int thread);
	unsigned (*unit)(int thread, int threads, uint64_t n);
};

/* --untraced: the workloads' records are counted and not emitted, so that
 * a run times the program's own work alone (set before the producers
 * start). */
extern int rb_workload_untraced;

/* The workload named @name (renderer, interp, jobs), or NULL. */
const struct rb_workload *rb_workload_find(const char *name);

/* The names, comma-separated, for a usage line. */
#define RB_WORKLOAD_NAMES "renderer, interp, jobs"

#endif
