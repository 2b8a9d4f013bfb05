/*
 * katra - the offline tool: verify and inspect .katra trace files.
 *
 * Exit codes: 0 success / valid, 1 error or corrupt file, 2 usage error,
 * 3 truncated file (a valid prefix).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <katra/katra.h>
#include <katra/reader.h>

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
			       "--json prints {\"valid\",\"truncated\",\"events\",\"first_bad_offset\"}.\n");
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
		while ((rc = kt_reader_next_frame(r, &f)) > 0)
			;
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
	kt_reader_close(r);
	return result;
}

/* ---- info ------------------------------------------------------------ */

static const char *codec_name(unsigned c)
{
	return c == 0 ? "none" : c == 1 ? "lz4" : "unknown";
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
	uint64_t names = 0, raw_chunks = 0, lz4_chunks = 0;
	uint64_t ts_min = UINT64_MAX, ts_max = 0;
	kt_file_summary sum;
	int have_sum = 0, rc;
	kt_trace_frame f;

	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		switch (f.kind) {
		case KT_FRAME_CHUNK:
			if (f.u.chunk.codec)
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
	printf("chunks          %" PRIu64 " (%" PRIu64 " raw, %" PRIu64 " lz4)\n", st.chunks,
	       raw_chunks, lz4_chunks);
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

int main(int argc, char **argv)
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
	return usage_error("unknown command '%s'", cmd);
}
