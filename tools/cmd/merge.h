/*
 * merge.h - several processes' traces as one (SPEC §4.10.1): `katra
 * merge` and the end of `katra record`.
 *
 * Each input becomes a process of the output: a process entry (its own,
 * or one made from its header), its threads under it, its names, threads
 * and tracks renumbered apart from every other input's, every tick value
 * converted to CLOCK_MONOTONIC ns through the input's own calibration.
 * The inputs are read as any input (no byte trusted); the output is
 * created new and never replaces a file.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_MERGE_H
#define KT_TOOLS_MERGE_H

#include <stddef.h>
#include <stdint.h>

/* What one input gave the output. */
struct merge_proc {
	uint32_t id;             /* its process id in the output */
	uint64_t pid;
	uint64_t parent;         /* its parent's pid; 0 when unknown */
	char name[64];           /* its process name, or first thread's */
	uint32_t threads;
	uint64_t written, dropped;
	int complete;            /* the input had a summary */
	int recovered;           /* rebuilt by katra recover */
	int damaged;             /* reading stopped on damage: frames before kept */
};

/* merge_max_inputs - how many inputs one output takes (KT_MAX_PROCESSES). */
size_t merge_max_inputs(void);

/*
 * merge_traces - write @out from the @n traces at @paths; @procs (n
 * entries) receives each input's account.  Says what goes wrong (an input
 * that cannot be opened, of another host, the output existing).
 * Returns 0, EXIT_PARTIAL when an input's reading stopped on damage (the
 * frames before it were kept), or EXIT_BAD (nothing is left at @out).
 */
int merge_traces(const char *const *paths, size_t n, const char *out, struct merge_proc *procs);

/* merge_say - a line per process of @p (@n) on stderr (tools/cmd_merge.c). */
void merge_say(const struct merge_proc *p, size_t n);

#endif
