/*
 * cmd_export.c - `katra export --chrome IN OUT.json`: the Chrome Trace
 * Event document (tools/pipeline/fmt.h); `katra export --collapsed IN OUT.folded`:
 * collapsed stacks for flame graphs (tools/analysis/collapse.h); `--perfetto`:
 * Perfetto protobuf (tools/export/export_perfetto.h); `--fxt`: the Fuchsia trace
 * format (tools/export/export_fxt.h).  Each is written whole or not at all.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <katra/reader.h>
#include "tools/export/chrome.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/analysis/collapse.h"
#include "tools/analysis/samples.h"
#include "tools/export/export_fxt.h"
#include "tools/export/export_perfetto.h"
#include "tools/pipeline/fmt.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/outfile.h"
#include "tools/pipeline/progress.h"
#include "tools/pipeline/tables.h"
#include "tools/cmd/when.h"

enum { CHROME = 1, COLLAPSED = 2, PERFETTO = 3, FXT = 4, SAMPLES = 5 };

struct export_opts {
	int chrome, collapsed, perfetto, fxt, zstd, deflate, any_size, samples;
	struct chrome_opts copts; /* --complete, and the window's end */
	struct when_window win;
	struct thread_list threads;
};

/* --from/--to/--window/--frames and --thread: the reader keeps only the
 * events they select (zones cut by the window are balanced by the
 * exports as any cut zone is).  Returns OPTS_GO or the status said. */
static int cut_window(struct export_opts *o, const char *inp, kt_reader *r)
{
	kt_reader_filter f = { 0, UINT64_MAX, o->threads.ids, (size_t)o->threads.n };
	if (!o->win.from.given && !o->win.to.given && !o->threads.n)
		return OPTS_GO;
	int rc = when_resolve("export", inp, &o->win, r, &f.from_ns, &f.to_ns);
	if (rc == OPTS_GO)
		kt_reader_set_filter(r, &f);
	/* Zones open at the window's end close there, cut. */
	o->copts.cut_to = o->win.to.given && f.to_ns != UINT64_MAX;
	o->copts.from_ns = f.from_ns;
	o->copts.to_ns = f.to_ns;
	return rc;
}

/*
 * The size guard.  What a viewer can load, by format, as measured or as
 * its makers say: Tracy's import-chrome held 19.6 times its JSON in memory
 * (3.47 GB for 177 MB) and ran out of 16 GB on 4.43 GB; Perfetto's UI has
 * about 2 GB for everything, a proto trace taking 2-4 times its size
 * there (its "large traces" page) and JSON more; a JavaScript viewer
 * reads a JSON file as one string, at most 2^29 characters in V8.  The
 * FXT limit is Perfetto's UI's, as for proto; Tracy's import-fuchsia took
 * 9.5 GB for 50M events.  Bytes per event: the examples/ program's and
 * the default run's exports (Chrome 89-106, Perfetto 20, FXT 21).
 */
#define MIB (UINT64_C(1) << 20)
static const struct {
	uint64_t limit, per_event;
	const char *viewers;
} size_guard[] = {
	[CHROME] = { 256 * MIB, 100, "Tracy's import-chrome needs about 20 times that in "
				    "memory, Perfetto's UI about 2 GB for a trace" },
	[PERFETTO] = { 512 * MIB, 20, "Perfetto's UI holds about 2 GB, 2 to 4 times the file" },
	[FXT] = { 512 * MIB, 22, "Perfetto's UI holds about 2 GB, 2 to 4 times the file; "
				 "Tracy's import-fuchsia about 190 bytes per event" },
};

/* The events an export of @r keeps: those of the chunks of the threads
 * kept, a chunk that meets the window's edge in the share of its time
 * inside it.  A pass over the frames, no event decoded. */
static uint64_t selected_events(kt_reader *r, const struct export_opts *o)
{
	kt_trace_frame f;
	double n = 0;
	kt_reader_rewind(r);
	kt_reader_skip_events(r, 1);
	while (kt_reader_next_frame(r, &f) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		int keep = !o->threads.n;
		for (int i = 0; i < o->threads.n; i++)
			keep |= o->threads.ids[i] == f.u.chunk.thread_id;
		uint64_t a = kt_reader_get_time_ns(r, f.u.chunk.first_ts);
		uint64_t b = kt_reader_get_time_ns(r, f.u.chunk.last_ts);
		uint64_t lo = a > o->copts.from_ns ? a : o->copts.from_ns;
		uint64_t hi = b < o->copts.to_ns ? b : o->copts.to_ns;
		if (!keep || lo > hi)
			continue;
		n += b > a ? (double)f.u.chunk.event_count * (double)(hi - lo) / (double)(b - a)
			   : f.u.chunk.event_count;
	}
	kt_reader_skip_events(r, 0);
	kt_reader_rewind(r);
	return (uint64_t)n;
}

/* Whether @format's export of @r into @out is too big for its viewers
 * (said, with what to do); never for a device (/dev/null: no viewer). */
static int too_big(int format, kt_reader *r, const struct export_opts *o, const char *out)
{
	struct stat st;
	if (o->any_size || format == COLLAPSED || format == SAMPLES || (!stat(out, &st) && S_ISCHR(st.st_mode)))
		return 0;
	uint64_t events = selected_events(r, o);
	uint64_t bytes = events * size_guard[format].per_event;
	if (bytes <= size_guard[format].limit)
		return 0;
	say("%s: would be about %" PRIu64 " MiB (%" PRIu64 " events), past the %" PRIu64
	    " MiB its viewers load (%s): export a part with --window T..T, --frames A..B or "
	    "--thread ID, or pass --any-size to write it anyway", out, bytes / MIB, events,
	    size_guard[format].limit / MIB, size_guard[format].viewers);
	return 1;
}

/* Say which track records an export could not show, and what the tracks'
 * matcher changed to keep their zones balanced, if anything. */
static void say_tracks(const char *in, const struct track_counts *n)
{
	if (n->unknown || n->unconverted)
		say("%s: track records not shown: %" PRIu64 " of a track with no entry, %" PRIu64
		    " whose time could not be converted to katra's clock", in, n->unknown,
		    n->unconverted);
	if (n->unbegun || n->inner_closed || n->unended || n->deep)
		say("%s: track zones balanced for the viewer: skipped %" PRIu64 " ends with no "
		    "begin, closed %" PRIu64 " zones at an outer zone's end and %" PRIu64 " still "
		    "open at the end, skipped %" PRIu64 " begins past %u open zones", in, n->unbegun,
		    n->inner_closed, n->unended, n->deep, TRACK_OPEN);
}

/* Say what an export changed to keep its zones balanced, if anything;
 * the drops marked only when @drops (Chrome's marks are said only when
 * some could not be: a truncated input's one line stays one). */
static void say_export(const char *in, const struct export_result *x, int drops)
{
	if (x->unbegun || x->inner_closed || x->unended || x->untimed)
		say("%s: zones balanced for the viewer: skipped %" PRIu64 " ends with no begin, "
		    "closed %" PRIu64 " zones at an outer zone's end and %" PRIu64
		    " still open at the end, skipped %" PRIu64 " begins past %u open zones",
		    in, x->unbegun, x->inner_closed, x->unended, x->untimed, EXPORT_OPEN);
	if (x->cut)
		say("%s: %" PRIu64 " zones open at a drop window were closed at its start and "
		    "opened again at its end", in, x->cut);
	if (x->deep)
		say("%s: %" PRIu64 " zones past %u deep were written as begin and end, not "
		    "complete", in, x->deep, CHROME_X_DEPTH);
	if ((drops && x->drops_marked) || x->drops_unmarked)
		say("%s: marked %" PRIu64 " drop records where they happened%s", in,
		    x->drops_marked, x->drops_unmarked ? " (more past the cap were not marked)" : "");
	if (x->fallback)
		say("%s: %" PRIu64 " names were written inline past the interning table", in,
		    x->fallback);
	if (x->unbound)
		say("%s: %" PRIu64 " flow events could not be bound to a zone around them "
		    "(Chrome: left unbound; Perfetto: each on an instant of its own)", in, x->unbound);
	say_tracks(in, &x->tracks);
}

static struct samples_result last_samples;

/* Say what the sampled stacks could not name or keep, if anything. */
static void say_samples(const char *in, const struct samples_result *s)
{
	if (!s->samples)
		say("%s: no samples (the session sampled nothing: KT_SAMPLE_HZ)", in);
	if (s->unknown)
		say("%s: %" PRIu64 " of %" PRIu64 " samples name no stack entry", in, s->unknown,
		    s->samples);
	if (s->unnamed)
		say("%s: %" PRIu64 " addresses named by no symbol (%" PRIu64 " named)", in,
		    s->unnamed, s->named);
	if (s->folded)
		say("%s: %" PRIu64 " samples folded into a shallower stack", in, s->folded);
}

struct chrome_samples {
	kt_reader *r;
	const struct tables *t;
};

/* The Chrome document's samples (samples.h), after its events. */
static int chrome_samples(void *ctx, FILE *f)
{
	struct chrome_samples *c = ctx;
	return samples_chrome(c->r, c->t, f, kt_reader_get_header(c->r)->process_id);
}

static int run_format(int format, struct input *in, const struct tables *t, FILE *f,
		      struct collapse_result *cr, struct export_result *xr, int codec,
		      const struct chrome_opts *co)
{
	struct chrome_samples cs = { in->r, t };
	struct chrome_opts cso = *co;
	switch (format) {
	case CHROME:
		cso.samples = chrome_samples;
		cso.samples_ctx = &cs;
		return chrome_run(in->r, t, f, &cso, xr);
	case COLLAPSED:
		return collapse_run(in->r, t, f, cr);
	case SAMPLES:
		return samples_collapse(in->r, t, f, &last_samples);
	case PERFETTO:
		return perfetto_run(in->r, t, f, codec, xr);
	default:
		return fxt_run(in->r, t, f, xr);
	}
}

/* Say what the collapsed stacks left out or folded, if anything. */
static void say_collapsed(const char *in, const struct collapse_result *c)
{
	if (c->folded)
		say("%s: %" PRIu64 " zones past %d deep or %u distinct stacks were folded "
		    "into their parents' frames (their time is kept there)", in, c->folded,
		    COLLAPSE_DEPTH, COLLAPSE_STACKS);
	if (c->untimed)
		say("%s: %" PRIu64 " zone begins past %u open zones were not timed", in,
		    c->untimed, COLLAPSE_OPEN);
	if (c->unended || c->unbegun)
		say("%s: left out %" PRIu64 " zones still open at the end and %" PRIu64
		    " ends with no begin", in, c->unended, c->unbegun);
}

/* Write @in's export in @format into @of.  Returns the pass's result
 * (0 or a reader's code); *@werr gets the errno of a write that failed, or
 * 0: a failed write stops the pass with -EIO. */
static int export_to(struct input *in, const char *inp, const struct tables *t, int format,
		     int codec, const struct chrome_opts *co, outfile *of, int *werr)
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
	struct collapse_result cr;
	struct export_result xr;
	int rc = run_format(format, in, t, f, &cr, &xr, codec, co);
	progress_end();
	errno = 0;
	int fmt_errno = format == CHROME ? fmt_write_errno() : 0;
	if (fflush(f) != 0 || ferror(f) || rc == -EIO)
		*werr = fmt_errno ? fmt_errno : errno ? errno : EIO;
	if (fclose(f) != 0 && !*werr)
		*werr = errno;
	if (format == COLLAPSED && !*werr && rc >= 0)
		say_collapsed(inp, &cr);
	if (format == SAMPLES && !*werr && rc >= 0)
		say_samples(inp, &last_samples);
	if (format != COLLAPSED && format != SAMPLES && !*werr && rc >= 0)
		say_export(inp, &xr, format != CHROME);
	return rc;
}

static const struct opts_spec export_spec = {
	.cmd = "export", .npos = 2, .unknown = "unknown option",
	.opts = (const struct opt[]){
		{ .name = "--chrome", .offset = offsetof(struct export_opts, chrome), .flag = 1 },
		{ .name = "--collapsed", .offset = offsetof(struct export_opts, collapsed), .flag = 1 },
		{ .name = "--perfetto", .offset = offsetof(struct export_opts, perfetto), .flag = 1 },
		{ .name = "--fxt", .offset = offsetof(struct export_opts, fxt), .flag = 1 },
		{ .name = "--complete", .offset = offsetof(struct export_opts, copts.complete), .flag = 1 },
		{ .name = "--zstd", .offset = offsetof(struct export_opts, zstd), .flag = 1 },
		{ .name = "--deflate", .offset = offsetof(struct export_opts, deflate), .flag = 1 },
		{ .name = "--any-size", .offset = offsetof(struct export_opts, any_size), .flag = 1 },
		{ .name = "--samples", .offset = offsetof(struct export_opts, samples), .flag = 1 },
		WHEN_OPTS(offsetof(struct export_opts, win)),
		OPT_THREAD(offsetof(struct export_opts, threads)),
		{ .name = NULL } },
	.help = "usage: katra export --chrome [--complete] IN OUT.json\n"
		"       katra export --collapsed [--samples] IN OUT.folded\n"
		"       katra export --perfetto [--zstd | --deflate] IN OUT.pftrace\n"
		"       katra export --fxt IN OUT.fxt\n"
		"       (each also [--from T] [--to T] [--window T..T] [--frames A..B]\n"
		"       [--thread ID ...] [--any-size])\n"
		"       katra export --parquet IN... DIR (DuckDB: `--parquet --help`)\n"
		"Writes the Chrome Trace Event Format (Perfetto UI, Tracy's\n"
		"import-chrome, speedscope, chrome://tracing): zones as B/E (with\n"
		"--complete, as X with their duration), instants, counters as C,\n"
		"flows as s/t/f bound to their zone, frame marks as instants named\n"
		"\"frame...\", messages as instants named by their text, process and\n"
		"thread names and order as metadata, sampled call stacks (KT_SAMPLE_HZ)\n"
		"as the format's \"samples\" and \"stackFrames\" after the events\n"
		"(chrome://tracing shows them; readers of traceEvents alone, as Tracy's\n"
		"import-chrome, skip them; --perfetto has them as callstack samples).\n"
		"Zones stay balanced on every thread (as below); zones cut by a drop\n"
		"window or the window's end get args \"cut\": \"end\" or \"start\".\n"
		"Streams the events: memory holds the trace's names and threads and\n"
		"their open zones, never all of its events.\n"
		"--collapsed writes collapsed stacks for flame graphs (flamegraph.pl,\n"
		"speedscope, inferno): a line per distinct stack of zones on a thread,\n"
		"\"THREAD (ID);outer;inner SELF_NS\", self time in nanoseconds; a\n"
		"thread's lines sum to its outermost zones' time.  Stacks past 256\n"
		"deep or 1048576 distinct fold into their parents (said on stderr).\n"
		"With --samples: the sampled call chains (KT_SAMPLE_HZ) instead, a line\n"
		"per distinct \"THREAD (ID);zone...;function... COUNT\", outermost\n"
		"first, the functions named from the files the trace's map entries\n"
		"name (libdwfl); an address no symbol holds is FILE+0xOFFSET.\n"
		"--perfetto writes Perfetto's protobuf trace (ui.perfetto.dev: open the\n"
		"file): a packet sequence per thread, names interned, timestamps as\n"
		"deltas; --zstd or --deflate compress it in batches (zstd: Perfetto\n"
		"v58 and later; deflate: every version); sampled call chains go as\n"
		"Perfetto's callstack samples (PerfSample, functions named).  --fxt writes the Fuchsia\n"
		"trace format (Perfetto's UI, Tracy's tracy-import-fuchsia),\n"
		"timestamps in ns (a rate of 1e9: Tracy's importer ignores it).\n"
		"Zone arguments go on their zones.  All three keep zones balanced (an\n"
		"end with no begin is skipped, zones left open are closed, said on\n"
		"stderr) and mark each drop record on its thread.  Chrome, Perfetto\n"
		"and FXT give each track with its own clock (a GPU queue) a row of\n"
		"its own, its zones and counters at times converted to katra's clock;\n"
		"track records they cannot convert are counted on stderr.\n"
		"OUT is written whole or not at all (a temporary file beside it,\n"
		"renamed); IN itself is never replaced.  Damaged frames of IN are\n"
		"skipped and said on stderr; the exit status is then 3 (partial).\n"
		"A window or --thread (up to 64) keeps only those events.\n"
		"Size guard: an export its viewers cannot load is refused before it is\n"
		"written (exit 1, said on stderr with a window to try): past about\n"
		"256 MiB of Chrome JSON (about 100 bytes an event: Tracy's import-chrome\n"
		"needs some 20 times the file in memory, Perfetto's UI about 2 GB for a\n"
		"trace), 512 MiB of Perfetto or FXT (20 bytes an event; Perfetto's UI\n"
		"holds 2 to 4 times the file).  The events are counted from the chunks\n"
		"the window and --thread keep.  --any-size writes it anyway; a device\n"
		"(/dev/null) is never refused.\n" WHEN_HELP,
};

int cmd_export(int argc, char **argv)
{
	const char *pos[2];
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--parquet")) /* many inputs, DuckDB (tools/cmd/cmd_sql.c) */
			return cmd_export_parquet(argc, argv);
	struct export_opts o = { .copts = { .to_ns = UINT64_MAX } };
	int rc = opts_parse(&export_spec, argc, argv, &o, pos);
	if (rc != OPTS_GO)
		return rc;
	if (o.chrome + o.collapsed + o.perfetto + o.fxt != 1)
		return usage_error("export: say one format: --chrome, --collapsed, --perfetto or --fxt");
	int format = o.chrome ? CHROME : o.collapsed ? COLLAPSED : o.perfetto ? PERFETTO : FXT;
	if (o.samples && format != COLLAPSED)
		return usage_error("export: --samples goes with --collapsed only");
	if (o.samples)
		format = SAMPLES;
	if (o.zstd + o.deflate > (format == PERFETTO))
		return usage_error("export: --zstd or --deflate, one, and with --perfetto only");
	if (o.copts.complete && format != CHROME)
		return usage_error("export: --complete goes with --chrome only");
	int codec = o.zstd ? PERFETTO_ZSTD : o.deflate ? PERFETTO_DEFLATE : PERFETTO_PLAIN;
	if ((rc = when_early("export", &o.win)) != OPTS_GO)
		return rc;
	const char *inp = pos[0], *out = pos[1];
	struct input in;
	if ((rc = input_open(&in, inp)))
		return rc;
	if ((rc = cut_window(&o, inp, in.r)) != OPTS_GO) {
		input_close(&in);
		return rc;
	}
	struct tables t;
	outfile of;
	int result = EXIT_BAD;
	kt_reader_set_salvage(in.r, 1);
	if ((rc = tables_load(in.r, &t)) < 0) {
		result = pass_failed(inp, in.r, rc);
		goto done;
	}
	kt_reader_rewind(in.r);
	if (too_big(format, in.r, &o, out))
		goto done;
	if (output_open(&of, out, &in) < 0)
		goto done;
	int werr;
	rc = export_to(&in, inp, &t, format, codec, &o.copts, &of, &werr);
	if (werr) {
		say("%s: write failed: %s", out, strerror(werr));
	} else if (rc < 0) {
		pass_failed(inp, in.r, rc);
	} else if ((rc = outfile_commit(&of)) < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if (!t.have_summary) {
		say("%s: truncated: exported the events before the cut", inp);
		result = salvage_said(inp, in.r, EXIT_TRUNC);
	} else {
		result = salvage_said(inp, in.r, EXIT_OK);
	}
	outfile_abort(&of);
done:
	tables_free(&t);
	input_close(&in);
	return result;
}
