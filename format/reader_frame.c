/*
 * The reader's frame decoder: kt_reader_next_frame() and the checks of
 * each frame kind's body (SPEC §3, §4).  Every check follows the SPEC in
 * the order it gives, so a given corruption always produces the same error
 * at the same offset.  Nothing sized by the file is allocated before the
 * file has been shown to hold the bytes (frame bodies) or the SPEC's bound
 * has been checked (decoded chunks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include "format/compact.h"
#include "format/reader_impl.h"

/* ---- per-thread accounting ------------------------------------------- */

/* The accounting of thread @tid into *@out: 0, KT_ETOOBIG past
 * KT_MAX_SUMMARY_THREADS threads, or -ENOMEM. */
static int acct_get(kt_reader *r, uint32_t tid, struct kt__thread_acct **out)
{
	struct kt__idmap *m = &r->acct;
	/* Chunks of one thread tend to come in runs: try the last hit first. */
	if (r->acct_hint < m->len) {
		struct kt__thread_acct *a = KT__IDMAP_AT(m, struct kt__thread_acct, r->acct_hint);
		if (a->thread_id == tid) {
			*out = a;
			return 0;
		}
	}
	int rc = kt__idmap_get(m, tid, KT_MAX_SUMMARY_THREADS, (void **)out);
	if (rc < 0)
		return rc;
	r->acct_hint = (size_t)((uint8_t *)*out - m->items) / sizeof(**out);
	if (rc > 0) {
		size_t bytes = kt__idmap_bytes(m);
		kt__reader_account(r, (int64_t)bytes - (int64_t)r->acct_bytes);
		r->acct_bytes = bytes;
	}
	return 0;
}

/* acct_get() for a frame at @off whose thread id sits at @tid_off. */
static int acct_frame(kt_reader *r, uint32_t tid, uint64_t off, uint64_t tid_off,
		      struct kt__thread_acct **out)
{
	int rc = acct_get(r, tid, out);
	if (rc == -ENOMEM)
		return kt__rd_stop(r, rc, off, "the table of threads");
	if (rc)
		return kt__rd_stop(r, KT_ETOOBIG, tid_off, "more than %u threads",
				   KT_MAX_SUMMARY_THREADS);
	return 0;
}

/* ---- bodies ----------------------------------------------------------- */

static int nonzero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 1;
	return 0;
}

/* reader_impl.h */
int kt__rd_body_str(kt_reader *r, uint64_t off, const uint8_t *s, uint32_t n, uint64_t at,
		    const char *what, const char **out)
{
	if (memchr(s, 0, n))
		return kt__rd_stop(r, KT_EFRAME, at, "%s holds a zero byte", what);
	if (kt__rd_grow(r, (void **)&r->str_buf, &r->str_cap, (size_t)n + 1))
		return kt__rd_stop(r, -ENOMEM, off, "a %s", what);
	memcpy(r->str_buf, s, n);
	r->str_buf[n] = 0;
	*out = r->str_buf;
	return 0;
}

/* A chunk as kt_trace_frame holds it. */
typedef __typeof__(((kt_trace_frame *)0)->u.chunk) chunk_t;

/* The chunk's fixed fields into *@c, checked (SPEC §4.1). */
static int chunk_fields(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			chunk_t *c)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	uint32_t version = r->hdr.format_version;

	c->thread_id = kt__get32(b + KT__CHUNK_TID);
	c->codec = b[KT__CHUNK_CODEC];
	c->seq = kt__get64(b + KT__CHUNK_SEQ);
	c->event_count = kt__get32(b + KT__CHUNK_COUNT);
	c->raw_len = kt__get32(b + KT__CHUNK_RAW);
	c->first_ts = kt__get64(b + KT__CHUNK_FIRST);
	c->last_ts = kt__get64(b + KT__CHUNK_LAST);
	c->stored_len = blen - KT__CHUNK_FIXED;
	if (c->thread_id == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__CHUNK_TID, "chunk thread_id is 0");
	if (c->codec > kt__max_codec(version))
		return kt__rd_stop(r, KT_ECODEC, boff + KT__CHUNK_CODEC,
				   "codec %u (version %u knows: 0 none, 1 lz4%s%s)", c->codec, version,
				   version > 1 ? ", 2 lz4 delta" : "",
				   version > 2 ? ", 3 compact, 4 compact-zstd" : "");
	if (nonzero(b + KT__CHUNK_PAD, KT__CHUNK_SEQ - KT__CHUNK_PAD))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__CHUNK_PAD, "chunk reserved bytes");
	if (c->event_count == 0)
		return kt__rd_stop(r, KT_ECOUNT, boff + KT__CHUNK_COUNT, "event_count is 0");
	if (c->raw_len > KT_MAX_RAW)
		return kt__rd_stop(r, KT_ETOOBIG, boff + KT__CHUNK_RAW,
				   "raw_len %u over the 64 MiB limit", c->raw_len);
	if (c->raw_len < KT_REC_HEAD || c->raw_len % 8)
		return kt__rd_stop(r, KT_ERAWLEN, boff + KT__CHUNK_RAW,
				   "raw_len %u is not a multiple of 8 of at least 16", c->raw_len);
	return 0;
}

/* A compact payload (codec 3, or 4 under zstd) into r->raw_buf.  The
 * bound on the ratio comes first: past it a few stored bytes could ask
 * for 64 MiB of decoding. */
static int chunk_compact(kt_reader *r, uint64_t off, const uint8_t *payload, chunk_t *c)
{
	uint64_t raw_at = off + KT__FRAME_HEAD + KT__CHUNK_RAW;
	uint32_t raw_len = c->raw_len, stored = c->stored_len;
	const kt__codec *k = kt__codec_of(c->codec);
	void **dec = &r->dec[c->codec - KT_CODEC_COMPACT];

	if (!kt__compact_ratio_ok(raw_len, stored))
		return kt__rd_stop(r, KT_ERAWLEN, raw_at,
				   "raw_len %u is more than 1024 x %u + 4096 compact bytes may give",
				   raw_len, stored);
	/* The decoder is made on first use. */
	if (kt__rd_grow(r, (void **)&r->raw_buf, &r->raw_cap, raw_len) ||
	    (!*dec && k->dec_new(dec)))
		return kt__rd_stop(r, -ENOMEM, off, "decoded chunk buffer");
	int rc = k->decode(*dec, payload, stored, r->raw_buf, raw_len, c->event_count);
	size_t held = 0;
	for (unsigned i = 0; i < KT__CODEC_TABLES; i++)
		held += kt__codec_of(KT_CODEC_COMPACT + i)->dec_bytes(r->dec[i]);
	kt__reader_account(r, (int64_t)held - (int64_t)r->dec_bytes);
	r->dec_bytes = held;
	if (rc == -ENOMEM)
		return kt__rd_stop(r, rc, off, "the compact decoder's buffers");
	if (rc)
		return kt__rd_stop(r, rc, off + KT__FRAME_HEAD + KT__CHUNK_FIXED,
				   "codec %u payload of %u bytes (%u events, raw_len %u)", c->codec,
				   stored, c->event_count, raw_len);
	c->events = r->raw_buf;
	return 0;
}

/* The payload at @payload as records: in place when raw, else decoded
 * into r->raw_buf.  Sets c->events. */
static int chunk_payload(kt_reader *r, uint64_t off, const uint8_t *payload, chunk_t *c)
{
	uint64_t raw_at = off + KT__FRAME_HEAD + KT__CHUNK_RAW;
	uint32_t raw_len = c->raw_len, stored = c->stored_len;

	if (c->codec >= KT_CODEC_COMPACT)
		return chunk_compact(r, off, payload, c);
	if (c->codec == KT_CODEC_NONE) {
		if (stored != raw_len)
			return kt__rd_stop(r, KT_ERAWLEN, raw_at, "raw_len %u but %u payload bytes",
					   raw_len, stored);
		c->events = payload;
		return 0;
	}
	if (stored == 0 || (uint64_t)raw_len > 255ull * stored + 64)
		return kt__rd_stop(r, KT_ERAWLEN, raw_at,
				   "raw_len %u is more than %u LZ4 bytes can expand to", raw_len,
				   stored);
	if (kt__rd_grow(r, (void **)&r->raw_buf, &r->raw_cap, raw_len))
		return kt__rd_stop(r, -ENOMEM, off, "decoded chunk buffer");
	int n = LZ4_decompress_safe((const char *)payload, (char *)r->raw_buf, (int)stored,
				    (int)raw_len);
	if (n != (int)raw_len)
		return kt__rd_stop(r, KT_ERAWLEN, raw_at,
				   "lz4 payload does not decode to raw_len %u bytes", raw_len);
	c->events = r->raw_buf;
	return 0;
}

/* Count @n steps back in time in the chunk frame at @off. */
static void ts_went_back(kt_reader *r, uint64_t off, uint64_t n)
{
	if (n && !r->ts_back)
		r->ts_back_off = off;
	r->ts_back += n;
}

/* Walk the decoded records: undo the delta codec, check each record, and
 * hold the count and the first and last timestamps to the fixed fields. */
static int chunk_records(kt_reader *r, uint64_t off, chunk_t *c)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	const uint8_t *events = c->events;
	uint32_t raw_len = c->raw_len, n = 0;
	uint64_t ev_first = 0, ev_last = 0, ts = 0, back = 0;
	/* With the delta codec, events are our raw_buf, written in place. */
	uint8_t *undo = c->codec == KT_CODEC_LZ4_DELTA ? r->raw_buf : NULL;

	for (size_t at = 0; at < raw_len; n++) {
		const uint8_t *p = events + at;
		if (undo && raw_len - at >= KT_REC_TS + 8) {
			/* Each record stored its timestamp minus the one before
			 * (SPEC §4.1); wrapping sums undo wrapping differences. */
			ts += kt__get64(p + KT_REC_TS);
			kt__put64(undo + at + KT_REC_TS, ts);
		}
		long sz = kt__event_check_inline(p, raw_len - at);
		if (sz < 0)
			return kt__rd_stop(r, KT_EEVENT, off,
					   "chunk of thread %u, event %u at payload byte %zu",
					   c->thread_id, n, at);
		uint64_t t = kt__get64(p + KT_REC_TS);
		if (n == 0)
			ev_first = t;
		else
			back += t < ev_last;
		ev_last = t;
		at += (size_t)sz;
	}
	if (n != c->event_count)
		return kt__rd_stop(r, KT_ECOUNT, boff + KT__CHUNK_COUNT,
				   "event_count %u but the payload holds %u", c->event_count, n);
	if (ev_first != c->first_ts || ev_last != c->last_ts)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__CHUNK_FIRST,
				   "first/last ts do not match the events");
	if (!r->rereading)
		ts_went_back(r, off, back);
	return 0;
}

/* Count the chunk for the summary check, its sequence number first. */
static int chunk_account(kt_reader *r, uint64_t off, const chunk_t *c)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	struct kt__thread_acct *a;
	int rc = acct_frame(r, c->thread_id, off, boff + KT__CHUNK_TID, &a);
	if (rc)
		return rc;
	if (a->has_seq && c->seq <= a->last_seq)
		return kt__rd_stop(r, KT_EORDER, boff + KT__CHUNK_SEQ,
				   "thread %u chunk_seq %llu after %llu", c->thread_id,
				   (unsigned long long)c->seq, (unsigned long long)a->last_seq);
	a->has_seq = 1;
	a->last_seq = c->seq;
	ts_went_back(r, off, a->has_ts && c->first_ts < a->last_ts);
	a->has_ts = 1;
	a->last_ts = c->last_ts;
	a->written += c->event_count;
	r->bytes_raw += c->raw_len;
	r->bytes_stored += c->stored_len;
	r->st.chunks++;
	r->st.events += c->event_count;
	return 0;
}

static int decode_chunk(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			kt_trace_frame *f)
{
	chunk_t c = { 0 };
	int rc;

	if ((rc = chunk_fields(r, off, b, blen, &c)))
		return rc;
	/* With headers only, the checksum held; the payload is checked on
	 * load. */
	if (!r->headers_only && ((rc = chunk_payload(r, off, b + KT__CHUNK_FIXED, &c)) ||
				 (rc = chunk_records(r, off, &c))))
		return rc;
	if (!r->rereading && (rc = chunk_account(r, off, &c)))
		return rc;
	f->u.chunk = c;
	return 0;
}

/* The summary's fixed part, checked on its own and against the totals of
 * the file. */
/* Frames were skipped before the summary (kt_reader_set_salvage()): its
 * totals count what was written, which the file no longer holds whole, so
 * they are taken as they are rather than held to the frames read. */
static int salvaged(const kt_reader *r)
{
	return r->salvage && r->skipped.frames;
}

static int summary_fields(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			  kt_file_summary *s)
{
	uint64_t boff = off + KT__FRAME_HEAD;

	s->flags = kt__get32(b + KT__SUM_FLAGS);
	s->thread_count = kt__get32(b + KT__SUM_THREADS);
	if (s->thread_count > KT_MAX_SUMMARY_THREADS ||
	    blen != kt__summary_body_len(s->thread_count))
		return kt__rd_stop(r, KT_EFRAME, boff + KT__SUM_THREADS,
				   "thread_count %u does not fit a %u-byte body", s->thread_count,
				   blen);
	if (s->flags & ~(KT_SUMMARY_RECOVERED | KT_SUMMARY_IO_ERROR))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__SUM_FLAGS,
				   "unknown summary flags 0x%x", s->flags);
	s->events_written = kt__get64(b + KT__SUM_WRITTEN);
	s->events_dropped = kt__get64(b + KT__SUM_DROPPED);
	s->chunks = kt__get64(b + KT__SUM_CHUNKS);
	s->bytes_raw = kt__get64(b + KT__SUM_RAW);
	s->bytes_stored = kt__get64(b + KT__SUM_STORED);
	s->end_wall_ns = kt__get64(b + KT__SUM_END_WALL);
	s->end_mono_ns = kt__get64(b + KT__SUM_END_MONO);
	s->clock_ticks1 = kt__get64(b + KT__SUM_TICKS1);
	s->clock_ns1 = kt__get64(b + KT__SUM_NS1);
	s->io_backend = b[KT__SUM_IO];
	if (nonzero(b + KT__SUM_IO_PAD, KT__SUM_IO_ERROR - KT__SUM_IO_PAD))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__SUM_IO_PAD, "summary reserved bytes");
	if (s->io_backend > KT_IO_PWRITE)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__SUM_IO, "io_backend %u", s->io_backend);
	s->io_error = (int32_t)kt__get32(b + KT__SUM_IO_ERROR);
	if (!salvaged(r) &&
	    (s->events_written != r->st.events || s->chunks != r->st.chunks ||
	    s->bytes_raw != r->bytes_raw || s->bytes_stored != r->bytes_stored ||
	    s->events_dropped != r->st.dropped))
		return kt__rd_stop(
			r, KT_ESUMMARY, boff + KT__SUM_WRITTEN,
			"totals %llu written/%llu dropped/%llu chunks; the file holds %llu/%llu/%llu",
			(unsigned long long)s->events_written, (unsigned long long)s->events_dropped,
			(unsigned long long)s->chunks, (unsigned long long)r->st.events,
			(unsigned long long)r->st.dropped, (unsigned long long)r->st.chunks);
	return 0;
}

/* The per-thread rows after the fixed part of body @b, each held to the
 * file's own accounting of that thread. */
static int summary_rows(kt_reader *r, uint64_t off, const uint8_t *b, kt_file_summary *s)
{
	uint64_t boff = off + KT__FRAME_HEAD;

	if (!salvaged(r) && s->thread_count != r->acct.len)
		return kt__rd_stop(r, KT_ESUMMARY, boff + KT__SUM_THREADS,
				   "%u thread rows; the file has %zu threads", s->thread_count,
				   r->acct.len);
	free(r->rows);
	kt__reader_account(r, -(int64_t)r->rows_bytes);
	r->rows_bytes = (s->thread_count ? s->thread_count : 1) * sizeof(*r->rows);
	r->rows = kt__calloc(1, r->rows_bytes);
	if (!r->rows) {
		r->rows_bytes = 0;
		return kt__rd_stop(r, -ENOMEM, off, "the summary's rows");
	}
	kt__reader_account(r, (int64_t)r->rows_bytes);
	/* The rows come in thread_id order; so does the table, once sorted.
	 * The summary is the last frame: no thread is added after it. */
	kt__idmap_sort(&r->acct);
	r->acct_hint = 0;
	const uint8_t *row = b + KT__SUMMARY_FIXED;
	for (uint32_t i = 0; i < s->thread_count; i++, row += KT__SUMMARY_ROW) {
		uint64_t at = boff + KT__SUMMARY_FIXED + (uint64_t)i * KT__SUMMARY_ROW;
		kt_summary_thread *t = &r->rows[i];
		t->thread_id = kt__get32(row + KT__ROW_TID);
		t->written = kt__get64(row + KT__ROW_WRITTEN);
		t->dropped = kt__get64(row + KT__ROW_DROPPED);
		if (kt__get32(row + KT__ROW_PAD))
			return kt__rd_stop(r, KT_ERESERVED, at + KT__ROW_PAD,
					   "summary row reserved bytes");
		if (salvaged(r))
			continue;
		const struct kt__thread_acct *a = KT__IDMAP_AT(&r->acct, struct kt__thread_acct, i);
		if (t->thread_id != a->thread_id || t->written != a->written ||
		    t->dropped != a->dropped)
			return kt__rd_stop(r, KT_ESUMMARY, at,
					   "row %u says thread %u wrote %llu dropped %llu; the file has thread %u %llu/%llu",
					   i, t->thread_id, (unsigned long long)t->written,
					   (unsigned long long)t->dropped, a->thread_id,
					   (unsigned long long)a->written, (unsigned long long)a->dropped);
	}
	s->threads = r->rows;
	return 0;
}

static int decode_summary(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			  kt_trace_frame *f)
{
	int rc = summary_fields(r, off, b, blen, &f->u.summary);
	if (rc)
		return rc;
	return summary_rows(r, off, b, &f->u.summary);
}

static int decode_name(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
		       kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	uint32_t id = kt__get32(b + KT__NAME_ID), len = kt__get32(b + KT__NAME_LEN);
	if (id == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__NAME_ID, "name id 0");
	if (len == 0 || len > KT_MAX_STRING || len != blen - KT__NAME_FIXED)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__NAME_LEN,
				   "name length %u in a %u-byte body", len, blen);
	f->u.name.id = id;
	f->u.name.len = len;
	return kt__rd_body_str(r, off, b + KT__NAME_FIXED, len, boff + KT__NAME_FIXED, "name",
			&f->u.name.str);
}

static int decode_thread(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			 kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	uint32_t tid = kt__get32(b + KT__THREAD_TID);
	uint32_t len = kt__get32(b + KT__THREAD_NAME_LEN);
	if (tid == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__THREAD_TID, "thread_id 0");
	if (len > KT_MAX_STRING || len != blen - KT__THREAD_FIXED)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__THREAD_NAME_LEN,
				   "thread name length %u in a %u-byte body", len, blen);
	/* Version 4 names the thread's process where earlier versions kept
	 * four reserved bytes. */
	f->u.thread.process = kt__get32(b + KT__THREAD_PROCESS);
	if (f->u.thread.process && r->hdr.format_version < 4)
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__THREAD_PAD,
				   "thread entry reserved bytes");
	f->u.thread.thread_id = tid;
	f->u.thread.os_tid = kt__get32(b + KT__THREAD_OS_TID);
	f->u.thread.name_len = len;
	return kt__rd_body_str(r, off, b + KT__THREAD_FIXED, len, boff + KT__THREAD_FIXED,
			"thread name", &f->u.thread.name);
}

/* SPEC §4.7: both strings into the reader's string buffer, each
 * NUL-terminated. */
static int decode_srcloc(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			 kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	kt_srcloc *l = &f->u.srcloc;
	l->id = kt__get32(b + KT__LOC_ID);
	l->line = kt__get32(b + KT__LOC_LINE);
	l->category = kt__get32(b + KT__LOC_CATEGORY);
	l->file_len = kt__get32(b + KT__LOC_FILE_LEN);
	l->function_len = kt__get32(b + KT__LOC_FUNC_LEN);
	if (l->id == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__LOC_ID, "srcloc id 0");
	int rc;
	if ((rc = kt__rd_two_lengths(r, boff + KT__LOC_FILE_LEN, l->file_len, l->function_len,
				     blen, KT__LOC_FIXED, "srcloc")))
		return rc;
	if (kt__get32(b + KT__LOC_PAD))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__LOC_PAD, "srcloc reserved bytes");
	size_t n = blen - KT__LOC_FIXED;
	if (memchr(b + KT__LOC_FIXED, 0, n))
		return kt__rd_stop(r, KT_EFRAME, boff + KT__LOC_FIXED, "srcloc holds a zero byte");
	return kt__rd_two_strings(r, off, b + KT__LOC_FIXED, l->file_len, l->function_len,
				  "srcloc", &l->file, &l->function);
}

int kt__rd_two_lengths(kt_reader *r, uint64_t at, uint32_t a, uint32_t b, uint32_t blen,
		       uint32_t fixed, const char *what)
{
	if (a > KT_MAX_STRING || b > KT_MAX_STRING || (uint64_t)a + b != blen - fixed)
		return kt__rd_stop(r, KT_EFRAME, at, "%s lengths %u and %u in a %u-byte body",
				   what, a, b, blen);
	return 0;
}

int kt__rd_two_strings(kt_reader *r, uint64_t off, const uint8_t *s, uint32_t a, uint32_t b,
		       const char *what, const char **sa, const char **sb)
{
	size_t n = (size_t)a + b;
	if (kt__rd_grow(r, (void **)&r->str_buf, &r->str_cap, n + 2))
		return kt__rd_stop(r, -ENOMEM, off, "a %s", what);
	memcpy(r->str_buf, s, a);
	r->str_buf[a] = 0;
	memcpy(r->str_buf + a + 1, s + a, b);
	r->str_buf[n + 1] = 0;
	*sa = r->str_buf;
	*sb = r->str_buf + a + 1;
	return 0;
}

const kt_srcloc *kt_trace_frame_get_srcloc(const kt_trace_frame *f)
{
	return f && f->kind == KT_FRAME_SRCLOC ? &f->u.srcloc : NULL;
}

static int decode_category(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			   kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	if (blen != KT__CAT_BODY)
		return kt__rd_stop(r, KT_EFRAME, off, "category body is %u bytes, not %u", blen,
				   KT__CAT_BODY);
	f->u.category.id = kt__get32(b + KT__CAT_ID);
	f->u.category.flags = kt__get32(b + KT__CAT_FLAGS);
	if (f->u.category.id == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__CAT_ID, "category id 0");
	if (f->u.category.flags & ~(KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__CAT_FLAGS,
				   "category flags 0x%x", f->u.category.flags);
	return 0;
}

static int decode_drop(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
		       kt_trace_frame *f)
{
	uint64_t boff = off + KT__FRAME_HEAD;
	struct kt__thread_acct *a;

	if (blen != KT__DROP_BODY)
		return kt__rd_stop(r, KT_EFRAME, off, "drop body is %u bytes, not %u", blen,
				   KT__DROP_BODY);
	uint32_t tid = kt__get32(b + KT__DROP_TID);
	uint64_t count = kt__get64(b + KT__DROP_COUNT);
	if (tid == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__DROP_TID, "drop thread_id 0");
	if (kt__get32(b + KT__DROP_PAD))
		return kt__rd_stop(r, KT_ERESERVED, boff + KT__DROP_PAD, "drop reserved bytes");
	if (count == 0)
		return kt__rd_stop(r, KT_EFRAME, boff + KT__DROP_COUNT, "drop count 0");
	int rc = acct_frame(r, tid, off, boff + KT__DROP_TID, &a);
	if (rc)
		return rc;
	a->dropped += count;
	r->st.dropped += count;
	f->u.drop.thread_id = tid;
	f->u.drop.count = count;
	f->u.drop.first_ts = kt__get64(b + KT__DROP_FIRST);
	f->u.drop.last_ts = kt__get64(b + KT__DROP_LAST);
	return 0;
}

typedef int (*decode_fn)(kt_reader *r, uint64_t off, const uint8_t *b, uint32_t blen,
			 kt_trace_frame *f);

/* Per kind this reader knows: the fixed part of its body, which a shorter
 * body lacks (a drop record's body has one size, which decode_drop()
 * checks), and its decoder. */
static const struct {
	uint32_t min;
	decode_fn decode;
} kinds[] = {
	[KT_FRAME_CHUNK] = { KT__CHUNK_FIXED, decode_chunk },
	[KT_FRAME_NAME] = { KT__NAME_FIXED, decode_name },
	[KT_FRAME_THREAD] = { KT__THREAD_FIXED, decode_thread },
	[KT_FRAME_DROP] = { 0, decode_drop },
	[KT_FRAME_SUMMARY] = { KT__SUMMARY_FIXED, decode_summary },
	[KT_FRAME_SRCLOC] = { KT__LOC_FIXED, decode_srcloc },
	[KT_FRAME_CATEGORY] = { 0, decode_category },
	[KT_FRAME_TRACK] = { 0, kt__rd_decode_track },
	[KT_FRAME_PROCESS] = { 0, kt__rd_decode_process },
	[KT_FRAME_STACK] = { KT__STACK_FIXED, kt__rd_decode_stack },
	[KT_FRAME_MAP] = { KT__MAP_FIXED, kt__rd_decode_map },
};

/* The body of a frame of @kind: 0, 1 for a kind this reader does not
 * know (skipped), or a negative code. */
static int decode_body(kt_reader *r, uint64_t off, uint8_t kind, const uint8_t *b,
		       uint32_t blen, kt_trace_frame *f)
{
	if (kind >= sizeof(kinds) / sizeof(kinds[0]) || !kinds[kind].decode ||
	    (kind == KT_FRAME_PROCESS && r->hdr.format_version < 4) ||
	    ((kind == KT_FRAME_STACK || kind == KT_FRAME_MAP) &&
	     r->hdr.format_version < KT__SAMPLE_VERSION))
		return 1;
	if (blen < kinds[kind].min)
		return kt__rd_stop(r, KT_EFRAME, off, "%s body is %u bytes, under %u",
				   kt_frame_kind_name(kind), blen, kinds[kind].min);
	return kinds[kind].decode(r, off, b, blen, f);
}

/* ---- frames ----------------------------------------------------------- */

/* The file ends at @off before a summary: a valid prefix, not an error. */
static int cut(kt_reader *r, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int cut(kt_reader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	r->st.truncated = 1;
	r->st.valid_end = off;
	r->done = 1;
	va_start(ap, fmt);
	kt__rd_vfail(&r->err, KT_ETRUNCATED, off, fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * The frame at @off, checked as SPEC §3 lists, up to its body: *@p points
 * at its bytes and *@total is its size.  1 with a frame; 0 when the file
 * is cut inside it; a negative code.
 */
static int frame_bytes(kt_reader *r, uint64_t off, const uint8_t **p, uint64_t *total)
{
	uint64_t left = r->size - off;
	int rc;

	/* Zero bytes left without a summary is a cut at a frame boundary; a
	 * few bytes left is a cut inside a head. */
	if (left < KT__FRAME_HEAD)
		return cut(r, off, "no session summary; %llu bytes of a frame head",
			   (unsigned long long)left);
	if ((rc = kt__rd_bytes(r, off, KT__FRAME_HEAD, p)))
		return kt__rd_stop(r, rc, off, "reading a frame head");
	uint32_t blen = kt__get32(*p + KT__FRAME_LEN);
	uint8_t kind = (*p)[KT__FRAME_KIND], flags = (*p)[KT__FRAME_FLAGS];
	uint16_t check = kt__get16(*p + KT__FRAME_CHECK);
	if (check != kt__head_check(*p))
		return kt__rd_stop(r, KT_EFRAMEHEAD, off,
				   "head check %04x, computed %04x (length %u, kind %u)", check,
				   kt__head_check(*p), blen, kind);
	if (blen > KT_MAX_FRAME_BODY)
		return kt__rd_stop(r, KT_EFRAMELEN, off, "body_len %u over the 64 MiB limit", blen);
	*total = kt__frame_size(blen);
	if (*total > left)
		return cut(r, off, "a %llu-byte %s frame is cut after %llu bytes",
			   (unsigned long long)*total, kt_frame_kind_name(kind),
			   (unsigned long long)left);
	if ((rc = kt__rd_bytes(r, off, (size_t)*total, p)))
		return kt__rd_stop(r, rc, off, "reading a frame");
	size_t padded = KT__FRAME_HEAD + kt__align8(blen);
	uint64_t want = kt__get64(*p + padded), got = kt__xxh3(*p, padded);
	if (want != got)
		return kt__rd_stop(r, KT_ECHECKSUM, off, "%s frame: stored %016llx, computed %016llx",
				   kt_frame_kind_name(kind), (unsigned long long)want,
				   (unsigned long long)got);
	if (kt__frame_kind_known(kind) && flags)
		return kt__rd_stop(r, KT_ERESERVED, off + KT__FRAME_FLAGS, "frame flags 0x%x", flags);
	if (nonzero(*p + KT__FRAME_HEAD + blen, padded - KT__FRAME_HEAD - blen))
		return kt__rd_stop(r, KT_ERESERVED, off + KT__FRAME_HEAD + blen, "frame pad not zero");
	return 1;
}

/* The summary ends the pass; anything after it is an error, reported by
 * the next call so that the summary itself is returned first. */
static void end_at_summary(kt_reader *r)
{
	r->st.complete = 1;
	r->done = 1;
	if (r->pos != r->size) {
		r->st.error = KT_ETRAILING;
		r->st.error_offset = r->pos;
		kt__rd_fail(&r->err, KT_ETRAILING, r->pos, "%llu bytes follow the summary",
			    (unsigned long long)(r->size - r->pos));
	}
}

/*
 * Where reading goes on after a fault in the frame at @off: past it, when
 * its head checked and gave its size @total; else at the next 8-byte
 * boundary (every frame starts on one) whose head checks, or the end.
 */
static uint64_t resync(kt_reader *r, uint64_t off, uint64_t total)
{
	if (total && total <= r->size - off)
		return off + total;
	for (uint64_t at = off + 8; at + KT__FRAME_HEAD <= r->size; at += 8) {
		const uint8_t *h;
		if (kt__rd_bytes(r, at, KT__FRAME_HEAD, &h))
			break;
		if (kt__get16(h + KT__FRAME_CHECK) == kt__head_check(h) &&
		    kt__get32(h + KT__FRAME_LEN) <= KT_MAX_FRAME_BODY)
			return at;
	}
	return r->size;
}

/* With salvage on, skip the frame at @off that failed with @code: 1 to
 * go on reading, 0 to stop as without salvage.  A re-read (a chunk
 * loaded by the merge) is the merge's to skip. */
static int skip_bad(kt_reader *r, int code, uint64_t off, uint64_t total)
{
	if (!r->salvage || r->rereading)
		return 0;
	uint64_t next = resync(r, off, total);
	if (!kt__reader_salvage(r, code, off, next - off))
		return 0;
	r->st.error = 0;
	r->done = 0;
	r->pos = next;
	return 1;
}

int kt_reader_next_frame(kt_reader *r, kt_trace_frame *f)
{
	const uint8_t *p;
	int rc;

	for (;;) {
		if (r->st.error)
			return r->st.error;
		if (r->done)
			return 0;
		uint64_t off = r->pos, total = 0;
		if ((rc = frame_bytes(r, off, &p, &total)) <= 0) {
			if (rc < 0 && skip_bad(r, rc, off, total))
				continue;
			return rc;
		}
		memset(f, 0, sizeof(*f));
		f->offset = off;
		f->body_len = kt__get32(p + KT__FRAME_LEN);
		f->kind = p[KT__FRAME_KIND];
		rc = decode_body(r, off, f->kind, p + KT__FRAME_HEAD, f->body_len, f);
		if (rc < 0 && skip_bad(r, rc, off, total))
			continue;
		if (rc < 0)
			return rc;
		r->pos = off + total;
		r->st.valid_end = r->pos;
		if (rc == 1) {
			r->st.unknown_frames++;
			continue;
		}
		r->st.frames++;
		if (f->kind == KT_FRAME_SUMMARY)
			end_at_summary(r);
		return 1;
	}
}

/* ---- the events of a chunk --------------------------------------------- */

void kt_chunk_iter_init(kt_chunk_iter *it, const kt_trace_frame *f)
{
	if (f->kind != KT_FRAME_CHUNK || !f->u.chunk.events) {
		it->pos = it->end = NULL;
		it->thread_id = 0;
		return;
	}
	it->pos = f->u.chunk.events;
	it->end = f->u.chunk.events + f->u.chunk.raw_len;
	it->thread_id = f->u.chunk.thread_id;
}

int kt_chunk_next(kt_chunk_iter *it, kt_event *ev)
{
	return kt__chunk_next(it, ev);
}
