/*
 * diff_procs.h - `katra diff`'s rows per process: a zone name that two
 * processes of one run have (a merged trace's, SPEC §4.10) is a row per
 * process name in every run, so "work" of a server and "work" of its
 * client are compared each with its own.  Keyed by the process's name,
 * never its pid: pids differ between runs.  Processes of one name (two
 * workers of one program) pool into one row, as runs do.  A name no run
 * has in two processes stays one row, whatever its process is called.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_DIFF_PROCS_H
#define KT_TOOLS_DIFF_PROCS_H

#include <stddef.h>

#include "tools/analysis/diff.h"

/* One run's sample of one name (of one process), to be pooled with the
 * same row's. */
struct pool_entry {
	const char *name, *process;
	size_t len, plen;
	int side;
	size_t run;     /* its run's index */
	int keyed;      /* its row is per process (diff_procs_key()) */
	const struct diff_sample *s;
};

/*
 * diff_procs_key - @e (@n entries, sorted by name then side) with the
 * names that clash across processes keyed by process, sorted again by
 * name, process where keyed, then side.  0 or -ENOMEM.
 */
int diff_procs_key(struct pool_entry *e, size_t n);

/* diff_procs_same_row - whether @a and @b pool into one row. */
int diff_procs_same_row(const struct pool_entry *a, const struct pool_entry *b);

#endif
