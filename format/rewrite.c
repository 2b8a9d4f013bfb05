/*
 * kt_rewrite() (katra/writer.h): the one copy loop behind `katra slice`,
 * `compress`, `decompress` and the capture manager's trim.  It reads one
 * trace, or the segments of one (each starting with the same header), and
 * writes a single trace through kt_writer, so chunk numbers and the
 * summary are recomputed from what is actually kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "format/reader_internal.h"

/*
 * Ids already written (every input may repeat the names and threads), and
 * the threads kept: hash sets, as a file may hold ids in any order.
 */
struct seen {
	uint32_t *names, *threads, *kept, *procs, *stacks;
	size_t nnames, names_cap, nthreads, threads_cap, nkept, kept_cap, nprocs, procs_cap;
	size_t nstacks, stacks_cap;
};

static int seen_init(struct seen *seen, const kt_rewrite_options *o)
{
	for (size_t i = 0; i < o->nthreads; i++)
		if (kt__idset_add(&seen->kept, &seen->nkept, &seen->kept_cap, o->threads[i]) < 0)
			return -ENOMEM;
	return 0;
}

static void seen_free(struct seen *seen)
{
	free(seen->names);
	free(seen->threads);
	free(seen->kept);
	free(seen->procs);
	free(seen->stacks);
}

static int thread_kept(const kt_rewrite_options *o, const struct seen *seen, uint32_t tid)
{
	return !o->nthreads || kt__idset_has(seen->kept, seen->kept_cap, tid);
}

/*
 * The summary of the last input, for its stop calibration: every segment
 * converts ticks with the same pair of calibrations, as readers of the
 * final file will.  Missing (a cut input) is not an error.
 */
static int last_summary(const kt_rewrite_options *o, kt_file_summary *sum, int *have,
			kt_rewrite_result *res)
{
	kt_reader *r = NULL;
	int fd = o->in_fds[o->n_in - 1];
	int rc = kt_reader_open_fd(fd, &res->in_err, &r);
	*have = 0;
	if (rc < 0) {
		res->in_index = (int)o->n_in - 1;
		return rc;
	}
	kt__reader_set_headers_only(r, 1);
	kt_trace_frame f;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		if (f.kind == KT_FRAME_SUMMARY) {
			*sum = f.u.summary;
			sum->threads = NULL;
			*have = 1;
		}
	if (rc < 0) {
		res->in_err = *kt_reader_get_last_error(r);
		res->in_index = (int)o->n_in - 1;
	}
	kt_reader_close(r);
	return rc;
}

/* What copying every input shares. */
struct copy {
	const kt_rewrite_options *o;
	kt_writer *w;
	const kt_header *h;
	struct kt__conv cv;         /* the input's ticks to ns */
	struct seen seen;
	uint8_t *buf;               /* a chunk's kept events */
	size_t cap;
	kt_rewrite_result *res;
};

static int windowed(const kt_rewrite_options *o)
{
	return o->filter && (o->from_ns > 0 || o->to_ns < UINT64_MAX);
}

/* The events of chunk @f inside the time window, into cp->buf: their bytes
 * in *@len and their count in *@kept.  0 or -ENOMEM. */
static int window_events(struct copy *cp, const kt_trace_frame *f, size_t *len, uint32_t *kept)
{
	const kt_rewrite_options *o = cp->o;
	if (cp->cap < f->u.chunk.raw_len) {
		void *p = kt__realloc(cp->buf, f->u.chunk.raw_len);
		if (!p)
			return -ENOMEM;
		cp->buf = p;
		cp->cap = f->u.chunk.raw_len;
	}
	size_t n = 0;
	kt_chunk_iter it;
	kt_event e;
	kt_chunk_iter_init(&it, f);
	const uint8_t *at = it.pos;
	*kept = 0;
	/* Every event is checked: a thread's timestamps are not promised to
	 * be monotonic across CPUs. */
	while (kt_chunk_next(&it, &e)) {
		uint64_t ns = kt__conv_apply(&cp->cv, e.ts);
		size_t sz = (size_t)(it.pos - at);
		if (ns >= o->from_ns && ns <= o->to_ns) {
			memcpy(cp->buf + n, at, sz);
			n += sz;
			(*kept)++;
		}
		at = it.pos;
	}
	*len = n;
	return 0;
}

static int copy_chunk(struct copy *cp, const kt_trace_frame *f)
{
	const kt_rewrite_options *o = cp->o;
	uint32_t tid = f->u.chunk.thread_id;
	int codec = o->codec >= 0 ? o->codec : f->u.chunk.codec;
	cp->res->events_in += f->u.chunk.event_count;
	if (o->filter && !thread_kept(o, &cp->seen, tid))
		return 0;
	const uint8_t *ev = f->u.chunk.events;
	size_t len = f->u.chunk.raw_len;
	uint32_t kept = f->u.chunk.event_count;
	if (windowed(o)) {
		int rc = window_events(cp, f, &len, &kept);
		if (rc)
			return rc;
		ev = cp->buf;
	}
	if (!len)
		return 0;
	cp->res->events_out += kept;
	return kt_writer_chunk(cp->w, tid, (unsigned)codec, cp->h->capture.codec_level, ev, len);
}

static int copy_thread(struct copy *cp, const kt_trace_frame *f)
{
	uint32_t tid = f->u.thread.thread_id;
	if (cp->o->filter && !thread_kept(cp->o, &cp->seen, tid))
		return 0;
	int rc = kt__idset_add(&cp->seen.threads, &cp->seen.nthreads, &cp->seen.threads_cap, tid);
	if (rc <= 0)
		return rc;
	return kt_writer_thread_in(cp->w, tid, f->u.thread.os_tid, f->u.thread.name,
				   f->u.thread.process);
}

static int copy_drop(struct copy *cp, const kt_trace_frame *f)
{
	const kt_rewrite_options *o = cp->o;
	uint64_t a = kt__conv_apply(&cp->cv, f->u.drop.first_ts);
	uint64_t b = kt__conv_apply(&cp->cv, f->u.drop.last_ts);
	/* A loss is kept when it overlaps the window at all: it may have
	 * hidden events inside it. */
	if (o->filter &&
	    !(thread_kept(o, &cp->seen, f->u.drop.thread_id) && b >= o->from_ns && a <= o->to_ns))
		return 0;
	return kt_writer_drop(cp->w, f->u.drop.thread_id, f->u.drop.count, f->u.drop.first_ts,
			      f->u.drop.last_ts);
}

/* One frame of input @idx; the last input's summary goes to *@sum. */
static int copy_frame(struct copy *cp, size_t idx, const kt_trace_frame *f, kt_file_summary *sum)
{
	int rc;
	switch (f->kind) {
	case KT_FRAME_CHUNK:
		return copy_chunk(cp, f);
	case KT_FRAME_NAME:
		rc = kt__idset_add(&cp->seen.names, &cp->seen.nnames, &cp->seen.names_cap,
				   f->u.name.id);
		return rc <= 0 ? rc : kt_writer_name(cp->w, f->u.name.id, f->u.name.str, f->u.name.len);
	case KT_FRAME_THREAD:
		return copy_thread(cp, f);
	case KT_FRAME_DROP:
		return copy_drop(cp, f);
	case KT_FRAME_SRCLOC:
		return kt_writer_srcloc(cp->w, &f->u.srcloc);
	case KT_FRAME_CATEGORY:
		return kt_writer_category(cp->w, f->u.category.id, f->u.category.flags);
	case KT_FRAME_TRACK:
		return kt_writer_track(cp->w, &f->u.track);
	case KT_FRAME_PROCESS: /* each segment of a capture has its process's: one kept */
		rc = kt__idset_add(&cp->seen.procs, &cp->seen.nprocs, &cp->seen.procs_cap,
				   f->u.process.id);
		return rc <= 0 ? rc : kt_writer_process(cp->w, &f->u.process);
	/* Sampled stacks and the mappings that name them (SPEC §4.11, §4.12),
	 * all kept whatever the window or threads (they are few, and a
	 * sample kept may name any); a stack once, as a capture's later
	 * segment may write its stacks again. */
	case KT_FRAME_STACK:
		rc = kt__idset_add(&cp->seen.stacks, &cp->seen.nstacks, &cp->seen.stacks_cap,
				   f->u.stack.id);
		return rc <= 0 ? rc : kt_writer_stack(cp->w, &f->u.stack);
	case KT_FRAME_MAP:
		return kt_writer_map(cp->w, &f->u.map);
	case KT_FRAME_SUMMARY:
		if (idx == cp->o->n_in - 1) {
			*sum = f->u.summary;
			sum->threads = NULL;
			cp->res->have_summary = 1;
		}
		return 0;
	default:
		return 0;
	}
}

/*
 * Copy one input's frames into the writer, converting ticks with @stop
 * (the last input's summary, or NULL); the last input's own summary goes
 * to *@sum.  Returns 0 or the first error.
 */
static int copy_input(struct copy *cp, size_t idx, const kt_file_summary *stop,
		      kt_file_summary *sum, uint64_t base, uint64_t total)
{
	const kt_rewrite_options *o = cp->o;
	kt_reader *r = NULL;
	int rc = kt_reader_open_fd(o->in_fds[idx], &cp->res->in_err, &r);
	if (rc < 0) {
		cp->res->in_index = (int)idx;
		return rc;
	}
	kt__conv_init(&cp->cv, &cp->h->clock, stop);
	int wrc = 0;
	kt_trace_frame f;
	while (!wrc && (rc = kt_reader_next_frame(r, &f)) > 0) {
		if (o->progress)
			o->progress(o->progress_ctx, base + f.offset + kt__frame_size(f.body_len),
				    total);
		wrc = copy_frame(cp, idx, &f, sum);
	}
	if (rc < 0) {
		cp->res->in_err = *kt_reader_get_last_error(r);
		cp->res->in_index = (int)idx;
	}
	kt_reader_close(r);
	return rc < 0 ? rc : wrc;
}

/* The first input's header plus the extra notes; *@notes is the array to
 * free.  0, -EINVAL past KT_MAX_NOTES, -ENOMEM. */
static int out_header(const kt_rewrite_options *o, kt_reader *hr, kt_header *h, const char ***notes)
{
	*h = *kt_reader_get_header(hr);
	*notes = NULL;
	if (o->codec >= 0 && o->codec != h->capture.codec) {
		/* The level means something else to each compact codec: take
		 * its default (compact: LZ4 on the payload bytes; zstd: level
		 * 3) rather than the input's.  A raw input's level means
		 * nothing to its chunks: it is the one its codec had before
		 * `katra decompress`, kept, so that compressing back with that
		 * codec gives the file it was, byte for byte. */
		if (o->codec >= KT_CODEC_COMPACT && h->capture.codec != KT_CODEC_NONE)
			h->capture.codec_level = 0;
		h->capture.codec = (uint8_t)o->codec;
	}
	if (!o->n_extra_notes)
		return 0;
	if (h->note_count + o->n_extra_notes > KT_MAX_NOTES)
		return -EINVAL;
	const char **n = kt__malloc((h->note_count + o->n_extra_notes) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->note_count; i++)
		n[i] = h->notes[i];
	for (uint32_t i = 0; i < o->n_extra_notes; i++)
		n[h->note_count + i] = o->extra_notes[i];
	h->notes = n;
	h->note_count += o->n_extra_notes;
	*notes = n;
	return 0;
}

static uint64_t input_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);
	return end > 0 ? (uint64_t)end : 0;
}

/* Every input through the writer, then the summary if the last input has
 * one. */
static int copy_all(struct copy *cp, const kt_file_summary *stop)
{
	const kt_rewrite_options *o = cp->o;
	kt_file_summary sum;
	uint64_t total = 0, base = 0;
	int rc = 0;
	for (size_t i = 0; i < o->n_in; i++)
		total += input_size(o->in_fds[i]);
	for (size_t i = 0; i < o->n_in && !rc; i++) {
		rc = copy_input(cp, i, stop, &sum, base, total);
		base += input_size(o->in_fds[i]);
	}
	if (!rc && cp->res->have_summary)
		rc = kt_writer_finish(cp->w, &sum);
	return rc;
}

int kt_rewrite(const kt_rewrite_options *o, kt_rewrite_result *res)
{
	memset(res, 0, sizeof(*res));
	res->in_index = -1;
	if (!o->n_in)
		return -EINVAL;

	/* A time window converts ticks with the stop calibration too, which
	 * the summary at the very end holds: only then read ahead for it. */
	kt_file_summary stop;
	int have_stop = 0, rc = 0;
	if (windowed(o) && (rc = last_summary(o, &stop, &have_stop, res)) < 0)
		return rc;

	/* The header (and the strings it points to) of the first input. */
	kt_reader *hr = NULL;
	if ((rc = kt_reader_open_fd(o->in_fds[0], &res->in_err, &hr)) < 0) {
		res->in_index = 0;
		return rc;
	}
	kt_header h;
	const char **notes = NULL;
	struct copy cp = { .o = o, .h = &h, .res = res };
	if ((rc = out_header(o, hr, &h, &notes)) || (rc = seen_init(&cp.seen, o)) ||
	    (rc = kt_writer_open_fd(o->out_fd, &h, &cp.w)))
		goto out;
	rc = copy_all(&cp, have_stop ? &stop : NULL);
	res->bytes = kt_writer_get_bytes(cp.w);
	int crc = kt_writer_close(cp.w);
	if (!rc)
		rc = crc;
out:
	free(cp.buf);
	seen_free(&cp.seen);
	free(notes);
	kt_reader_close(hr);
	return rc;
}
