/*
 * snapshot.h - `katra snapshot`: one process's flight window
 * (cmd_snapshot.c), or several processes' merged into one trace
 * (snapshot_all.c: --all, or the pid of `katra record --flight`).
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_SNAPSHOT_H
#define KT_TOOLS_SNAPSHOT_H

#include <stdint.h>

/* How long a process may take to take the connection and to answer
 * (its snapshot is taken meanwhile): a process that accepted and never
 * answers must not hold the command, nor --all's other processes. */
#define SNAPSHOT_TIMEOUT_NS 30000000000ull

struct snap_args {
	const char *out;
	uint64_t max_age_ns, max_bytes;
	uint64_t timeout_ns; /* --timeout: 0 for SNAPSHOT_TIMEOUT_NS */
	int all; /* --all */
	/* Where snapshot_take() says its line (what it wrote, or why not):
	 * NULL for stdout and stderr; else into these @said_cap bytes, the
	 * first line only, without its newline (katra top's status line,
	 * under curses). */
	char *said;
	size_t said_cap;
};

/* snapshot_take - ask process @pid for its window into @out (created new);
 * @quiet: a process with no flight session listening is not said (the
 * caller says it).  Prints the window's line (prefixed "pid N: " when
 * @quiet or --all), or into @a->said.  Waits @a->timeout_ns at most for
 * the connection and for each answer.  Returns EXIT_OK or EXIT_BAD
 * (nothing at @out). */
int snapshot_take(long pid, const char *out, const struct snap_args *a, int quiet);

/* snapshot_ask - connect to process @pid's socket and send the request
 * (the process takes its snapshot as it reads it); @quiet as above.
 * Returns the connection for snapshot_get(), or -1 (said). */
int snapshot_ask(long pid, const struct snap_args *a, int quiet);

/* snapshot_get - the answer to snapshot_ask() on @c (closed here) into
 * @out, as snapshot_take() does.  Returns EXIT_OK or EXIT_BAD (said). */
int snapshot_get(long pid, int c, const char *out, const struct snap_args *a, int quiet);

/* snapshot_say_failed - what went wrong with process @pid's answer
 * (@rc: -errno; -ETIME: the timeout passed), said as @a asks. */
void snapshot_say_failed(long pid, int rc, const struct snap_args *a);

/* snapshot_listens - does process @pid have a flight session's socket,
 * ours, in the control directory?  1 or 0. */
int snapshot_listens(long pid);

/* snapshot_has_listeners - does any process under @pid (its children,
 * theirs, ...) have one?  1 or 0. */
int snapshot_has_listeners(long pid);

/*
 * snapshot_many - every process under @root (0: every process of ours)
 * that has a flight session listening, asked at once (every request sent
 * before any answer is read, the answers read as they come, within one
 * timeout), each window into a file of a private temporary directory,
 * then merged into @out (created new; tools/cmd/merge.h); the temporary
 * files removed.  A process that
 * ended before it answered is said and left out.  Returns EXIT_OK, or
 * EXIT_BAD when none answered or the merge failed (nothing at @out).
 */
int snapshot_many(long root, const char *out, const struct snap_args *a);

#endif
