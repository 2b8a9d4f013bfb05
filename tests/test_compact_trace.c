/*
 * The compact codecs in trace files (format version 3, codecs 3 and 4):
 * what the writer chooses, the golden files, and what the reader refuses
 * before it decodes.  The codec's own bytes are test_compact.c's.
 */
#define _GNU_SOURCE
#include "cli.h"

#include <criterion/criterion.h>

#include "format/compact.h"
#include "format/format.h"

#define GOLDEN_COMPACT KT_TEST_DATA "/compact_v5.katra"
#define GOLDEN_ZSTD KT_TEST_DATA "/compact_zstd_v5.katra"
#define GOLDEN_DUMP KT_TEST_DATA "/compact_v5.dump.txt"

static uint8_t evbuf[5u << 20];

/* @n zones of names 1 and 2, 60 to 123 ticks apart from @ts0 (as a TSC
 * read per zone is: never quite the same step), then one event of every
 * type: a frame loop's chunk.  Its bytes. */
static size_t frame_loop(uint8_t *buf, size_t cap, uint64_t ts0, uint32_t n)
{
	size_t len = 0;
	uint64_t ts = ts0;
	for (uint32_t i = 0; i < n; i++) {
		kt_event ev = { .ts = ts, .name_id = 1 + i % 2,
				.type = i % 2 ? KT_EV_ZONE_END : KT_EV_ZONE_BEGIN };
		len += kt_event_encode(buf + len, cap - len, &ev);
		ts += 60 + (i * 2654435761u >> 26);
	}
	return len + t_events_all_types(buf + len, cap - len, ts, (int)n % 7);
}

/* @n records no prediction guesses: random timestamps, each its own name.
 * The compact streams take more bytes than the records. */
static size_t noise(uint8_t *buf, size_t cap, uint64_t seed, uint32_t n)
{
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		kt_event ev = { .ts = seed, .name_id = (uint32_t)(seed >> 32) | 1,
				.type = seed & 1 ? KT_EV_INSTANT : KT_EV_ZONE_BEGIN };
		len += kt_event_encode(buf + len, cap - len, &ev);
	}
	return len;
}

/* Every chunk of the file at @p: its codec in @codecs (up to @max), the
 * events, in order, in @ev; returns the number of chunks. */
static int chunks_of(const uint8_t *p, size_t len, uint8_t *codecs, int max, uint8_t *ev,
		     size_t *ev_len)
{
	kt_reader *r;
	kt_trace_frame f;
	int n = 0, rc;
	*ev_len = 0;
	cr_assert_eq(kt_reader_open_mem(p, len, NULL, &r), 0);
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		cr_assert_lt(n, max);
		codecs[n++] = f.u.chunk.codec;
		memcpy(ev + *ev_len, f.u.chunk.events, f.u.chunk.raw_len);
		*ev_len += f.u.chunk.raw_len;
	}
	cr_assert_eq(rc, 0, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
	return n;
}

/* A one-chunk file of @codec at @level holding @n bytes at @ev: it reads
 * back as those bytes, in a chunk of codec @want; the file's size. */
static size_t one_chunk(unsigned codec, int level, const uint8_t *ev, size_t n, unsigned want)
{
	static uint8_t back[sizeof(evbuf)];
	size_t len, got;
	uint8_t codecs[1];
	uint8_t *p = t_one_chunk_file(codec, level, ev, n, &len);
	cr_assert_not_null(p);
	cr_assert_eq(chunks_of(p, len, codecs, 1, back, &got), 1);
	cr_assert_eq(codecs[0], want, "codec %u stored as %u, not %u", codec, codecs[0], want);
	cr_assert_eq(got, n);
	cr_assert_eq(memcmp(back, ev, n), 0, "decoded records differ");
	free(p);
	return len;
}

Test(compact_trace, writer_stores_codecs_3_and_4_and_they_read_back)
{
	size_t n = frame_loop(evbuf, sizeof(evbuf), 5000000, 4000);
	size_t delta = one_chunk(KT_CODEC_LZ4_DELTA, 1, evbuf, n, KT_CODEC_LZ4_DELTA);
	size_t plain = one_chunk(KT_CODEC_COMPACT, 0, evbuf, n, KT_CODEC_COMPACT);
	size_t compact = one_chunk(KT_CODEC_COMPACT, 1, evbuf, n, KT_CODEC_COMPACT);
	size_t all = one_chunk(KT_CODEC_COMPACT, 2, evbuf, n, KT_CODEC_COMPACT);
	size_t zstd = one_chunk(KT_CODEC_COMPACT_ZSTD, 0, evbuf, n, KT_CODEC_COMPACT_ZSTD);
	size_t zstd19 = one_chunk(KT_CODEC_COMPACT_ZSTD, 19, evbuf, n, KT_CODEC_COMPACT_ZSTD);
	/* Each codec's choice shows in the bytes: a 4000-zone chunk is 64 KiB
	 * raw; the file's own frames are under 1 KiB of each size. */
	cr_assert_lt(plain * 2, delta, "compact %zu, lz4-delta %zu", plain, delta);
	/* Level 1, a session's default, takes LZ4 on the timestamps too:
	 * the loop's repeat. */
	cr_assert_lt(compact * 2, plain, "LZ4 on T, K, P %zu, on P only %zu", compact, plain);
	cr_assert_leq(all, compact, "LZ4 on every stream %zu, on T, K, P %zu", all, compact);
	cr_assert_lt(zstd, all, "zstd %zu, compact with LZ4 %zu", zstd, all);
	cr_assert_leq(zstd19, zstd);
}

/* What the encoder refuses (-ENOSPC) goes raw, in both compact codecs. */
Test(compact_trace, a_chunk_no_prediction_shrinks_is_stored_raw)
{
	size_t n = noise(evbuf, sizeof(evbuf), 0x9e3779b97f4a7c15u, 400);
	one_chunk(KT_CODEC_COMPACT, 1, evbuf, n, KT_CODEC_NONE);
	one_chunk(KT_CODEC_COMPACT, 2, evbuf, n, KT_CODEC_NONE);
	one_chunk(KT_CODEC_COMPACT_ZSTD, 3, evbuf, n, KT_CODEC_NONE);
}

/* No memory for an encoder: the chunk goes raw and the trace keeps every
 * record.  Each allocation of a one-chunk write fails in turn: the write
 * fails (-ENOMEM from the writer) or its file reads back as the records;
 * the runs where an encoder's allocation failed store a raw chunk. */
Test(compact_trace, no_memory_for_an_encoder_stores_the_chunk_raw)
{
	static uint8_t back[sizeof(evbuf)];
	static const unsigned codecs[] = { KT_CODEC_COMPACT, KT_CODEC_COMPACT_ZSTD };
	size_t n = frame_loop(evbuf, sizeof(evbuf), 5000000, 4000);
	for (size_t c = 0; c < 2; c++) {
		int raw_runs = 0;
		for (uint64_t k = 1;; k++) {
			size_t len = 0, got = 0;
			kt__alloc_count = 0;
			kt__alloc_fail_at = k;
			uint8_t *p = t_one_chunk_file(codecs[c], 1, evbuf, n, &len);
			int fired = kt__alloc_count >= k;
			kt__alloc_fail_at = 0;
			if (!fired) {
				cr_assert_not_null(p);
				free(p);
				break;
			}
			if (!p)
				continue;
			uint8_t codec;
			cr_assert_eq(chunks_of(p, len, &codec, 1, back, &got), 1);
			cr_assert_eq(got, n);
			cr_assert_eq(memcmp(back, evbuf, n), 0);
			raw_runs += codec == KT_CODEC_NONE;
			free(p);
		}
		/* codec 3: its encoder's three allocations and level 1's LZ4
		 * buffer for T and K; codec 4: its encoder's three and its own
		 * two. */
		cr_assert_eq(raw_runs, c ? 5 : 4, "codec %u: %d raw runs", codecs[c], raw_runs);
	}
}

/* Identical records one tick apart: zstd would shrink the compact payload
 * past what a reader accepts (-ERANGE), so the chunk goes as codec 3. */
Test(compact_trace, an_archival_chunk_past_the_ratio_bound_is_stored_as_codec_3)
{
	size_t n = 0;
	for (uint32_t i = 0; i < 65536; i++) {
		kt_event ev = { .ts = 1000 + i, .name_id = 1, .type = KT_EV_INSTANT };
		n += kt_event_encode(evbuf + n, sizeof(evbuf) - n, &ev);
	}
	one_chunk(KT_CODEC_COMPACT_ZSTD, 3, evbuf, n, KT_CODEC_COMPACT);
}

/* Chunks over the encoders' 4 MiB (only kt_writer_chunk() makes them) go
 * as codec 2; 4 MiB itself is still compact. */
Test(compact_trace, a_chunk_over_4_mib_is_stored_as_codec_2)
{
	size_t n = frame_loop(evbuf, sizeof(evbuf), 1, (4u << 20) / 16 - T_EVENTS_PER_SET - 15);
	cr_assert_leq(n, 4u << 20);
	one_chunk(KT_CODEC_COMPACT, 1, evbuf, n, KT_CODEC_COMPACT);
	n = frame_loop(evbuf, sizeof(evbuf), 1, (4u << 20) / 16 + 1);
	one_chunk(KT_CODEC_COMPACT, 1, evbuf, n, KT_CODEC_LZ4_DELTA);
	one_chunk(KT_CODEC_COMPACT_ZSTD, 0, evbuf, n, KT_CODEC_LZ4_DELTA);
}

/* ---- the golden files ------------------------------------------------- */

/*
 * The golden trace of @codec: names, two threads, a frame loop chunk each
 * (300 zones and one event of every type), an every-type chunk each, a
 * drop, a chunk of noise (which goes raw) and the summary.
 */
static uint8_t *golden(unsigned codec, size_t *len)
{
	kt_header h;
	t_header(&h);
	h.capture.codec = (uint8_t)codec;
	h.capture.codec_level = 0;
	int fd = memfd_create("katra-golden", MFD_CLOEXEC);
	kt_writer *w;
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	for (uint32_t i = 1; i <= T_NAMES; i++)
		cr_assert_eq(kt_writer_name(w, i, t_names[i], strlen(t_names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 1001, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 1002, "render"), 0);
	for (uint32_t tid = 1; tid <= 2; tid++) {
		size_t n = frame_loop(evbuf, sizeof(evbuf), 2000000 + tid * 50, 300);
		cr_assert_eq(kt_writer_chunk(w, tid, codec, 0, evbuf, n), 0);
		n = t_events_all_types(evbuf, sizeof(evbuf), 3000000 + tid * 100, (int)tid);
		cr_assert_eq(kt_writer_chunk(w, tid, codec, 0, evbuf, n), 0);
	}
	cr_assert_eq(kt_writer_drop(w, 2, 17, 3500000, 3600000), 0);
	size_t n = noise(evbuf, sizeof(evbuf), 42, 24);
	cr_assert_eq(kt_writer_chunk(w, 1, codec, 0, evbuf, n), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	uint8_t *p = t_slurp_fd(fd, len);
	close(fd);
	return p;
}

/* The writer's output for @codec is the committed file @path byte for
 * byte (KT_REGEN_GOLDEN=1 rewrites it), whose chunks have @codecs. */
static void check_golden(unsigned codec, const char *path, const uint8_t *codecs)
{
	size_t len, glen, n;
	uint8_t *p = golden(codec, &len);
	uint8_t *g = t_golden(path, p, len, &glen);
	cr_assert_not_null(g, "missing %s", path);
	cr_assert_eq(len, glen, "size %zu, golden %zu", len, glen);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], g[i], "first difference at byte %zu", i);
	cr_assert_lt(glen, 20u << 10);
	uint8_t got[8];
	cr_assert_eq(chunks_of(g, glen, got, 8, evbuf, &n), 5);
	cr_assert_eq(memcmp(got, codecs, 5), 0, "codecs %u %u %u %u %u", got[0], got[1], got[2],
		     got[3], got[4]);
	free(p);
	free(g);
}

Test(compact_trace, compact_golden_file_is_what_the_writer_writes)
{
	static const uint8_t codecs[] = { 3, 3, 3, 3, 0 };
	check_golden(KT_CODEC_COMPACT, GOLDEN_COMPACT, codecs);
}

Test(compact_trace, zstd_golden_file_is_what_the_writer_writes)
{
	static const uint8_t codecs[] = { 4, 4, 4, 4, 0 };
	check_golden(KT_CODEC_COMPACT_ZSTD, GOLDEN_ZSTD, codecs);
}

/* Both golden files dump as the committed text: the same events. */
Test(compact_trace, golden_files_dump_as_committed)
{
	struct proc p;
	size_t len;
	const char *const files[] = { "compact_v5.katra", "compact_zstd_v5.katra" };
	for (int i = 0; i < 2; i++) {
		const char *args[] = { "dump", files[i], NULL };
		run_katra(&p, args);
		cr_assert_eq(p.status, 0, "%s: %s", files[i], p.err);
		/* The first file's dump is the one regenerated. */
		uint8_t *want = i ? t_slurp(GOLDEN_DUMP, &len)
				  : t_golden(GOLDEN_DUMP, p.out, p.out_len, &len);
		cr_assert_not_null(want);
		cr_assert_eq(p.out_len, len, "%s: %zu bytes, golden %zu", files[i], p.out_len, len);
		cr_assert_eq(memcmp(p.out, want, len), 0, "%s differs", files[i]);
		free(want);
	}
}

/* ---- what the reader refuses ----------------------------------------- */

/* The offset of the file's first chunk frame. */
static uint64_t first_chunk(const uint8_t *p, size_t len)
{
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(p, len, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0 && f.kind != KT_FRAME_CHUNK)
		;
	cr_assert_eq(f.kind, KT_FRAME_CHUNK);
	kt_reader_close(r);
	return f.offset;
}

static void reseal(uint8_t *buf, uint64_t off)
{
	uint32_t blen = kt__get32(buf + off);
	size_t padded = KT__FRAME_HEAD + kt__align8(blen);
	kt__put64(buf + off + padded, kt__xxh3(buf + off, padded));
}

/* A one-chunk file of @codec (a frame loop of 50 zones), *@len bytes,
 * its chunk at *@off. */
static uint8_t *small_file(unsigned codec, size_t *len, uint64_t *off)
{
	size_t n = frame_loop(evbuf, sizeof(evbuf), 100, 50);
	uint8_t *p = t_one_chunk_file(codec, 1, evbuf, n, len);
	cr_assert_not_null(p);
	*off = first_chunk(p, *len);
	return p;
}

/* Read @p to its end: the error, its offset, the reader's peak memory. */
static int read_all(const uint8_t *p, size_t len, uint64_t *at, uint64_t *peak, char *msg)
{
	kt_reader *r;
	kt_reader_status st;
	cr_assert_eq(kt_reader_open_mem(p, len, NULL, &r), 0);
	int rc = t_drain(r, NULL);
	*at = kt_reader_get_last_error(r)->offset;
	snprintf(msg, 256, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_get_status(r, &st);
	*peak = st.peak_buffer_bytes;
	kt_reader_close(r);
	return rc;
}

Test(compact_trace, codecs_3_and_4_in_a_version_2_file_are_refused_by_number)
{
	for (unsigned codec = KT_CODEC_COMPACT; codec <= KT_CODEC_COMPACT_ZSTD; codec++) {
		size_t len;
		uint64_t off, at, peak;
		uint8_t *p = small_file(codec, &len, &off);
		t_set_version(p, 2, KT__SCHEMA_HASH_V2);
		char msg[256];
		cr_assert_eq(read_all(p, len, &at, &peak, msg), KT_ECODEC);
		cr_assert_eq(at, off + KT__FRAME_HEAD + KT__CHUNK_CODEC);
		cr_assert_not_null(strstr(msg, "(version 2 knows: 0 none, 1 lz4, 2 lz4 delta)"), "%s",
				   msg);
		free(p);
	}
}

/* A raw_len past 1024 x stored + 4096 is refused before the chunk buffer
 * grows to it: the reader's memory stays under it. */
Test(compact_trace, raw_len_past_the_ratio_bound_is_refused_before_any_allocation)
{
	for (unsigned codec = KT_CODEC_COMPACT; codec <= KT_CODEC_COMPACT_ZSTD; codec++) {
		size_t len;
		uint64_t off, at, peak;
		uint8_t *p = small_file(codec, &len, &off);
		uint32_t stored = kt__get32(p + off) - KT__CHUNK_FIXED;
		uint32_t bad = (1024 * stored + 4096 + 8) & ~7u;
		char msg[256];
		kt__put32(p + off + KT__FRAME_HEAD + KT__CHUNK_RAW, bad);
		reseal(p, off);
		cr_assert_eq(read_all(p, len, &at, &peak, msg), KT_ERAWLEN, "%s", msg);
		cr_assert_eq(at, off + KT__FRAME_HEAD + KT__CHUNK_RAW);
		cr_assert_lt(peak, bad, "peak %llu", (unsigned long long)peak);
		/* One multiple of 8 less is within the bound: decoded, and
		 * refused for what the records fill. */
		kt__put32(p + off + KT__FRAME_HEAD + KT__CHUNK_RAW, bad - 8);
		reseal(p, off);
		cr_assert_eq(read_all(p, len, &at, &peak, msg), KT_ERAWLEN, "%s", msg);
		cr_assert_eq(at, off + KT__FRAME_HEAD + KT__CHUNK_FIXED, "%s", msg);
		free(p);
	}
}

/* A payload the decoder refuses is reported at the payload with the
 * decoder's code: a reserved flag bit of codec 3, a zstd frame's magic. */
Test(compact_trace, a_bad_payload_is_refused_with_the_decoders_code)
{
	static const int want[] = { KT_ERESERVED, KT_EFRAME };
	for (unsigned codec = KT_CODEC_COMPACT; codec <= KT_CODEC_COMPACT_ZSTD; codec++) {
		size_t len;
		uint64_t off, at, peak;
		uint8_t *p = small_file(codec, &len, &off);
		uint64_t payload = off + KT__FRAME_HEAD + KT__CHUNK_FIXED;
		char msg[256];
		p[payload] ^= 0x80;
		reseal(p, off);
		cr_assert_eq(read_all(p, len, &at, &peak, msg), want[codec - KT_CODEC_COMPACT], "%s",
			     msg);
		cr_assert_eq(at, payload);
		free(p);
	}
}
