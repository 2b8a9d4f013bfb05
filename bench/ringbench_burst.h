/*
 * ringbench_burst.h - ringbench --burst (ringbench_burst.c): bursts of
 * deep call trees at the producer's full speed, with every default.
 * The main thread only.
 */
#ifndef KATRA_BENCH_RINGBENCH_BURST_H
#define KATRA_BENCH_RINGBENCH_BURST_H

#include <katra/katra.h>

/*
 * ringbench_burst - @bursts bursts of @burst_ms each, a pause as long
 * after each, into a new trace at @path (replaced if it exists), with
 * kt_init(@cfg) and a session of codec @codec (0 for the defaults, as
 * every field of @cfg); print the table.
 * Return: the process's exit status (1 when the session failed or the file
 * does not verify; drops are reported, not an error).
 */
int ringbench_burst(const char *path, int bursts, unsigned burst_ms, const kt_config *cfg,
		    int codec);

#endif
