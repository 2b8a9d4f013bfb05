/* The byte encoder for format/SPEC.md version 4. */
#include <errno.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <katra/writer.h>
#include "format/format.h"

/* SPEC §6: one line naming every field, hashed into the header.  Versions
 * 1 to 3's lines differ only in their number; version 4's names the
 * thread's process and the process entry. */
#define KT__SCHEMA_HEAD                                                          \
	";hdr:u32 version,u32 flags,u64 schema,u64 wall,u64 mono,"               \
	"u64 pid,u8 clk,u8[7],u64 hz,u64 t0,u64 ns0,u64 ring,u8 ovf,u8 codec,"   \
	"u8 io,u8,i32 level,u64 flush,u64 fsync,u64 maxdur,u64 maxbytes,"        \
	"u64 epoch,str tool,str workload,str host,str run,str capture,"          \
	"u32 nnotes,str*;frame:u32 len,u8 kind,u8 flags,u16 hchk,body,pad8,"     \
	"u64 xxh3;chunk=1:u32 tid,u8 codec,u8[3],u64 seq,u32 n,u32 raw,"         \
	"u64 ts0,u64 ts1,payload;ev:u64 ts,u32 name,u8 type,u8 flags,u16 len,"   \
	"payload,pad8;name=2:u32 id,u32 len,bytes;thread=3:u32 tid,u32 ostid,"
#define KT__SCHEMA_MID                                                           \
	";drop=4:u32 tid,u32,u64 n,u64 ts0,u64 ts1;"                             \
	"summary=5:u32 flags,u32 nthr,u64 w,u64 d,u64 chunks,u64 raw,"           \
	"u64 stored,u64 wall,u64 mono,u64 t1,u64 ns1,u8 io,u8[3],i32 err,"       \
	"{u32 tid,u32,u64 w,u64 d}*"
#define KT__SCHEMA_OLD(n) "katra-trace/" n KT__SCHEMA_HEAD "u32 len,u32,bytes" KT__SCHEMA_MID
#define KT__SCHEMA_V4(n)                                                         \
	"katra-trace/" n KT__SCHEMA_HEAD "u32 len,u32 proc,bytes" KT__SCHEMA_MID \
	";process=9:u32 id,u32 flags,u64 pid,u64 ppid,u64 start,u64 end,"        \
	"u32 nlen,u32 clen,bytes,bytes"
const char kt__schema_string[] = KT__SCHEMA_V4("5") ";stack=10:u32 id,u32 depth,u64*"
	";map=11:u64 ts,u64 start,u64 len,u64 pgoff,u32 proc,u32 plen,bytes";
const char kt__schema_string_v4[] = KT__SCHEMA_V4("4");
const char kt__schema_string_v3[] = KT__SCHEMA_OLD("3");
const char kt__schema_string_v2[] = KT__SCHEMA_OLD("2");
const char kt__schema_string_v1[] = KT__SCHEMA_OLD("1");

uint64_t kt__xxh3(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

uint16_t kt__head_check(const uint8_t head[6])
{
	return (uint16_t)XXH3_64bits(head, 6);
}

static size_t str_len(const char *s)
{
	return s ? strlen(s) : 0;
}

int kt__header_validate(const kt_header *h)
{
	const char *strs[5] = { h->tool_version, h->workload, h->host,
				h->run_id, h->capture_id };
	size_t total = KT__HEADER_MIN;

	if (h->clock.tick_hz == 0 || h->note_count > KT_MAX_NOTES)
		return -EINVAL;
	if (h->note_count && !h->notes)
		return -EINVAL;
	if ((h->flags & ~KT_HDR_FLAGS_KNOWN) ||
	    (h->flags & (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT)) == (KT_HDR_SCHED | KT_HDR_SCHED_ABSENT))
		return -EINVAL;
	for (int i = 0; i < 5; i++) {
		if (str_len(strs[i]) > KT_MAX_STRING)
			return -EINVAL;
		total += str_len(strs[i]);
	}
	for (uint32_t i = 0; i < h->note_count; i++) {
		if (str_len(h->notes[i]) > KT_MAX_STRING)
			return -EINVAL;
		total += 4 + str_len(h->notes[i]);
	}
	return total <= KT_MAX_HEADER ? 0 : -EINVAL;
}

/* A cursor that counts every byte but stores only those that fit, so one
 * pass both sizes and fills the buffer. */
struct out {
	uint8_t *buf;
	size_t cap;
	size_t pos;
};

static void out_bytes(struct out *o, const void *p, size_t n)
{
	if (o->pos < o->cap) {
		size_t room = o->cap - o->pos;
		memcpy(o->buf + o->pos, p, n < room ? n : room);
	}
	o->pos += n;
}
static void out_u32(struct out *o, uint32_t v) { uint8_t b[4]; kt__put32(b, v); out_bytes(o, b, 4); }
static void out_u64(struct out *o, uint64_t v) { uint8_t b[8]; kt__put64(b, v); out_bytes(o, b, 8); }
static void out_zero(struct out *o, size_t n)
{
	static const uint8_t zeros[8];
	while (n) {
		size_t k = n < 8 ? n : 8;
		out_bytes(o, zeros, k);
		n -= k;
	}
}
static void out_str(struct out *o, const char *s)
{
	size_t n = str_len(s);
	out_u32(o, (uint32_t)n);
	if (n)
		out_bytes(o, s, n);
}

void kt__enc_start_fields(uint8_t *b, const kt_header *h, const kt__start_at *at)
{
	kt__put64(b + at->wall, h->start_wall_ns);
	kt__put64(b + at->mono, h->start_mono_ns);
	b[at->clock] = h->clock.source;
	kt__put64(b + at->tick_hz, h->clock.tick_hz);
	kt__put64(b + at->ticks0, h->clock.ticks);
	kt__put64(b + at->ns0, h->clock.mono_ns);
	kt__put64(b + at->ring, h->capture.ring_size);
	b[at->overflow] = kt__overflow_flip(h->capture.overflow);
	b[at->codec] = h->capture.codec;
	b[at->io] = h->capture.io;
	kt__put32(b + at->level, (uint32_t)h->capture.codec_level);
}

/* The header body's fixed part (SPEC §2.1); reserved bytes stay zero. */
static void enc_header_fixed(uint8_t b[KT__HEADER_FIXED], const kt_header *h)
{
	static const kt__start_at at = {
		.wall = KT__HDR_WALL, .mono = KT__HDR_MONO, .clock = KT__HDR_CLOCK,
		.tick_hz = KT__HDR_TICK_HZ, .ticks0 = KT__HDR_TICKS0, .ns0 = KT__HDR_NS0,
		.ring = KT__HDR_RING, .overflow = KT__HDR_OVERFLOW, .codec = KT__HDR_CODEC,
		.io = KT__HDR_IO, .level = KT__HDR_LEVEL,
	};
	const kt_capture_options *c = &h->capture;

	memset(b, 0, KT__HEADER_FIXED);
	kt__put32(b + KT__HDR_VERSION, KT_FORMAT_VERSION);
	kt__put32(b + KT__HDR_FLAGS, h->flags);
	kt__put64(b + KT__HDR_SCHEMA, KT__SCHEMA_HASH);
	kt__put64(b + KT__HDR_PID, h->process_id);
	kt__enc_start_fields(b, h, &at);
	kt__put64(b + KT__HDR_FLUSH, c->flush_period_ns);
	kt__put64(b + KT__HDR_FSYNC, c->fsync_interval_ns);
	kt__put64(b + KT__HDR_MAX_DURATION, c->max_duration_ns);
	kt__put64(b + KT__HDR_MAX_BYTES, c->max_bytes);
	kt__put64(b + KT__HDR_EPOCH, h->epoch);
}

size_t kt__enc_header(uint8_t *buf, size_t cap, const kt_header *h)
{
	struct out o = { buf, cap, 0 };
	uint8_t fixed[KT__HEADER_FIXED];

	out_bytes(&o, KT__MAGIC, KT__MAGIC_LEN);
	out_u32(&o, KT_FORMAT_VERSION);
	out_u32(&o, 0); /* header_len, patched below once known */
	size_t body = o.pos;
	enc_header_fixed(fixed, h);
	out_bytes(&o, fixed, sizeof(fixed));
	out_str(&o, h->tool_version);
	out_str(&o, h->workload);
	out_str(&o, h->host);
	out_str(&o, h->run_id);
	out_str(&o, h->capture_id);
	out_u32(&o, h->note_count);
	for (uint32_t i = 0; i < h->note_count; i++)
		out_str(&o, h->notes[i]);
	size_t hlen = o.pos - body;
	out_zero(&o, kt__align8(hlen) - hlen);
	size_t sum_at = o.pos;
	out_u64(&o, 0);

	if (o.pos <= cap) {
		kt__put32(buf + KT__PRE_HLEN, (uint32_t)hlen);
		kt__put64(buf + sum_at,
			  XXH3_64bits(buf + KT__PRE_VERSION, sum_at - KT__PRE_VERSION));
	}
	return o.pos;
}

void kt__enc_frame_head(uint8_t head[KT__FRAME_HEAD], uint32_t body_len, uint8_t kind)
{
	kt__put32(head + KT__FRAME_LEN, body_len);
	head[KT__FRAME_KIND] = kind;
	head[KT__FRAME_FLAGS] = 0;
	kt__put16(head + KT__FRAME_CHECK, kt__head_check(head));
}

size_t kt__enc_frame_seal(uint8_t *frame, uint32_t body_len)
{
	size_t padded = KT__FRAME_HEAD + kt__align8(body_len);
	memset(frame + KT__FRAME_HEAD + body_len, 0, padded - KT__FRAME_HEAD - body_len);
	kt__put64(frame + padded, XXH3_64bits(frame, padded));
	return padded + KT__FRAME_TRAILER;
}

void kt__enc_chunk_prefix(uint8_t out[KT__FRAME_HEAD + KT__CHUNK_FIXED],
			  uint32_t thread_id, uint8_t codec, uint64_t seq,
			  uint32_t count, uint32_t raw_len, uint32_t stored_len,
			  uint64_t first_ts, uint64_t last_ts)
{
	uint8_t *b = out + KT__FRAME_HEAD;

	kt__enc_frame_head(out, KT__CHUNK_FIXED + stored_len, KT_FRAME_CHUNK);
	memset(b, 0, KT__CHUNK_FIXED);
	kt__put32(b + KT__CHUNK_TID, thread_id);
	b[KT__CHUNK_CODEC] = codec;
	kt__put64(b + KT__CHUNK_SEQ, seq);
	kt__put32(b + KT__CHUNK_COUNT, count);
	kt__put32(b + KT__CHUNK_RAW, raw_len);
	kt__put64(b + KT__CHUNK_FIRST, first_ts);
	kt__put64(b + KT__CHUNK_LAST, last_ts);
}

uint64_t kt__chunk_checksum(const uint8_t prefix[KT__FRAME_HEAD + KT__CHUNK_FIXED],
			    const void *payload, uint32_t stored_len)
{
	static const uint8_t zeros[8];
	XXH3_state_t st;
	size_t body = KT__CHUNK_FIXED + (size_t)stored_len;

	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, prefix, KT__FRAME_HEAD + KT__CHUNK_FIXED);
	XXH3_64bits_update(&st, payload, stored_len);
	XXH3_64bits_update(&st, zeros, kt__align8(body) - body);
	return XXH3_64bits_digest(&st);
}

uint32_t kt__enc_name_body(uint8_t *body, uint32_t id, const char *s, uint32_t len)
{
	kt__put32(body + KT__NAME_ID, id);
	kt__put32(body + KT__NAME_LEN, len);
	memcpy(body + KT__NAME_FIXED, s, len);
	return KT__NAME_FIXED + len;
}

uint32_t kt__enc_srcloc_body(uint8_t *body, const kt_srcloc *loc)
{
	kt__put32(body + KT__LOC_ID, loc->id);
	kt__put32(body + KT__LOC_LINE, loc->line);
	kt__put32(body + KT__LOC_CATEGORY, loc->category);
	kt__put32(body + KT__LOC_FILE_LEN, loc->file_len);
	kt__put32(body + KT__LOC_FUNC_LEN, loc->function_len);
	kt__put32(body + KT__LOC_PAD, 0);
	if (loc->file_len)
		memcpy(body + KT__LOC_FIXED, loc->file, loc->file_len);
	if (loc->function_len)
		memcpy(body + KT__LOC_FIXED + loc->file_len, loc->function, loc->function_len);
	return KT__LOC_FIXED + loc->file_len + loc->function_len;
}

uint32_t kt__enc_category_body(uint8_t *body, uint32_t id, uint32_t flags)
{
	kt__put32(body + KT__CAT_ID, id);
	kt__put32(body + KT__CAT_FLAGS, flags);
	return KT__CAT_BODY;
}

uint32_t kt__enc_track_body(uint8_t *body, const kt_track_def *t)
{
	kt__put32(body + KT__TRACK_ID, t->id);
	kt__put32(body + KT__TRACK_NAME, t->name_id);
	kt__put64(body + KT__TRACK_HZ, t->clock_hz);
	kt__put32(body + KT__TRACK_COUNT, t->pair_count);
	kt__put32(body + KT__TRACK_PAD, 0);
	uint8_t *p = body + KT__TRACK_FIXED;
	for (uint32_t i = 0; i < t->pair_count; i++, p += KT__TRACK_PAIR) {
		kt__put64(p, t->pairs[i].track_ts);
		kt__put64(p + 8, t->pairs[i].ticks);
	}
	return KT__TRACK_FIXED + KT__TRACK_PAIR * t->pair_count;
}

const char *kt__track_bad(const kt_track_def *t)
{
	if (t->id == 0 || t->id > KT_MAX_TRACKS)
		return "track id out of 1..255";
	if (t->name_id == 0)
		return "track name id 0";
	if (t->clock_hz == 0)
		return "track clock of 0 Hz";
	if (t->pair_count > KT_MAX_TRACK_PAIRS)
		return "more than 1024 calibration pairs";
	/* Strictly increasing in both clocks: a conversion between two
	 * pairs then never divides by zero nor runs time backwards. */
	for (uint32_t i = 1; i < t->pair_count; i++)
		if (t->pairs[i].track_ts <= t->pairs[i - 1].track_ts ||
		    t->pairs[i].ticks <= t->pairs[i - 1].ticks)
			return "calibration pairs not increasing";
	return NULL;
}

uint32_t kt__enc_thread_body(uint8_t *body, uint32_t thread_id, uint32_t os_tid,
			     const char *name, uint32_t name_len, uint32_t process)
{
	kt__put32(body + KT__THREAD_TID, thread_id);
	kt__put32(body + KT__THREAD_OS_TID, os_tid);
	kt__put32(body + KT__THREAD_NAME_LEN, name_len);
	kt__put32(body + KT__THREAD_PROCESS, process);
	if (name_len)
		memcpy(body + KT__THREAD_FIXED, name, name_len);
	return KT__THREAD_FIXED + name_len;
}

uint32_t kt__enc_process_body(uint8_t *body, const kt_process_def *p)
{
	kt__put32(body + KT__PROC_ID, p->id);
	kt__put32(body + KT__PROC_FLAGS, p->flags);
	kt__put64(body + KT__PROC_PID, p->pid);
	kt__put64(body + KT__PROC_PPID, p->parent_pid);
	kt__put64(body + KT__PROC_START, p->start_ns);
	kt__put64(body + KT__PROC_END, p->end_ns);
	kt__put32(body + KT__PROC_NAME_LEN, p->name_len);
	kt__put32(body + KT__PROC_CMD_LEN, p->cmdline_len);
	if (p->name_len)
		memcpy(body + KT__PROC_FIXED, p->name, p->name_len);
	if (p->cmdline_len)
		memcpy(body + KT__PROC_FIXED + p->name_len, p->cmdline, p->cmdline_len);
	return KT__PROC_FIXED + p->name_len + p->cmdline_len;
}

uint32_t kt__enc_drop_body(uint8_t *body, uint32_t thread_id, uint64_t count,
			   uint64_t first_ts, uint64_t last_ts)
{
	kt__put32(body + KT__DROP_TID, thread_id);
	kt__put32(body + KT__DROP_PAD, 0);
	kt__put64(body + KT__DROP_COUNT, count);
	kt__put64(body + KT__DROP_FIRST, first_ts);
	kt__put64(body + KT__DROP_LAST, last_ts);
	return KT__DROP_BODY;
}

uint32_t kt__enc_summary_body(uint8_t *body, const kt_file_summary *s)
{
	memset(body, 0, KT__SUMMARY_FIXED);
	kt__put32(body + KT__SUM_FLAGS, s->flags);
	kt__put32(body + KT__SUM_THREADS, s->thread_count);
	kt__put64(body + KT__SUM_WRITTEN, s->events_written);
	kt__put64(body + KT__SUM_DROPPED, s->events_dropped);
	kt__put64(body + KT__SUM_CHUNKS, s->chunks);
	kt__put64(body + KT__SUM_RAW, s->bytes_raw);
	kt__put64(body + KT__SUM_STORED, s->bytes_stored);
	kt__put64(body + KT__SUM_END_WALL, s->end_wall_ns);
	kt__put64(body + KT__SUM_END_MONO, s->end_mono_ns);
	kt__put64(body + KT__SUM_TICKS1, s->clock_ticks1);
	kt__put64(body + KT__SUM_NS1, s->clock_ns1);
	body[KT__SUM_IO] = s->io_backend;
	kt__put32(body + KT__SUM_IO_ERROR, (uint32_t)s->io_error);
	uint8_t *row = body + KT__SUMMARY_FIXED;
	for (uint32_t i = 0; i < s->thread_count; i++, row += KT__SUMMARY_ROW) {
		memset(row, 0, KT__SUMMARY_ROW);
		kt__put32(row + KT__ROW_TID, s->threads[i].thread_id);
		kt__put64(row + KT__ROW_WRITTEN, s->threads[i].written);
		kt__put64(row + KT__ROW_DROPPED, s->threads[i].dropped);
	}
	return kt__summary_body_len(s->thread_count);
}

long kt__event_check(const uint8_t *p, size_t avail)
{
	return kt__event_check_inline(p, avail);
}

size_t kt_event_encode(void *buf, size_t cap, const kt_event *ev)
{
	size_t size = kt_event_size(ev->payload_len);
	uint8_t *p = buf;

	if (size > cap)
		return 0;
	kt__put64(p + KT_REC_TS, ev->ts);
	kt__put32(p + KT_REC_NAME, ev->name_id);
	p[KT_REC_TYPE] = ev->type;
	p[KT_REC_FLAGS] = ev->flags;
	kt__put16(p + KT_REC_LEN, ev->payload_len);
	if (ev->payload_len)
		memcpy(p + KT_REC_HEAD, ev->payload, ev->payload_len);
	memset(p + KT_REC_HEAD + ev->payload_len, 0, size - KT_REC_HEAD - ev->payload_len);
	return size;
}

void kt_header_init(kt_header *h)
{
	memset(h, 0, sizeof(*h));
	h->format_version = KT_FORMAT_VERSION;
	h->schema_hash = KT__SCHEMA_HASH;
	h->clock.source = KT_CLOCK_MONOTONIC;
	h->clock.tick_hz = 1000000000u;
	h->capture.codec_level = 1;
	h->tool_version = "katra " KT_VERSION_STRING;
	h->workload = "";
	h->host = "";
	h->run_id = "";
	h->capture_id = "";
}
