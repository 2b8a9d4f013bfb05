/*
 * cmd_dump.c - `katra dump` and `katra replay`: every event in timestamp
 * order as text or JSON lines (tools/pipeline/fmt.h), all at once or paced to the
 * original timing.  They share their options and their output.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <katra/reader.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/pipeline/drops.h"
#include "tools/pipeline/fmt.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/progress.h"
#include "tools/pipeline/tables.h"
#include "tools/cmd/when.h"

/*
 * Paced replay: each event waits for its time since the first, scaled by
 * the speed, but never longer than @max_gap_ns after the one before it (a
 * crafted file's timestamps could ask for hours or years); the first gap
 * shortened is said once on stderr.  What is printed goes out before each
 * wait, so a terminal shows the events as they come.
 */
struct pacer {
	double speed, max_gap_ns;
	uint64_t start, at;    /* now-clock of the first event; due offset */
	uint64_t prev_ns;
	int started, told;
};

static uint64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t due)
{
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000u),
			       .tv_nsec = (long)(due % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Wait for the event at @ns, flushing @fm first when there is a wait. */
static void pace(struct pacer *p, uint64_t ns, struct fmt *fm)
{
	if (!p->started) {
		p->started = 1;
		p->start = mono_now();
		p->prev_ns = ns;
		return;
	}
	/* Times need not increase across threads' clocks (nor, if crafted,
	 * at all): an earlier one is due now. */
	double gap = ns > p->prev_ns ? (double)(ns - p->prev_ns) / p->speed : 0;
	if (gap > p->max_gap_ns) {
		if (!p->told)
			say("replay: a gap of %.3f s between two events shortened to %g s "
			    "(--max-gap)", gap / 1e9, p->max_gap_ns / 1e9);
		p->told = 1;
		gap = p->max_gap_ns;
	}
	if (ns > p->prev_ns)
		p->prev_ns = ns;
	/* With --max-gap inf a gap may be anything: keep the sums in range
	 * (2^62 ns is a century). */
	p->at += gap < 0x1p62 ? (uint64_t)gap : (uint64_t)1 << 62;
	if (p->at > (uint64_t)1 << 62)
		p->at = (uint64_t)1 << 62;
	uint64_t due = p->start + p->at;
	if (due <= mono_now())
		return;
	fmt_flush(fm);
	flush_stdout();
	sleep_until(due);
}

static int replay_paced(kt_reader *r, struct fmt *fm, struct pacer *p)
{
	kt_event ev;
	uint64_t n = 0;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		uint64_t ns = kt_reader_get_time_ns(r, ev.ts);
		pace(p, ns, fm);
		if (fmt_event(fm, &ev, ns))
			return -ENOMEM;
		progress_events(++n);
	}
	return rc;
}

struct events_opts {
	struct fmt_job job;
	struct when_window win;  /* resolved into job.from and job.to */
	struct thread_list threads;
	int paced;
	struct pacer pacer;
};

/* --format: text or jsonl.  (text leaves what an earlier --format chose.) */
static int opt_format(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	if (!strcmp(value, "jsonl"))
		*(int *)dst = FMT_JSONL;
	else if (strcmp(value, "text"))
		return opt_bad(cmd, o, value);
	return 0;
}

/* --speed: a positive, finite factor. */
static int opt_speed(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	char *end;
	double v = strtod(value, &end);
	if (*end || !(v > 0) || isinf(v))
		return opt_bad(cmd, o, value);
	*(double *)dst = v;
	return 0;
}

/* --max-gap: a non-negative number of seconds (or inf), kept as ns. */
static int opt_seconds(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	char *end;
	double v = strtod(value, &end);
	if (end == value || *end || !(v >= 0))
		return opt_bad(cmd, o, value);
	*(double *)dst = v * 1e9;
	return 0;
}

#define EVENTS_OPT(field) offsetof(struct events_opts, field)

static const struct opts_spec dump_spec = {
	.cmd = "dump", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "--format", opt_format, EVENTS_OPT(job.kind), .wants = "text or jsonl" },
		OPT_THREAD(EVENTS_OPT(threads)),
		WHEN_OPTS(EVENTS_OPT(win)),
		{ .name = NULL } },
	.help = "usage: katra dump FILE [--format text|jsonl] [--thread ID ...]\n"
		"                  [--from T] [--to T] [--window T..T] [--frames A..B]\n"
		"Prints the events of all threads merged in timestamp order; a\n"
		"thread whose timestamps go back (verify warns) keeps its own order.\n"
		"Text lines: ns tid thread type name [value...].  NS are\n"
		"CLOCK_MONOTONIC nanoseconds as `katra info` shows them.\n"
		"Names and messages are printed escaped; up to 64 --thread.\n"
		"Each drop record is a line where its window began: \"NS TID THREAD\n"
		"drop COUNT until NS\" (jsonl: type \"drop\", count, until_ns).\n"
		WHEN_HELP,
};

static const struct opts_spec replay_spec = {
	.cmd = "replay", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "--format", opt_format, EVENTS_OPT(job.kind), .wants = "text or jsonl" },
		{ "--speed", opt_speed, EVENTS_OPT(pacer.speed), .wants = "a positive number" },
		{ "--max-gap", opt_seconds, EVENTS_OPT(pacer.max_gap_ns),
		  .wants = "seconds (0 or more, or inf)" },
		{ "--max", NULL, EVENTS_OPT(paced), .flag = 0 },
		{ .name = NULL } },
	.help = "usage: katra replay FILE [--speed X | --max] [--max-gap S]\n"
		"                    [--format text|jsonl]\n"
		"Prints every event in global timestamp order (ties: thread id,\n"
		"then order within the thread), paced to the original timing\n"
		"scaled by X (default 1), or as fast as possible with --max.\n"
		"No wait between two events is longer than S seconds (default 1;\n"
		"'inf' for none); the first one shortened is said on stderr.\n",
};

/* dump and replay share their options and their output. */
static int events(int argc, char **argv, int replay)
{
	struct events_opts o = { .job = { .to = UINT64_MAX }, .paced = replay,
				 .pacer = { .speed = 1.0, .max_gap_ns = 1e9 } };
	const char *path;
	int rc = opts_parse(replay ? &replay_spec : &dump_spec, argc, argv, &o, &path);
	if (rc == OPTS_GO)
		rc = when_early("dump", &o.win);
	if (rc != OPTS_GO)
		return rc;
	struct input in;
	if ((rc = input_open(&in, path)))
		return rc;
	if ((rc = when_resolve("dump", path, &o.win, in.r, &o.job.from, &o.job.to)) != OPTS_GO) {
		input_close(&in);
		return rc;
	}
	struct tables t;
	struct drops drops;
	rc = tables_load(in.r, &t);
	if (rc >= 0)
		rc = drops_load(in.r, &drops);
	else
		memset(&drops, 0, sizeof(drops));
	kt_reader_rewind(in.r);
	drops_sort_time(&drops);
	o.job.drops = &drops;
	o.job.drops_r = in.r;
	o.job.t = &t;
	o.job.threads = o.threads.ids;
	o.job.nthreads = o.threads.n;
	/* The events before a corruption are still printed; then the error.
	 * A failure that is not the bytes' (no memory for the names) leaves
	 * nothing to print. */
	int fatal = rc < 0 && !is_corruption(rc);
	struct fmt *fm = fatal ? NULL : fmt_new(&o.job, stdout);
	progress_init(1, in.r);
	int rrc = fatal ? rc
		: !fm ? -ENOMEM
		: o.paced ? replay_paced(in.r, fm, &o.pacer) : fmt_pass(in.r, fm);
	if (rrc >= 0 && fm)
		rrc = fmt_drops_end(fm);
	fmt_free(fm);
	flush_stdout();
	progress_end();
	int result = EXIT_OK;
	if (rrc < 0 || rc < 0) {
		result = pass_failed(path, in.r, rrc < 0 ? rrc : rc);
	} else if (!t.have_summary) {
		kt_reader_status st;
		kt_reader_get_status(in.r, &st);
		say("%s: truncated at offset %" PRIu64 "; printed the events before it", path,
		    st.valid_end);
		result = EXIT_TRUNC;
	}
	tables_free(&t);
	drops_free(&drops);
	input_close(&in);
	return result;
}

int cmd_dump(int argc, char **argv)
{
	return events(argc, argv, 0);
}

int cmd_replay(int argc, char **argv)
{
	return events(argc, argv, 1);
}
