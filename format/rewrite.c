/*
 * Rewriting a trace: the one copy loop behind `katra slice`, `compress`,
 * `decompress` and the capture manager's trim.  It reads one trace, or the
 * segments of one (each starting with the same header), and writes a
 * single trace through kt_writer, so chunk numbers and the summary are
 * recomputed from what is actually kept.
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

/* Ids already written: every input may repeat the names and threads. */
struct seen {
	uint32_t *names, *threads;
	size_t nnames, names_cap, nthreads, threads_cap;
};

static int thread_kept(const kt__rewrite_opts *o, uint32_t tid)
{
	if (!o->nthreads)
		return 1;
	for (size_t i = 0; i < o->nthreads; i++)
		if (o->threads[i] == tid)
			return 1;
	return 0;
}

/*
 * The summary of the last input, for its stop calibration: every segment
 * converts ticks with the same pair of calibrations, as readers of the
 * final file will.  Missing (a cut input) is not an error.
 */
static int last_summary(const kt__rewrite_opts *o, kt_file_summary *sum, int *have,
			kt__rewrite_result *res)
{
	kt_reader *r = NULL;
	int fd = o->in_fds[o->n_in - 1];
	int rc = kt_reader_open_fd(&r, fd, &res->in_err);
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
		res->in_err = *kt_reader_last_error(r);
		res->in_index = (int)o->n_in - 1;
	}
	kt_reader_close(r);
	return rc;
}

/*
 * Copy one input's frames into @w, converting ticks with @stop (the last
 * input's summary, or NULL); the last input's own summary goes to *@sum.
 * Returns 0 or the first error.
 */
static int copy_input(const kt__rewrite_opts *o, size_t idx, kt_writer *w, const kt_header *h,
		      const kt_file_summary *stop, kt_file_summary *sum, struct seen *seen,
		      uint8_t **buf, size_t *cap, kt__rewrite_result *res, uint64_t base,
		      uint64_t total)
{
	kt_reader *r = NULL;
	int rc = kt_reader_open_fd(&r, o->in_fds[idx], &res->in_err);
	if (rc < 0) {
		res->in_index = (int)idx;
		return rc;
	}
	struct kt__conv cv;
	kt__conv_init(&cv, &h->clock, stop);
	int filter = o->filter;
	int wrc = 0;
	kt_trace_frame f;
	while (!wrc && (rc = kt_reader_next_frame(r, &f)) > 0) {
		if (o->progress)
			o->progress(o->progress_ctx, base + f.offset + 16 + ((f.body_len + 7u) & ~7u),
				    total);
		switch (f.kind) {
		case KT_FRAME_CHUNK: {
			uint32_t tid = f.u.chunk.thread_id;
			int c = o->codec >= 0 ? o->codec : f.u.chunk.codec;
			res->events_in += f.u.chunk.event_count;
			if (filter && !thread_kept(o, tid))
				break;
			const uint8_t *ev = f.u.chunk.events;
			size_t len = f.u.chunk.raw_len;
			uint32_t kept = f.u.chunk.event_count;
			if (filter && (o->from_ns > 0 || o->to_ns < UINT64_MAX)) {
				/* Every event is checked: a thread's timestamps are
				 * not promised to be monotonic across CPUs. */
				if (*cap < len) {
					void *p = realloc(*buf, len);
					if (!p) {
						wrc = -ENOMEM;
						break;
					}
					*buf = p;
					*cap = len;
				}
				size_t n = 0;
				kt_chunk_iter it;
				kt_event e;
				kt_chunk_iter_init(&it, &f);
				const uint8_t *at = it.pos;
				kept = 0;
				while (kt_chunk_next(&it, &e)) {
					uint64_t ns = kt__conv_apply(&cv, e.ts);
					size_t sz = (size_t)(it.pos - at);
					if (ns >= o->from_ns && ns <= o->to_ns) {
						memcpy(*buf + n, at, sz);
						n += sz;
						kept++;
					}
					at = it.pos;
				}
				ev = *buf;
				len = n;
			}
			if (!len)
				break;
			wrc = kt_writer_chunk(w, tid, (unsigned)c, h->capture.codec_level, ev, len);
			res->events_out += kept;
			break;
		}
		case KT_FRAME_NAME:
			if ((wrc = kt__idset_add(&seen->names, &seen->nnames, &seen->names_cap,
						 f.u.name.id)) > 0)
				wrc = kt_writer_name(w, f.u.name.id, f.u.name.str, f.u.name.len);
			break;
		case KT_FRAME_THREAD:
			if (filter && !thread_kept(o, f.u.thread.thread_id))
				break;
			if ((wrc = kt__idset_add(&seen->threads, &seen->nthreads, &seen->threads_cap,
						 f.u.thread.thread_id)) > 0)
				wrc = kt_writer_thread(w, f.u.thread.thread_id, f.u.thread.os_tid,
						       f.u.thread.name);
			break;
		case KT_FRAME_DROP: {
			uint64_t a = kt__conv_apply(&cv, f.u.drop.first_ts);
			uint64_t b = kt__conv_apply(&cv, f.u.drop.last_ts);
			/* A loss is kept when it overlaps the window at all: it
			 * may have hidden events inside it. */
			if (!filter || (thread_kept(o, f.u.drop.thread_id) && b >= o->from_ns &&
					a <= o->to_ns))
				wrc = kt_writer_drop(w, f.u.drop.thread_id, f.u.drop.count,
						     f.u.drop.first_ts, f.u.drop.last_ts);
			break;
		}
		case KT_FRAME_SUMMARY:
			if (idx == o->n_in - 1) {
				*sum = f.u.summary;
				sum->threads = NULL;
				res->have_summary = 1;
			}
			break;
		default:
			break;
		}
	}
	if (rc < 0) {
		res->in_err = *kt_reader_last_error(r);
		res->in_index = (int)idx;
	}
	kt_reader_close(r);
	return rc < 0 ? rc : wrc;
}

int kt__rewrite(const kt__rewrite_opts *o, kt__rewrite_result *res)
{
	memset(res, 0, sizeof(*res));
	res->in_index = -1;
	if (!o->n_in)
		return -EINVAL;

	/* A time window converts ticks with the stop calibration too, which
	 * the summary at the very end holds: only then read ahead for it. */
	kt_file_summary stop, sum;
	int have_stop = 0, rc = 0;
	if (o->filter && (o->from_ns > 0 || o->to_ns < UINT64_MAX) &&
	    (rc = last_summary(o, &stop, &have_stop, res)) < 0)
		return rc;

	/* The header (and the strings it points to) of the first input. */
	kt_reader *hr = NULL;
	if ((rc = kt_reader_open_fd(&hr, o->in_fds[0], &res->in_err)) < 0) {
		res->in_index = 0;
		return rc;
	}
	kt_header h = *kt_reader_header(hr);
	if (o->codec >= 0)
		h.capture.codec = (uint8_t)o->codec;
	const char **notes = NULL;
	if (o->n_extra_notes) {
		if (h.note_count + o->n_extra_notes > KT_MAX_NOTES) {
			kt_reader_close(hr);
			return -EINVAL;
		}
		notes = malloc((h.note_count + o->n_extra_notes) * sizeof(*notes));
		if (!notes) {
			kt_reader_close(hr);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < h.note_count; i++)
			notes[i] = h.notes[i];
		for (uint32_t i = 0; i < o->n_extra_notes; i++)
			notes[h.note_count + i] = o->extra_notes[i];
		h.notes = notes;
		h.note_count += o->n_extra_notes;
	}

	uint64_t total = 0;
	for (size_t i = 0; i < o->n_in; i++) {
		off_t end = lseek(o->in_fds[i], 0, SEEK_END);
		total += end > 0 ? (uint64_t)end : 0;
	}

	kt_writer *w = NULL;
	struct seen seen = { 0 };
	uint8_t *buf = NULL;
	size_t cap = 0;
	if ((rc = kt_writer_open_fd(&w, o->out_fd, &h)))
		goto out;
	uint64_t base = 0;
	for (size_t i = 0; i < o->n_in && !rc; i++) {
		rc = copy_input(o, i, w, &h, have_stop ? &stop : NULL, &sum, &seen, &buf, &cap, res,
				base, total);
		off_t end = lseek(o->in_fds[i], 0, SEEK_END);
		base += end > 0 ? (uint64_t)end : 0;
	}
	if (!rc && res->have_summary)
		rc = kt_writer_finish(w, &sum);
	res->bytes = kt_writer_bytes(w);
	int crc = kt_writer_close(w);
	if (!rc)
		rc = crc;
out:
	free(buf);
	free(seen.names);
	free(seen.threads);
	free(notes);
	kt_reader_close(hr);
	return rc;
}
