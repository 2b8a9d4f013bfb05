/*
 * cmd_merge.c - `katra merge A.katra B.katra ... -o OUT`: several
 * processes' traces as one, each a process of OUT with its threads under
 * it, all on one clock (tools/merge.h, SPEC §4.10.1).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/merge.h"
#include "tools/cmd/opts.h"

struct merge_args {
	const char *out;
	int quiet;
};

static const struct opts_spec merge_spec = {
	.cmd = "merge", .npos = -1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "-o", opt_str, offsetof(struct merge_args, out), .wants = "a file" },
		{ "-q", NULL, offsetof(struct merge_args, quiet), .flag = 1 },
		{ .name = NULL } },
	.help = "usage: katra merge A.katra B.katra ... -o OUT\n"
		"One trace of several processes' traces: a process per input (its pid,\n"
		"parent, name and command line), its threads under it, every time on\n"
		"CLOCK_MONOTONIC (each input's ticks through its own calibration).\n"
		"Inputs must be of one host.  OUT is created new, never replaced.\n"
		"  -q     say nothing of the processes\n",
};

/* A line per process, as katra record says them too. */
void merge_say(const struct merge_proc *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "  process %-3u pid %-8llu %-16s %u thread%s, %llu events, "
				"%llu dropped%s%s\n",
			p[i].id, (unsigned long long)p[i].pid, p[i].name[0] ? p[i].name : "-",
			p[i].threads, p[i].threads == 1 ? "" : "s",
			(unsigned long long)p[i].written, (unsigned long long)p[i].dropped,
			p[i].complete ? ", complete" : ", cut short",
			p[i].recovered ? ", recovered" : p[i].damaged ? ", damaged" : "");
	}
}

/* The words that are inputs: not options, nor -o's value. */
static int count_inputs(int argc, char **argv)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o"))
			i++;
		else if (argv[i][0] != '-' || !argv[i][1])
			n++;
	}
	return n;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a = { 0 };
	struct opts_spec spec = merge_spec;
	spec.npos = count_inputs(argc, argv);
	const char **pos = calloc((size_t)spec.npos + 1, sizeof(*pos));
	if (!pos)
		return EXIT_BAD;
	int rc = opts_parse(&spec, argc, argv, &a, pos);
	if (rc == OPTS_GO && !spec.npos)
		rc = usage_error("merge: no input: katra merge A.katra B.katra ... -o OUT");
	else if (rc == OPTS_GO && !a.out)
		rc = usage_error("merge: -o OUT is needed");
	else if (rc == OPTS_GO && (size_t)spec.npos > merge_max_inputs())
		rc = usage_error("merge: %d inputs, over %zu", spec.npos, merge_max_inputs());
	if (rc != OPTS_GO) {
		free(pos);
		return rc;
	}
	struct merge_proc *procs = calloc((size_t)spec.npos, sizeof(*procs));
	rc = procs ? merge_traces(pos, (size_t)spec.npos, a.out, procs) : EXIT_BAD;
	if (procs && rc != EXIT_BAD && !a.quiet) {
		fprintf(stderr, "katra merge: %d process%s into ", spec.npos, spec.npos == 1 ? "" : "es");
		text_puts(stderr, a.out);
		fputc('\n', stderr);
		merge_say(procs, (size_t)spec.npos);
	}
	free(procs);
	free(pos);
	return rc;
}
