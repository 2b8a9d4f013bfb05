/*
 * diff_out.h - `katra diff` after its runs are read: the sides checked and
 * paired, each zone name's pooled samples compared, and the result as
 * text or JSON with its exit status.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_DIFF_OUT_H
#define KT_TOOLS_DIFF_OUT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>
#include "tools/cmd/diff_run.h"
#include "tools/pipeline/outfile.h"

enum { DIFF_FAIL_SLOWER = 1, DIFF_FAIL_FASTER = 2, DIFF_FAIL_COUNT = 4, DIFF_FAIL_TOTAL = 8 };
#define EXIT_DIFF 4     /* a verdict --fail-on names */
#define OPTS_GO_DIFF (-1)
#define DIFF_PATTERNS 64 /* --only and --exclude patterns, each */
#define DIFF_FRAME_NAME "(frame time)" /* what the patterns match for the frame time */

struct diff_opts {
	int json;
	const char *html;   /* the page's file name, or NULL */
	int fail_on;        /* DIFF_FAIL_* bits */
	double threshold;   /* a fraction */
	double confidence;  /* a fraction */
	size_t min_count;   /* the least count per side to judge a row */
	const char *only[DIFF_PATTERNS], *exclude[DIFF_PATTERNS]; /* fnmatch(3) patterns */
	size_t nonly, nexclude;
};

/* One zone name (or the frame time: @name NULL) compared; of one
 * process name (@process, @plen bytes) where the name is a row per
 * process (tools/cmd/diff_procs.h), else @process NULL. */
struct diff_result {
	const char *name;
	size_t len;
	const char *process;
	size_t plen;
	int only;                /* 0: on both sides; 1: only in A; 2: only in B */
	int left_out;            /* the frame time, left out by --only or --exclude */
	struct diff_row row;
};

/* diff_wanted - whether @o's patterns keep the name @name (@len bytes;
 * one holding a NUL byte matches no pattern): 1 or 0, -1 out of memory. */
int diff_wanted(const struct diff_opts *o, const char *name, size_t len);

/* diff_print_text - the runs and @nres results to @f as text, @dropped
 * zone names left out by the patterns.
 * 0, -ENOMEM, or -EIO when @f could not be written. */
int diff_print_text(FILE *f, const struct diff_run *runs, size_t n,
		    const struct diff_result *res, size_t nres, const struct diff_opts *o,
		    size_t dropped);

/* diff_json - the runs and @nres results as one object (what --json
 * prints and the page embeds).  A new reference, or NULL when out of
 * memory. */
json_t *diff_json(const struct diff_run *runs, size_t n, const struct diff_result *res,
		  size_t nres, const struct diff_opts *o, size_t dropped);

/* diff_print_json - @data (diff_json()'s) to @f, indented.  0, -ENOMEM or
 * -EIO. */
int diff_print_json(FILE *f, const json_t *data);

/* diff_page - the HTML page (tools/analysis/report_page.h) of @data, diff_json()'s,
 * to @f.  0, -ENOMEM or -EIO. */
int diff_page(FILE *f, const json_t *data);

/* diff_sides_check - a usage error (said) when a side has no run, or when
 * without "--" (@dashes 0) there are not exactly two.  0 or -1. */
int diff_sides_check(const struct diff_run *runs, size_t n, int dashes);

/*
 * diff_pairs - order each side's runs by run id and epoch (captures first,
 * then the others as given), refusing (said) the same capture - run id,
 * epoch and capture id - twice on one side; on both sides it is a warning.
 * Returns 0 or EXIT_USAGE.
 */
int diff_pairs(struct diff_run *runs, size_t n);

/*
 * diff_report - compare and print to stdout as @o says, and the page to
 * @html (opened for @o->html, committed here) when not NULL.  Returns
 * EXIT_OK, EXIT_DIFF when a verdict @o->fail_on names was found (slower,
 * faster, a count more or fewer, a total more or less; never "too few"),
 * or EXIT_BAD when out of memory or a write failed (said).
 */
int diff_report(const struct diff_run *runs, size_t n, const struct diff_opts *o,
		outfile *html);

#endif
