/*
 * katra - the offline tool: verify and inspect .katra trace files.
 *
 * Every file and string it reads may be hostile: inputs are opened once,
 * as regular files only (a FIFO never hangs it); outputs are created
 * beside their name and renamed (tools/outfile.h); every string from a
 * file or the command line is escaped on output (tools/text.h);
 * time and memory follow the file's size, never a number in
 * it.  Stats and the event formats live in tools/stats.c and tools/fmt.c.
 *
 * Exit codes: 0 success / valid, 1 error (out of memory, I/O) or corrupt
 * file, 2 usage error, 3 truncated file (a valid prefix).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <katra/capture.h>
#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "capture/capture_internal.h"
#include "tools/bsearch.h"
#include "tools/cli.h"
#include "tools/fmt.h"
#include "tools/opts.h"
#include "tools/outfile.h"
#include "tools/progress.h"
#include "tools/recover.h"
#include "tools/stats.h"
#include "tools/tables.h"
#include "tools/text.h"

static void usage_main(FILE *f)
{
	fprintf(f,
		"usage: katra <command> [options] FILE\n"
		"\n"
		"commands:\n"
		"  info FILE            header, clock, threads, names, counts, time span\n"
		"  verify FILE [--json] check every frame and checksum\n"
		"                       exit 0 valid, 1 corrupt, 3 truncated (valid prefix)\n"
		"  stats FILE [--json]  per thread, per name (zone durations), frame times\n"
		"  dump FILE            events of all threads in timestamp order\n"
		"                       [--format text|jsonl] [--thread T] [--from NS --to NS]\n"
		"  replay FILE          the same, paced to the original timing\n"
		"                       [--speed X | --max] [--max-gap S] [--format text|jsonl]\n"
		"  export --chrome IN OUT.json   Chrome Trace Event Format (Perfetto UI)\n"
		"  decompress IN OUT    rewrite LZ4 chunks raw\n"
		"  compress IN OUT      rewrite chunks with LZ4 (timestamps delta-coded)\n"
		"  slice IN OUT         a smaller valid trace [--from NS] [--to NS] [--thread T]\n"
		"  recover DIR [--out OUT]   rebuild the trace of a process that died from\n"
		"                       its crash directory; --list finds leftovers\n"
		"\n"
		"options:\n"
		"  -h, --help           this text; `katra <command> --help` for one command\n"
		"  -V, --version        the tool, library and format versions\n"
		"\n"
		"exit: 0 success, 1 error or corrupt file, 2 usage, 3 truncated file.\n"
		"Strings from files are printed escaped (\\n, \\xNN, ...).\n");
}

/* ---- verify ---------------------------------------------------------- */

/* The trace's own verdict. */
struct verdict {
	int rc;                /* 0, or the open's or the pass's code */
	kt_reader_status st;
	kt_reader_error err;
	int captured;          /* the header says KT_HDR_CAPTURE */
	int not_bytes;         /* it failed, but not for its bytes (no memory...) */
	int truncated, corrupt;
	uint64_t cut;          /* truncated: where */
};

static void verify_trace(struct input *in, const char *path, struct verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->rc = input_open_quiet(in, path, &v->err);
	if (v->rc == 0) {
		kt_trace_frame f;
		v->captured = !!(kt_reader_get_header(in->r)->flags & KT_HDR_CAPTURE);
		progress_init(0, NULL);
		kt_reader_get_status(in->r, &v->st);
		while ((v->rc = kt_reader_next_frame(in->r, &f)) > 0)
			progress(f.offset + 16 + ((f.body_len + 7u) & ~7u), v->st.file_size);
		progress_end();
		kt_reader_get_status(in->r, &v->st);
		v->err = *kt_reader_get_last_error(in->r);
	}
	/* An OS error (missing path, a directory, no memory) says nothing
	 * about the bytes: no offset, just the reason. */
	v->truncated = v->rc == KT_ETRUNCATED || (v->rc == 0 && v->st.truncated);
	v->corrupt = is_corruption(v->rc);
	v->not_bytes = v->rc < 0 && !v->truncated && !v->corrupt;
	v->cut = v->rc == KT_ETRUNCATED ? v->err.offset : v->st.valid_end;
}

/* What sits beside the trace as FILE.json. */
struct sidecar {
	int state;          /* 0 none (or not a capture's); 1 matches; -1 does not */
	char path[4096];
	char why[512];
	char sha[65];
};

#define SIDECAR_MAX (1 << 20) /* a sidecar is one line of a few hundred bytes */

/*
 * Read the file at @path into *@json without following a link or waiting
 * on a FIFO.  Returns 1 with the bytes (free() them), 0 when there is no
 * such file, -1 with @s->why when it cannot be read.
 */
static int sidecar_read(struct sidecar *s, char **json, size_t *len)
{
	struct stat sb;
	int fd = open(s->path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	*json = NULL;
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)",
			 errno == ELOOP ? "a symbolic link" : strerror(errno));
	} else if (!S_ISREG(sb.st_mode)) {
		snprintf(s->why, sizeof(s->why), "cannot read it (not a regular file)");
	} else if (sb.st_size > SIDECAR_MAX) {
		snprintf(s->why, sizeof(s->why), "cannot read it (over 1 MiB)");
	} else if (!(*json = malloc((size_t)sb.st_size + 1))) {
		snprintf(s->why, sizeof(s->why), "cannot read it (out of memory)");
	} else if ((*len = (size_t)pread(fd, *json, (size_t)sb.st_size, 0)) != (size_t)sb.st_size) {
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)",
			 *len == (size_t)-1 ? strerror(errno) : "it changed while read");
		free(*json);
		*json = NULL;
	}
	if (fd >= 0)
		close(fd);
	return *json ? 1 : -1;
}

/* Does this JSON say it is a capture manager's sidecar?  1 yes, 0 it is
 * other JSON, -1 it is not JSON at all. */
static int is_capture_sidecar(const char *json, size_t len)
{
	json_t *o = json_loadb(json, len, 0, NULL);
	const char *schema = json_string_value(json_object_get(o, "schema"));
	int yes = !o ? -1 : schema && !strcmp(schema, KT_CAPTURE_SCHEMA);
	json_decref(o);
	return yes;
}

/*
 * Check FILE.json against the trace (read through @fd) when it is a
 * capture's sidecar: its schema says so, or the trace's header says the
 * trace was captured (then whatever sits there must match).  Anything
 * else there, such as a Chrome export, is not checked.
 */
static void verify_sidecar(struct sidecar *s, const char *path, int fd, int captured)
{
	char *json = NULL;
	size_t len = 0;
	memset(s, 0, sizeof(*s));
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s.json", path) >= sizeof(s->path))
		return;
	int rc = sidecar_read(s, &json, &len);
	int ours = rc > 0 ? is_capture_sidecar(json, len) : -1;
	const char *base = strrchr(path, '/');
	uint64_t bytes = 0;
	if (rc == 0 || (ours < 1 && !captured)) {
		s->state = 0;
	} else if (rc < 0) {
		s->state = -1;
	} else if (ours == 0) {
		snprintf(s->why, sizeof(s->why), "not a capture sidecar (its schema is not %s), "
			 "yet the trace's header says it was captured", KT_CAPTURE_SCHEMA);
		s->state = -1;
	} else if (fd < 0 || (rc = kt__sha256_fd(fd, s->sha, &bytes)) < 0) {
		snprintf(s->why, sizeof(s->why), "cannot read the trace (%s)",
			 fd < 0 ? "not a regular file" : strerror(-rc));
		s->state = -1;
	} else {
		s->state = kt__sidecar_check(json, len, base ? base + 1 : path, s->sha, bytes, s->why,
					     sizeof(s->why)) == 0 ? 1 : -1;
	}
	free(json);
}

static void verify_json(const char *path, const struct verdict *v, const struct sidecar *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "file", text_json_string(path, strlen(path)));
	json_object_set_new(o, "valid", json_boolean(v->rc >= 0 && !v->truncated));
	json_object_set_new(o, "truncated", json_boolean(v->truncated));
	json_object_set_new(o, "events", json_integer((json_int_t)v->st.events));
	json_object_set_new(o, "first_bad_offset",
			    v->corrupt ? json_integer((json_int_t)v->err.offset) : json_null());
	if (v->truncated)
		json_object_set_new(o, "truncated_at", json_integer((json_int_t)v->cut));
	if (v->corrupt || v->not_bytes) {
		const char *msg = v->corrupt ? v->err.message : reason(v->rc, &v->err);
		json_object_set_new(o, "error", json_string(kt_err_name(v->rc)));
		json_object_set_new(o, "message", text_json_string(msg, strlen(msg)));
	}
	if (s->state) {
		json_t *sc = json_object();
		const char *what = s->state > 0 ? s->sha : s->why;
		json_object_set_new(sc, "file", text_json_string(s->path, strlen(s->path)));
		json_object_set_new(sc, "matches", json_boolean(s->state > 0));
		json_object_set_new(sc, s->state > 0 ? "sha256" : "problem",
				    text_json_string(what, strlen(what)));
		json_object_set_new(o, "sidecar", sc);
	}
	if (text_json_print(stdout, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == -ENOMEM)
		say("%s: out of memory", path);
	json_decref(o);
}

static void verify_text(const char *path, const struct verdict *v, const struct sidecar *s)
{
	if (v->not_bytes) {
		say("%s: %s", path, reason(v->rc, &v->err));
	} else {
		put(path);
		if (v->corrupt) {
			printf(": corrupt: ");
			put(v->err.message);
			printf("\n");
		} else if (v->truncated) {
			printf(": truncated at offset %" PRIu64 ": the prefix is valid; %" PRIu64
			       " events in %" PRIu64 " frames recovered; no session summary\n",
			       v->cut, v->st.events, v->st.frames);
		} else {
			printf(": valid: %" PRIu64 " frames, %" PRIu64 " events, %" PRIu64
			       " dropped, %" PRIu64 " bytes\n",
			       v->st.frames, v->st.events, v->st.dropped, v->st.file_size);
		}
	}
	if (s->state) {
		put(s->path);
		if (s->state > 0) {
			printf(": matches: sha256 %s\n", s->sha);
		} else {
			printf(": capture sidecar does not match ");
			put(path);
			printf(": ");
			put(s->why);
			printf("\n");
		}
	}
}

static const struct opts_spec verify_spec = {
	.cmd = "verify", .npos = 1, .unknown = "unknown option",
	.opts = opts_json,
	.help = "usage: katra verify FILE [--json]\n"
		"Checks the header and every frame: heads, lengths, checksums,\n"
		"chunk contents and the summary's accounting.\n"
		"exit 0: valid; 1: corrupt (first bad offset and why), or an error\n"
		"reading it (said as such: out of memory, not a regular file...);\n"
		"3: truncated (the prefix is valid; events recovered are counted).\n"
		"--json prints {\"valid\",\"truncated\",\"events\",\"first_bad_offset\"}.\n"
		"A capture's sidecar (FILE.json with the capture schema, or any\n"
		"FILE.json when FILE's header says it was captured) is checked too:\n"
		"its sha256, bytes and file name must match FILE (exit 1 if not,\n"
		"with the trace's own verdict printed as it is).\n",
};

static int cmd_verify(int argc, char **argv)
{
	const char *path;
	int json = 0;
	int rc = opts_parse(&verify_spec, argc, argv, &json, &path);
	if (rc != OPTS_GO)
		return rc;

	struct input in;
	struct verdict v;
	struct sidecar s;
	verify_trace(&in, path, &v);
	verify_sidecar(&s, path, S_ISREG(in.sb.st_mode) ? in.fd : -1, v.captured);
	input_close(&in);
	(json ? verify_json : verify_text)(path, &v, &s);
	if (json && v.not_bytes)
		say("%s: %s", path, reason(v.rc, &v.err));
	if (v.corrupt || v.not_bytes || s.state < 0)
		return EXIT_BAD;
	return v.truncated ? EXIT_TRUNC : EXIT_OK;
}

/* ---- info ------------------------------------------------------------ */

static const char *codec_name(unsigned c)
{
	return c == 0 ? "none" : c == 1 ? "lz4" : c == 2 ? "lz4-delta" : "unknown";
}

static const char *io_name(unsigned io, int requested)
{
	switch (io) {
	case 0: return requested ? "auto" : "none";
	case 1: return "io_uring";
	case 2: return "pwrite";
	default: return "unknown";
	}
}

/* What info gathers in its one pass. */
struct info {
	struct tables t;
	uint64_t raw_chunks, lz4_chunks, delta_chunks;
	uint64_t ts_min, ts_max;
	kt_file_summary sum;   /* its rows point into the reader: print first */
	int have_sum, rc;
	kt_reader_status st;
};

static void info_read(kt_reader *r, struct info *in)
{
	kt_trace_frame f;
	memset(in, 0, sizeof(*in));
	in->ts_min = UINT64_MAX;
	while ((in->rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_CHUNK) {
			if (f.u.chunk.codec == KT_CODEC_LZ4_DELTA)
				in->delta_chunks++;
			else if (f.u.chunk.codec)
				in->lz4_chunks++;
			else
				in->raw_chunks++;
			if (f.u.chunk.first_ts < in->ts_min)
				in->ts_min = f.u.chunk.first_ts;
			if (f.u.chunk.last_ts > in->ts_max)
				in->ts_max = f.u.chunk.last_ts;
		} else if (f.kind == KT_FRAME_SUMMARY) {
			in->sum = f.u.summary;
			in->have_sum = 1;
			break; /* rows point into the reader: print before reading on */
		} else if ((in->rc = tables_add(&in->t, &f)) < 0) {
			break;
		}
	}
	tables_finish(&in->t);
	kt_reader_get_status(r, &in->st);
}

/* A labelled line whose value is a string from the file. */
static void info_str(const char *label, const char *value)
{
	printf("%-16s", label);
	put(value);
	printf("\n");
}

static void info_header(const char *path, const kt_header *h)
{
	info_str("file", path);
	printf("format          version %u, schema %016" PRIx64 "\n", h->format_version,
	       h->schema_hash);
	info_str("tool", h->tool_version);
	info_str("workload", h->workload);
	info_str("host", h->host);
	printf("process id      %" PRIu64 "\n", h->process_id);
	if (h->flags & KT_HDR_CAPTURE) {
		printf("capture         run ");
		put(h->run_id);
		printf(", epoch %" PRIu64 ", id ", h->epoch);
		put(h->capture_id);
		printf("\n");
	}
	printf("start           wall %" PRIu64 " ns, monotonic %" PRIu64 " ns\n",
	       h->start_wall_ns, h->start_mono_ns);
	printf("clock           %s, %" PRIu64 " Hz, calibrated at %" PRIu64 " ticks = %" PRIu64
	       " ns\n",
	       h->clock.source == KT_CLOCK_TSC ? "tsc" : "monotonic", h->clock.tick_hz,
	       h->clock.ticks, h->clock.mono_ns);
}

static void info_options(const kt_header *h, const struct info *in)
{
	if (in->have_sum && in->sum.clock_ticks1)
		printf("clock at stop   %" PRIu64 " ticks = %" PRIu64 " ns\n", in->sum.clock_ticks1,
		       in->sum.clock_ns1);
	printf("options         ring %" PRIu64 " B, overflow %s, codec %s (level %d), io %s,\n"
	       "                flush every %" PRIu64 " ns, fsync every %" PRIu64
	       " ns, max %" PRIu64 " ns / %" PRIu64 " B\n",
	       h->capture.ring_size, h->capture.overflow ? "block" : "drop",
	       codec_name(h->capture.codec), h->capture.codec_level, io_name(h->capture.io, 1),
	       h->capture.flush_period_ns, h->capture.fsync_interval_ns,
	       h->capture.max_duration_ns, h->capture.max_bytes);
	for (uint32_t i = 0; i < h->note_count; i++)
		info_str("note", h->notes[i]);
}

/* The summary's row for @id (rows are in increasing thread id order). */
static const kt_summary_thread *summary_row(const kt_file_summary *s, uint32_t id)
{
	size_t lo = lower_bound_u32(s->threads, s->thread_count, sizeof(*s->threads), id);
	return lo < s->thread_count && s->threads[lo].thread_id == id ? &s->threads[lo] : NULL;
}

static int info_threads(const struct info *in)
{
	const struct tables *t = &in->t;
	printf("threads         %zu named\n", t->nthreads);
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct tentry *e = &t->threads[i];
		char *name = e->len ? text_escape(tables_str(t, e), e->len) : strdup("(unnamed)");
		if (!name)
			return -ENOMEM;
		printf("  thread %-6u os tid %-8u %-20s", e->id, e->os_tid, name);
		free(name);
		if (in->have_sum) {
			const kt_summary_thread *row = summary_row(&in->sum, e->id);
			printf(" %" PRIu64 " events, %" PRIu64 " dropped", row ? row->written : 0,
			       row ? row->dropped : 0);
		}
		printf("\n");
	}
	return 0;
}

static void info_counts(const kt_header *h, const struct info *in)
{
	const kt_file_summary *sum = in->have_sum ? &in->sum : NULL;
	printf("names           %zu\n", in->t.nnames);
	printf("chunks          %" PRIu64 " (%" PRIu64 " raw, %" PRIu64 " lz4", in->st.chunks,
	       in->raw_chunks, in->lz4_chunks);
	if (in->delta_chunks)
		printf(", %" PRIu64 " lz4-delta", in->delta_chunks);
	printf(")\n");
	printf("events          %" PRIu64 "\n", in->st.events);
	printf("dropped         %" PRIu64 "\n", in->st.dropped);
	if (in->st.events) {
		uint64_t a = kt_ticks_to_ns(&h->clock, sum, in->ts_min);
		uint64_t b = kt_ticks_to_ns(&h->clock, sum, in->ts_max);
		printf("time span       %" PRIu64 " ns .. %" PRIu64 " ns (%.6f s)\n", a, b,
		       (double)(b - a) / 1e9);
	}
	if (!sum)
		return;
	printf("bytes           %" PRIu64 " raw, %" PRIu64 " stored", sum->bytes_raw,
	       sum->bytes_stored);
	if (sum->bytes_stored)
		printf(" (ratio %.2f)", (double)sum->bytes_raw / (double)sum->bytes_stored);
	printf(", file %" PRIu64 "\n", in->st.file_size);
	printf("io backend      %s", io_name(sum->io_backend, 0));
	if (sum->io_error)
		printf(", first error %s", kt_strerror(sum->io_error));
	printf("\n");
}

/* The status line for a pass that stopped on @rc; returns the exit status. */
static int info_failed(kt_reader *r, int rc)
{
	if (!is_corruption(rc)) {
		printf("status          error: ");
		put(reason(rc, kt_reader_get_last_error(r)));
		printf("\n");
	} else {
		printf("status          corrupt: ");
		put(kt_reader_get_last_error(r)->message);
		printf("\n");
	}
	return EXIT_BAD;
}

static int info_status(kt_reader *r, const struct info *in)
{
	kt_trace_frame f;
	if (in->rc < 0)
		return info_failed(r, in->rc);
	if (!in->have_sum) {
		printf("status          truncated at offset %" PRIu64 " (no session summary)\n",
		       in->st.valid_end);
		return EXIT_TRUNC;
	}
	printf("status          complete%s\n",
	       in->sum.flags & KT_SUMMARY_RECOVERED ? " (recovered)" : "");
	/* Anything after the summary is still corruption. */
	int rc = kt_reader_next_frame(r, &f);
	return rc < 0 ? info_failed(r, rc) : EXIT_OK;
}

static const struct opts_spec info_spec = {
	.cmd = "info", .npos = 1, .unknown = "unknown option",
	.help = "usage: katra info FILE\n"
		"Prints the header (versions, times, clock calibration, capture\n"
		"options, workload, host, notes), threads, names, counts, the time\n"
		"span, codecs, the I/O backend and whether the file is complete.\n"
		"exit 0: complete; 1: corrupt (or an error reading it); 3: truncated.\n",
};

static int cmd_info(int argc, char **argv)
{
	const char *path;
	int rc = opts_parse(&info_spec, argc, argv, NULL, &path);
	if (rc != OPTS_GO)
		return rc;
	struct input src;
	if ((rc = input_open(&src, path)))
		return rc;
	const kt_header *h = kt_reader_get_header(src.r);
	struct info in;
	info_read(src.r, &in);
	info_header(path, h);
	info_options(h, &in);
	int result = info_threads(&in) ? info_failed(src.r, -ENOMEM) : EXIT_OK;
	if (result == EXIT_OK) {
		info_counts(h, &in);
		result = info_status(src.r, &in);
	}
	tables_free(&in.t);
	input_close(&src);
	return result;
}

/* ---- dump and replay --------------------------------------------------- */

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
		uint64_t ns = kt_reader_ticks_to_ns(r, ev.ts);
		pace(p, ns, fm);
		if (fmt_event(fm, &ev, ns))
			return -ENOMEM;
		progress_events(++n);
	}
	return rc;
}

struct events_opts {
	struct fmt_job job;
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
		OPT_FROM(EVENTS_OPT(job.from)),
		OPT_TO(EVENTS_OPT(job.to)),
		{ NULL } },
	.help = "usage: katra dump FILE [--format text|jsonl] [--thread T ...]\n"
		"                  [--from NS] [--to NS]\n"
		"Prints the events of all threads merged in timestamp order.\n"
		"Text lines: ns tid thread type name [value...].  NS are\n"
		"CLOCK_MONOTONIC nanoseconds as `katra info` shows them.\n"
		"Names and messages are printed escaped; up to 64 --thread.\n",
};

static const struct opts_spec replay_spec = {
	.cmd = "replay", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "--format", opt_format, EVENTS_OPT(job.kind), .wants = "text or jsonl" },
		{ "--speed", opt_speed, EVENTS_OPT(pacer.speed), .wants = "a positive number" },
		{ "--max-gap", opt_seconds, EVENTS_OPT(pacer.max_gap_ns),
		  .wants = "seconds (0 or more, or inf)" },
		{ "--max", NULL, EVENTS_OPT(paced), .flag = 0 },
		{ NULL } },
	.help = "usage: katra replay FILE [--speed X | --max] [--max-gap S]\n"
		"                    [--format text|jsonl]\n"
		"Prints every event in global timestamp order (ties: thread id,\n"
		"then order within the thread), paced to the original timing\n"
		"scaled by X (default 1), or as fast as possible with --max.\n"
		"No wait between two events is longer than S seconds (default 1;\n"
		"'inf' for none); the first one shortened is said on stderr.\n",
};

/* dump and replay share their options and their output. */
static int cmd_events(int argc, char **argv, int replay)
{
	struct events_opts o = { .job = { .to = UINT64_MAX }, .paced = replay,
				 .pacer = { .speed = 1.0, .max_gap_ns = 1e9 } };
	const char *path;
	int rc = opts_parse(replay ? &replay_spec : &dump_spec, argc, argv, &o, &path);
	if (rc != OPTS_GO)
		return rc;
	struct input in;
	if ((rc = input_open(&in, path)))
		return rc;
	struct tables t;
	rc = tables_load(in.r, &t);
	kt_reader_rewind(in.r);
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
	input_close(&in);
	return result;
}

/* ---- export --chrome ----------------------------------------------------- */

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
		{ NULL } },
	.help = "usage: katra export --chrome IN OUT.json\n"
		"Writes the Chrome Trace Event Format (Perfetto UI, speedscope,\n"
		"chrome://tracing): zones as B/E, instants, counters as C, flows as\n"
		"s/t/f, frame marks as process-scoped instants, thread names as\n"
		"metadata.  Streams the events: memory holds the trace's names and\n"
		"threads and a fixed window of events, never all of its events.\n"
		"OUT.json is written whole or not at all (a temporary file beside\n"
		"it, renamed); IN itself is never replaced.\n",
};

static int cmd_export(int argc, char **argv)
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

/* ---- decompress, compress and slice ----------------------------------- */

/* What a rewrite keeps and how it encodes it. */
struct rewrite_args {
	int codec;              /* kt_codec; -1 keeps each chunk's */
	int filter;             /* slice: keep only what the next fields say */
	uint64_t from, to;      /* ns, inclusive */
	struct thread_list threads;
};

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	progress(done, total);
}

/*
 * Copy IN to OUT through kt_rewrite(): chunks re-encoded with @a's codec,
 * events outside its filter dropped, names, threads and drops
 * carried over, the summary recomputed.  IN is opened once (the fd the
 * header was checked on is the one rewritten); OUT is created beside its
 * final name and renamed, so it is never left partial and never IN.
 */
static int rewrite(const char *in_path, const char *out, const struct rewrite_args *a)
{
	struct input in;
	int rc = input_open(&in, in_path);
	if (rc)
		return rc;
	outfile of;
	int result = EXIT_BAD;
	if (output_open(&of, out, &in) < 0)
		goto done;
	kt_rewrite_options o = {
		.in_fds = &in.fd, .n_in = 1, .out_fd = of.fd, .codec = a->codec,
		.filter = a->filter, .from_ns = a->from, .to_ns = a->to,
		.threads = a->threads.ids, .nthreads = (size_t)a->threads.n,
		.progress = progress_cb,
	};
	kt_rewrite_result res;
	progress_init(0, NULL);
	rc = kt_rewrite(&o, &res);
	progress_end();
	if (rc < 0 && res.in_index >= 0) {
		read_failed(in_path, rc, &res.in_err);
	} else if (rc < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if ((rc = outfile_commit(&of)) < 0) {
		say("%s: %s", out, reason(rc, NULL));
	} else if (res.have_summary) {
		result = EXIT_OK;
	} else {
		/* A cut input gives a cut output: the same valid prefix. */
		say("%s: truncated: %s holds the frames before the cut", in_path, out);
		result = EXIT_TRUNC;
	}
	outfile_abort(&of);
done:
	input_close(&in);
	return result;
}

/* --codec: lz4-delta or lz4. */
static int opt_codec(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	if (!strcmp(value, "lz4"))
		*(int *)dst = KT_CODEC_LZ4;
	else if (!strcmp(value, "lz4-delta"))
		*(int *)dst = KT_CODEC_LZ4_DELTA;
	else
		return opt_bad(cmd, o, value);
	return 0;
}

#define RECODE_HELP_TAIL                                                          \
	"; everything else is carried over and the\n"                             \
	"summary recomputed.  The result verifies and dumps identically.\n"       \
	"OUT is written whole or not at all; IN itself is never replaced.\n"

static const struct opts_spec compress_spec = {
	.cmd = "compress", .npos = 2, .unknown = "unknown option",
	.opts = (const struct opt[]){
		{ "--codec", opt_codec, offsetof(struct rewrite_args, codec),
		  .wants = "lz4-delta or lz4" },
		{ NULL } },
	.help = "usage: katra compress IN OUT [--codec lz4-delta|lz4]\n"
		"Rewrites every chunk LZ4-compressed (lz4-delta, the default: timestamps as\n"
		"differences first, about 2.5x smaller than lz4, plain LZ4)" RECODE_HELP_TAIL,
};

static const struct opts_spec decompress_spec = {
	.cmd = "decompress", .npos = 2, .unknown = "unknown option",
	.help = "usage: katra decompress IN OUT\n"
		"Rewrites every chunk raw" RECODE_HELP_TAIL,
};

static const struct opts_spec slice_spec = {
	.cmd = "slice", .npos = 2, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		OPT_FROM(offsetof(struct rewrite_args, from)),
		OPT_TO(offsetof(struct rewrite_args, to)),
		OPT_THREAD(offsetof(struct rewrite_args, threads)),
		{ NULL } },
	.help = "usage: katra slice IN OUT [--from NS] [--to NS] [--thread T ...]\n"
		"Writes a smaller valid trace: the events in [NS, NS] of the chosen\n"
		"threads (up to 64), the names, those threads' entries and drop\n"
		"records that overlap, and a recomputed summary.\n",
};

/* compress, decompress and slice: @a holds the defaults. */
static int cmd_rewrite(const struct opts_spec *spec, int argc, char **argv,
		       struct rewrite_args *a)
{
	const char *pos[2];
	int rc = opts_parse(spec, argc, argv, a, pos);
	return rc != OPTS_GO ? rc : rewrite(pos[0], pos[1], a);
}

static int cmd_compress(int argc, char **argv)
{
	struct rewrite_args a = { .codec = KT_CODEC_LZ4_DELTA };
	return cmd_rewrite(&compress_spec, argc, argv, &a);
}

static int cmd_decompress(int argc, char **argv)
{
	struct rewrite_args a = { .codec = KT_CODEC_NONE };
	return cmd_rewrite(&decompress_spec, argc, argv, &a);
}

static int cmd_slice(int argc, char **argv)
{
	struct rewrite_args a = { .codec = -1, .filter = 1, .to = UINT64_MAX };
	return cmd_rewrite(&slice_spec, argc, argv, &a);
}

/* ---- stats ------------------------------------------------------------- */

static const struct opts_spec stats_spec = {
	.cmd = "stats", .npos = 1, .unknown = "unknown option",
	.opts = opts_json,
	.help = "usage: katra stats FILE [--json]\n"
		"Per thread: events, dropped, time span, rate.  Per name: count and\n"
		"zone durations (min, p50, p99, max).  Frame times between frame\n"
		"marks: p50, p99, max and a histogram.  Durations in ns; percentiles\n"
		"come from ~3%-wide buckets, min and max are exact.\n",
};

static int cmd_stats(int argc, char **argv)
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
	progress_init(0, in.r);
	rc = stats_run(in.r, path, json, stdout, &truncated);
	progress_end();
	int result = rc == -EIO ? EXIT_BAD	/* stdout: main() says why */
		   : rc < 0 ? pass_failed(path, in.r, rc)
		   : truncated ? EXIT_TRUNC : EXIT_OK;
	input_close(&in);
	return result;
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage_main(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("katra %s (library %s, trace format %u)\n", KT_VERSION_STRING,
		       kt_version_string(), KT_FORMAT_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump"))
		return cmd_events(argc - 1, argv + 1, 0);
	if (!strcmp(cmd, "replay"))
		return cmd_events(argc - 1, argv + 1, 1);
	if (!strcmp(cmd, "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "decompress"))
		return cmd_decompress(argc - 1, argv + 1);
	if (!strcmp(cmd, "compress"))
		return cmd_compress(argc - 1, argv + 1);
	if (!strcmp(cmd, "slice"))
		return cmd_slice(argc - 1, argv + 1);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (!strcmp(cmd, "recover"))
		return cmd_recover(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);
	/* Output that never arrived (a full disk, /dev/full) is a failure to
	 * say, not a success: every command's stdout ends here. */
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = fmt_write_errno() ? fmt_write_errno()
			: stdout_errno() ? stdout_errno() : errno ? errno : EIO;
		fprintf(stderr, "katra: standard output: %s\n", strerror(e));
		return rc == EXIT_USAGE ? rc : EXIT_BAD;
	}
	return rc;
}
