/*
 * The session's side of its output (kt__output, flush/flush.h): before
 * each frame it asks the output for room, going on in the next file when
 * told to; it sizes what the end of the file takes (only the session
 * knows its names and threads), and counts what a full output costs.
 * Whether there is room, and which files come next and go, is the
 * output's (capture/segments.c).  Runs on the flusher thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/session_impl.h"

/* Events lost to a full output: a drop record at the end of the file
 * (whose room is kept free) accounts for them. */
void kt__out_note(struct sthread *t, uint64_t count, uint64_t first, uint64_t last)
{
	if (!t->cap_lost)
		t->cap_first = first;
	t->cap_lost += count;
	t->cap_last = last;
}

static void name_bytes_cb(void *ctx, uint32_t id, const char *str, size_t len,
			  const kt_srcloc *loc)
{
	(void)id;
	(void)str;
	*(uint64_t *)ctx += 32 + len;
	if (loc)
		*(uint64_t *)ctx += 48 + loc->file_len + loc->function_len;
}

/*
 * What the end of the file may take: every name, a thread entry, a drop
 * record and a summary row per thread, the summary, and slack for threads
 * that have not shown up yet.
 */
void kt__out_size_tail(kt_session *s)
{
	/* Names only grow: size the new ones, not all of them each pass. */
	s->names_sized = kt__names_after(s->names_sized, name_bytes_cb, &s->names_bytes);
	uint64_t n = 8192 + s->names_bytes;
	size_t threads = s->nthreads > s->rings.len ? s->nthreads : s->rings.len;
	for (size_t i = 0; i < s->nthreads; i++)
		n += s->threads[i].name ? strlen(s->threads[i].name) : 0;
	s->reserve = n + threads * (64 + 64 + 32 + 64);
}

/*
 * Go on in the output's next file: close this one, which waits for its
 * writes in flight and so gives back the ring space that zero-copy writes
 * still read, then write the header into the next, and tell the output,
 * which may then let go of a file that falls out of its window.
 */
static int next_file(kt_session *s)
{
	if (!s->out.next || s->error)
		return -1;
	int fd = s->out.next(s->out.ctx);
	if (fd < 0)
		return fd;
	s->seg_bytes += kt_writer_get_bytes(s->w);
	/* The sink goes on to the next file: setting up another io_uring
	 * with its registered buffers would stall the flusher for ~10 ms. */
	kt__sink *sink = NULL;
	note_error(s, kt__writer_release(s->w, &sink));
	s->w = NULL;
	int rc = s->error ? s->error : sink->retarget(sink, fd);
	if (!rc)
		rc = kt__writer_open_sink(&s->w, sink, fd, 0, 0, &s->hdr);
	/* Every file says whose it is (SPEC §4.10): a capture that keeps its
	 * newest segments publishes from a later one than the first. */
	if (!rc)
		rc = kt__write_self_process(s->w, s->hdr.start_mono_ns);
	if (rc) {
		kt__session_forget_kfd(s);
		if (sink)
			sink->close(sink);
		note_error(s, rc);
		return rc;
	}
	s->fd = fd;
	s->start_off = 0;
	s->names_written = 0; /* every file carries every name */
	s->seg++;
	s->out.started(s->out.ctx);
	return 0;
}

int kt__out_room(kt_session *s, uint64_t need)
{
	const kt__output *o = &s->out;
	if (!o->file_bytes)
		return 1;
	if (s->capped)
		return 0;
	int r = o->room(o->ctx, kt_writer_get_bytes(s->w), need, s->reserve);
	if (r == KT__ROOM_NEXT && next_file(s) == 0)
		r = o->room(o->ctx, kt_writer_get_bytes(s->w), need, s->reserve);
	if (r == KT__ROOM_FITS)
		return 1;
	s->capped = 1;
	o->full(o->ctx);
	return 0;
}

void kt__out_wrote(kt_session *s, uint64_t last)
{
	if (s->out.wrote)
		s->out.wrote(s->out.ctx, last);
}

/* Keep a copy of the header, strings and all, for the files to come. */
int kt__session_keep_header(kt_session *s, const kt_header *h)
{
	s->hdr = *h;
	snprintf(s->host, sizeof(s->host), "%s", h->host ? h->host : "");
	s->hdr.host = s->host;
	const char **str[3] = { &s->hdr.workload, &s->hdr.run_id, &s->hdr.capture_id };
	for (size_t i = 0; i < 3; i++)
		if (*str[i] && !(*str[i] = s->hdr_strings[i] = strdup(*str[i])))
			return -ENOMEM;
	if (h->note_count) {
		s->hdr.note_count = 0;
		if (!(s->hdr_notes = calloc(h->note_count, sizeof(char *))))
			return -ENOMEM;
		s->hdr.notes = (const char *const *)s->hdr_notes;
		for (uint32_t i = 0; i < h->note_count; i++, s->hdr.note_count++)
			if (!(s->hdr_notes[i] = strdup(h->notes[i] ? h->notes[i] : "")))
				return -ENOMEM;
	}
	return 0;
}
