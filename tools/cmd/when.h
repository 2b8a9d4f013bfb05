/*
 * when.h - the time window a command reads: --from, --to, --window and
 * --frames, as a user says them.
 *
 * A bare integer is CLOCK_MONOTONIC nanoseconds, as `katra info` and
 * `dump` print them (the form every earlier katra took).  A time with a
 * unit (ns, us, ms, s) or a leading '+' is relative to the trace's start
 * (its header's monotonic start): "+1.5s", "250ms", "--window 2s..3s".
 * --frames A..B selects from the frame mark before the first mark numbered
 * A or more up to the last mark numbered B or less: frames A to B, as
 * kt_frame() numbers them ("frame N ends").
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_WHEN_H
#define KT_TOOLS_WHEN_H

#include <stdint.h>

#include <katra/reader.h>

#include "tools/cmd/opts.h"

enum when_kind { WHEN_ABS, WHEN_REL, WHEN_FRAME };

struct when {
	uint64_t v;
	int kind;        /* enum when_kind */
	int given;
};

/* A command's window as given; when_resolve() turns it into ns. */
struct when_window {
	struct when from, to;
};

opt_read_fn opt_when;        /* --from or --to: into a struct when */
opt_read_fn opt_when_window; /* --window A..B: into a struct when_window */
opt_read_fn opt_when_frames; /* --frames A..B: into a struct when_window */

/* The window options of every command that cuts one, stored at @off (a
 * struct when_window). */
#define WHEN_OPT_FROM(off) { "--from", opt_when, (off), .wants = "a time (NS, +1.5s, 250ms)" }
#define WHEN_OPT_TO(off)                                                     \
	{ "--to", opt_when, (off) + offsetof(struct when_window, to),        \
	  .wants = "a time (NS, +1.5s, 250ms)" }
#define WHEN_OPT_WINDOW(off) { "--window", opt_when_window, (off), .wants = "A..B (2s..3s)" }
#define WHEN_OPT_FRAMES(off) { "--frames", opt_when_frames, (off), .wants = "frame numbers A..B" }
#define WHEN_OPTS(off) WHEN_OPT_FROM(off), WHEN_OPT_TO(off), WHEN_OPT_WINDOW(off), \
		       WHEN_OPT_FRAMES(off)

#define WHEN_HELP                                                                 \
	"A time is CLOCK_MONOTONIC ns (a bare integer, as `katra info` prints),\n"  \
	"or relative to the trace's start with a unit or a '+' (+1.5s, 250ms,\n"     \
	"+1200us); --window A..B is --from A --to B; --frames A..B keeps frames\n"  \
	"A to B (from the mark before frame A to the mark of frame B).\n"

/*
 * when_early - the usage error for a window that is empty whatever the
 * trace (both ends absolute or both relative, and from after to).
 * Returns OPTS_GO or EXIT_USAGE.
 */
int when_early(const char *cmd, const struct when_window *w);

/*
 * when_resolve - @w in ns of @r's trace into @from and @to (UINT64_MAX
 * for an open end).  A --frames window takes one pass over @r's events and
 * rewinds it.  Returns OPTS_GO, EXIT_USAGE (a window that selects
 * nothing, or frames the trace does not have, said), or the status of a
 * failed read (said).
 */
int when_resolve(const char *cmd, const char *path, const struct when_window *w,
		 kt_reader *r, uint64_t *from, uint64_t *to);

#endif
