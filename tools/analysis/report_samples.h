/*
 * report_samples.h - `katra report`'s flame graph of the sampled call
 * stacks (SPEC §4.2.2) taken inside the slowest frames (report.h): a
 * second pass, after the stats pass has found those frames, folds the
 * samples of each frame's time [end - length, end] through samples.h's
 * tree (thread, zones open, functions), rooted per frame.  The page draws
 * it beside the flame graph of self time; when there is nothing to draw
 * it says why: no samples in the trace (and the header's note when the
 * session asked for them and the kernel refused), no frame marks, or no
 * sample inside the slowest frames.
 *
 * Bounded: samples.h's caps in the pass, REPORT_FLAME_NODES nodes on the
 * page (smaller stacks fold into their parents, samples kept).
 * The report's one thread.
 */
#ifndef KT_TOOLS_REPORT_SAMPLES_H
#define KT_TOOLS_REPORT_SAMPLES_H

#include <jansson.h>
#include <katra/reader.h>

struct report;
struct report_samples;

/* report_samples_collect - after report_collect()'s stats pass over @r:
 * @rep->samples, when the trace has samples and frames (else it stays
 * NULL but for the header's note).  0, a reader's code or -ENOMEM. */
int report_samples_collect(kt_reader *r, struct report *rep);

/*
 * report_samples_json - the page's "samples": {"total" (sample records
 * in the trace, of the kept processes' threads or not), "in_frames"
 * (those inside a slowest frame), "unknown", "folded", "why" (the note's
 * reason when the session's sampling was refused, else null), "flame":
 * [[parent index or -1, name, samples, thread id or null, slowest frame's
 * index or null], ...]}.  A root is a thread in one slowest frame.  NULL
 * when out of memory.
 */
json_t *report_samples_json(const struct report *rep);

/* The page's section and its script (which runs before report_page.c's
 * and draws with its flame graph code). */
extern const char report_samples_body[];
extern const char report_samples_script[];

void report_samples_free(struct report_samples *s);

#endif
