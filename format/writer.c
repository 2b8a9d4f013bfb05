/*
 * The direct writer: builds frames with the encoder and writes them through
 * a small buffer.  It keeps per-thread sequence numbers and the accounting,
 * so the summary it writes always agrees with the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>

#include <katra/atomic.h>
#include <katra/writer.h>
#include "format/compact.h"
#include "format/format.h"

struct wthread {
	uint32_t thread_id;
	uint64_t next_seq;
	uint64_t written;
	uint64_t dropped;
	/* Its own LZ4 skip counters in each compact codec's encoder
	 * (kt__compact_enc_skip): another thread's chunks leave them be. */
	uint8_t skip[KT__CODEC_TABLES][KT__COMPACT_SKIPS];
};

struct kt_writer {
	kt__sink *sink;
	int fd;
	int own_fd;
	int finished;
	int error;          /* first error; sticky */
	uint64_t bytes;     /* handed to the sink or buffered */
	uint64_t off;       /* file offset of buf[0] */

	uint8_t *buf;       /* output buffer, from the sink */
	size_t buf_len, buf_cap;
	uint8_t *frame;     /* scratch for a frame that does not fit in place */
	size_t frame_cap;
	uint8_t *delta;     /* scratch for KT_CODEC_LZ4_DELTA's transform */
	size_t delta_cap;
	struct wenc {           /* codec KT_CODEC_COMPACT + i's encoder */
		void *enc;      /* made on first use (kt__codec_of()) */
		size_t max;     /* the largest raw_len it takes */
		int level;      /* the level it encodes at */
	} enc[KT__CODEC_TABLES];

	struct kt__idmap threads; /* struct wthread, ids in any order */
	uint64_t chunks, events, dropped, bytes_raw, bytes_stored;
};

/* The compact encoders are first made for the flusher's largest chunk
 * (KT__CHUNK_MAX, 256 KiB, plus one record), and re-made for a larger one up
 * to COMPACT_MAX.  Their scratch is about 5 times that, so a chunk above
 * it (only kt_writer_chunk()'s callers make them) is stored as codec 2. */
#define COMPACT_FIRST ((256u << 10) + KT_REC_HEAD + KT_MAX_STRING + 1)
#define COMPACT_MAX (4u << 20)

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 4096;
	while (n < need)
		n *= 2;
	uint8_t *p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* ---- output buffer ------------------------------------------------------ */

static int set_error(kt_writer *w, int rc)
{
	if (rc && !w->error)
		w->error = rc;
	return w->error;
}

/* Hand the filled buffer to the sink and take an empty one. */
static int flush_buf(kt_writer *w)
{
	if (w->error)
		return w->error;
	if (w->buf_len) {
		int rc = w->sink->write(w->sink, w->buf, w->buf_len, w->off);
		w->off += w->buf_len;
		w->buf_len = 0;
		w->buf = NULL;
		if (rc)
			return set_error(w, rc);
	}
	if (!w->buf) {
		w->buf = w->sink->acquire(w->sink, &w->buf_cap);
		if (!w->buf)
			return set_error(w, w->sink->error ? w->sink->error : -EIO);
	}
	return 0;
}

/* Append @n bytes, across as many buffers as they need. */
static int emit(kt_writer *w, const uint8_t *p, size_t n)
{
	if (w->error)
		return w->error;
	w->bytes += n;
	while (n) {
		if (w->buf_len == w->buf_cap) {
			int rc = flush_buf(w);
			if (rc)
				return rc;
		}
		size_t k = w->buf_cap - w->buf_len;
		if (k > n)
			k = n;
		memcpy(w->buf + w->buf_len, p, k);
		w->buf_len += k;
		p += k;
		n -= k;
	}
	return 0;
}

/*
 * Room for @n contiguous bytes in the output buffer, so a frame can be
 * built in place; NULL when @n exceeds a whole buffer (build it in the
 * scratch and emit() it) or on error.
 */
static uint8_t *reserve(kt_writer *w, size_t n)
{
	if (w->error || n > w->buf_cap)
		return NULL;
	if (w->buf_cap - w->buf_len < n && flush_buf(w))
		return NULL;
	return w->buf + w->buf_len;
}

static void commit(kt_writer *w, size_t n)
{
	w->buf_len += n;
	w->bytes += n;
}

static struct wthread *thread_get(kt_writer *w, uint32_t tid)
{
	void *t;
	return kt__idmap_get(&w->threads, tid, KT_MAX_SUMMARY_THREADS, &t) < 0 ? NULL : t;
}

int kt__writer_open_sink(kt_writer **out, kt__sink *sink, int fd, int own_fd, uint64_t off,
			 const kt_header *h)
{
	*out = NULL;
	int rc = kt__header_validate(h);
	if (rc)
		return rc;
	kt_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	kt__idmap_init(&w->threads, sizeof(struct wthread));
	w->sink = sink;
	w->fd = fd;
	w->own_fd = own_fd;
	w->off = off;
	size_t n = kt__enc_header(NULL, 0, h);
	if ((rc = flush_buf(w)) || (rc = grow(&w->frame, &w->frame_cap, n)))
		goto err;
	kt__enc_header(w->frame, n, h);
	if ((rc = emit(w, w->frame, n)))
		goto err;
	*out = w;
	return 0;
err:
	/* The caller keeps the sink and the fd on failure. */
	w->sink = NULL;
	w->own_fd = 0;
	kt_writer_close(w);
	return rc;
}

/* Build a frame around a body already at w->frame + KT__FRAME_HEAD, then
 * emit it. */
static int emit_frame(kt_writer *w, uint8_t kind, uint32_t body_len)
{
	kt__enc_frame_head(w->frame, body_len, kind);
	size_t n = kt__enc_frame_seal(w->frame, body_len);
	return emit(w, w->frame, n);
}

static int frame_room(kt_writer *w, size_t body_len)
{
	return grow(&w->frame, &w->frame_cap, kt__frame_size(body_len));
}

uint8_t *kt__writer_body(kt_writer *w, size_t body_len, int *rc)
{
	if (w->finished) {
		*rc = KT_ESTATE;
		return NULL;
	}
	if ((*rc = frame_room(w, body_len)))
		return NULL;
	return w->frame + KT__FRAME_HEAD;
}

int kt__writer_emit(kt_writer *w, uint8_t kind, uint32_t body_len)
{
	return emit_frame(w, kind, body_len);
}

/* A chunk is in the file (or handed to the sink): number it and count it
 * for the summary. */
static void account_chunk(kt_writer *w, struct wthread *t, uint32_t count, size_t raw_len,
			  size_t stored)
{
	t->next_seq++;
	t->written += count;
	w->chunks++;
	w->events += count;
	w->bytes_raw += raw_len;
	w->bytes_stored += stored;
}

int kt_writer_chunk(kt_writer *w, uint32_t thread_id, unsigned codec, int level,
		    const void *events, size_t raw_len)
{
	const uint8_t *ev = events;
	uint32_t count = 0;
	uint64_t first = 0, last = 0;

	if (w->finished)
		return KT_ESTATE;
	if (w->error)
		return w->error;
	if (thread_id == 0 || codec > KT_CODEC_COMPACT_ZSTD || raw_len == 0 || raw_len % 8)
		return -EINVAL;
	if (raw_len > KT_MAX_RAW)
		return KT_ETOOBIG;
	for (size_t at = 0; at < raw_len; count++) {
		long sz = kt__event_check(ev + at, raw_len - at);
		if (sz < 0)
			return -EINVAL;
		if (count == 0)
			first = kt__get64(ev + at + KT_REC_TS);
		last = kt__get64(ev + at + KT_REC_TS);
		at += (size_t)sz;
	}
	return kt__writer_chunk_known(w, thread_id, codec, level, events, raw_len, count, first,
				      last);
}

/*
 * KT_CODEC_LZ4_DELTA's transform (SPEC §4.1): the records with each
 * timestamp replaced by its difference from the one before, into w->delta.
 * Neighbouring timestamps differ in their low bytes only, so LZ4 then finds
 * six zero bytes in each where it found eight that changed.
 */
static int delta_copy(kt_writer *w, const uint8_t *ev, size_t raw_len)
{
	int rc = grow(&w->delta, &w->delta_cap, raw_len);
	if (rc)
		return rc;
	memcpy(w->delta, ev, raw_len);
	uint64_t prev = 0;
	for (size_t at = 0; at + KT_REC_HEAD <= raw_len;) {
		uint64_t ts = kt__get64(ev + at + KT_REC_TS);
		kt__put64(w->delta + at + KT_REC_TS, ts - prev);
		prev = ts;
		at += kt_event_size(kt__get16(ev + at + KT_REC_LEN));
	}
	return 0;
}

/* The raw_len the compact encoders are made for, to take @raw_len. */
static size_t compact_size(size_t raw_len)
{
	return raw_len > COMPACT_FIRST ? raw_len : COMPACT_FIRST;
}

/* Codec @codec's encoder (3 or 4), for @raw_len bytes at @level taken
 * into [0, level_max] (what a level means is the codec's: format/compact.h).
 * Made again only for a larger chunk: a change of level is the codec's
 * enc_level(), which allocates nothing where it can.  0 or -ENOMEM. */
static int compact_enc(kt_writer *w, unsigned codec, size_t raw_len, int level)
{
	const kt__codec *k = kt__codec_of(codec);
	struct wenc *s = &w->enc[codec - KT_CODEC_COMPACT];
	int rc;

	level = level < 0 ? 0 : level > k->level_max ? k->level_max : level;
	if (!s->enc || raw_len > s->max) {
		k->enc_free(s->enc);
		s->enc = NULL;
		if ((rc = k->enc_new(&s->enc, compact_size(raw_len), level)))
			return rc;
		s->max = compact_size(raw_len);
	} else if (level != s->level && (rc = k->enc_level(s->enc, level))) {
		return rc;
	}
	s->level = level;
	return 0;
}

/* Codec @codec's payload of @raw_len bytes at @ev into @payload, at most
 * @raw_len bytes: its length; -ENOSPC, -ERANGE as the codec's encode;
 * -ENOSPC also when its encoder cannot be made. */
static long compact_encode(kt_writer *w, struct wthread *t, unsigned codec, int level,
			   const uint8_t *ev, size_t raw_len, uint8_t *payload)
{
	if (compact_enc(w, codec, raw_len, level))
		return -ENOSPC;
	const kt__codec *k = kt__codec_of(codec);
	void *e = w->enc[codec - KT_CODEC_COMPACT].enc;
	/* Unset after: @t moves when the thread map grows. */
	k->enc_skip(e, t->skip[codec - KT_CODEC_COMPACT]);
	long n = k->encode(e, ev, raw_len, payload, raw_len);
	k->enc_skip(e, NULL);
	return n;
}

/*
 * The payload of a codec 3 or 4 chunk into @payload, which has room for
 * @raw_len bytes: its length, and in *@codec the codec it took.  A chunk
 * the archival codec would shrink past the format's bound goes as codec
 * 3, and one that no codec shrinks (-ENOSPC) is stored raw.  So is one
 * whose encoder cannot be made (no memory): a session keeps every event,
 * only bigger, rather than fail over an optimisation.
 */
static long compact_payload(kt_writer *w, struct wthread *t, unsigned *codec, int level,
			    const uint8_t *ev, size_t raw_len, uint8_t *payload)
{
	long n = -ERANGE;
	if (*codec == KT_CODEC_COMPACT_ZSTD) {
		n = compact_encode(w, t, KT_CODEC_COMPACT_ZSTD, level, ev, raw_len, payload);
		level = 1; /* it was zstd's: codec 3 takes its default */
	}
	if (n == -ERANGE) {
		*codec = KT_CODEC_COMPACT;
		n = compact_encode(w, t, KT_CODEC_COMPACT, level, ev, raw_len, payload);
	}
	if (n == -ENOSPC) {
		*codec = KT_CODEC_NONE;
		memcpy(payload, ev, raw_len);
		n = (long)raw_len;
	}
	return n;
}

/* The writer takes a chunk of @thread_id: its thread's state, or NULL
 * (in *@rc: the writer finished or failed, or no memory). */
static struct wthread *chunk_thread(kt_writer *w, uint32_t thread_id, int *rc)
{
	struct wthread *t = NULL;
	if (w->finished)
		*rc = KT_ESTATE;
	else if (w->error)
		*rc = w->error;
	else if (!(t = thread_get(w, thread_id)))
		*rc = -ENOMEM;
	return t;
}

/* Where a chunk frame of a payload of at most @bound bytes is built: in
 * the output buffer when it fits there (so that the payload is made in
 * the bytes that get written, *@in_place 1), else in the scratch frame;
 * NULL on error (in *@rc). */
static uint8_t *chunk_frame(kt_writer *w, size_t bound, int *in_place, int *rc)
{
	uint8_t *f = reserve(w, kt__frame_size(KT__CHUNK_FIXED + bound));
	*in_place = f != NULL;
	if ((*rc = w->error))
		return NULL;
	if (!f && !(*rc = frame_room(w, KT__CHUNK_FIXED + bound)))
		f = w->frame;
	return f;
}

/* The chunk frame at @f, its payload of @stored bytes in place: prefix,
 * seal, into the output, numbered and counted. */
static int chunk_seal(kt_writer *w, struct wthread *t, uint8_t *f, int in_place,
		      uint32_t thread_id, unsigned codec, size_t raw_len, uint32_t stored,
		      uint32_t count, uint64_t first, uint64_t last)
{
	int rc;
	kt__enc_chunk_prefix(f, thread_id, (uint8_t)codec, t->next_seq, count, (uint32_t)raw_len,
			     stored, first, last);
	size_t n = kt__enc_frame_seal(f, KT__CHUNK_FIXED + stored);
	if (in_place)
		commit(w, n);
	else if ((rc = emit(w, f, n)))
		return rc;
	account_chunk(w, t, count, raw_len, stored);
	return 0;
}

int kt__writer_chunk_known(kt_writer *w, uint32_t thread_id, unsigned codec, int level,
			   const void *events, size_t raw_len, uint32_t count, uint64_t first,
			   uint64_t last)
{
	const uint8_t *ev = events;
	int rc, in_place;

	struct wthread *t = chunk_thread(w, thread_id, &rc);
	if (!t)
		return rc;

	if (codec >= KT_CODEC_COMPACT && raw_len > COMPACT_MAX) {
		codec = KT_CODEC_LZ4_DELTA;
		level = 1;
	}
	/* The compact codecs never store more than raw_len: the chunk goes
	 * raw first. */
	size_t bound = codec == KT_CODEC_LZ4 || codec == KT_CODEC_LZ4_DELTA
			       ? (size_t)LZ4_compressBound((int)raw_len)
			       : raw_len;
	uint8_t *f = chunk_frame(w, bound, &in_place, &rc);
	if (!f)
		return rc;
	uint8_t *payload = f + KT__FRAME_HEAD + KT__CHUNK_FIXED;
	uint32_t stored = (uint32_t)raw_len;
	if (codec == KT_CODEC_LZ4_DELTA) {
		if ((rc = delta_copy(w, ev, raw_len)))
			return rc;
		ev = w->delta;
	}
	if (codec >= KT_CODEC_COMPACT) {
		long n = compact_payload(w, t, &codec, level, ev, raw_len, payload);
		if (n < 0)
			return (int)n;
		stored = (uint32_t)n;
	} else if (codec != KT_CODEC_NONE) {
		int n = LZ4_compress_fast((const char *)ev, (char *)payload, (int)raw_len,
					  (int)bound, level < 1 ? 1 : level);
		if (n <= 0)
			return -EIO;
		stored = (uint32_t)n;
	} else {
		memcpy(payload, ev, raw_len);
	}
	return chunk_seal(w, t, f, in_place, thread_id, codec, raw_len, stored, count, first, last);
}

int kt__writer_chunk_stored(kt_writer *w, uint32_t thread_id, unsigned codec,
			    const void *payload, size_t stored, size_t raw_len, uint32_t count,
			    uint64_t first, uint64_t last)
{
	int rc, in_place;

	struct wthread *t = chunk_thread(w, thread_id, &rc);
	if (!t)
		return rc;
	uint8_t *f = chunk_frame(w, stored, &in_place, &rc);
	if (!f)
		return rc;
	memcpy(f + KT__FRAME_HEAD + KT__CHUNK_FIXED, payload, stored);
	return chunk_seal(w, t, f, in_place, thread_id, codec, raw_len, (uint32_t)stored, count,
			  first, last);
}

int kt__writer_chunk_ref(kt_writer *w, uint32_t thread_id, const void *events, size_t raw_len,
			 uint32_t count, uint64_t first, uint64_t last,
			 void (*done)(void *ctx, int res), void *ctx)
{
	uint8_t prefix[KT__FRAME_HEAD + KT__CHUNK_FIXED], trailer[16] = { 0 };
	int rc;

	if (w->finished)
		rc = KT_ESTATE;
	else if (!w->sink->write_ref)
		rc = -EOPNOTSUPP;
	else
		rc = flush_buf(w);
	struct wthread *t = rc ? NULL : thread_get(w, thread_id);
	if (!rc && !t)
		rc = -ENOMEM;
	if (rc) {
		done(ctx, rc);
		return rc;
	}
	kt__enc_chunk_prefix(prefix, thread_id, KT_CODEC_NONE, t->next_seq, count, (uint32_t)raw_len,
			     (uint32_t)raw_len, first, last);
	/* The trailer is the pad that brings the body to a multiple of 8 and
	 * the checksum, computed over the events where they lie. */
	size_t body = KT__CHUNK_FIXED + raw_len, pad = kt__align8(body) - body;
	kt__put64(trailer + pad,
		  kt__chunk_checksum(prefix, events, (uint32_t)raw_len));
	size_t total = sizeof(prefix) + raw_len + pad + KT__FRAME_TRAILER;
	uint64_t off = w->off;
	w->off += total;
	w->bytes += total;
	account_chunk(w, t, count, raw_len, raw_len);
	rc = w->sink->write_ref(w->sink, prefix, sizeof(prefix), events, raw_len, trailer,
				pad + KT__FRAME_TRAILER, off, done, ctx);
	return set_error(w, rc);
}

void kt__writer_poll(kt_writer *w)
{
	if (w->sink->poll)
		w->sink->poll(w->sink);
}

int kt__writer_backend(const kt_writer *w)
{
	return w->sink->backend;
}

int kt__writer_push(kt_writer *w)
{
	return flush_buf(w);
}

int kt__writer_sync(kt_writer *w, int wait)
{
	int rc = flush_buf(w);
	if (!rc)
		rc = set_error(w, w->sink->sync(w->sink, wait));
	return rc;
}

int kt_writer_name(kt_writer *w, uint32_t id, const char *name, size_t len)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (id == 0 || len == 0 || len > KT_MAX_STRING || memchr(name, 0, len))
		return -EINVAL;
	if ((rc = frame_room(w, KT__NAME_FIXED + len)))
		return rc;
	return emit_frame(w, KT_FRAME_NAME,
			  kt__enc_name_body(w->frame + KT__FRAME_HEAD, id, name, (uint32_t)len));
}

static int bad_str(const char *s, uint32_t len)
{
	return len > KT_MAX_STRING || (len && (!s || memchr(s, 0, len)));
}

int kt_writer_srcloc(kt_writer *w, const kt_srcloc *loc)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (loc->id == 0 || bad_str(loc->file, loc->file_len) ||
	    bad_str(loc->function, loc->function_len))
		return -EINVAL;
	if ((rc = frame_room(w, KT__LOC_FIXED + loc->file_len + loc->function_len)))
		return rc;
	return emit_frame(w, KT_FRAME_SRCLOC, kt__enc_srcloc_body(w->frame + KT__FRAME_HEAD, loc));
}

int kt_writer_category(kt_writer *w, uint32_t id, uint32_t flags)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (id == 0 || flags > (KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP))
		return -EINVAL;
	if ((rc = frame_room(w, KT__CAT_BODY)))
		return rc;
	return emit_frame(w, KT_FRAME_CATEGORY,
			  kt__enc_category_body(w->frame + KT__FRAME_HEAD, id, flags));
}

int kt_writer_track(kt_writer *w, const kt_track_def *t)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (kt__track_bad(t))
		return -EINVAL;
	if ((rc = frame_room(w, KT__TRACK_FIXED + KT__TRACK_PAIR * t->pair_count)))
		return rc;
	return emit_frame(w, KT_FRAME_TRACK, kt__enc_track_body(w->frame + KT__FRAME_HEAD, t));
}

int kt_writer_thread_in(kt_writer *w, uint32_t thread_id, uint32_t os_tid, const char *name,
			uint32_t process)
{
	size_t len = name ? strlen(name) : 0;
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (thread_id == 0 || len > KT_MAX_STRING)
		return -EINVAL;
	if ((rc = frame_room(w, KT__THREAD_FIXED + len)))
		return rc;
	return emit_frame(w, KT_FRAME_THREAD,
			  kt__enc_thread_body(w->frame + KT__FRAME_HEAD, thread_id, os_tid, name,
					      (uint32_t)len, process));
}

int kt_writer_thread(kt_writer *w, uint32_t thread_id, uint32_t os_tid, const char *name)
{
	return kt_writer_thread_in(w, thread_id, os_tid, name, 0);
}

int kt_writer_process(kt_writer *w, const kt_process_def *p)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (p->name_len > KT_MAX_STRING || p->cmdline_len > KT_MAX_STRING ||
	    (p->name_len && (!p->name || memchr(p->name, 0, p->name_len))) ||
	    (p->cmdline_len && !p->cmdline) || p->flags & ~KT__PROCESS_FLAGS)
		return -EINVAL;
	if ((rc = frame_room(w, KT__PROC_FIXED + (size_t)p->name_len + p->cmdline_len)))
		return rc;
	return emit_frame(w, KT_FRAME_PROCESS, kt__enc_process_body(w->frame + KT__FRAME_HEAD, p));
}

int kt_writer_drop(kt_writer *w, uint32_t thread_id, uint64_t count, uint64_t first_ts,
		   uint64_t last_ts)
{
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (thread_id == 0 || count == 0)
		return -EINVAL;
	struct wthread *t = thread_get(w, thread_id);
	if (!t)
		return -ENOMEM;
	if ((rc = frame_room(w, KT__DROP_BODY)))
		return rc;
	rc = emit_frame(w, KT_FRAME_DROP,
			kt__enc_drop_body(w->frame + KT__FRAME_HEAD, thread_id, count, first_ts,
					  last_ts));
	if (rc)
		return rc;
	t->dropped += count;
	w->dropped += count;
	return 0;
}

int kt_writer_finish(kt_writer *w, const kt_file_summary *extra)
{
	kt_file_summary s;
	int rc;

	if (w->finished)
		return KT_ESTATE;
	if (extra)
		s = *extra;
	else
		memset(&s, 0, sizeof(s));
	s.events_written = w->events;
	s.events_dropped = w->dropped;
	s.chunks = w->chunks;
	s.bytes_raw = w->bytes_raw;
	s.bytes_stored = w->bytes_stored;
	kt__idmap_sort(&w->threads);
	s.thread_count = (uint32_t)w->threads.len;

	kt_summary_thread *rows = calloc(w->threads.len ? w->threads.len : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < w->threads.len; i++) {
		const struct wthread *t = KT__IDMAP_AT(&w->threads, struct wthread, i);
		rows[i].thread_id = t->thread_id;
		rows[i].written = t->written;
		rows[i].dropped = t->dropped;
	}
	s.threads = rows;
	uint32_t blen = kt__summary_body_len(s.thread_count);
	rc = frame_room(w, blen);
	if (!rc)
		rc = emit_frame(w, KT_FRAME_SUMMARY,
				kt__enc_summary_body(w->frame + KT__FRAME_HEAD, &s));
	free(rows);
	if (!rc)
		rc = flush_buf(w);
	if (!rc)
		w->finished = 1;
	return rc ? rc : w->error;
}

/* Hand the buffered bytes to the sink and wait for every write in flight;
 * the sink reports their errors. */
static int sink_done(kt_writer *w)
{
	int rc = w->buf_len ? flush_buf(w) : w->error;
	rc = set_error(w, w->sink->sync(w->sink, -1));
	return rc ? rc : w->error;
}

int kt__writer_release(kt_writer *w, kt__sink **sink)
{
	*sink = NULL;
	if (!w)
		return 0;
	int rc = 0;
	if (w->sink) {
		rc = sink_done(w);
		*sink = w->sink;
		w->sink = NULL;
	}
	int crc = kt_writer_close(w);
	return rc ? rc : crc;
}

int kt_writer_close(kt_writer *w)
{
	if (!w)
		return 0;
	int rc = 0;
	if (w->sink) {
		rc = sink_done(w);
		w->sink->close(w->sink);
	}
	if (w->own_fd && close(w->fd) < 0 && !rc)
		rc = -errno;
	free(w->frame);
	free(w->delta);
	for (unsigned i = 0; i < KT__CODEC_TABLES; i++)
		kt__codec_of(KT_CODEC_COMPACT + i)->enc_free(w->enc[i].enc);
	kt__idmap_free(&w->threads);
	free(w);
	return rc;
}

uint64_t kt_writer_get_bytes(const kt_writer *w)
{
	return w->bytes;
}
