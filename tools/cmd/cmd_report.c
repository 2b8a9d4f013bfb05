/*
 * cmd_report.c - `katra report IN [-o OUT.html]`: one self-contained HTML
 * page summarising a trace (tools/analysis/report.h collects, report_json.c and
 * report_page.c write).  A capture's sidecar beside IN (IN.json) adds its
 * window and head loss; it is read as hostile as the trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/progress.h"
#include "tools/analysis/report.h"

#define SIDECAR_BYTES (64 << 10) /* a sidecar is one line of a few hundred bytes */

struct report_opts {
	const char *out;
	struct report_only only;
};

static int opt_path(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	(void)cmd;
	(void)o;
	*(const char **)dst = value;
	return 0;
}

/* --pid PID: the process filter by pid (not 0: no process has it). */
static int opt_pid(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct report_only *only = dst;
	if (opt_ns(cmd, o, value, &only->pid))
		return EXIT_USAGE;
	if (!only->pid || only->name)
		return only->pid ? usage_error("%s: --pid and --process: give one", cmd)
				 : opt_bad(cmd, o, value);
	only->by_pid = 1;
	return 0;
}

/* --process NAME: every process of that name. */
static int opt_process(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct report_only *only = dst;
	(void)o;
	if (only->by_pid)
		return usage_error("%s: --pid and --process: give one", cmd);
	only->name = value;
	return 0;
}

static const struct opts_spec report_spec = {
	.cmd = "report", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "-o", opt_path, offsetof(struct report_opts, out), .wants = "a file name" },
		{ "--pid", opt_pid, offsetof(struct report_opts, only), .wants = "a process id" },
		{ "--process", opt_process, offsetof(struct report_opts, only),
		  .wants = "a process name" },
		{ .name = NULL } },
	.help = "usage: katra report IN [-o OUT.html] [--pid PID | --process NAME]\n"
		"Writes one self-contained HTML page (default report.html; no network\n"
		"access, nothing fetched when it opens): the header (workload, host,\n"
		"run id, capture window, drops, truncation, head loss from the\n"
		"capture's sidecar IN.json if any) with warnings where the trace is\n"
		"incomplete; frame times with p50/p99 and the slowest frames; the\n"
		"zone table (count, total, self, p50, p99, max; sortable); a flame\n"
		"graph of self time per thread and merged, zoomable; for the slowest\n"
		"frames, a flame graph of the sampled call stacks inside them (a trace\n"
		"sampled with KT_SAMPLE_HZ; else it says why there are none); events per\n"
		"thread and counters over time; memory per pool over time where the\n"
		"trace has allocations.  Summaries only, so the page stays small\n"
		"whatever the trace: at most 4096 frame points (each the slowest of\n"
		"its run of frames), the 10 slowest frames, 512 time bins, 64\n"
		"threads, 32 counters and 32 memory pools over time, 5000 flame\n"
		"graph stacks (the smaller fold into their parents, time kept).  A trace\n"
		"of several processes (katra record, katra merge) has a section per\n"
		"process: its pid, parent, command line, threads and zones (a zone name\n"
		"two processes use is a row in each).  --pid PID or --process NAME (every\n"
		"process of that name) keeps only those processes' threads: every table,\n"
		"graph and count is theirs; a pid or name the trace does not hold is an\n"
		"error (exit 2) that lists the processes it does.  Durations are those of\n"
		"`katra stats --json`, which the page embeds.  OUT is written whole or\n"
		"not at all; IN itself is never replaced.  Exit 3 when IN is truncated\n"
		"(the page shows its valid prefix and says so).\n",
};

/* The capture's status beside @path, its fields kept as the page shows
 * them; NULL when there is none or it is not a capture's. */
static json_t *sidecar_load(const char *path)
{
	char side[4096], buf[SIDECAR_BYTES];
	struct stat sb;
	if (snprintf(side, sizeof(side), "%s.json", path) >= (int)sizeof(side))
		return NULL;
	int fd = open(side, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size < SIDECAR_BYTES
		? read(fd, buf, sizeof(buf)) : -1;
	close(fd);
	json_t *o = n > 0 ? json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL) : NULL;
	const char *schema = json_string_value(json_object_get(o, "schema"));
	if (!schema || strncmp(schema, "katra.capture-status/", 21)) {
		json_decref(o);
		return NULL;
	}
	static const char *const keep[] = { "state", "complete", "boundary_start",
		"boundary_finish", "head_loss_ns", "tail_excess_ns", "capture_span_ns" };
	json_t *s = json_object();
	for (size_t i = 0; s && i < sizeof(keep) / sizeof(keep[0]); i++) {
		json_t *v = json_object_get(o, keep[i]);
		if (json_is_string(v))
			v = text_json_string(json_string_value(v), json_string_length(v));
		else if (json_is_integer(v) || json_is_boolean(v))
			json_incref(v);
		else
			continue;
		json_object_set_new(s, keep[i], v);
	}
	json_decref(o);
	return s;
}

/* The page for @in into @of, of the processes @only keeps.  0, a reader's
 * code, -ENOMEM, -EIO (*@werr) or -ENOENT (said: no such process). */
static int write_report(struct input *in, const char *path, const struct report_only *only,
			outfile *of, int *werr)
{
	struct report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	char why[1024];
	int rc = report_procs_select(in->r, only, &rep->procs, why, sizeof(why));
	if (rc == -ENOENT) {
		char *e = only->name ? text_escape(only->name, strlen(only->name)) : NULL;
		if (only->by_pid)
			say("%s: no process of pid %" PRIu64 " in the trace; %s", path, only->pid, why);
		else
			say("%s: no process named '%s' in the trace; %s", path, e ? e : "?", why);
		free(e);
		report_free(rep);
		free(rep);
		return rc;
	}
	progress_init(0, in->r);
	rc = rc ? rc : report_collect(in->r, rep);
	progress_end();
	json_t *side = rc ? NULL : sidecar_load(path), *data = NULL;
	if (!rc && !(data = report_json(rep, kt_reader_get_header(in->r), side, path)))
		rc = -ENOMEM;
	FILE *f = rc ? NULL : fdopen(of->fd, "w");
	if (!rc && !f)
		rc = -EIO, *werr = errno;
	if (f) {
		of->fd = -1; /* the stream owns it now */
		rc = report_page(f, data);
		errno = 0;
		if ((fflush(f) != 0 || rc == -EIO) && !*werr)
			*werr = errno ? errno : EIO;
		if (fclose(f) != 0 && !*werr)
			*werr = errno;
	}
	json_decref(data);
	json_decref(side);
	report_free(rep);
	free(rep);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	const char *path;
	struct report_opts o = { .out = "report.html" };
	int rc = opts_parse(&report_spec, argc, argv, &o, &path);
	if (rc != OPTS_GO)
		return rc;
	struct input in;
	if ((rc = input_open(&in, path)))
		return rc;
	outfile of;
	int result = EXIT_BAD, werr = 0;
	if (output_open(&of, o.out, &in) < 0)
		goto done;
	rc = write_report(&in, path, &o.only, &of, &werr);
	kt_reader_status st;
	kt_reader_get_status(in.r, &st);
	if (werr)
		say("%s: write failed: %s", o.out, strerror(werr));
	else if (rc == -ENOMEM)
		say("%s: out of memory", path);
	else if (rc == -ENOENT)
		result = EXIT_USAGE;
	else if (rc < 0)
		pass_failed(path, in.r, rc);
	else if ((rc = outfile_commit(&of)) < 0)
		say("%s: %s", o.out, reason(rc, NULL));
	else
		result = st.complete ? EXIT_OK : EXIT_TRUNC;
	outfile_abort(&of);
done:
	input_close(&in);
	return result;
}
