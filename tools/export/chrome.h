/*
 * chrome.h - `katra export --chrome`: the Chrome Trace Event document,
 * zones balanced per thread for the viewers (Perfetto's UI, Tracy's
 * import-chrome, chrome://tracing, speedscope).
 *
 * Zones follow export_state.h's rule (one matcher for every export): an
 * end with no open zone of its name is skipped, an end closes the zones
 * opened inside its zone (their ends get args "closed": true), zones
 * still open at the end close at their thread's last event, or at the
 * window's end when --to cut them (args "cut": "end").  At a drop window
 * on a thread, an instant "katra: N events dropped" marks it, and the
 * zones open there close at its start ("cut": "end") and open again at
 * its end ("cut": "start"), so no slice spans events that were lost.
 *
 * Before the events: process_name, and thread_name and thread_sort_index
 * per thread; a thread's row is its OS tid (what the user's other tools
 * call it), katra's id when the file has none.  A flow event binds to the
 * zone around it ("bp":"e"); outside every zone, its end binds to the
 * thread's next slice and a begin or a step stays unbound (counted in
 * res->unbound): no slice is made up, a viewer shows every one as a zone.
 * Times are microseconds with three decimals and a fourth, 3 (0.3 ns), so
 * that readers that truncate to ns and readers that round both get the
 * nanosecond (tools/pipeline/digits.h).
 *
 * With complete set, a zone is one "X" object with its duration, written
 * at its end: a thread keeps the begin times of its innermost
 * CHROME_X_DEPTH open zones, and a zone deeper than that is written as
 * B/E (counted in res->deep).  A zone that another opens inside at the
 * same time goes out as B before it and E at its end: viewers sort by
 * begin time alone, and X objects come out child first.  The same holds
 * for the zones of a track with a clock of its own.
 *
 * Memory: export_state.h's, the formatter's (fmt.h), and 8 bytes per
 * open zone within the cap.  The command's one thread, with the reader's
 * merging thread (tools/pipeline/pipe.h); nothing is formatted ahead.
 */
#ifndef KT_TOOLS_CHROME_H
#define KT_TOOLS_CHROME_H

#include <stdint.h>
#include <stdio.h>

#include <katra/reader.h>
#include "tools/pipeline/export_state.h"
#include "tools/pipeline/tables.h"

#define CHROME_X_DEPTH 256u

struct chrome_opts {
	int complete;   /* zones as "X" events */
	int cut_to;     /* a window ends at to_ns: zones open there close there */
	uint64_t from_ns, to_ns; /* drop records outside [from_ns, to_ns] are not marked */
	/* When the trace has sample records (SPEC §4.2.2), which are no
	 * event of the array: called after its end, before the document's,
	 * to write members of its own (tools/analysis/samples.h's); NULL:
	 * none.  0 or a negative code, the run's result. */
	int (*samples)(void *ctx, FILE *f);
	void *samples_ctx;
};

/*
 * chrome_run - @r's document into @f, as above; what was balanced is
 * counted in *@res.  Returns 0, a reader's negative code after the
 * events before it, -ENOMEM, or -EIO when a write failed.
 */
int chrome_run(kt_reader *r, const struct tables *t, FILE *f, const struct chrome_opts *o,
	       struct export_result *res);

#endif
