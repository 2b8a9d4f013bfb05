/*
 * katra - the offline tool: verify and inspect .katra trace files.
 *
 * Exit codes: 0 success / valid, 1 error or corrupt file, 2 usage error,
 * 3 truncated file (a valid prefix).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <katra/writer.h>
#include "format/format.h"

#include <katra/katra.h>
#include <katra/reader.h>
#include "tools/recover.h"
#include "capture/capture_internal.h"

enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_TRUNC = 3 };

static const char *prog = "katra";

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
		"                       [--speed X | --max] [--format text|jsonl]\n"
		"  export --chrome IN OUT.json   Chrome Trace Event Format (Perfetto UI)\n"
		"  decompress IN OUT    rewrite LZ4 chunks raw\n"
		"  compress IN OUT      rewrite chunks with LZ4 (timestamps delta-coded)\n"
		"  slice IN OUT         a smaller valid trace [--from NS] [--to NS] [--thread T]\n"
		"  recover DIR [--out OUT]   rebuild the trace of a process that died from\n"
		"                       its crash directory; --list finds leftovers\n"
		"\n"
		"options:\n"
		"  -h, --help           this text; `katra <command> --help` for one command\n"
		"  -V, --version        the tool, library and format versions\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'katra --help'.\n");
	return EXIT_USAGE;
}

/*
 * A progress bar on stderr for long operations, only when stderr is a
 * terminal (and, for commands that print events, stdout is not the same
 * screen); nothing otherwise.  Redrawn at most every 100 ms, erased at the end.
 */
static int progress_on, progress_shown;
static uint64_t progress_last;
static kt_reader *progress_reader; /* merged passes: the total comes from it */
static uint64_t progress_total;

static void progress_init(int prints_events)
{
	progress_on = isatty(2) && !(prints_events && isatty(1));
	progress_shown = 0;
	progress_last = 0;
	progress_total = 0;
}

static void progress(uint64_t done, uint64_t total)
{
	if (!progress_on || !total)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (done < total && now - progress_last < 100000000u)
		return;
	progress_last = now;
	unsigned pct = (unsigned)(done >= total ? 100 : done * 100 / total);
	char bar[31];
	memset(bar, '#', pct * 30 / 100);
	memset(bar + pct * 30 / 100, ' ', 30 - pct * 30 / 100);
	bar[30] = 0;
	fprintf(stderr, "\r[%s] %3u%%", bar, pct);
	progress_shown = 1;
}

/* For the merged passes: events done against the events the index saw. */
static void progress_events(uint64_t done)
{
	if (!progress_on || !progress_reader)
		return;
	if (!progress_total) {
		kt_reader_status st;
		kt_reader_get_status(progress_reader, &st);
		progress_total = st.events;
	}
	progress(done, progress_total);
}

static void progress_end(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
}

/* Open a trace or print one line naming the file and the problem. */
static kt_reader *open_or_say(const char *path)
{
	kt_reader *r;
	kt_reader_error err;
	int rc = kt_reader_open(&r, path, &err);
	if (rc == 0)
		return r;
	if (rc > -4096 && rc < 0)
		fprintf(stderr, "%s: %s: %s\n", prog, path, kt_strerror(rc));
	else
		fprintf(stderr, "%s: %s: %s\n", prog, path, err.message);
	return NULL;
}

/* ---- verify ---------------------------------------------------------- */

/*
 * The sidecar a capture manager published beside @path, if there is one:
 * 0 none; 1 it matches (@sha gets the file's SHA-256); -1 it does not, or
 * cannot be read (@why says why).
 */
static int sidecar_of(const char *path, char *side, size_t side_len, char sha[65], char *why,
		      size_t why_len)
{
	struct stat sb;
	if ((size_t)snprintf(side, side_len, "%s.json", path) >= side_len ||
	    stat(side, &sb) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	size_t len = 0;
	char *json = NULL;
	int fd = open(side, O_RDONLY | O_CLOEXEC);
	/* A sidecar is one line of a few hundred bytes. */
	if (fd >= 0 && sb.st_size <= (1 << 20) && (json = malloc((size_t)sb.st_size + 1)))
		len = (size_t)pread(fd, json, (size_t)sb.st_size, 0);
	if (fd >= 0)
		close(fd);
	int tfd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t bytes = 0;
	const char *base = strrchr(path, '/');
	int rc = -1;
	if (!json || len != (size_t)sb.st_size)
		snprintf(why, why_len, "cannot read it (%s)",
			 sb.st_size > (1 << 20) ? "over 1 MiB" : strerror(errno));
	else if (tfd < 0 || kt__sha256_fd(tfd, sha, &bytes) < 0)
		snprintf(why, why_len, "cannot read the trace: %s", strerror(errno));
	else if (kt__sidecar_check(json, len, base ? base + 1 : path, sha, bytes, why, why_len) == 0)
		rc = 1;
	if (tfd >= 0)
		close(tfd);
	free(json);
	return rc;
}

static int cmd_verify(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: katra verify FILE [--json]\n"
			       "Checks the header and every frame: heads, lengths, checksums,\n"
			       "chunk contents and the summary's accounting.\n"
			       "exit 0: valid; 1: corrupt (first bad offset and why);\n"
			       "3: truncated (the prefix is valid; events recovered are counted).\n"
			       "--json prints {\"valid\",\"truncated\",\"events\",\"first_bad_offset\"}.\n"
			       "A published capture's sidecar (FILE.json) is checked too: its\n"
			       "sha256, bytes and file name must match FILE (exit 1 if not).\n");
			return EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1])
			return usage_error("verify: unknown option '%s'", argv[i]);
		else if (path)
			return usage_error("verify: more than one file ('%s')", argv[i]);
		else
			path = argv[i];
	}
	if (!path)
		return usage_error("verify: %s", "missing FILE");

	kt_reader *r;
	kt_reader_error err;
	kt_reader_status st;
	int rc = kt_reader_open(&r, path, &err);

	memset(&st, 0, sizeof(st));
	if (rc == 0) {
		kt_trace_frame f;
		progress_init(0);
		kt_reader_get_status(r, &st);
		while ((rc = kt_reader_next_frame(r, &f)) > 0)
			progress(f.offset + 16 + ((f.body_len + 7u) & ~7u), st.file_size);
		progress_end();
		kt_reader_get_status(r, &st);
		err = *kt_reader_last_error(r);
	}
	/* An OS error (missing path, a directory) says nothing about the
	 * bytes: no offset, just the reason. */
	int os_error = rc < 0 && rc > -4096;
	int truncated = rc == KT_ETRUNCATED || (rc == 0 && st.truncated);
	int corrupt = rc < 0 && !truncated;
	int result = corrupt ? EXIT_BAD : truncated ? EXIT_TRUNC : EXIT_OK;
	uint64_t cut = rc == KT_ETRUNCATED ? err.offset : st.valid_end;
	char side_path[4096], side_why[512], sha[65] = "";
	int side = sidecar_of(path, side_path, sizeof(side_path), sha, side_why, sizeof(side_why));
	if (side < 0)
		result = EXIT_BAD;

	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "file", json_string(path));
		json_object_set_new(o, "valid", json_boolean(result == EXIT_OK));
		json_object_set_new(o, "truncated", json_boolean(truncated));
		json_object_set_new(o, "events", json_integer((json_int_t)st.events));
		json_object_set_new(o, "first_bad_offset",
				    corrupt && !os_error ? json_integer((json_int_t)err.offset)
							 : json_null());
		if (truncated)
			json_object_set_new(o, "truncated_at", json_integer((json_int_t)cut));
		if (corrupt) {
			json_object_set_new(o, "error", json_string(kt_err_name(rc)));
			json_object_set_new(o, "message", json_string(os_error ? kt_strerror(rc)
									      : err.message));
		}
		if (side) {
			json_t *sc = json_object();
			json_object_set_new(sc, "file", json_string(side_path));
			json_object_set_new(sc, "matches", json_boolean(side > 0));
			json_object_set_new(sc, side > 0 ? "sha256" : "problem",
					    json_string(side > 0 ? sha : side_why));
			json_object_set_new(o, "sidecar", sc);
		}
		char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s)
			puts(s);
		free(s);
		json_decref(o);
	}
	if (os_error)
		fprintf(stderr, "%s: %s: %s\n", prog, path, kt_strerror(rc));
	else if (json)
		;
	else if (result == EXIT_OK)
		printf("%s: valid: %" PRIu64 " frames, %" PRIu64 " events, %" PRIu64
		       " dropped, %" PRIu64 " bytes\n",
		       path, st.frames, st.events, st.dropped, st.file_size);
	else if (truncated)
		printf("%s: truncated at offset %" PRIu64 ": the prefix is valid; %" PRIu64
		       " events in %" PRIu64 " frames recovered; no session summary\n",
		       path, cut, st.events, st.frames);
	else
		printf("%s: corrupt: %s\n", path, err.message);
	if (!json && side > 0)
		printf("%s: matches: sha256 %s\n", side_path, sha);
	else if (!json && side < 0)
		printf("%s: does not match %s: %s\n", side_path, path, side_why);
	kt_reader_close(r);
	return result;
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

struct thread_info {
	uint32_t id, os_tid;
	char *name;
	uint64_t events, dropped;
};

static int cmd_info(int argc, char **argv)
{
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: katra info FILE\n"
			       "Prints the header (versions, times, clock calibration, capture\n"
			       "options, workload, host, notes), threads, names, counts, the time\n"
			       "span, codecs, the I/O backend and whether the file is complete.\n"
			       "exit 0: complete; 1: corrupt; 3: truncated.\n");
			return EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1])
			return usage_error("info: unknown option '%s'", argv[i]);
		else if (path)
			return usage_error("info: more than one file ('%s')", argv[i]);
		else
			path = argv[i];
	}
	if (!path)
		return usage_error("info: %s", "missing FILE");
	kt_reader *r = open_or_say(path);
	if (!r)
		return EXIT_BAD;

	const kt_header *h = kt_reader_header(r);
	struct thread_info *th = NULL;
	size_t nth = 0;
	uint64_t names = 0, raw_chunks = 0, lz4_chunks = 0, delta_chunks = 0;
	uint64_t ts_min = UINT64_MAX, ts_max = 0;
	kt_file_summary sum;
	int have_sum = 0, rc;
	kt_trace_frame f;

	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		switch (f.kind) {
		case KT_FRAME_CHUNK:
			if (f.u.chunk.codec == KT_CODEC_LZ4_DELTA)
				delta_chunks++;
			else if (f.u.chunk.codec)
				lz4_chunks++;
			else
				raw_chunks++;
			if (f.u.chunk.first_ts < ts_min)
				ts_min = f.u.chunk.first_ts;
			if (f.u.chunk.last_ts > ts_max)
				ts_max = f.u.chunk.last_ts;
			break;
		case KT_FRAME_NAME:
			names++;
			break;
		case KT_FRAME_THREAD: {
			void *p = realloc(th, (nth + 1) * sizeof(*th));
			if (!p)
				break;
			th = p;
			th[nth].id = f.u.thread.thread_id;
			th[nth].os_tid = f.u.thread.os_tid;
			th[nth].name = strdup(f.u.thread.name);
			nth++;
			break;
		}
		case KT_FRAME_SUMMARY:
			sum = f.u.summary;
			have_sum = 1;
			break;
		default:
			break;
		}
		if (have_sum) {
			/* Rows point into the reader; print before reading on. */
			break;
		}
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);

	printf("file            %s\n", path);
	printf("format          version %u, schema %016" PRIx64 "\n", h->format_version,
	       h->schema_hash);
	printf("tool            %s\n", h->tool_version);
	printf("workload        %s\n", h->workload);
	printf("host            %s\n", h->host);
	printf("process id      %" PRIu64 "\n", h->process_id);
	if (h->flags & KT_HDR_CAPTURE)
		printf("capture         run %s, epoch %" PRIu64 ", id %s\n", h->run_id, h->epoch,
		       h->capture_id);
	printf("start           wall %" PRIu64 " ns, monotonic %" PRIu64 " ns\n",
	       h->start_wall_ns, h->start_mono_ns);
	printf("clock           %s, %" PRIu64 " Hz, calibrated at %" PRIu64 " ticks = %" PRIu64
	       " ns\n",
	       h->clock.source == KT_CLOCK_TSC ? "tsc" : "monotonic", h->clock.tick_hz,
	       h->clock.ticks, h->clock.mono_ns);
	if (have_sum && sum.clock_ticks1)
		printf("clock at stop   %" PRIu64 " ticks = %" PRIu64 " ns\n", sum.clock_ticks1,
		       sum.clock_ns1);
	printf("options         ring %" PRIu64 " B, overflow %s, codec %s (level %d), io %s,\n"
	       "                flush every %" PRIu64 " ns, fsync every %" PRIu64
	       " ns, max %" PRIu64 " ns / %" PRIu64 " B\n",
	       h->capture.ring_size, h->capture.overflow ? "block" : "drop",
	       codec_name(h->capture.codec), h->capture.codec_level, io_name(h->capture.io, 1),
	       h->capture.flush_period_ns, h->capture.fsync_interval_ns,
	       h->capture.max_duration_ns, h->capture.max_bytes);
	for (uint32_t i = 0; i < h->note_count; i++)
		printf("note            %s\n", h->notes[i]);
	printf("threads         %zu named\n", nth);
	for (size_t i = 0; i < nth; i++) {
		uint64_t w = 0, d = 0;
		if (have_sum)
			for (uint32_t k = 0; k < sum.thread_count; k++)
				if (sum.threads[k].thread_id == th[i].id) {
					w = sum.threads[k].written;
					d = sum.threads[k].dropped;
				}
		printf("  thread %-6u os tid %-8u %-20s", th[i].id, th[i].os_tid,
		       th[i].name && th[i].name[0] ? th[i].name : "(unnamed)");
		if (have_sum)
			printf(" %" PRIu64 " events, %" PRIu64 " dropped", w, d);
		printf("\n");
	}
	printf("names           %" PRIu64 "\n", names);
	printf("chunks          %" PRIu64 " (%" PRIu64 " raw, %" PRIu64 " lz4", st.chunks,
	       raw_chunks, lz4_chunks);
	if (delta_chunks)
		printf(", %" PRIu64 " lz4-delta", delta_chunks);
	printf(")\n");
	printf("events          %" PRIu64 "\n", st.events);
	printf("dropped         %" PRIu64 "\n", st.dropped);
	if (st.events) {
		uint64_t a = kt_ticks_to_ns(&h->clock, have_sum ? &sum : NULL, ts_min);
		uint64_t b = kt_ticks_to_ns(&h->clock, have_sum ? &sum : NULL, ts_max);
		printf("time span       %" PRIu64 " ns .. %" PRIu64 " ns (%.6f s)\n", a, b,
		       (double)(b - a) / 1e9);
	}
	if (have_sum) {
		printf("bytes           %" PRIu64 " raw, %" PRIu64 " stored", sum.bytes_raw,
		       sum.bytes_stored);
		if (sum.bytes_stored)
			printf(" (ratio %.2f)", (double)sum.bytes_raw / (double)sum.bytes_stored);
		printf(", file %" PRIu64 "\n", st.file_size);
		printf("io backend      %s", io_name(sum.io_backend, 0));
		if (sum.io_error)
			printf(", first error %s", kt_strerror(sum.io_error));
		printf("\n");
	}
	int result;
	if (rc < 0) {
		printf("status          corrupt: %s\n", kt_reader_last_error(r)->message);
		result = EXIT_BAD;
	} else if (have_sum) {
		printf("status          complete%s\n",
		       sum.flags & KT_SUMMARY_RECOVERED ? " (recovered)" : "");
		result = EXIT_OK;
		/* Anything after the summary is still corruption. */
		if (kt_reader_next_frame(r, &f) < 0) {
			printf("status          corrupt: %s\n", kt_reader_last_error(r)->message);
			result = EXIT_BAD;
		}
	} else {
		printf("status          truncated at offset %" PRIu64 " (no session summary)\n",
		       st.valid_end);
		result = EXIT_TRUNC;
	}
	for (size_t i = 0; i < nth; i++)
		free(th[i].name);
	free(th);
	kt_reader_close(r);
	return result;
}

/* ---- names, and formatting events for dump, replay and export ---------- */

/*
 * Names and thread names, each escaped for JSON once (through jansson) so
 * that per-event output only copies them.
 */
struct tables {
	char **names;      /* by id: the text form */
	char **names_json; /* by id: a JSON string literal */
	uint32_t nnames;
	struct tthread {
		uint32_t id;
		char *name;
		char *name_json;
	} *threads;
	size_t nthreads;
	kt_file_summary summary;
	int have_summary;
};

static char *json_literal(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return out ? out : strdup("\"\"");
}

static void tables_free(struct tables *t)
{
	for (uint32_t i = 0; i <= t->nnames && t->names; i++) {
		free(t->names[i]);
		free(t->names_json[i]);
	}
	free(t->names);
	free(t->names_json);
	for (size_t i = 0; i < t->nthreads; i++) {
		free(t->threads[i].name);
		free(t->threads[i].name_json);
	}
	free(t->threads);
}

static int read_tables(kt_reader *r, struct tables *t)
{
	kt_trace_frame f;
	int rc;
	memset(t, 0, sizeof(*t));
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind == KT_FRAME_NAME) {
			uint32_t id = f.u.name.id;
			if (id > t->nnames) {
				char **a = realloc(t->names, ((size_t)id + 1) * sizeof(*a));
				char **b = a ? realloc(t->names_json, ((size_t)id + 1) * sizeof(*b)) : NULL;
				if (a)
					t->names = a;
				if (!b)
					return -ENOMEM;
				t->names_json = b;
				for (uint32_t i = t->nnames + (t->nnames ? 1 : 0); i <= id; i++)
					t->names[i] = t->names_json[i] = NULL;
				t->nnames = id;
			}
			if (!t->names[id]) {
				t->names[id] = strdup(f.u.name.str);
				t->names_json[id] = json_literal(f.u.name.str, f.u.name.len);
			}
		} else if (f.kind == KT_FRAME_THREAD) {
			void *p = realloc(t->threads, (t->nthreads + 1) * sizeof(*t->threads));
			if (!p)
				return -ENOMEM;
			t->threads = p;
			struct tthread *th = &t->threads[t->nthreads++];
			th->id = f.u.thread.thread_id;
			th->name = strdup(f.u.thread.name);
			th->name_json = json_literal(f.u.thread.name, f.u.thread.name_len);
		} else if (f.kind == KT_FRAME_SUMMARY) {
			t->summary = f.u.summary;
			t->summary.threads = NULL; /* rows die with the frame */
			t->have_summary = 1;
		}
	}
	return rc;
}

/* One pass for the names, threads and summary; 0 or the reader's error. */
static int load_tables(kt_reader *r, struct tables *t)
{
	/* Only the other frames matter here: the events pass that follows
	 * decodes (and checks) every chunk anyway. */
	kt_reader_skip_events(r, 1);
	int rc = read_tables(r, t);
	kt_reader_skip_events(r, 0);
	return rc;
}

static const char *name_of(const struct tables *t, uint32_t id, int json)
{
	if (id && id <= t->nnames && t->names[id])
		return json ? t->names_json[id] : t->names[id];
	return json ? "null" : "?";
}

static const char *thread_of(const struct tables *t, uint32_t id, int json)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].id == id)
			return json ? t->threads[i].name_json : t->threads[i].name;
	return json ? "null" : "";
}

static const char *const flow_phase[] = { "begin", "step", "end" };

/*
 * Event output goes through buffers with their own integer formatting:
 * printf's format parsing was most of the time of a dump.  A line is
 * written into room reserved once for its fixed-size parts, so the hot path
 * checks the space once per event rather than once per field.
 */
#define OUT_STREAM_CAP (1u << 20) /* a stream's buffer: 1 MiB writes */
#define OUT_SLACK 128             /* numbers, literals and a time, per line */
#define MID_SLOTS 1024

/*
 * The constant middle of an event line, per (thread, name, type, flags,
 * format), in a small direct-mapped cache.  For Chrome JSON it holds the
 * part before the time (head) and the part after it, split at @split.
 */
struct prefix {
	uint32_t tid, name;
	uint8_t type, kind, used, flags;
	size_t len, split;
	char *big; /* a middle too long for s, or NULL */
	char s[128];
};

/* What one formatting thread remembers between events. */
struct fmt_cache {
	uint64_t hi_last; /* put_ns(): the digits above 1e8 printed last */
	size_t hi_n;
	char hi_s[16];
	struct prefix mids[MID_SLOTS];
};

/* An output buffer: a stream's (flushed to @f when full) or, with @f NULL,
 * one that grows in memory (a batch formatted ahead by the merging thread). */
struct out {
	char *buf;
	size_t len, cap;
	FILE *f;
	int err; /* a write or an allocation failed */
	struct fmt_cache *c;
};

static struct fmt_cache *fmt_cache_new(void)
{
	struct fmt_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->hi_last = UINT64_MAX;
	return c;
}

static void fmt_cache_free(struct fmt_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < MID_SLOTS; i++)
		free(c->mids[i].big);
	free(c);
}

static int out_errno; /* the first failed write's errno, for main() to say */

static void o_flush(struct out *o)
{
	if (o->f && o->len && fwrite(o->buf, 1, o->len, o->f) != o->len) {
		o->err = 1;
		if (!out_errno)
			out_errno = errno;
	}
	if (o->f)
		o->len = 0;
}

/* Make room for @n more bytes; NULL when memory ran out. */
static __attribute__((noinline)) char *o_room_slow(struct out *o, size_t n)
{
	o_flush(o);
	if (o->cap - o->len >= n)
		return o->buf + o->len;
	size_t cap = o->cap ? o->cap : OUT_STREAM_CAP;
	while (cap - o->len < n)
		cap *= 2;
	char *p = realloc(o->buf, cap);
	if (!p) {
		o->err = 1;
		return NULL;
	}
	o->buf = p;
	o->cap = cap;
	return p + o->len;
}

static inline char *o_room(struct out *o, size_t n)
{
	if (__builtin_expect(o->cap - o->len >= n, 1))
		return o->buf + o->len;
	return o_room_slow(o, n);
}

static inline void o_commit(struct out *o, char *end)
{
	o->len = (size_t)(end - o->buf);
}

static void o_mem(struct out *o, const void *p, size_t n)
{
	if (o->f && n > OUT_STREAM_CAP) {
		/* Larger than the buffer: written as it is, in order. */
		o_flush(o);
		if (fwrite(p, 1, n, o->f) != n)
			o->err = 1;
		return;
	}
	char *d = o_room(o, n);
	if (d) {
		memcpy(d, p, n);
		o_commit(o, d + n);
	}
}

static void o_str(struct out *o, const char *s)
{
	o_mem(o, s, strlen(s));
}

/* Two digits per division: nanosecond stamps have a dozen or more. */
static const char pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes at most 20 bytes. */
static inline char *put_u64(char *d, uint64_t v)
{
	char b[20];
	char *e = b + sizeof(b), *p = e;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	memcpy(d, p, (size_t)(e - p));
	return d + (e - p);
}

static inline char *put_i64(char *d, int64_t v)
{
	if (v < 0) {
		*d++ = '-';
		return put_u64(d, -(uint64_t)v);
	}
	return put_u64(d, (uint64_t)v);
}

/* Exactly eight digits, zero-padded: @v < 1e8. */
static inline char *put_8digits(char *d, uint32_t v)
{
	uint32_t a = v / 10000, b = v % 10000;
	memcpy(d, pairs + 2 * (a / 100), 2);
	memcpy(d + 2, pairs + 2 * (a % 100), 2);
	memcpy(d + 4, pairs + 2 * (b / 100), 2);
	memcpy(d + 6, pairs + 2 * (b % 100), 2);
	return d + 8;
}

/* The digits of @ns above 1e8.  Consecutive event times share them, so
 * they are formatted only when they change.  Writes up to 16 bytes. */
static inline char *put_hi(struct fmt_cache *c, char *d, uint64_t hi)
{
	if (__builtin_expect(hi != c->hi_last, 0)) {
		char b[16];
		c->hi_n = (size_t)(put_u64(b, hi) - b);
		memcpy(c->hi_s, b, c->hi_n);
		c->hi_last = hi;
	}
	memcpy(d, c->hi_s, sizeof(c->hi_s));
	return d + c->hi_n;
}

/* A time in ns, as put_u64() would write it; at most 24 bytes. */
static inline char *put_ns(struct fmt_cache *c, char *d, uint64_t ns)
{
	if (ns < 100000000u)
		return put_u64(d, ns);
	uint64_t hi = ns / 100000000u;
	d = put_hi(c, d, hi);
	return put_8digits(d, (uint32_t)(ns - hi * 100000000u));
}

/* A time in microseconds with three decimals (Chrome's unit), then a
 * comma: the digits of ns with a point before the last three. */
static inline char *put_us_comma(struct fmt_cache *c, char *d, uint64_t ns)
{
	if (ns < 100000000u) {
		d = put_u64(d, ns / 1000);
		uint32_t f = (uint32_t)(ns % 1000);
		d[0] = '.';
		d[1] = (char)('0' + f / 100);
		d[2] = pairs[2 * (f % 100)];
		d[3] = pairs[2 * (f % 100) + 1];
		d[4] = ',';
		return d + 5;
	}
	uint64_t hi = ns / 100000000u;
	d = put_hi(c, d, hi);
	put_8digits(d, (uint32_t)(ns - hi * 100000000u));
	d[8] = d[7];
	d[7] = d[6];
	d[6] = d[5];
	d[5] = '.';
	d[9] = ',';
	return d + 10;
}

static void o_hex(struct out *o, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *d = o_room(o, 2 * n);
	if (!d)
		return;
	for (size_t k = 0; k < n; k++) {
		*d++ = digits[p[k] >> 4];
		*d++ = digits[p[k] & 15];
	}
	o_commit(o, d);
}

/* What a formatting pass prints; read by both threads, written by none. */
enum { MID_TEXT, MID_JSONL, MID_CHROME };

struct fmt_job {
	const struct tables *t;
	int kind;                /* MID_* */
	uint64_t pid;            /* chrome: every object's pid */
	uint64_t from, to;       /* dump: the time window */
	const uint32_t *threads; /* dump: keep only these, when nthreads */
	int nthreads;
	uint64_t printed;        /* chrome: objects written before the events */
};

/* Build the cached middle of @ev for @j->kind; returns asprintf's result
 * and, for Chrome, where the head ends. */
static int build_mid(char **buf, size_t *split, const struct fmt_job *j, const kt_event *ev)
{
	const struct tables *t = j->t;
	const char *type = kt_event_type_name(ev->type);
	*split = 0;
	switch (j->kind) {
	case MID_JSONL:
		return asprintf(buf, ",\"tid\":%u,\"thread\":%s,\"type\":\"%s\",\"name\":%s",
				ev->thread_id, thread_of(t, ev->thread_id, 1), type,
				name_of(t, ev->name_id, 1));
	case MID_CHROME: {
		char head[64];
		int h = snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":",
				 j->pid, ev->thread_id);
		*split = (size_t)h;
		const char *nm = name_of(t, ev->name_id, 1);
		switch (ev->type) {
		case KT_EV_ZONE_BEGIN:
			return asprintf(buf, "%s\"ph\":\"B\",\"name\":%s}", head, nm);
		case KT_EV_ZONE_END:
			return asprintf(buf, "%s\"ph\":\"E\",\"name\":%s}", head, nm);
		case KT_EV_INSTANT:
			return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"name\":%s}", head, nm);
		case KT_EV_COUNTER_I64:
		case KT_EV_COUNTER_F64:
			return asprintf(buf, "%s\"ph\":\"C\",\"name\":%s,\"args\":{\"value\":", head, nm);
		case KT_EV_FRAME:
			return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"p\",\"name\":%s,\"cat\":\"frame\","
					     "\"args\":{\"frame\":", head, nm);
		case KT_EV_FLOW: {
			static const char *const ph[3] = { "\"ph\":\"s\",", "\"ph\":\"t\",",
							   "\"ph\":\"f\",\"bp\":\"e\"," };
			return asprintf(buf, "%s%s\"name\":%s,\"cat\":\"flow\",\"id\":", head,
					ph[ev->flags < 3 ? ev->flags : 0], nm);
		}
		default:
			return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"name\":%s,\"args\":{", head, nm);
		}
	}
	default:
		return asprintf(buf, " %u %s %s %s", ev->thread_id, thread_of(t, ev->thread_id, 0), type,
				name_of(t, ev->name_id, 0));
	}
}

/* A miss in the middle cache: build the entry at @p. */
static __attribute__((noinline)) const struct prefix *
mid_fill(struct prefix *p, const struct fmt_job *j, const kt_event *ev, uint8_t flags)
{
	char *buf = NULL;
	size_t split;
	int n = build_mid(&buf, &split, j, ev);
	free(p->big);
	p->big = NULL;
	p->len = p->split = 0;
	if (n > 0 && (size_t)n < sizeof(p->s)) {
		memcpy(p->s, buf, (size_t)n);
		p->len = (size_t)n;
		p->split = split;
		free(buf);
	} else if (n > 0) {
		p->big = buf;
		p->len = (size_t)n;
		p->split = split;
	}
	p->tid = ev->thread_id;
	p->name = ev->name_id;
	p->type = ev->type;
	p->flags = flags;
	p->kind = (uint8_t)j->kind;
	p->used = 1;
	return p;
}

static inline const struct prefix *mid_of(struct fmt_cache *c, const struct fmt_job *j,
					  const kt_event *ev)
{
	uint8_t flags = j->kind == MID_CHROME && ev->type == KT_EV_FLOW ? ev->flags : 0;
	unsigned h = (ev->thread_id * 2654435761u ^ ev->name_id * 40503u ^ ev->type * 97u ^
		      flags * 31u) & (MID_SLOTS - 1);
	struct prefix *p = &c->mids[h];
	if (__builtin_expect(p->used && p->tid == ev->thread_id && p->name == ev->name_id &&
			     p->type == ev->type && p->kind == j->kind && p->flags == flags, 1))
		return p;
	return mid_fill(p, j, ev, flags);
}

/* Copy @len bytes of @m's text from @off.  Short pieces are copied as a
 * fixed 64 bytes, which compiles to a few moves instead of a call: the
 * line's room (OUT_SLACK past the middle) covers the excess, and the
 * bytes past the piece are overwritten by what follows. */
static inline char *put_mid(char *d, const struct prefix *m, size_t off, size_t len)
{
	if (!m->big && len <= 64 && off + 64 <= sizeof(m->s))
		memcpy(d, m->s + off, 64);
	else
		memcpy(d, (m->big ? m->big : m->s) + off, len);
	return d + len;
}

/* %.17g, or null where JSON has no such number (NaN, infinities). */
static inline char *put_f64(char *d, double v, int json)
{
	if (json && (v != v || v - v != 0)) {
		memcpy(d, "null", 4);
		return d + 4;
	}
	int n = snprintf(d, 32, "%.17g", v);
	return d + (n > 0 && n < 32 ? n : 0);
}

static void o_message(struct out *o, const kt_event *ev)
{
	char *lit = json_literal((const char *)ev->payload, ev->payload_len);
	o_str(o, lit);
	free(lit);
}

/* Start a line: its cached middle @m and room for the line's fixed-size
 * parts; NULL when the buffer could not grow. */
static inline char *line_begin(struct out *o, const struct fmt_job *j, const kt_event *ev,
			       const struct prefix **m)
{
	*m = mid_of(o->c, j, ev);
	return o_room(o, (*m)->len + OUT_SLACK);
}

/* A line that could not be finished: an in-memory buffer drops what it
 * holds of it, so that the writer formats the event again. */
static int line_fail(struct out *o, size_t start)
{
	if (!o->f)
		o->len = start;
	return -1;
}

/* One event as a text line or a JSON object line; 0, or -1 when the
 * buffer could not grow (nothing of the line is kept). */
static inline int fmt_line(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns)
{
	int jsonl = j->kind == MID_JSONL;
	const struct prefix *m;
	size_t start = o->len;
	char *d = line_begin(o, j, ev, &m);
	if (!d)
		return -1;
	if (jsonl) {
		memcpy(d, "{\"ns\":", 6);
		d += 6;
	}
	d = put_ns(o->c, d, ns);
	/* Everything between the time and the value depends only on the
	 * thread, the name and the type: built once, then copied. */
	d = put_mid(d, m, 0, m->len);
	int64_t i64;
	double f64;
	uint64_t u64;
	switch (ev->type) {
	case KT_EV_ZONE_BEGIN:
	case KT_EV_ZONE_END:
	case KT_EV_INSTANT:
		break;
	case KT_EV_COUNTER_I64:
		memcpy(&i64, ev->payload, 8);
		if (jsonl) {
			memcpy(d, ",\"value\":", 9);
			d += 9;
		} else {
			*d++ = ' ';
		}
		d = put_i64(d, i64);
		break;
	case KT_EV_COUNTER_F64:
		memcpy(&f64, ev->payload, 8);
		if (jsonl) {
			memcpy(d, ",\"value\":", 9);
			d += 9;
		} else {
			*d++ = ' ';
		}
		d = put_f64(d, f64, jsonl);
		break;
	case KT_EV_FRAME:
		memcpy(&u64, ev->payload, 8);
		if (jsonl) {
			memcpy(d, ",\"frame\":", 9);
			d += 9;
		} else {
			*d++ = ' ';
		}
		d = put_u64(d, u64);
		break;
	case KT_EV_FLOW: {
		const char *ph = flow_phase[ev->flags < 3 ? ev->flags : 0];
		memcpy(&u64, ev->payload, 8);
		if (jsonl) {
			memcpy(d, ",\"flow\":", 8);
			d = put_u64(d + 8, u64);
			memcpy(d, ",\"phase\":\"", 10);
			d += 10;
		} else {
			*d++ = ' ';
			d = put_u64(d, u64);
			*d++ = ' ';
		}
		memcpy(d, ph, strlen(ph));
		d += strlen(ph);
		if (jsonl)
			*d++ = '"';
		break;
	}
	case KT_EV_MESSAGE:
		if (jsonl) {
			memcpy(d, ",\"text\":", 8);
			d += 8;
		} else {
			*d++ = ' ';
		}
		o_commit(o, d);
		o_message(o, ev);
		if (!(d = o_room(o, 2)))
			goto fail;
		break;
	case KT_EV_USER:
		if (jsonl) {
			memcpy(d, ",\"flags\":", 9);
			d += 9;
		} else {
			*d++ = ' ';
		}
		d = put_u64(d, ev->flags);
		if (jsonl) {
			memcpy(d, ",\"bytes\":\"", 10);
			d += 10;
		} else {
			*d++ = ' ';
		}
		o_commit(o, d);
		o_hex(o, ev->payload, ev->payload_len);
		if (!(d = o_room(o, 3)))
			goto fail;
		if (jsonl)
			*d++ = '"';
		break;
	default:
		break;
	}
	if (jsonl)
		*d++ = '}';
	*d++ = '\n';
	o_commit(o, d);
	return 0;
fail:
	return line_fail(o, start);
}

/* One event as a Chrome JSON object, after a comma unless it is the first
 * object of the array.  Returns as fmt_line(). */
static inline int fmt_chrome(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns,
			     uint64_t index)
{
	const struct prefix *m;
	size_t start = o->len;
	char *d = line_begin(o, j, ev, &m);
	if (!d)
		return -1;
	/* Microseconds with nanosecond digits: the format's unit is us.  The
	 * head (thread) and the tail (name, type) come from the middle cache. */
	size_t skip = index ? 0 : 1;
	d = put_mid(d, m, skip, m->split - skip);
	d = put_us_comma(o->c, d, ns);
	d = put_mid(d, m, m->split, m->len - m->split);
	int64_t i64;
	double f64;
	uint64_t u64;
	switch (ev->type) {
	case KT_EV_ZONE_BEGIN:
	case KT_EV_ZONE_END:
	case KT_EV_INSTANT:
		break;
	case KT_EV_COUNTER_I64:
		memcpy(&i64, ev->payload, 8);
		d = put_i64(d, i64);
		memcpy(d, "}}", 2);
		d += 2;
		break;
	case KT_EV_COUNTER_F64:
		memcpy(&f64, ev->payload, 8);
		d = put_f64(d, f64, 1);
		memcpy(d, "}}", 2);
		d += 2;
		break;
	case KT_EV_FRAME:
		memcpy(&u64, ev->payload, 8);
		d = put_u64(d, u64);
		memcpy(d, "}}", 2);
		d += 2;
		break;
	case KT_EV_FLOW:
		memcpy(&u64, ev->payload, 8);
		d = put_u64(d, u64);
		*d++ = '}';
		break;
	case KT_EV_MESSAGE:
		memcpy(d, "\"text\":", 7);
		o_commit(o, d + 7);
		o_message(o, ev);
		if (!(d = o_room(o, 2)))
			goto fail;
		memcpy(d, "}}", 2);
		d += 2;
		break;
	default:
		memcpy(d, "\"type\":", 7);
		d = put_u64(d + 7, ev->type);
		memcpy(d, ",\"flags\":", 9);
		d = put_u64(d + 9, ev->flags);
		memcpy(d, ",\"bytes\":\"", 10);
		o_commit(o, d + 10);
		o_hex(o, ev->payload, ev->payload_len);
		if (!(d = o_room(o, 3)))
			goto fail;
		memcpy(d, "\"}}", 3);
		d += 3;
		break;
	}
	o_commit(o, d);
	return 0;
fail:
	return line_fail(o, start);
}

/* The events of a pass numbered @index on: dump's filter, then a line. */
static inline int fmt_event(struct out *o, const struct fmt_job *j, const kt_event *ev, uint64_t ns,
			    uint64_t index)
{
	if (j->kind == MID_CHROME)
		return fmt_chrome(o, j, ev, ns, j->printed + index);
	if (ns < j->from || ns > j->to)
		return 0;
	if (j->nthreads) {
		int keep = 0;
		for (int i = 0; i < j->nthreads; i++)
			keep |= j->threads[i] == ev->thread_id;
		if (!keep)
			return 0;
	}
	return fmt_line(o, j, ev, ns);
}

/* ---- a two-thread pipeline for unpaced passes ------------------------- */

/*
 * Unpaced passes (dump, replay --max, export, stats) split the work over
 * two threads: one merges and decodes events into batches, the caller's
 * thread formats them and writes them out in order.  Each batch holds
 * copies of the events and their payloads, so the reader's buffers may move
 * on while a batch is printed.  When every slot is full (the writing thread
 * is behind), the merging thread, rather than wait, formats the newest
 * batch the writer has not reached into that batch's own buffer; the writer
 * then writes that text out instead of formatting it.  So both cores format
 * when formatting is the slower half, and only the merging thread's own
 * work when it is not.  The order, and so the output, is exactly
 * kt_replay()'s.
 */
#define PIPE_EVENTS 8192
#define PIPE_SLOTS 4
#define PIPE_AHEAD_BUDGET (1u << 20) /* text formatted ahead, per batch */

struct pipe_ev {
	kt_event ev;          /* payload fixed up on use: */
	union {
		size_t off;   /* where in the arena, or */
		uint8_t in[8]; /* the payload itself, up to 8 bytes (most are) */
	} payload;
};

struct pipe_batch {
	struct pipe_ev ev[PIPE_EVENTS];
	size_t n;
	uint64_t first;       /* the pass's index of ev[0] */
	uint8_t *arena;
	size_t arena_len, arena_cap;
	char *text;           /* ev[0, ahead) formatted by the merging thread */
	size_t text_len, text_cap, ahead;
	int claimed;          /* the merging thread is formatting it */
};

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pipe_batch slots[PIPE_SLOTS];
	size_t head, tail;    /* filled batches are [tail, head) */
	int done, rc, cancel;
	kt_reader *r;
	struct pipe_batch *fill;
	uint64_t count;       /* events collected */
	const struct fmt_job *job;  /* NULL: a callback per event, no formatting ahead */
	struct fmt_cache *ahead;    /* the merging thread's caches */
};

static inline kt_event batch_event(const struct pipe_batch *b, size_t i)
{
	kt_event ev = b->ev[i].ev;
	ev.payload = ev.payload_len <= 8 ? b->ev[i].payload.in : b->arena + b->ev[i].payload.off;
	return ev;
}

/* On the merging thread, lock not held: text for @b, up to the budget. */
static void pipe_format_ahead(struct pipe *p, struct pipe_batch *b)
{
	struct out o = { b->text, b->text_len, b->text_cap, NULL, 0, p->ahead };
	size_t i;
	for (i = 0; i < b->n && o.len < PIPE_AHEAD_BUDGET; i++) {
		kt_event ev = batch_event(b, i);
		if (fmt_event(&o, p->job, &ev, kt_reader_ticks_to_ns(p->r, ev.ts), b->first + i))
			break;
	}
	b->text = o.buf;
	b->text_len = o.len;
	b->text_cap = o.cap;
	b->ahead = i;
}

/* With the lock held: the newest filled batch not formatted yet, past the
 * one the writing thread is on (the oldest, at tail). */
static struct pipe_batch *pipe_unclaimed(struct pipe *p)
{
	for (size_t k = p->head; k-- > p->tail + 1;) {
		struct pipe_batch *b = &p->slots[k % PIPE_SLOTS];
		if (!b->claimed && !b->ahead)
			return b;
	}
	return NULL;
}

static int pipe_collect(struct pipe *p, const kt_event *ev)
{
	struct pipe_batch *b = p->fill;
	struct pipe_ev *e = &b->ev[b->n];
	/* The time is converted by whichever thread formats the event: the
	 * merging thread has the longer share of the work. */
	e->ev = *ev;
	if (ev->payload_len == 8) {
		memcpy(e->payload.in, ev->payload, 8); /* a constant size: no call */
	} else if (ev->payload_len < 8) {
		memcpy(e->payload.in, ev->payload, ev->payload_len);
	} else {
		if (b->arena_len + ev->payload_len > b->arena_cap) {
			size_t n = b->arena_cap ? b->arena_cap * 2 : 1 << 16;
			while (n < b->arena_len + ev->payload_len)
				n *= 2;
			void *q = realloc(b->arena, n);
			if (!q)
				return -ENOMEM;
			b->arena = q;
			b->arena_cap = n;
		}
		e->payload.off = b->arena_len;
		memcpy(b->arena + b->arena_len, ev->payload, ev->payload_len);
		b->arena_len += ev->payload_len;
	}
	if (++b->n < PIPE_EVENTS)
		return 0;
	/* Hand the batch over; while no slot is empty, format ahead. */
	pthread_mutex_lock(&p->lock);
	p->head++;
	p->count += b->n;
	pthread_cond_broadcast(&p->cond);
	while (p->head - p->tail == PIPE_SLOTS && !p->cancel) {
		struct pipe_batch *a = p->job ? pipe_unclaimed(p) : NULL;
		if (!a) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		a->claimed = 1;
		pthread_mutex_unlock(&p->lock);
		pipe_format_ahead(p, a);
		pthread_mutex_lock(&p->lock);
		a->claimed = 0;
		pthread_cond_broadcast(&p->cond);
	}
	int cancel = p->cancel;
	p->fill = &p->slots[p->head % PIPE_SLOTS];
	p->fill->first = p->count;
	pthread_mutex_unlock(&p->lock);
	p->fill->n = 0;
	p->fill->arena_len = 0;
	return cancel ? 1 : 0;
}

/* The merging side: events in kt_reader_next() order, with their times. */
static void *pipe_producer(void *arg)
{
	struct pipe *p = arg;
	kt_event ev;
	int rc;
	while ((rc = kt_reader_next(p->r, &ev)) > 0)
		if ((rc = pipe_collect(p, &ev)) != 0)
			break;
	pthread_mutex_lock(&p->lock);
	if (p->fill->n)
		p->head++; /* the last, partly filled batch */
	p->rc = rc;
	p->done = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* On the writing thread: the batch's text formatted ahead, then the rest. */
static int pipe_write(struct pipe *p, struct pipe_batch *b, struct out *o)
{
	if (b->text_len) {
		o_flush(o);
		if (fwrite(b->text, 1, b->text_len, o->f) != b->text_len)
			o->err = 1;
	}
	for (size_t i = b->ahead; i < b->n; i++) {
		kt_event ev = batch_event(b, i);
		if (fmt_event(o, p->job, &ev, kt_reader_ticks_to_ns(p->r, ev.ts), b->first + i))
			return -ENOMEM;
	}
	return p->job->kind == MID_CHROME && o->err ? -EIO : 0;
}

/* As replay_pipelined(), on this thread alone: when no thread can start. */
static int replay_here(kt_reader *r, kt_replay_fn fn, void *ctx, const struct fmt_job *job,
		       struct out *o)
{
	kt_event ev;
	uint64_t i = 0;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		uint64_t ns = kt_reader_ticks_to_ns(r, ev.ts);
		if (!job)
			rc = fn(ctx, &ev, ns);
		else if (fmt_event(o, job, &ev, ns, i))
			rc = -ENOMEM;
		else if (job->kind == MID_CHROME && o->err)
			rc = -EIO;
		else
			rc = 0;
		if (rc)
			return rc;
		progress_events(++i);
	}
	return rc;
}

/*
 * As kt_replay(r, fn, ctx, {.max = 1}), on two threads: @fn is called for
 * each event, or, with @job, the events are formatted into @o.
 */
static int replay_pipelined(kt_reader *r, kt_replay_fn fn, void *ctx, const struct fmt_job *job,
			    struct out *o)
{
	struct pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->r = r;
	p->fill = &p->slots[0];
	p->job = job;
	if (job && !(p->ahead = fmt_cache_new()))
		p->job = NULL; /* no memory to format ahead: the writer does it all */
	pthread_t th;
	int rc = 0;
	if (pthread_create(&th, NULL, pipe_producer, p)) {
		fmt_cache_free(p->ahead);
		free(p);
		return replay_here(r, fn, ctx, job, o);
	}
	/* The merge state (and with it the calibration) must exist before
	 * both threads touch the reader: the producer creates it on its
	 * first kt_reader_next(), and the consumer reads it only after a
	 * batch has been handed over under the lock. */
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->tail == p->head && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->tail == p->head) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		struct pipe_batch *b = &p->slots[p->tail % PIPE_SLOTS];
		while (b->claimed)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		if (job) {
			rc = pipe_write(p, b, o);
		} else {
			for (size_t i = 0; i < b->n && !rc; i++) {
				kt_event ev = batch_event(b, i);
				rc = fn(ctx, &ev, kt_reader_ticks_to_ns(r, ev.ts));
			}
		}
		progress_events(b->first + b->n);
		pthread_mutex_lock(&p->lock);
		b->ahead = 0;
		b->text_len = 0;
		p->tail++;
		if (rc)
			p->cancel = 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (rc)
			break;
	}
	pthread_join(th, NULL);
	if (!rc)
		rc = p->rc < 0 ? p->rc : 0;
	for (int i = 0; i < PIPE_SLOTS; i++) {
		free(p->slots[i].arena);
		free(p->slots[i].text);
	}
	fmt_cache_free(p->ahead);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
	return rc;
}

/* ---- dump and replay --------------------------------------------------- */

/* The paced replay's callback: one event formatted into the stream. */
struct dump_ctx {
	struct fmt_job job;
	uint32_t threads[64];
	struct out *o;
	uint64_t n;
};

static int dump_one(void *arg, const kt_event *ev, uint64_t ns)
{
	struct dump_ctx *d = arg;
	if (fmt_event(d->o, &d->job, ev, ns, d->n++))
		return -ENOMEM;
	progress_events(d->n);
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* dump and replay share their options and their output. */
static int cmd_events(int argc, char **argv, int replay)
{
	const char *path = NULL, *cmd = replay ? "replay" : "dump";
	struct dump_ctx d = { .job = { .to = UINT64_MAX } };
	kt_replay_options ro = { .speed = 1.0, .max = !replay };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			if (replay)
				printf("usage: katra replay FILE [--speed X | --max] [--format text|jsonl]\n"
				       "Prints every event in global timestamp order (ties: thread id,\n"
				       "then order within the thread), paced to the original timing\n"
				       "scaled by X (default 1), or as fast as possible with --max.\n");
			else
				printf("usage: katra dump FILE [--format text|jsonl] [--thread T ...]\n"
				       "                  [--from NS] [--to NS]\n"
				       "Prints the events of all threads merged in timestamp order.\n"
				       "Text lines: ns tid thread type name [value...].  NS are\n"
				       "CLOCK_MONOTONIC nanoseconds as `katra info` shows them.\n");
			return EXIT_OK;
		} else if (!strcmp(a, "--format") && more) {
			a = argv[++i];
			if (!strcmp(a, "jsonl"))
				d.job.kind = MID_JSONL;
			else if (strcmp(a, "text"))
				return usage_error("%s: --format wants text or jsonl, not '%s'", cmd, a);
		} else if (!replay && !strcmp(a, "--thread") && more) {
			uint64_t v;
			if (parse_u64(argv[++i], &v) || v == 0 || v > UINT32_MAX || d.job.nthreads == 64)
				return usage_error("%s: --thread wants a thread id, not '%s'", cmd, argv[i]);
			d.threads[d.job.nthreads++] = (uint32_t)v;
		} else if (!replay && (!strcmp(a, "--from") || !strcmp(a, "--to")) && more) {
			uint64_t v;
			if (parse_u64(argv[++i], &v))
				return usage_error("%s: %s wants nanoseconds, not '%s'", cmd, a, argv[i]);
			*(a[2] == 'f' ? &d.job.from : &d.job.to) = v;
		} else if (replay && !strcmp(a, "--speed") && more) {
			char *end;
			ro.speed = strtod(argv[++i], &end);
			if (*end || !(ro.speed > 0))
				return usage_error("%s: --speed wants a positive number, not '%s'", cmd,
						   argv[i]);
		} else if (replay && !strcmp(a, "--max")) {
			ro.max = 1;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("%s: unknown option or missing value '%s'", cmd, a);
		} else if (path) {
			return usage_error("%s: more than one file ('%s')", cmd, a);
		} else {
			path = a;
		}
	}
	if (!path)
		return usage_error("%s: missing FILE", cmd);
	kt_reader *r = open_or_say(path);
	if (!r)
		return EXIT_BAD;
	struct tables t;
	int rc = load_tables(r, &t);
	kt_reader_rewind(r);
	d.job.t = &t;
	d.job.threads = d.threads;
	/* The events before a corruption are still printed; then the error. */
	struct out o = { .f = stdout, .c = fmt_cache_new() };
	d.o = &o;
	progress_init(1);
	progress_reader = r;
	int rrc = !o.c ? -ENOMEM
		: ro.max ? replay_pipelined(r, NULL, NULL, &d.job, &o)
			 : kt_replay(r, dump_one, &d, &ro);
	o_flush(&o);
	free(o.buf);
	fmt_cache_free(o.c);
	if (fflush(stdout) && !out_errno)
		out_errno = errno;
	progress_end();
	int result = EXIT_OK;
	if (rrc < 0 || rc < 0) {
		fprintf(stderr, "%s: %s: corrupt: %s\n", prog, path, kt_reader_last_error(r)->message);
		result = EXIT_BAD;
	} else if (!t.have_summary) {
		kt_reader_status st;
		kt_reader_get_status(r, &st);
		fprintf(stderr, "%s: %s: truncated at offset %" PRIu64 "; printed the events before it\n",
			prog, path, st.valid_end);
		result = EXIT_TRUNC;
	}
	tables_free(&t);
	kt_reader_close(r);
	return result;
}

/* ---- export --chrome ----------------------------------------------------- */

static int cmd_export(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	int chrome = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: katra export --chrome IN OUT.json\n"
			       "Writes the Chrome Trace Event Format (Perfetto UI, speedscope,\n"
			       "chrome://tracing): zones as B/E, instants, counters as C, flows as\n"
			       "s/t/f, frame marks as process-scoped instants, thread names as\n"
			       "metadata.  Streams: memory does not grow with the trace.\n"
			       "OUT.json is written whole or not at all (a temporary file, renamed).\n");
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--chrome")) {
			chrome = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage_error("export: unknown option '%s'", argv[i]);
		} else if (!in) {
			in = argv[i];
		} else if (!out) {
			out = argv[i];
		} else {
			return usage_error("export: unexpected argument '%s'", argv[i]);
		}
	}
	if (!chrome)
		return usage_error("export: say which format: --chrome");
	if (!in || !out)
		return usage_error("export: needs IN and OUT");
	kt_reader *r = open_or_say(in);
	if (!r)
		return EXIT_BAD;
	struct tables t;
	int rc = load_tables(r, &t);
	if (rc < 0) {
		fprintf(stderr, "%s: %s: corrupt: %s\n", prog, in, kt_reader_last_error(r)->message);
		tables_free(&t);
		kt_reader_close(r);
		return EXIT_BAD;
	}
	kt_reader_rewind(r);
	/* Write beside the destination and rename, so OUT is never partial;
	 * but a device or a pipe (/dev/null, /dev/stdout) is written as is. */
	char *tmp = NULL;
	struct stat sb;
	int direct = stat(out, &sb) == 0 && !S_ISREG(sb.st_mode);
	if (direct ? !(tmp = strdup(out)) : asprintf(&tmp, "%s.tmp-%ld", out, (long)getpid()) < 0) {
		tables_free(&t);
		kt_reader_close(r);
		return EXIT_BAD;
	}
	FILE *o = fopen(tmp, "w");
	if (!o) {
		fprintf(stderr, "%s: %s: %s\n", prog, out, strerror(errno));
		free(tmp);
		tables_free(&t);
		kt_reader_close(r);
		return EXIT_BAD;
	}
	static char fbuf[1 << 20];
	setvbuf(o, fbuf, _IOFBF, sizeof(fbuf));
	uint64_t pid = kt_reader_header(r)->process_id;
	fprintf(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	struct fmt_job job = { .t = &t, .kind = MID_CHROME, .pid = pid };
	for (size_t i = 0; i < t.nthreads; i++) {
		fprintf(o, "%s\n{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,\"name\":\"thread_name\","
			   "\"args\":{\"name\":%s}}", job.printed ? "," : "", pid, t.threads[i].id,
			t.threads[i].name_json);
		job.printed++;
	}
	struct out ob = { .f = o, .c = fmt_cache_new() };
	progress_init(0);
	progress_reader = r;
	rc = ob.c ? replay_pipelined(r, NULL, NULL, &job, &ob) : -ENOMEM;
	o_flush(&ob);
	free(ob.buf);
	fmt_cache_free(ob.c);
	progress_end();
	fprintf(o, "\n]}\n");
	int werr = ob.err || fflush(o) || ferror(o);
	werr |= fclose(o) != 0;
	int result = EXIT_OK;
	if (rc < 0 && rc != -EIO) {
		fprintf(stderr, "%s: %s: corrupt: %s\n", prog, in, kt_reader_last_error(r)->message);
		result = EXIT_BAD;
	} else if (werr || rc == -EIO) {
		fprintf(stderr, "%s: %s: write failed: %s\n", prog, out, strerror(errno ? errno : EIO));
		result = EXIT_BAD;
	} else if (!direct && rename(tmp, out) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, out, strerror(errno));
		result = EXIT_BAD;
	}
	if (result != EXIT_OK && !direct)
		unlink(tmp);
	else if (!t.have_summary)
		fprintf(stderr, "%s: %s: truncated: exported the events before the cut\n", prog, in);
	free(tmp);
	tables_free(&t);
	kt_reader_close(r);
	return result == EXIT_OK && !t.have_summary ? EXIT_TRUNC : result;
}

/* ---- decompress, compress and slice ----------------------------------- */

struct slice_filter {
	int active;
	uint64_t from, to;     /* ns, inclusive */
	uint32_t threads[64];
	int nthreads;
};

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	progress(done, total);
}

/*
 * Copy IN to OUT through kt__rewrite(): chunks re-encoded with @codec (-1:
 * keep each chunk's), events outside @flt dropped, names, threads and drops
 * carried over, the summary recomputed.  OUT is written beside its final
 * name and renamed, so it is never left partial.
 */
static int rewrite(const char *cmd, const char *in, const char *out, int codec,
		   const struct slice_filter *flt)
{
	/* OUT is replaced by a rename; never rename over a device or a pipe. */
	struct stat sb;
	if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		fprintf(stderr, "%s: %s: not a regular file; %s writes a trace file\n", prog, out, cmd);
		return EXIT_BAD;
	}
	kt_reader *r = open_or_say(in);
	if (!r)
		return EXIT_BAD;
	kt_reader_close(r);
	int in_fd = open(in, O_RDONLY | O_CLOEXEC);
	if (in_fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, in, strerror(errno));
		return EXIT_BAD;
	}
	char *tmp = NULL;
	int out_fd = -1, result = EXIT_BAD;
	if (asprintf(&tmp, "%s.tmp-%ld", out, (long)getpid()) < 0) {
		tmp = NULL;
		goto done;
	}
	out_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, out, strerror(errno));
		goto done;
	}
	kt__rewrite_opts o = {
		.in_fds = &in_fd, .n_in = 1, .out_fd = out_fd, .codec = codec,
		.filter = flt->active, .from_ns = flt->from, .to_ns = flt->to,
		.threads = flt->threads, .nthreads = (size_t)flt->nthreads,
		.progress = progress_cb,
	};
	kt__rewrite_result res;
	progress_init(0);
	int rc = kt__rewrite(&o, &res);
	progress_end();
	if (rc < 0 && res.in_index >= 0) {
		fprintf(stderr, "%s: %s: corrupt: %s\n", prog, in, res.in_err.message);
		goto done;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, out, kt_strerror(rc));
		goto done;
	}
	if (close(out_fd) < 0 || rename(tmp, out) < 0) {
		out_fd = -1;
		fprintf(stderr, "%s: %s: %s\n", prog, out, strerror(errno));
		goto done;
	}
	out_fd = -1;
	if (res.have_summary) {
		result = EXIT_OK;
	} else {
		/* A cut input gives a cut output: the same valid prefix. */
		fprintf(stderr, "%s: %s: truncated: %s holds the frames before the cut\n", prog, in, out);
		result = EXIT_TRUNC;
	}
done:
	if (out_fd >= 0)
		close(out_fd);
	if (result == EXIT_BAD && tmp)
		unlink(tmp);
	free(tmp);
	close(in_fd);
	return result;
}

static int cmd_recode(int argc, char **argv, int codec)
{
	const char *cmd = codec ? "compress" : "decompress", *in = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: katra %s IN OUT%s\n"
			       "Rewrites every chunk %s; everything else is carried over and the\n"
			       "summary recomputed.  The result verifies and dumps identically.\n",
			       cmd, codec ? " [--codec lz4-delta|lz4]" : "",
			       codec ? "LZ4-compressed (lz4-delta, the default: timestamps as\n"
				       "differences first, about 2.5x smaller than lz4, plain LZ4)"
				     : "raw");
			return EXIT_OK;
		} else if (codec && !strcmp(argv[i], "--codec") && i + 1 < argc) {
			const char *c = argv[++i];
			if (!strcmp(c, "lz4"))
				codec = KT_CODEC_LZ4;
			else if (!strcmp(c, "lz4-delta"))
				codec = KT_CODEC_LZ4_DELTA;
			else
				return usage_error("compress: --codec wants lz4-delta or lz4, not '%s'", c);
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage_error("%s: unknown option '%s'", cmd, argv[i]);
		} else if (!in) {
			in = argv[i];
		} else if (!out) {
			out = argv[i];
		} else {
			return usage_error("%s: unexpected argument '%s'", cmd, argv[i]);
		}
	}
	if (!in || !out)
		return usage_error("%s: needs IN and OUT", cmd);
	struct slice_filter none = { 0 };
	return rewrite(cmd, in, out, codec, &none);
}

static int cmd_slice(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	struct slice_filter flt = { .active = 1, .to = UINT64_MAX };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: katra slice IN OUT [--from NS] [--to NS] [--thread T ...]\n"
			       "Writes a smaller valid trace: the events in [NS, NS] of the chosen\n"
			       "threads, the names, those threads' entries and drop records that\n"
			       "overlap, and a recomputed summary.\n");
			return EXIT_OK;
		} else if ((!strcmp(a, "--from") || !strcmp(a, "--to")) && more) {
			uint64_t v;
			if (parse_u64(argv[++i], &v))
				return usage_error("slice: %s wants nanoseconds, not '%s'", a, argv[i]);
			*(a[2] == 'f' ? &flt.from : &flt.to) = v;
		} else if (!strcmp(a, "--thread") && more) {
			uint64_t v;
			if (parse_u64(argv[++i], &v) || v == 0 || v > UINT32_MAX || flt.nthreads == 64)
				return usage_error("slice: --thread wants a thread id, not '%s'", argv[i]);
			flt.threads[flt.nthreads++] = (uint32_t)v;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("slice: unknown option or missing value '%s'", a);
		} else if (!in) {
			in = a;
		} else if (!out) {
			out = a;
		} else {
			return usage_error("slice: unexpected argument '%s'", a);
		}
	}
	if (!in || !out)
		return usage_error("slice: needs IN and OUT");
	return rewrite("slice", in, out, -1, &flt);
}

/* ---- stats ------------------------------------------------------------- */

/*
 * Durations go into log-linear histograms: 32 buckets per power of two
 * (about 3% wide), so percentiles of any number of zones take fixed
 * memory.  Min and max are kept exactly.
 */
#define HBUCKETS (64 * 32)

struct hist {
	uint64_t n, min, max;
	uint64_t *b;
};

static unsigned hbucket(uint64_t v)
{
	if (v < 32)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* v >= 2^e */
	return ((e - 4) << 5) | (unsigned)((v >> (e - 5)) & 31);
}

static uint64_t hvalue(unsigned i)
{
	if (i < 32)
		return i;
	unsigned e = (i >> 5) + 4;
	/* The middle of the bucket. */
	return ((uint64_t)(32 | (i & 31)) << (e - 5)) + ((uint64_t)1 << (e - 5)) / 2;
}

static int hadd(struct hist *h, uint64_t v)
{
	if (!h->b && !(h->b = calloc(HBUCKETS, sizeof(*h->b))))
		return -ENOMEM;
	h->b[hbucket(v)]++;
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	return 0;
}

static uint64_t hpct(const struct hist *h, double p)
{
	if (!h->n)
		return 0;
	uint64_t want = (uint64_t)(p * (double)(h->n - 1)) + 1, seen = 0;
	for (unsigned i = 0; i < HBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t v = hvalue(i);
			return v < h->min ? h->min : v > h->max ? h->max : v;
		}
	}
	return h->max;
}

struct sthread_stat {
	uint32_t id;
	uint64_t events, dropped, first_ns, last_ns;
	uint32_t *stack;        /* open zones: name ids */
	uint64_t *stack_ns;
	size_t depth, cap;
	uint64_t last_frame_ns; /* previous frame mark on this thread */
	int have_frame;
};

struct name_stat {
	uint64_t count;
	struct hist zone;
};

struct stats_ctx {
	struct sthread_stat *th;
	size_t nth, cap;
	struct name_stat *names;
	uint32_t nnames;
	struct hist frames;
	uint64_t events;
	int oom;
};

static struct sthread_stat *stat_thread(struct stats_ctx *c, uint32_t id)
{
	return kt__idtab_get((void **)&c->th, &c->nth, &c->cap, sizeof(*c->th), id, 1u << 20);
}

static int stats_one(void *arg, const kt_event *ev, uint64_t ns)
{
	struct stats_ctx *c = arg;
	struct sthread_stat *t = stat_thread(c, ev->thread_id);
	if (!t)
		return -ENOMEM;
	if (!t->events)
		t->first_ns = ns;
	t->last_ns = ns;
	t->events++;
	c->events++;
	if (ev->name_id >= c->nnames) {
		uint32_t n = ev->name_id + 64;
		void *p = realloc(c->names, n * sizeof(*c->names));
		if (!p)
			return -ENOMEM;
		c->names = p;
		memset(c->names + c->nnames, 0, (n - c->nnames) * sizeof(*c->names));
		c->nnames = n;
	}
	struct name_stat *nm = &c->names[ev->name_id];
	nm->count++;
	if (ev->type == KT_EV_ZONE_BEGIN) {
		if (t->depth == t->cap) {
			size_t n = t->cap ? t->cap * 2 : 16;
			void *a = realloc(t->stack, n * sizeof(*t->stack));
			void *b = a ? realloc(t->stack_ns, n * sizeof(*t->stack_ns)) : NULL;
			if (a)
				t->stack = a;
			if (!b)
				return -ENOMEM;
			t->stack_ns = b;
			t->cap = n;
		}
		t->stack[t->depth] = ev->name_id;
		t->stack_ns[t->depth++] = ns;
	} else if (ev->type == KT_EV_ZONE_END && t->depth) {
		/* Match the innermost open zone of the same name; an end with
		 * no begin (the begin was dropped or sliced away) is skipped. */
		size_t d = t->depth;
		while (d && t->stack[d - 1] != ev->name_id)
			d--;
		if (d) {
			if (hadd(&nm->zone, ns - t->stack_ns[d - 1]))
				return -ENOMEM;
			t->depth = d - 1;
		}
	} else if (ev->type == KT_EV_FRAME) {
		if (t->have_frame && hadd(&c->frames, ns - t->last_frame_ns))
			return -ENOMEM;
		t->last_frame_ns = ns;
		t->have_frame = 1;
	}
	return 0;
}

static void stats_free(struct stats_ctx *c)
{
	for (size_t i = 0; i < c->nth; i++) {
		free(c->th[i].stack);
		free(c->th[i].stack_ns);
	}
	free(c->th);
	for (uint32_t i = 0; i < c->nnames; i++)
		free(c->names[i].zone.b);
	free(c->names);
	free(c->frames.b);
}

static int cmd_stats(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: katra stats FILE [--json]\n"
			       "Per thread: events, dropped, time span, rate.  Per name: count and\n"
			       "zone durations (min, p50, p99, max).  Frame times between frame\n"
			       "marks: p50, p99, max and a histogram.  Durations in ns; percentiles\n"
			       "come from ~3%%-wide buckets, min and max are exact.\n");
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return usage_error("stats: unknown option '%s'", argv[i]);
		} else if (path) {
			return usage_error("stats: more than one file ('%s')", argv[i]);
		} else {
			path = argv[i];
		}
	}
	if (!path)
		return usage_error("stats: missing FILE");
	kt_reader *r = open_or_say(path);
	if (!r)
		return EXIT_BAD;
	struct tables t;
	int trc = load_tables(r, &t);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	kt_reader_rewind(r);
	struct stats_ctx c = { 0 };
	progress_init(0);
	progress_reader = r;
	int rc = replay_pipelined(r, stats_one, &c, NULL, NULL);
	progress_end();
	if (rc < 0 || trc < 0) {
		fprintf(stderr, "%s: %s: corrupt: %s\n", prog, path, kt_reader_last_error(r)->message);
		stats_free(&c);
		tables_free(&t);
		kt_reader_close(r);
		return EXIT_BAD;
	}
	/* Drops per thread come from the drop records, which the merged
	 * events do not carry: take them from the accounting pass. */
	kt_reader_rewind(r);
	kt_reader_skip_events(r, 1);
	kt_trace_frame f;
	while (kt_reader_next_frame(r, &f) > 0)
		if (f.kind == KT_FRAME_DROP) {
			struct sthread_stat *th = stat_thread(&c, f.u.drop.thread_id);
			if (th)
				th->dropped += f.u.drop.count;
		}
	int truncated = !t.have_summary;
	if (json) {
		json_t *o = json_object(), *ths = json_array(), *names = json_array();
		json_object_set_new(o, "file", json_string(path));
		json_object_set_new(o, "events", json_integer((json_int_t)c.events));
		json_object_set_new(o, "dropped", json_integer((json_int_t)st.dropped));
		json_object_set_new(o, "truncated", json_boolean(truncated));
		for (size_t i = 0; i < c.nth; i++) {
			struct sthread_stat *th = &c.th[i];
			json_t *j = json_object();
			double span = (double)(th->last_ns - th->first_ns) / 1e9;
			json_object_set_new(j, "tid", json_integer(th->id));
			json_object_set_new(j, "name", json_string(thread_of(&t, th->id, 0)));
			json_object_set_new(j, "events", json_integer((json_int_t)th->events));
			json_object_set_new(j, "dropped", json_integer((json_int_t)th->dropped));
			json_object_set_new(j, "span_ns", json_integer((json_int_t)(th->last_ns - th->first_ns)));
			json_object_set_new(j, "events_per_s", json_real(span > 0 ? (double)th->events / span : 0));
			json_array_append_new(ths, j);
		}
		for (uint32_t id = 0; id < c.nnames; id++) {
			struct name_stat *nm = &c.names[id];
			if (!nm->count)
				continue;
			json_t *j = json_object();
			json_object_set_new(j, "id", json_integer(id));
			json_object_set_new(j, "name", id && id <= t.nnames && t.names[id]
							       ? json_string(t.names[id]) : json_null());
			json_object_set_new(j, "count", json_integer((json_int_t)nm->count));
			if (nm->zone.n) {
				json_t *z = json_object();
				json_object_set_new(z, "count", json_integer((json_int_t)nm->zone.n));
				json_object_set_new(z, "min_ns", json_integer((json_int_t)nm->zone.min));
				json_object_set_new(z, "p50_ns", json_integer((json_int_t)hpct(&nm->zone, 0.5)));
				json_object_set_new(z, "p99_ns", json_integer((json_int_t)hpct(&nm->zone, 0.99)));
				json_object_set_new(z, "max_ns", json_integer((json_int_t)nm->zone.max));
				json_object_set_new(j, "zone", z);
			}
			json_array_append_new(names, j);
		}
		json_object_set_new(o, "threads", ths);
		json_object_set_new(o, "names", names);
		json_t *fr = json_object();
		json_object_set_new(fr, "count", json_integer((json_int_t)c.frames.n));
		json_object_set_new(fr, "p50_ns", json_integer((json_int_t)hpct(&c.frames, 0.5)));
		json_object_set_new(fr, "p99_ns", json_integer((json_int_t)hpct(&c.frames, 0.99)));
		json_object_set_new(fr, "max_ns", json_integer((json_int_t)c.frames.max));
		json_object_set_new(o, "frames", fr);
		char *out = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (out)
			puts(out);
		free(out);
		json_decref(o);
	} else {
		printf("%s: %" PRIu64 " events, %" PRIu64 " dropped%s\n", path, c.events, st.dropped,
		       truncated ? ", truncated" : "");
		printf("\n%-8s %-20s %12s %10s %14s %14s\n", "tid", "thread", "events", "dropped",
		       "span ns", "events/s");
		for (size_t i = 0; i < c.nth; i++) {
			struct sthread_stat *th = &c.th[i];
			double span = (double)(th->last_ns - th->first_ns) / 1e9;
			printf("%-8u %-20s %12" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14.0f\n", th->id,
			       thread_of(&t, th->id, 0), th->events, th->dropped,
			       th->last_ns - th->first_ns, span > 0 ? (double)th->events / span : 0);
		}
		printf("\n%-24s %10s %10s %10s %10s %10s\n", "name", "count", "zone min", "p50",
		       "p99", "max");
		for (uint32_t id = 0; id < c.nnames; id++) {
			struct name_stat *nm = &c.names[id];
			if (!nm->count)
				continue;
			printf("%-24s %10" PRIu64, name_of(&t, id, 0), nm->count);
			if (nm->zone.n)
				printf(" %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64, nm->zone.min,
				       hpct(&nm->zone, 0.5), hpct(&nm->zone, 0.99), nm->zone.max);
			printf("\n");
		}
		if (c.frames.n) {
			printf("\nframe times: %" PRIu64 " intervals, p50 %" PRIu64 " ns, p99 %" PRIu64
			       " ns, max %" PRIu64 " ns\n", c.frames.n, hpct(&c.frames, 0.5),
			       hpct(&c.frames, 0.99), c.frames.max);
			/* Ten bars between the fastest and slowest frame. */
			uint64_t lo = c.frames.min, hi = c.frames.max, w = (hi - lo) / 10 + 1;
			uint64_t bars[10] = { 0 }, top = 1;
			for (unsigned i = 0; i < HBUCKETS; i++) {
				if (!c.frames.b[i])
					continue;
				uint64_t v = hvalue(i);
				v = v < lo ? lo : v > hi ? hi : v;
				bars[(v - lo) / w] += c.frames.b[i];
			}
			for (int i = 0; i < 10; i++)
				top = bars[i] > top ? bars[i] : top;
			for (int i = 0; i < 10; i++) {
				printf("  %12" PRIu64 " ns |", lo + (uint64_t)i * w);
				for (uint64_t k = 0; k < bars[i] * 40 / top; k++)
					putchar('#');
				printf(" %" PRIu64 "\n", bars[i]);
			}
		}
	}
	stats_free(&c);
	tables_free(&t);
	kt_reader_close(r);
	return truncated ? EXIT_TRUNC : EXIT_OK;
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
		return cmd_recode(argc - 1, argv + 1, KT_CODEC_NONE);
	if (!strcmp(cmd, "compress"))
		return cmd_recode(argc - 1, argv + 1, KT_CODEC_LZ4_DELTA);
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
		int e = out_errno ? out_errno : errno ? errno : EIO;
		fprintf(stderr, "%s: standard output: %s\n", prog, strerror(e));
		return rc == EXIT_USAGE ? rc : EXIT_BAD;
	}
	return rc;
}
