/*
 * cmd_export.c - `katra export --chrome IN OUT.json`: the Chrome Trace
 * Event document (tools/fmt.h), written whole or not at all.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <katra/reader.h>
#include "tools/cli.h"
#include "tools/cmd.h"
#include "tools/fmt.h"
#include "tools/opts.h"
#include "tools/outfile.h"
#include "tools/progress.h"
#include "tools/tables.h"

/* Write the Chrome document of @in into @of.  Returns the pass's result
 * (0 or a reader's code); *@werr gets the errno of a write that failed, or
 * 0: a failed write stops the pass with -EIO. */
static int export_to(struct input *in, const struct tables *t, outfile *of, int *werr)
{
	static char fbuf[1 << 20];
	FILE *f = fdopen(of->fd, "w");
	*werr = 0;
	if (!f) {
		*werr = errno;
		return -EIO;
	}
	of->fd = -1; /* the stream owns it now */
	setvbuf(f, fbuf, _IOFBF, sizeof(fbuf));
	progress_init(0, in->r);
	int rc = fmt_chrome(in->r, t, f);
	progress_end();
	errno = 0;
	if (fflush(f) != 0 || ferror(f) || rc == -EIO)
		*werr = fmt_write_errno() ? fmt_write_errno() : errno ? errno : EIO;
	if (fclose(f) != 0 && !*werr)
		*werr = errno;
	return rc;
}

static const struct opts_spec export_spec = {
	.cmd = "export", .npos = 2, .unknown = "unknown option",
	.opts = (const struct opt[]){
		{ "--chrome", .flag = 1, .required = "say which format: --chrome" },
		{ .name = NULL } },
	.help = "usage: katra export --chrome IN OUT.json\n"
		"Writes the Chrome Trace Event Format (Perfetto UI, speedscope,\n"
		"chrome://tracing): zones as B/E, instants, counters as C, flows as\n"
		"s/t/f, frame marks as process-scoped instants, thread names as\n"
		"metadata.  Streams the events: memory holds the trace's names and\n"
		"threads and a fixed window of events, never all of its events.\n"
		"OUT.json is written whole or not at all (a temporary file beside\n"
		"it, renamed); IN itself is never replaced.\n",
};

int cmd_export(int argc, char **argv)
{
	const char *pos[2];
	int chrome = 0;
	int rc = opts_parse(&export_spec, argc, argv, &chrome, pos);
	if (rc != OPTS_GO)
		return rc;
	const char *inp = pos[0], *out = pos[1];
	struct input in;
	if ((rc = input_open(&in, inp)))
		return rc;
	struct tables t;
	outfile of;
	int result = EXIT_BAD;
	if ((rc = tables_load(in.r, &t)) < 0) {
		result = pass_failed(inp, in.r, rc);
		goto done;
	}
	kt_reader_rewind(in.r);
	if (output_open(&of, out, &in) < 0)
		goto done;
	int werr;
	rc = export_to(&in, &t, &of, &werr);
	if (werr) {
		say("%s: write failed: %s", out, strerror(werr));
	} else if (rc < 0) {
		pass_failed(inp, in.r, rc);
	} else if ((rc = outfile_commit(&of)) < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if (!t.have_summary) {
		say("%s: truncated: exported the events before the cut", inp);
		result = EXIT_TRUNC;
	} else {
		result = EXIT_OK;
	}
	outfile_abort(&of);
done:
	tables_free(&t);
	input_close(&in);
	return result;
}
