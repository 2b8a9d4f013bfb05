/* Format round trips, golden bytes, schema hash and version handling. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <criterion/criterion.h>
#include <xxhash.h>

#include "format/format.h"

#define GOLDEN KT_TEST_DATA "/golden_v5.katra"
#define GOLDEN_V4 KT_TEST_DATA "/golden_v4.katra"
#define GOLDEN_V3 KT_TEST_DATA "/golden_v3.katra"
#define GOLDEN_V2 KT_TEST_DATA "/golden_v2.katra"
#define GOLDEN_V1 KT_TEST_DATA "/golden_v1.katra"
#define DELTA_FIXTURE KT_TEST_DATA "/delta_v5.katra"
#define DELTA_V2 KT_TEST_DATA "/delta_v2.katra"

Test(format, schema_hash_matches_spec_string)
{
	cr_assert_eq(XXH3_64bits(kt__schema_string, strlen(kt__schema_string)),
		     KT__SCHEMA_HASH);
	cr_assert_eq(KT__SCHEMA_HASH, UINT64_C(0x50201e670d4835ee));
	cr_assert_eq(XXH3_64bits(kt__schema_string_v4, strlen(kt__schema_string_v4)),
		     KT__SCHEMA_HASH_V4);
	cr_assert_eq(KT__SCHEMA_HASH_V4, UINT64_C(0xfa8c086269ee6c98));
	cr_assert_eq(XXH3_64bits(kt__schema_string_v3, strlen(kt__schema_string_v3)),
		     KT__SCHEMA_HASH_V3);
	cr_assert_eq(KT__SCHEMA_HASH_V3, UINT64_C(0xf5f0996189c5e77d));
	cr_assert_eq(XXH3_64bits(kt__schema_string_v2, strlen(kt__schema_string_v2)),
		     KT__SCHEMA_HASH_V2);
	cr_assert_eq(KT__SCHEMA_HASH_V2, UINT64_C(0xe89f64418cadbe8d));
	cr_assert_eq(XXH3_64bits(kt__schema_string_v1, strlen(kt__schema_string_v1)),
		     KT__SCHEMA_HASH_V1);
	cr_assert_eq(KT__SCHEMA_HASH_V1, UINT64_C(0xe9c05376473abc76));
}

Test(format, header_round_trip)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	cr_assert_not_null(buf);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(buf, len, NULL, &r), 0);
	const kt_header *h = kt_reader_get_header(r);
	kt_header want;
	t_header(&want);
	cr_assert_eq(h->format_version, 5);
	cr_assert_eq(h->flags, KT_HDR_CAPTURE);
	cr_assert_eq(h->schema_hash, KT__SCHEMA_HASH);
	cr_assert_eq(h->start_wall_ns, want.start_wall_ns);
	cr_assert_eq(h->start_mono_ns, want.start_mono_ns);
	cr_assert_eq(h->process_id, 4242);
	cr_assert_eq(h->clock.source, KT_CLOCK_TSC);
	cr_assert_eq(h->clock.tick_hz, UINT64_C(3000000000));
	cr_assert_eq(h->clock.ticks, 1000000);
	cr_assert_eq(h->clock.mono_ns, 123456000);
	cr_assert_eq(h->capture.ring_size, 4u << 20);
	cr_assert_eq(h->capture.overflow, KT_OVERFLOW_BLOCK);
	cr_assert_eq(h->capture.codec, KT_CODEC_LZ4);
	cr_assert_eq(h->capture.io, KT_IO_URING);
	cr_assert_eq(h->capture.codec_level, 3);
	cr_assert_eq(h->capture.flush_period_ns, 1000000);
	cr_assert_eq(h->capture.fsync_interval_ns, 250000000);
	cr_assert_eq(h->capture.max_duration_ns, UINT64_C(5000000000));
	cr_assert_eq(h->capture.max_bytes, 64u << 20);
	cr_assert_eq(h->epoch, 7);
	cr_assert_str_eq(h->tool_version, "katra-test 1");
	cr_assert_str_eq(h->workload, "unit test");
	cr_assert_str_eq(h->host, "test-host");
	cr_assert_str_eq(h->run_id, "run-1");
	cr_assert_str_eq(h->capture_id, "cap-0001");
	cr_assert_eq(h->note_count, 2);
	cr_assert_str_eq(h->notes[0], "first note");
	cr_assert_str_eq(h->notes[1], "second note: \xce\xbb");
	kt_reader_close(r);
	free(buf);
}

/* Compare one decoded event against what t_events_all_types() wrote. */
static void check_set(kt_chunk_iter *it, uint64_t ts0, int salt, uint32_t tid)
{
	kt_event ev;
	int64_t ci;
	double cf;
	uint64_t u;
	static const uint8_t types[T_EVENTS_PER_SET] = {
		KT_EV_ZONE_BEGIN, KT_EV_INSTANT, KT_EV_COUNTER_I64, KT_EV_COUNTER_F64,
		KT_EV_FRAME, KT_EV_FLOW, KT_EV_FLOW, KT_EV_FLOW, KT_EV_MESSAGE, KT_EV_USER,
		KT_EV_ZONE_END,
	};
	static const uint32_t ids[T_EVENTS_PER_SET] = { 1, 2, 3, 4, 5, 6, 6, 6, 7, 8, 1 };
	static const uint16_t plens[T_EVENTS_PER_SET] = { 0, 0, 8, 8, 8, 8, 8, 8, 12, 5, 0 };
	static const uint8_t flags[T_EVENTS_PER_SET] = { 0, 0, 0, 0, 0, 0, 1, 2, 0, 9, 0 };

	for (int i = 0; i < T_EVENTS_PER_SET; i++) {
		cr_assert_eq(kt_chunk_next(it, &ev), 1, "event %d", i);
		cr_assert_eq(ev.ts, ts0 + (uint64_t)i);
		cr_assert_eq(ev.thread_id, tid);
		cr_assert_eq(ev.type, types[i], "event %d type %u", i, ev.type);
		cr_assert_eq(ev.name_id, ids[i]);
		cr_assert_eq(ev.payload_len, plens[i]);
		cr_assert_eq(ev.flags, flags[i]);
		switch (ev.type) {
		case KT_EV_COUNTER_I64:
			memcpy(&ci, ev.payload, 8);
			cr_assert_eq(ci, -42 - salt);
			break;
		case KT_EV_COUNTER_F64:
			memcpy(&cf, ev.payload, 8);
			cr_assert_eq(cf, 2.5 + salt);
			break;
		case KT_EV_FRAME:
			memcpy(&u, ev.payload, 8);
			cr_assert_eq(u, 100 + (uint64_t)salt);
			break;
		case KT_EV_FLOW:
			memcpy(&u, ev.payload, 8);
			cr_assert_eq(u, 0xabcdef + (uint64_t)salt);
			break;
		case KT_EV_MESSAGE:
			cr_assert_eq(memcmp(ev.payload, "hello, trace", 12), 0);
			break;
		case KT_EV_USER:
			cr_assert_eq(memcmp(ev.payload, "\x01\x02\x03\x04\x05", 5), 0);
			break;
		}
	}
	cr_assert_eq(kt_chunk_next(it, &ev), 0);
}

Test(format, every_frame_kind_and_event_type_round_trips_raw_and_lz4)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(buf, len, NULL, &r), 0);

	/* names 1..8 */
	for (uint32_t i = 1; i <= T_NAMES; i++) {
		cr_assert_eq(kt_reader_next_frame(r, &f), 1);
		cr_assert_eq(f.kind, KT_FRAME_NAME);
		cr_assert_eq(f.u.name.id, i);
		cr_assert_str_eq(f.u.name.str, t_names[i]);
		cr_assert_eq(f.u.name.len, strlen(t_names[i]));
	}
	const char *tn[] = { "main", "render" };
	for (uint32_t i = 1; i <= 2; i++) {
		cr_assert_eq(kt_reader_next_frame(r, &f), 1);
		cr_assert_eq(f.kind, KT_FRAME_THREAD);
		cr_assert_eq(f.u.thread.thread_id, i);
		cr_assert_eq(f.u.thread.os_tid, 1000 + i);
		cr_assert_str_eq(f.u.thread.name, tn[i - 1]);
	}
	for (uint32_t tid = 1; tid <= 2; tid++) {
		for (unsigned codec = 0; codec <= 1; codec++) {
			uint64_t ts0 = (codec ? 3000000 : 2000000) + tid * 100;
			int salt = (int)tid + (codec ? 10 : 0);
			cr_assert_eq(kt_reader_next_frame(r, &f), 1);
			cr_assert_eq(f.kind, KT_FRAME_CHUNK);
			cr_assert_eq(f.u.chunk.thread_id, tid);
			cr_assert_eq(f.u.chunk.codec, codec);
			cr_assert_eq(f.u.chunk.seq, codec);
			cr_assert_eq(f.u.chunk.event_count, T_EVENTS_PER_SET);
			cr_assert_eq(f.u.chunk.raw_len, 11 * 16 + 6 * 8 + 16 + 8);
			if (codec == KT_CODEC_NONE)
				cr_assert_eq(f.u.chunk.stored_len, f.u.chunk.raw_len);
			cr_assert_eq(f.u.chunk.first_ts, ts0);
			cr_assert_eq(f.u.chunk.last_ts, ts0 + 10);
			kt_chunk_iter it;
			kt_chunk_iter_init(&it, &f);
			check_set(&it, ts0, salt, tid);
		}
	}
	cr_assert_eq(kt_reader_next_frame(r, &f), 1);
	cr_assert_eq(f.kind, KT_FRAME_DROP);
	cr_assert_eq(f.u.drop.thread_id, 2);
	cr_assert_eq(f.u.drop.count, 17);
	cr_assert_eq(f.u.drop.first_ts, 2500000);
	cr_assert_eq(f.u.drop.last_ts, 2600000);

	cr_assert_eq(kt_reader_next_frame(r, &f), 1);
	cr_assert_eq(f.kind, KT_FRAME_SUMMARY);
	const kt_file_summary *s = &f.u.summary;
	cr_assert_eq(s->events_written, 4 * T_EVENTS_PER_SET);
	cr_assert_eq(s->events_dropped, 17);
	cr_assert_eq(s->chunks, 4);
	cr_assert_eq(s->bytes_raw, 4 * 248);
	cr_assert_eq(s->end_wall_ns, UINT64_C(1764460801000000000));
	cr_assert_eq(s->end_mono_ns, 1123456789);
	cr_assert_eq(s->clock_ticks1, UINT64_C(3001000000));
	cr_assert_eq(s->clock_ns1, 1123456000);
	cr_assert_eq(s->io_backend, KT_IO_URING);
	cr_assert_eq(s->io_error, 0);
	cr_assert_eq(s->thread_count, 2);
	cr_assert_eq(s->threads[0].thread_id, 1);
	cr_assert_eq(s->threads[0].written, 2 * T_EVENTS_PER_SET);
	cr_assert_eq(s->threads[0].dropped, 0);
	cr_assert_eq(s->threads[1].thread_id, 2);
	cr_assert_eq(s->threads[1].written, 2 * T_EVENTS_PER_SET);
	cr_assert_eq(s->threads[1].dropped, 17);

	cr_assert_eq(kt_reader_next_frame(r, &f), 0);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.complete, 1);
	cr_assert_eq(st.truncated, 0);
	cr_assert_eq(st.frames, 8 + 2 + 4 + 1 + 1);
	cr_assert_eq(st.events, 44);
	cr_assert_eq(st.dropped, 17);
	cr_assert_eq(st.valid_end, len);
	cr_assert_eq(st.error, 0);
	kt_reader_close(r);
	free(buf);
}

Test(format, same_inputs_give_identical_bytes)
{
	size_t a_len, b_len;
	uint8_t *a = t_sample(&a_len, 1), *b = t_sample(&b_len, 1);
	cr_assert_eq(a_len, b_len);
	cr_assert_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
}

/* The committed golden file pins the bytes: any change to the encoder that
 * changes them must change SPEC.md and the version too.  Set
 * KT_REGEN_GOLDEN=1 to rewrite it after such a change. */
Test(format, output_matches_committed_golden_file)
{
	size_t len, glen;
	uint8_t *buf = t_sample(&len, 1);
	uint8_t *golden = t_golden(GOLDEN, buf, len, &glen);
	cr_assert_not_null(golden, "missing %s", GOLDEN);
	cr_assert_eq(len, glen, "size %zu, golden %zu", len, glen);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(buf[i], golden[i], "first difference at byte %zu", i);
	/* And the golden file reads back clean through the fd path. */
	kt_reader *r;
	cr_assert_eq(kt_reader_open(GOLDEN, NULL, &r), 0);
	uint64_t frames;
	cr_assert_eq(t_drain(r, &frames), 0);
	cr_assert_eq(frames, 16);
	kt_reader_close(r);
	free(buf);
	free(golden);
}

static int open_patched_version(uint32_t version, kt_reader_error *err)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	kt__put32(buf + 8, version);
	kt_reader *r;
	int rc = kt_reader_open_mem(buf, len, err, &r);
	cr_assert_null(r);
	free(buf);
	return rc;
}

Test(format, other_versions_are_refused_by_number)
{
	kt_reader_error err;
	cr_assert_eq(open_patched_version(6, &err), KT_EVERSION);
	cr_assert_eq(err.offset, 8);
	cr_assert_str_eq(err.message, "offset 8: unsupported format version: format version 6; "
				      "this reader reads versions 1 to 5");
	cr_assert_eq(open_patched_version(0, &err), KT_EVERSION);
	cr_assert_eq(err.code, KT_EVERSION);
}

Test(format, schema_hash_other_than_v1_is_refused)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	buf[16 + 8] ^= 1;
	/* Re-seal the header so only the schema hash is wrong. */
	uint32_t hlen = kt__get32(buf + 12);
	size_t sum_at = 16 + kt__align8(hlen);
	kt__put64(buf + sum_at, XXH3_64bits(buf + 8, sum_at - 8));
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open_mem(buf, len, &err, &r), KT_EVERSION);
	cr_assert_eq(err.offset, 24);
	free(buf);
}

Test(format, bad_magic_is_refused)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	buf[1] = 'k';
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open_mem(buf, len, &err, &r), KT_EMAGIC);
	cr_assert_eq(err.offset, 0);
	free(buf);
	cr_assert_eq(kt_reader_open_mem("PK\x03\x04", 4, &err, &r), KT_EMAGIC);
	cr_assert_eq(kt_reader_open_mem(NULL, 0, &err, &r), KT_ETRUNCATED);
	cr_assert_str_eq(err.message, "offset 0: file is truncated: the file is empty");
}

Test(format, header_checksum_guards_every_header_byte)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 1);
	buf[16 + 40 + 16] ^= 0x10; /* inside clock_ticks0 */
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open_mem(buf, len, &err, &r), KT_EHDRSUM);
	uint32_t hlen = kt__get32(buf + 12);
	cr_assert_eq(err.offset, 16 + kt__align8(hlen));
	free(buf);
}

Test(format, unknown_frame_kinds_are_skipped)
{
	size_t len;
	uint8_t *buf = t_sample(&len, 0); /* no summary: we append our own */
	uint8_t frame[16 + 8];
	memcpy(frame + 8, "futurefr", 8);
	kt__enc_frame_head(frame, 8, 200);
	size_t n = kt__enc_frame_seal(frame, 8);
	cr_assert_eq(n, sizeof(frame));
	uint8_t *both = malloc(len + n);
	memcpy(both, buf, len);
	memcpy(both + len, frame, n);
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(both, len + n, NULL, &r), 0);
	uint64_t frames;
	cr_assert_eq(t_drain(r, &frames), 0);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(frames, 15);
	cr_assert_eq(st.unknown_frames, 1);
	cr_assert_eq(st.truncated, 1);
	cr_assert_eq(st.valid_end, len + n);
	kt_reader_close(r);
	free(buf);
	free(both);
}

Test(format, writer_refuses_what_the_format_cannot_hold)
{
	kt_header h;
	t_header(&h);
	int fd = memfd_create("w", MFD_CLOEXEC);
	kt_writer *w;
	h.clock.tick_hz = 0;
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), -EINVAL);
	t_header(&h);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	uint8_t ev[64] = { 0 };
	ev[12] = 77; /* unknown type */
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, 16), -EINVAL);
	ev[12] = KT_EV_ZONE_BEGIN;
	cr_assert_eq(kt_writer_chunk(w, 0, KT_CODEC_NONE, 1, ev, 16), -EINVAL);
	cr_assert_eq(kt_writer_chunk(w, 1, 5, 1, ev, 16), -EINVAL);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, 12), -EINVAL);
	cr_assert_eq(kt_writer_name(w, 0, "x", 1), -EINVAL);
	cr_assert_eq(kt_writer_name(w, 1, "a\0b", 3), -EINVAL);
	cr_assert_eq(kt_writer_drop(w, 1, 0, 0, 0), -EINVAL);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, 16), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), KT_ESTATE);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, 16), KT_ESTATE);
	cr_assert_eq(kt_writer_close(w), 0);
	close(fd);
}

Test(format, error_names_and_messages)
{
	cr_assert_str_eq(kt_strerror(0), "success");
	cr_assert_str_eq(kt_strerror(KT_ECHECKSUM), "frame checksum mismatch");
	cr_assert_str_eq(kt_err_name(KT_ECHECKSUM), "KT_ECHECKSUM");
	cr_assert_str_eq(kt_err_name(-ENOENT), "ENOENT");
	cr_assert_str_eq(kt_strerror(-ENOENT), "No such file or directory");
	cr_assert_str_eq(kt_strerror(-999999), "unknown katra error");
	cr_assert_str_eq(kt_err_name(-999999), "KT_EUNKNOWN");
#define CHECK_ONE(name, value, msg) cr_assert_str_eq(kt_strerror(value), msg);
	KT_ERROR_LIST(CHECK_ONE)
#undef CHECK_ONE
}

Test(format, ticks_convert_with_one_or_two_calibration_points)
{
	kt_clock_calibration c = { KT_CLOCK_TSC, 2000000000u, 1000, 5000 };
	cr_assert_eq(kt_ticks_to_ns(&c, NULL, 1000), 5000);
	cr_assert_eq(kt_ticks_to_ns(&c, NULL, 3000), 6000);
	cr_assert_eq(kt_ticks_to_ns(&c, NULL, 0), 4500);
	kt_file_summary s = { 0 };
	s.clock_ticks1 = 1000 + 4000000000u; /* measured: 2.0 s per 4e9 ticks... */
	s.clock_ns1 = 5000 + 1000000000u;    /* ...is really 1 GHz over 1 s */
	cr_assert_eq(kt_ticks_to_ns(&c, &s, 1000 + 2000000000u), 5000 + 500000000u);
	kt_clock_calibration m = { KT_CLOCK_MONOTONIC, 1000000000u, 0, 0 };
	cr_assert_eq(kt_ticks_to_ns(&m, NULL, 123456789), 123456789);
}

/* The reference: ns0 + floor(dt * num / den) by a 128-bit division,
 * saturating, as SPEC §2.1 defines it. */
static uint64_t conv_reference(uint64_t t0, uint64_t ns0, uint64_t num, uint64_t den, uint64_t t)
{
	unsigned __int128 q = (unsigned __int128)(t - t0) * num / den + ns0;
	return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A value of 1 to 64 bits, so small, middling and huge all come up. */
static uint64_t any_width(uint64_t *s)
{
	uint64_t v = xorshift(s);
	unsigned bits = (unsigned)(xorshift(s) % 64) + 1;
	return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

/* A value in [lo, UINT64_MAX]. */
static uint64_t at_least(uint64_t *s, uint64_t lo)
{
	uint64_t v = any_width(s), room = UINT64_MAX - lo;
	return room == UINT64_MAX ? v : lo + v % (room + 1);
}

/*
 * The conversion by reciprocal is the exact quotient: two calibration
 * points of every size (clock rates above and below 1 GHz, spans up to
 * 2^64, the division's fallback past 2^63 ticks), and times after the
 * first point up to where the result saturates.
 */
Test(format, ticks_conversion_is_the_exact_quotient)
{
	uint64_t seed = 0x9E3779B97F4A7C15u, checked = 0;
	for (int i = 0; i < 200000; i++) {
		kt_clock_calibration c = { KT_CLOCK_TSC, 1, any_width(&seed) >> 1,
					   any_width(&seed) >> 1 };
		kt_file_summary s = { 0 };
		s.clock_ticks1 = at_least(&seed, c.ticks + 1);
		s.clock_ns1 = at_least(&seed, c.mono_ns);
		uint64_t num = s.clock_ns1 - c.mono_ns, den = s.clock_ticks1 - c.ticks;
		for (int k = 0; k < 8; k++) {
			/* Half of them whole multiples of the span, where the
			 * quotient is an integer and a reciprocal that falls
			 * short shows. */
			uint64_t t = at_least(&seed, c.ticks), m;
			if (k % 2 && !__builtin_mul_overflow(den, (uint64_t)k, &m) &&
			    !__builtin_add_overflow(c.ticks, m, &m))
				t = m;
			cr_assert_eq(kt_ticks_to_ns(&c, &s, t),
				     conv_reference(c.ticks, c.mono_ns, num, den, t),
				     "t0 %llu ns0 %llu num %llu den %llu t %llu",
				     (unsigned long long)c.ticks, (unsigned long long)c.mono_ns,
				     (unsigned long long)num, (unsigned long long)den,
				     (unsigned long long)t);
			checked++;
		}
	}
	cr_assert_gt(checked, 1500000);
}

Test(format, version_is_reported)
{
	char want[32];
	cr_assert_eq(kt_version(), KT_VERSION_NUMBER);
	cr_assert_str_eq(kt_version_string(), KT_VERSION_STRING);
	snprintf(want, sizeof(want), "%d.%d.%d", KT_VERSION_MAJOR, KT_VERSION_MINOR,
		 KT_VERSION_PATCH);
	cr_assert_str_eq(KT_VERSION_STRING, want);
	cr_assert_eq(KT_VERSION_NUMBER,
		     KT_VERSION_MAJOR * 10000 + KT_VERSION_MINOR * 100 + KT_VERSION_PATCH);
}

/* The getters answer for an open reader and writer (0.4 removed the
 * deprecated names that called them). */
Test(format, getters_answer)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(GOLDEN, NULL, &r), 0);
	cr_assert_not_null(kt_reader_get_header(r));
	cr_assert_eq(kt_reader_get_last_error(r)->code, 0);
	kt_reader_close(r);

	int fd = memfd_create("katra-getters", MFD_CLOEXEC);
	kt_header h;
	kt_writer *w;
	kt_header_init(&h);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	cr_assert_eq(kt_writer_get_bytes(w), kt__enc_header(NULL, 0, &h));
	cr_assert_eq(kt_writer_close(w), 0);
	close(fd);
}

/*
 * SPEC §4.2's table, written out here as the oracle: the producer's check
 * (kt__record_ok) and the reader's (kt__event_check on an encoded record)
 * both follow it for every type and flags value, and every type has its
 * name.
 */
static int spec_allows(unsigned type, unsigned flags, size_t len)
{
	switch (type) {
	case 1: case 2: case 3:
		return len == 0 && flags == 0;
	case 4: case 5: case 10: case 11: case 12: case 15:
		return len == 8 && flags == 0;
	case 14:
		return len == 16 && flags == 0; /* allocation: pointer, size */
	case 16: case 17:
		return len == 8;                /* track zone: flags are the track */
	case 18: case 19:
		return len == 16;               /* track counter: time, value */
	case 20:
		return len == 16 && flags <= 4; /* sched: thread, cpu; what */
	case 21:
		return len == 16 && flags == 0; /* sample: thread, stack */
	case 6: case 7:
		return len == 8 && flags <= 2;  /* frame phase, flow phase */
	case 8:
		return flags <= 6;              /* severity */
	case 9:
		return 1;
	case 13:
		return flags == 0;
	default:
		return 0;
	}
}

Test(format, record_rules_follow_the_spec_table)
{
	static const char *const names[] = { "unknown", "zone_begin", "zone_end", "instant",
					     "counter_i64", "counter_f64", "frame", "flow",
					     "message", "user", "arg_i64", "arg_u64", "arg_f64",
					     "arg_str", "alloc", "free", "track_begin", "track_end",
					     "track_counter_i64", "track_counter_f64", "sched",
					     "sample" };
	static const size_t lens[] = { 0, 1, 7, 8, 9, 16, 65535 };
	static const uint8_t payload[65535];
	static uint8_t rec[KT_REC_HEAD + 65536];
	for (unsigned type = 0; type < 256; type++) {
		cr_assert_str_eq(kt_event_type_name(type), names[type < 22 ? type : 0]);
		for (unsigned flags = 0; flags < 256; flags++) {
			for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
				int want = spec_allows(type, flags, lens[i]);
				cr_assert_eq(kt__record_ok((uint8_t)type, (uint8_t)flags, lens[i]), want,
					     "type %u flags %u len %zu", type, flags, lens[i]);
				if (lens[i] > 16 && flags > 3)
					continue; /* the long one: through the reader for some */
				kt_event ev = { .ts = 5, .name_id = 1, .type = (uint8_t)type,
						.flags = (uint8_t)flags,
						.payload_len = (uint16_t)lens[i], .payload = payload };
				size_t n = kt_event_encode(rec, sizeof(rec), &ev);
				long got = kt__event_check(rec, n);
				cr_assert_eq(got, want ? (long)n : KT_EEVENT, "type %u flags %u len %zu",
					     type, flags, lens[i]);
			}
		}
	}
}

/* ---- version 1 and 2 files, and version 2's delta codec ----------------- */

/* The golden file @old, written by format version @old_version, reads as
 * the same events, header fields and summary as @now, of @now_version. */
static void reads_as(const char *old, uint32_t old_version, uint64_t old_hash, const char *now,
		     uint32_t now_version)
{
	kt_reader *a, *b;
	cr_assert_eq(kt_reader_open(old, NULL, &a), 0);
	cr_assert_eq(kt_reader_open(now, NULL, &b), 0);
	cr_assert_eq(kt_reader_get_header(a)->format_version, old_version);
	cr_assert_eq(kt_reader_get_header(a)->schema_hash, old_hash);
	cr_assert_eq(kt_reader_get_header(b)->format_version, now_version);
	cr_assert_str_eq(kt_reader_get_header(a)->workload, kt_reader_get_header(b)->workload);
	kt_event x, y;
	int ra, rb, n = 0;
	while ((ra = kt_reader_next(a, &x)) > 0 && (rb = kt_reader_next(b, &y)) > 0) {
		cr_assert_eq(x.ts, y.ts);
		cr_assert_eq(x.thread_id, y.thread_id);
		cr_assert_eq(x.name_id, y.name_id);
		cr_assert_eq(x.type, y.type);
		cr_assert_eq(x.flags, y.flags);
		cr_assert_eq(x.payload_len, y.payload_len);
		cr_assert_eq(memcmp(x.payload, y.payload, x.payload_len), 0);
		n++;
	}
	cr_assert_eq(ra, 0);
	cr_assert_eq(kt_reader_next(b, &y), 0);
	cr_assert_eq(n, 4 * T_EVENTS_PER_SET);
	kt_reader_status sa, sb;
	kt_reader_get_status(a, &sa);
	kt_reader_get_status(b, &sb);
	cr_assert_eq(sa.complete, 1);
	cr_assert_eq(sa.dropped, sb.dropped);
	kt_reader_close(a);
	kt_reader_close(b);
}

/* The version 1 golden file (written before version 2) reads as its
 * version 2 twin. */
Test(format, version_1_file_reads_as_before)
{
	reads_as(GOLDEN_V1, 1, KT__SCHEMA_HASH_V1, GOLDEN_V2, 2);
}

/* The version 2 golden file (written before version 3) reads as its
 * version 3 twin. */
Test(format, version_2_file_reads_as_before)
{
	reads_as(GOLDEN_V2, 2, KT__SCHEMA_HASH_V2, GOLDEN_V3, 3);
}

/* The version 3 golden file (written before version 4) reads as its
 * version 4 twin. */
Test(format, version_3_file_reads_as_before)
{
	reads_as(GOLDEN_V3, 3, KT__SCHEMA_HASH_V3, GOLDEN_V4, 4);
}

/* The version 4 golden file (written before version 5) reads as today's
 * output, the same frames written by version 5. */
Test(format, version_4_file_reads_as_before)
{
	reads_as(GOLDEN_V4, 4, KT__SCHEMA_HASH_V4, GOLDEN, 5);
}

/* 2000 zones 97 ticks apart, then one of every type: what a frame loop's
 * chunk looks like, and every payload shape. */
static size_t delta_events(uint8_t *buf, size_t cap)
{
	size_t n = 0;
	for (uint64_t i = 0; i < 2000; i++) {
		kt_event ev = { .ts = 5000000 + i * 97, .name_id = 1 + (uint32_t)(i % 2),
				.type = i % 2 ? KT_EV_ZONE_END : KT_EV_ZONE_BEGIN };
		n += kt_event_encode(buf + n, cap - n, &ev);
	}
	return n + t_events_all_types(buf + n, cap - n, 5000000 + 2000 * 97, 3);
}

static uint8_t *one_chunk_file(unsigned codec, const uint8_t *ev, size_t n, size_t *len)
{
	uint8_t *p = t_one_chunk_file(codec, 1, ev, n, len);
	cr_assert_not_null(p);
	return p;
}

/* The @len bytes at @file hold one chunk, of @codec, that decodes to the
 * @n bytes of records at @ev. */
static void one_chunk_reads_as(const uint8_t *file, size_t len, unsigned codec,
			       const uint8_t *ev, size_t n)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	kt_trace_frame f;
	int chunks = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		chunks++;
		cr_assert_eq(f.u.chunk.codec, codec);
		cr_assert_eq(f.u.chunk.event_count, 2000 + T_EVENTS_PER_SET);
		cr_assert_eq(f.u.chunk.raw_len, n);
		cr_assert_eq(memcmp(f.u.chunk.events, ev, n), 0, "decoded events differ");
	}
	cr_assert_eq(chunks, 1);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert_eq(st.complete, 1);
	kt_reader_close(r);
}

Test(format, delta_codec_round_trips_and_is_smaller)
{
	static uint8_t ev[65536];
	size_t n = delta_events(ev, sizeof(ev));
	size_t len, lz4_len;
	uint8_t *file = one_chunk_file(KT_CODEC_LZ4_DELTA, ev, n, &len);
	uint8_t *lz4 = one_chunk_file(KT_CODEC_LZ4, ev, n, &lz4_len);
	/* The bytes are pinned, as the golden file's are. */
	size_t glen;
	uint8_t *golden = t_golden(DELTA_FIXTURE, file, len, &glen);
	cr_assert_not_null(golden, "missing %s", DELTA_FIXTURE);
	cr_assert_eq(glen, len);
	cr_assert_eq(memcmp(golden, file, len), 0);
	free(golden);
	one_chunk_reads_as(file, len, KT_CODEC_LZ4_DELTA, ev, n);
	/* The same chunk written by version 2 reads as before. */
	golden = t_slurp(DELTA_V2, &glen);
	cr_assert_not_null(golden, "missing %s", DELTA_V2);
	cr_assert_eq(kt__get32(golden + 8), 2);
	one_chunk_reads_as(golden, glen, KT_CODEC_LZ4_DELTA, ev, n);
	free(golden);
	/* Deltas of 97 leave six zero bytes in each timestamp. */
	cr_assert_lt(len * 2, lz4_len, "delta %zu bytes, lz4 %zu", len, lz4_len);
	free(file);
	free(lz4);
}

/* Codec 2 does not exist in version 1: such a chunk is refused by number. */
Test(format, delta_codec_in_a_version_1_file_is_refused)
{
	static uint8_t ev[65536];
	size_t n = delta_events(ev, sizeof(ev));
	size_t len;
	uint8_t *file = one_chunk_file(KT_CODEC_LZ4_DELTA, ev, n, &len);
	t_set_version(file, 1, KT__SCHEMA_HASH_V1);
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open_mem(file, len, &err, &r), 0);
	cr_assert_eq(kt_reader_get_header(r)->format_version, 1);
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		;
	cr_assert_eq(rc, KT_ECODEC);
	cr_assert_not_null(strstr(kt_reader_get_last_error(r)->message,
				  "codec 2 (version 1 knows: 0 none, 1 lz4)"),
			   "%s", kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
	free(file);
}

/* The header's overflow byte keeps version 1's numbering (0 drop, 1
 * block) and adds 2 = wait in version 3; the reader gives kt_overflow,
 * whose zero is WAIT.  2 before version 3, and 3 anywhere, are refused. */
static int overflow_as_read(uint32_t version, uint64_t hash, uint8_t byte, int *policy)
{
	size_t len;
	uint8_t *file = t_sample(&len, 1);
	file[KT__PREAMBLE_LEN + KT__HDR_OVERFLOW] = byte;
	t_set_version(file, version, hash);
	kt_reader *r;
	int rc = kt_reader_open_mem(file, len, NULL, &r);
	if (rc == 0) {
		*policy = kt_reader_get_header(r)->capture.overflow;
		kt_reader_close(r);
	}
	free(file);
	return rc;
}

Test(format, the_overflow_byte_is_the_files_numbering)
{
	int p = -1;
	cr_assert_eq(overflow_as_read(5, KT__SCHEMA_HASH, 0, &p), 0);
	cr_assert_eq(p, KT_OVERFLOW_DROP);
	cr_assert_eq(overflow_as_read(5, KT__SCHEMA_HASH, 1, &p), 0);
	cr_assert_eq(p, KT_OVERFLOW_BLOCK);
	cr_assert_eq(overflow_as_read(5, KT__SCHEMA_HASH, 2, &p), 0);
	cr_assert_eq(p, KT_OVERFLOW_WAIT);
	cr_assert_eq(overflow_as_read(5, KT__SCHEMA_HASH, 3, &p), KT_EHEADER);
	cr_assert_eq(overflow_as_read(4, KT__SCHEMA_HASH_V4, 2, &p), 0);
	cr_assert_eq(overflow_as_read(3, KT__SCHEMA_HASH_V3, 2, &p), 0);
	cr_assert_eq(p, KT_OVERFLOW_WAIT);
	cr_assert_eq(overflow_as_read(2, KT__SCHEMA_HASH_V2, 0, &p), 0);
	cr_assert_eq(p, KT_OVERFLOW_DROP);
	cr_assert_eq(overflow_as_read(2, KT__SCHEMA_HASH_V2, 2, &p), KT_EHEADER);
	cr_assert_eq(overflow_as_read(1, KT__SCHEMA_HASH_V1, 2, &p), KT_EHEADER);

	cr_assert_str_eq(kt_overflow_name(KT_OVERFLOW_WAIT), "wait");
	cr_assert_str_eq(kt_overflow_name(KT_OVERFLOW_BLOCK), "block");
	cr_assert_str_eq(kt_overflow_name(KT_OVERFLOW_DROP), "drop");
	cr_assert_str_eq(kt_overflow_name(3), "unknown");

	/* And the writer puts each policy's byte there. */
	static const uint8_t byte_of[3] = { [KT_OVERFLOW_WAIT] = 2, [KT_OVERFLOW_BLOCK] = 1,
					    [KT_OVERFLOW_DROP] = 0 };
	for (int policy = 0; policy < 3; policy++) {
		kt_header h;
		t_header(&h);
		h.capture.overflow = (uint8_t)policy;
		uint8_t b[KT__HEADER_FIXED] = { 0 };
		static const kt__start_at at = { .overflow = KT__HDR_OVERFLOW };
		kt__enc_start_fields(b, &h, &at);
		cr_assert_eq(b[KT__HDR_OVERFLOW], byte_of[policy]);
	}
}
