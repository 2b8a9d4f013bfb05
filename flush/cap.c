/*
 * A session's byte cap (kt_session_options.max_bytes) and, with
 * KT_CAP_KEEP_NEWEST, its segments: the room kept free for the end of the
 * file, what is dropped once the cap is reached, and the rotation to the
 * next segment.  Runs on the flusher thread.  (Kept apart from the
 * session: capture policy, which moves to capture/ in a later step.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/session_impl.h"

/* Events lost to the byte cap: a drop record at the end of the file
 * (whose room is reserved) accounts for them. */
void kt__cap_note(struct sthread *t, uint64_t count, uint64_t first, uint64_t last)
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
void kt__cap_update_reserve(kt_session *s)
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
 * Start the next segment (KT_CAP_KEEP_NEWEST): close this one, which
 * waits for its writes in flight and so gives back the ring space that
 * zero-copy writes still read, then write the header into the next, and
 * let the owner delete the segment that falls out of the window.
 */
static int rotate(kt_session *s)
{
	if (!s->open_segment || s->error)
		return -1;
	int fd = s->open_segment(s->cap_ctx, s->seg + 1);
	if (fd < 0)
		return fd;
	s->seg_bytes += kt_writer_bytes(s->w);
	/* The sink goes on to the next file: setting up another io_uring
	 * with its registered buffers would stall the flusher for ~10 ms. */
	kt__sink *sink = NULL;
	note_error(s, kt__writer_release(s->w, &sink));
	s->w = NULL;
	int rc = s->error ? s->error : sink->retarget(sink, fd);
	if (!rc)
		rc = kt__writer_open_sink(&s->w, sink, fd, 0, 0, &s->hdr);
	if (rc) {
		kt__session_forget_kfd(s);
		if (sink)
			sink->close(sink);
		note_error(s, rc);
		return rc;
	}
	s->fd = fd;
	s->start_off = 0;
	s->names_written = 0; /* every segment carries every name */
	uint32_t next = s->seg + 1;
	if (next >= KT_CAP_SEGMENTS && s->retire_segment)
		s->retire_segment(s->cap_ctx, next - KT_CAP_SEGMENTS,
				  s->seg_last[next % KT_CAP_SEGMENTS]);
	s->seg_last[next % KT_CAP_SEGMENTS] = 0;
	s->seg = next;
	return 0;
}

/* Whether a frame of about @need bytes may go into the file under the cap. */
int kt__cap_room(kt_session *s, uint64_t need)
{
	if (!s->max_bytes)
		return 1;
	if (s->capped)
		return 0;
	if (kt_writer_bytes(s->w) + need + s->reserve <= s->seg_limit)
		return 1;
	if (s->cap_policy == KT_CAP_KEEP_NEWEST && rotate(s) == 0 &&
	    kt_writer_bytes(s->w) + need + s->reserve <= s->seg_limit)
		return 1;
	s->capped = 1;
	if (s->on_cap)
		s->on_cap(s->cap_ctx);
	return 0;
}

void kt__cap_seg_saw(kt_session *s, uint64_t last)
{
	uint64_t *l = &s->seg_last[s->seg % KT_CAP_SEGMENTS];
	if (last > *l)
		*l = last;
}

/* Keep a copy of the header, strings and all, for the segments to come. */
int kt__cap_keep_header(kt_session *s, const kt_header *h)
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

uint64_t kt__cap_seg_limit(const kt_session_options *o)
{
	return o->cap_policy == KT_CAP_KEEP_NEWEST ? o->max_bytes / KT_CAP_SEGMENTS : o->max_bytes;
}
