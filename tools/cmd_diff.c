/*
 * cmd_diff.c - `katra diff A B` and `katra diff A1 A2 -- B1 B2`: did B make
 * each zone and the frame time slower than A, by how much, how sure.
 *
 * Each run is read once (tools/diff_run.h), two at a time, the sides'
 * samples of each zone name are pooled (names are matched by their bytes:
 * ids differ between files) and compared (tools/diff.h).  Runs that are captures are
 * ordered and paired by run id and epoch; the same capture twice on one
 * side is refused, since its zones would count twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"
#include "tools/cmd.h"
#include "tools/diff_out.h"
#include "tools/diff_run.h"

#define DIFF_MAX_RUNS 64 /* per side */

static const char diff_help[] =
	"usage: katra diff A B [options]\n"
	"       katra diff A1 A2 ... -- B1 B2 ... [options]\n"
	"Compare zone durations and frame times of B (the new runs) with A\n"
	"(the baseline): per zone name and for the frame time, the count, the\n"
	"p50, p99 and mean of each side and their change B/A - 1 with a\n"
	"confidence interval, the change of the zone's mean self time (its\n"
	"duration less the zones that ended inside it), and a verdict:\n"
	"slower, faster or no change.\n"
	"\n"
	"  --json              one JSON object instead of text\n"
	"  --html OUT          also write the table as one self-contained HTML\n"
	"                      page (nothing fetched when it opens; its data is\n"
	"                      the --json object), whole or not at all\n"
	"  --threshold P%      a change smaller than P% is no change (default 0%)\n"
	"  --confidence C%     the intervals' confidence, 50 to 99.9 (default 99%)\n"
	"  --fail-on V         exit 4 when any zone or the frame time is V:\n"
	"                      slower, faster or change (either)\n"
	"\n"
	"Method: a bootstrap (1000 resamples, fixed seed: the same inputs give\n"
	"the same answer) of a uniform sample of up to 2048 durations per zone\n"
	"name per run (reservoir sampling, fixed seed); counts are exact, every\n"
	"other number is the sample's (an exact mean would swing with a rare\n"
	"long zone, a preemption, that no interval could show).  Why\n"
	"a bootstrap rather than a rank test (Mann-Whitney U): it gives an\n"
	"interval for each number a reader asks about - the median, the p99 and\n"
	"the mean - with no assumption on the durations' shape, where a rank\n"
	"test gives a p-value for 'the distributions differ'.  The verdict is\n"
	"the median's: slower when the whole interval of its change lies above\n"
	"+threshold, faster when below -threshold.  Several runs per side pool\n"
	"their samples.  At most 64 runs per side and 1024 zone names sampled\n"
	"per run (32 KiB each at most); zones of further names are counted.\n"
	"Runs that are captures (a run id in the header) are paired by run id\n"
	"and epoch; the same capture twice on one side is refused (its zones\n"
	"would count twice), on both sides said.\n"
	"\n"
	"exit: 0 compared, 4 a verdict --fail-on names, 1 error or corrupt file,\n"
	"2 usage, 3 an input is truncated (compared all the same).\n";

/* A number with an optional '%', as a fraction: "5%" and "5" are 0.05. */
static int parse_percent(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || (*end && strcmp(end, "%")) || !(v >= lo && v <= hi))
		return -1;
	*out = v / 100;
	return 0;
}

static int parse_fail_on(const char *s, int *out)
{
	*out = !strcmp(s, "slower") ? DIFF_FAIL_SLOWER : !strcmp(s, "faster") ? DIFF_FAIL_FASTER
	     : !strcmp(s, "change") ? DIFF_FAIL_SLOWER | DIFF_FAIL_FASTER : 0;
	return *out ? 0 : -1;
}

/* One option that takes a value: 0, or the exit status of its usage error. */
static int diff_value(struct diff_opts *o, const char *name, const char *v)
{
	if (!strcmp(name, "--threshold") && !parse_percent(v, 0, 1000, &o->threshold))
		return 0;
	if (!strcmp(name, "--confidence") && !parse_percent(v, 50, 99.9, &o->confidence))
		return 0;
	if (!strcmp(name, "--fail-on") && !parse_fail_on(v, &o->fail_on))
		return 0;
	if (!strcmp(name, "--html") && *v) {
		o->html = v;
		return 0;
	}
	return usage_error("diff: %s wants %s, not '%s'", name,
			   !strcmp(name, "--fail-on") ? "slower, faster or change"
			   : !strcmp(name, "--threshold") ? "a percentage (5%)"
			   : !strcmp(name, "--html") ? "a file name"
			   : "a percentage from 50% to 99.9%", v);
}

static int is_valued(const char *a)
{
	return !strcmp(a, "--threshold") || !strcmp(a, "--confidence") || !strcmp(a, "--fail-on") ||
	       !strcmp(a, "--html");
}

/* Read the words: options, then files, with "--" between the sides. */
static int diff_args(int argc, char **argv, struct diff_opts *o, struct diff_run *runs,
		     size_t *n)
{
	int side = 0, dashes = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return fputs(diff_help, stdout), EXIT_OK;
		if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (is_valued(a)) {
			int rc = i + 1 < argc ? diff_value(o, a, argv[i + 1])
					      : usage_error("diff: %s wants a value", a);
			if (rc)
				return rc;
			i++;
		} else if (!strcmp(a, "--")) {
			if (dashes++)
				return usage_error("diff: '--' given twice");
			side = 1;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("diff: unknown option '%s'", a);
		} else if (*n == 2 * DIFF_MAX_RUNS) {
			return usage_error("diff: at most %d runs per side", DIFF_MAX_RUNS);
		} else {
			runs[*n] = (struct diff_run){ .path = a, .side = side, .order = (int)*n };
			++*n;
		}
	}
	if (!dashes && *n == 2)
		runs[1].side = 1;
	return diff_sides_check(runs, *n, dashes) ? EXIT_USAGE : OPTS_GO_DIFF;
}

/*
 * The page's temporary file, beside @out, before any run is read.  An
 * output naming one of the runs is refused (outfile.h): the input passed
 * is that run, when one is @out, else the first (a different file).
 */
static int html_open(outfile *of, const char *out, const struct diff_run *runs, size_t n)
{
	struct input in = { .fd = -1 };
	struct stat os, sb;
	int exists = lstat(out, &os) == 0;
	for (size_t i = n; i-- > 0;)
		if (lstat(runs[i].path, &sb) == 0 && (!i || (exists && sb.st_dev == os.st_dev &&
							       sb.st_ino == os.st_ino))) {
			in.sb = sb;
			break;
		}
	return output_open(of, out, &in) < 0 ? EXIT_BAD : OPTS_GO_DIFF;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o = { .confidence = 0.99 };
	struct diff_run *runs = calloc(2 * DIFF_MAX_RUNS, sizeof(*runs));
	size_t n = 0;
	outfile html = { .fd = -1 };
	if (!runs) {
		say("diff: out of memory");
		return EXIT_BAD;
	}
	int rc = diff_args(argc, argv, &o, runs, &n);
	if (rc == OPTS_GO_DIFF && o.html)
		rc = html_open(&html, o.html, runs, n);
	int truncated = 0;
	if (rc == OPTS_GO_DIFF) {
		int r = diff_runs_read(runs, n);
		for (size_t i = 0; i < n; i++)
			truncated |= runs[i].truncated;
		rc = r == EXIT_OK ? rc : r;
	}
	if (rc == OPTS_GO_DIFF) {
		rc = diff_pairs(runs, n);
		rc = rc ? rc : diff_report(runs, n, &o, o.html ? &html : NULL);
		rc = rc == EXIT_OK && truncated ? EXIT_TRUNC : rc;
	}
	outfile_abort(&html);
	for (size_t i = 0; i < n; i++)
		diff_run_free(&runs[i]);
	free(runs);
	return rc;
}
