/*
 * cmd_info.c - `katra info FILE`: the header, threads, names, counts, the
 * time span, codecs, the I/O backend and whether the file is complete.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include "tools/pipeline/bsearch.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/tables.h"

static const char *codec_name(unsigned c)
{
	static const char *const names[] = { "none", "lz4", "lz4-delta", "compact", "compact-zstd" };
	return c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
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
	uint64_t codec_chunks[KT_CODEC_COMPACT_ZSTD + 1]; /* by codec */
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
			in->codec_chunks[f.u.chunk.codec]++; /* the reader checked it */
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
	       h->capture.ring_size, kt_overflow_name(h->capture.overflow),
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

/* A merged trace's processes (SPEC §4.10): pid, parent, name, state,
 * span and command line (its arguments joined by spaces), escaped. */
static int info_processes(const struct tables *t)
{
	printf("processes       %zu\n", t->nprocs);
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		char *name = text_escape(tables_process_name(t, p), p->name_len);
		char *cmd = malloc((size_t)p->cmdline_len + 1);
		if (cmd)
			for (uint32_t k = 0; k <= p->cmdline_len; k++)
				cmd[k] = k < p->cmdline_len && !tables_process_cmdline(t, p)[k]
						 ? ' ' : tables_process_cmdline(t, p)[k];
		char *esc = cmd ? text_escape(cmd, p->cmdline_len) : NULL;
		if (!name || !esc) {
			free(name), free(cmd), free(esc);
			return -ENOMEM;
		}
		printf("  process %-5u pid %-8" PRIu64 " parent %-8" PRIu64 " %-16s %s%s, %" PRIu64
		       " .. %" PRIu64 " ns\n", p->id, p->pid, p->parent_pid, name,
		       p->flags & KT_PROCESS_COMPLETE ? "complete" : "cut short",
		       p->flags & KT_PROCESS_RECOVERED ? ", recovered" : "", p->start_ns, p->end_ns);
		if (p->cmdline_len)
			printf("    command %s\n", esc);
		free(name), free(cmd), free(esc);
	}
	if (t->procs_left_out)
		printf("  (%" PRIu64 " more processes not kept)\n", t->procs_left_out);
	return 0;
}

static int info_threads(const struct info *in)
{
	const struct tables *t = &in->t;
	if (tables_multiprocess(t) && info_processes(t))
		return -ENOMEM;
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
		if (tables_multiprocess(t))
			printf(", process %u", e->process);
		printf("\n");
	}
	return 0;
}

static void info_counts(const kt_header *h, const struct info *in)
{
	const kt_file_summary *sum = in->have_sum ? &in->sum : NULL;
	printf("names           %zu\n", in->t.nnames);
	printf("chunks          %" PRIu64 " (%" PRIu64 " raw, %" PRIu64 " lz4", in->st.chunks,
	       in->codec_chunks[KT_CODEC_NONE], in->codec_chunks[KT_CODEC_LZ4]);
	for (unsigned c = KT_CODEC_LZ4_DELTA; c <= KT_CODEC_COMPACT_ZSTD; c++)
		if (in->codec_chunks[c])
			printf(", %" PRIu64 " %s", in->codec_chunks[c], codec_name(c));
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

int cmd_info(int argc, char **argv)
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
