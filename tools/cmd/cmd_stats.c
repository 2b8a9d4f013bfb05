/*
 * cmd_stats.c - `katra stats FILE [--json]`: the command around
 * tools/analysis/stats.h, which counts and prints.
 */
#include <errno.h>
#include <stdio.h>

#include <katra/reader.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/progress.h"
#include "tools/analysis/stats.h"

static const struct opts_spec stats_spec = {
	.cmd = "stats", .npos = 1, .unknown = "unknown option",
	.opts = opts_json,
	.help = "usage: katra stats FILE [--json]\n"
		"Per thread: events, dropped, time span, rate.  Per name: count (its\n"
		"events, a zone's begin and end counted once as one zone; --json's\n"
		"count counts records, a zone's begin and end each) and\n"
		"zone durations (min, p50, p99, max, total, and self: the total less\n"
		"the zones that ended inside them on their thread; a zone whose end\n"
		"is missing stays in its parent's self time).  Frame times between frame\n"
		"marks: p50, p99, max and a histogram.  Durations in ns; percentiles\n"
		"come from ~3%-wide buckets, min and max are exact.\n"
		"A trace of several processes (katra record, katra merge) has a row\n"
		"per process first, and each process's names apart: a name two\n"
		"processes have says whose, \"loop (pid 1522)\" (--json: every\n"
		"name's \"process\", an id of \"processes\").\n"
		"Drop windows (when the file has drop records): per thread how many,\n"
		"the events lost, the time they cover and its share of the span, and\n"
		"the names whose zones were open across one (their figures include\n"
		"time whose events were lost); --json: drop_windows and drop_ns per\n"
		"thread, open_across_drops per name, only where not 0.\n"
		"Memory events (kt_alloc, kt_free): per pool allocations, frees, bytes,\n"
		"peak and end live bytes, the 5 largest allocations, and frees of\n"
		"pointers not live (unknown); at most 256 pools and 2^20 pointers are\n"
		"tracked, the rest counted.\n"
		"Damaged frames are skipped and said on stderr; the exit status is then\n"
		"3 (partial), as for a truncated file.\n",
};

int cmd_stats(int argc, char **argv)
{
	const char *path;
	int json = 0;
	int rc = opts_parse(&stats_spec, argc, argv, &json, &path);
	if (rc != OPTS_GO)
		return rc;
	struct input in;
	if ((rc = input_open(&in, path)))
		return rc;
	int truncated = 0;
	kt_reader_set_salvage(in.r, 1);
	progress_init(0, in.r);
	rc = stats_run(in.r, path, json, stdout, &truncated);
	progress_end();
	int result = rc == -EIO ? EXIT_BAD	/* stdout: main() says why */
		   : rc < 0 ? pass_failed(path, in.r, rc)
		   : truncated ? EXIT_TRUNC : EXIT_OK;
	result = salvage_said(path, in.r, result);
	input_close(&in);
	return result;
}
