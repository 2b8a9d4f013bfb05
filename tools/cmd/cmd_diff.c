/*
 * cmd_diff.c - `katra diff A B` and `katra diff A1 A2 -- B1 B2`: did B make
 * each zone and the frame time slower than A, by how much, how sure.
 *
 * Each run is read once (tools/cmd/diff_run.h), two at a time, the sides'
 * samples of each zone name are pooled (names are matched by their bytes:
 * ids differ between files; by process name too where a name is a row per
 * process, tools/cmd/diff_procs.h) and compared (tools/analysis/diff.h).  Runs that are captures are
 * ordered and paired by run id and epoch; the same capture twice on one
 * side is refused, since its zones would count twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/diff_out.h"
#include "tools/cmd/diff_run.h"

#define DIFF_MAX_RUNS 64 /* per side */

static const char diff_help[] =
	"usage: katra diff A B [options]\n"
	"       katra diff A1 A2 ... -- B1 B2 ... [options]\n"
	"Compare zone durations and frame times of B (the new runs) with A\n"
	"(the baseline): per zone name and for the frame time, the count, the\n"
	"p50, p99 and mean of each side and their change B/A - 1 with a\n"
	"confidence interval, the change of the count and of the total time per\n"
	"run with theirs, the change of the zone's mean self time (its duration\n"
	"less the zones that ended inside it), and three verdicts: the time's\n"
	"(slower, faster), the count's (more, fewer) and the total's (more,\n"
	"less), each else no change, or too few.\n"
	"\n"
	"  --json              one JSON object instead of text\n"
	"  --html OUT          also write the table as one self-contained HTML\n"
	"                      page (nothing fetched when it opens; its data is\n"
	"                      the --json object), whole or not at all\n"
	"  --threshold P%      a change smaller than P% is no change (default 0%)\n"
	"  --confidence C%     the intervals' confidence, 50 to 99.9 (default 99%)\n"
	"  --min-count N       a row with fewer than N values on a side is too few\n"
	"                      to judge: no interval, no time or total verdict,\n"
	"                      never a failure (default 10, at least 2)\n"
	"  --only PATTERN      compare only the zone names PATTERN matches (a glob,\n"
	"                      fnmatch(3); the frame time is '(frame time)'); may\n"
	"                      be given again, a name any of them matches is kept\n"
	"  --exclude PATTERN   leave out the names PATTERN matches (after --only)\n"
	"  --fail-on V[,V...]  exit 4 when any row has the verdict V: slower,\n"
	"                      faster, change (either), count (more or fewer),\n"
	"                      total (more or less); e.g. slower,count,total\n"
	"\n"
	"Verdicts: a change is slower (more) when its interval lies wholly above\n"
	"0 and its point estimate above +threshold; faster (fewer, less) when\n"
	"wholly below 0 and below -threshold.  So +30% [+4.6%, +45.1%] is slower\n"
	"at 5% and no change at 35%.  The time's verdict is the median's.\n"
	"Too few: fewer than 8 values cannot bound a median at 99% whatever the\n"
	"method (the sample's whole range holds it with chance 1 - 2^(1-n)), and a\n"
	"bootstrap's interval is too narrow at such sizes: a zone that runs once\n"
	"per process moves freely between two runs; hence 10.\n"
	"\n"
	"Method: a bootstrap (1000 resamples, fixed seed: the same inputs give\n"
	"the same answer) of a uniform sample of up to 2048 durations per zone\n"
	"name per run (reservoir sampling, fixed seed); a resample's p50 and p99\n"
	"are drawn from their exact laws (a Beta draw each), its mean from the\n"
	"Gamma law with the bootstrap mean's first three moments, so a row\n"
	"costs the same whatever its size.  Counts, totals and self means are\n"
	"exact; the p50, p99 and mean are the sample's (an exact mean would\n"
	"swing with a rare long zone, a preemption, that no interval could\n"
	"show).  The count's interval is a Poisson count's, the total's a\n"
	"compound Poisson sum's (normal on the log scale); both per run, so sides\n"
	"of unequal runs compare.  Why a bootstrap rather than a rank test\n"
	"(Mann-Whitney U): it gives an interval for each number a reader asks\n"
	"about - the median, the p99 and the mean - with no assumption on the\n"
	"durations' shape, where a rank test gives a p-value for 'the\n"
	"distributions differ'.  Several runs per side pool their samples.  At\n"
	"most 64 runs per side and 1024 zone names sampled per run (16 KiB each\n"
	"at most; a side of more than 4 runs keeps 8192 values of a name in\n"
	"all); zones of further names are counted.  Runs that are captures\n"
	"(a run id in the header) are paired by run id and epoch; the same\n"
	"capture twice on one side is refused (its zones would count twice), on\n"
	"both sides said.\n"
	"\n"
	"Processes: in a trace of several (katra record, katra merge), a zone\n"
	"name that two processes of other names have in one run is a row per\n"
	"process name in every run, 'NAME [PROCESS]' (in JSON the row's\n"
	"\"process\"); processes of one name (two workers of one program) pool\n"
	"into one row, as runs do.  Rows are keyed by the process's name, never\n"
	"its pid, which differs between runs.  --only and --exclude match the\n"
	"zone name; the 1024 names sampled are (process, name) pairs.\n"
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

/* A comma-separated list of verdicts, added to *@out. */
static int parse_fail_on(const char *s, int *out)
{
	static const struct { const char *name; int bits; } words[] = {
		{ "slower", DIFF_FAIL_SLOWER }, { "faster", DIFF_FAIL_FASTER },
		{ "change", DIFF_FAIL_SLOWER | DIFF_FAIL_FASTER }, { "count", DIFF_FAIL_COUNT },
		{ "total", DIFF_FAIL_TOTAL },
	};
	int bits = 0;
	for (const char *p = s;; p++) {
		size_t len = strcspn(p, ","), k = 0;
		while (k < sizeof(words) / sizeof(words[0]) &&
		       (strlen(words[k].name) != len || memcmp(words[k].name, p, len)))
			k++;
		if (k == sizeof(words) / sizeof(words[0]))
			return -1;
		bits |= words[k].bits;
		p += len;
		if (!*p)
			break;
	}
	*out |= bits;
	return 0;
}

static int parse_count(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-' || v < 2 || v > DIFF_SAMPLE)
		return -1;
	*out = v;
	return 0;
}

/* A pattern into @list (@n of DIFF_PATTERNS). */
static int add_pattern(const char **list, size_t *n, const char *v)
{
	if (*n == DIFF_PATTERNS || !*v)
		return -1;
	list[(*n)++] = v;
	return 0;
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
	if (!strcmp(name, "--min-count") && !parse_count(v, &o->min_count))
		return 0;
	if (!strcmp(name, "--only") && !add_pattern(o->only, &o->nonly, v))
		return 0;
	if (!strcmp(name, "--exclude") && !add_pattern(o->exclude, &o->nexclude, v))
		return 0;
	if (!strcmp(name, "--html") && *v) {
		o->html = v;
		return 0;
	}
	return usage_error("diff: %s wants %s, not '%s'", name,
			   !strcmp(name, "--fail-on") ? "slower, faster, change, count or total"
			   : !strcmp(name, "--threshold") ? "a percentage (5%)"
			   : !strcmp(name, "--html") ? "a file name"
			   : !strcmp(name, "--min-count") ? "a whole number from 2 to 2048"
			   : !strcmp(name, "--only") || !strcmp(name, "--exclude")
			   ? "a pattern (at most 64 of each)"
			   : "a percentage from 50% to 99.9%", v);
}

static int is_valued(const char *a)
{
	static const char *const valued[] = { "--threshold", "--confidence", "--fail-on", "--html",
					      "--min-count", "--only", "--exclude" };
	for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (!strcmp(a, valued[i]))
			return 1;
	return 0;
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
	struct diff_opts o = { .confidence = 0.99, .min_count = DIFF_MIN_COUNT };
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
