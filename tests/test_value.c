/*
 * An event's value (issue #29): kt_event_get_value() decodes every type's
 * payload as its row of KT_EVENT_TYPES says, and hands back nothing but
 * the raw bytes for a payload that is not what the row states (a pass
 * that copied none) or a type no row names.  The one reader of payloads:
 * scripts/check-payload.sh fails on any other; tests/new_event_type.sh
 * adds a row in a scratch copy and counts the files that had to change.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <inttypes.h>
#include <katra/reader.h>

/* @v as 8 little-endian bytes at @p. */
static void put_le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static kt_event event(uint8_t type, uint8_t flags, const uint8_t *payload, uint16_t len)
{
	return (kt_event){ .ts = 5, .thread_id = 1, .name_id = 7, .type = type, .flags = flags,
			   .payload_len = len, .payload = payload };
}

Test(value, numbers_come_back_exact_for_each_kind)
{
	uint8_t p[16];
	kt_value v;
	put_le(p, (uint64_t)INT64_C(-1234567890123));
	kt_event ev = event(KT_EV_COUNTER_I64, 0, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_I64);
	cr_assert_eq(v.i64, INT64_C(-1234567890123));
	cr_assert_eq(v.bits, (uint64_t)INT64_C(-1234567890123));
	cr_assert_eq(v.u64, 0, "only the kind's fields are set");

	put_le(p, UINT64_C(0xfedcba9876543210));
	ev = event(KT_EV_ARG_U64, 0, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_U64);
	cr_assert_eq(v.u64, UINT64_C(0xfedcba9876543210));
	cr_assert_eq(v.i64, 0);

	double d = -2.5e-300;
	uint64_t bits;
	memcpy(&bits, &d, 8);
	put_le(p, bits);
	ev = event(KT_EV_ARG_F64, 0, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_F64);
	cr_assert(v.f64 == d);
	cr_assert_eq(v.bits, bits);

	put_le(p, 42);
	ev = event(KT_EV_FRAME, KT_FRAME_PHASE_END, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_FRAME);
	cr_assert_eq(v.u64, 42);
	ev = event(KT_EV_FLOW, KT_FLOW_STEP, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_FLOW);
	cr_assert_eq(v.u64, 42);
}

Test(value, memory_events_give_pointer_and_size)
{
	uint8_t p[16];
	kt_value v;
	put_le(p, UINT64_C(0x7f0000001000));
	put_le(p + 8, 4096);
	kt_event ev = event(KT_EV_ALLOC, 0, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_ALLOC);
	cr_assert_eq(v.ptr, UINT64_C(0x7f0000001000));
	cr_assert_eq(v.size, 4096);
	ev = event(KT_EV_FREE, 0, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_FREE);
	cr_assert_eq(v.ptr, UINT64_C(0x7f0000001000));
	cr_assert_eq(v.size, 0);
}

Test(value, text_and_bytes_point_at_the_payload)
{
	static const uint8_t msg[] = "hello\0there";
	kt_value v;
	kt_event ev = event(KT_EV_MESSAGE, KT_SEV_WARN, msg, 11);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_TEXT);
	cr_assert_eq(v.bytes, msg);
	cr_assert_eq(v.len, 11);
	ev = event(KT_EV_ARG_STR, 0, msg, 0);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_TEXT);
	cr_assert_eq(v.len, 0);
	ev = event(KT_EV_USER, 200, msg, 3);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_BYTES);
	cr_assert_eq(v.bytes, msg);
	cr_assert_eq(v.len, 3);
}

Test(value, track_records_give_track_time_and_value)
{
	uint8_t p[16];
	kt_value v;
	kt_track_event te;
	put_le(p, 1019200);
	put_le(p + 8, (uint64_t)INT64_C(-9));
	kt_event ev = event(KT_EV_TRACK_COUNTER_I64, 3, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_TRACK_I64);
	cr_assert_eq(v.track, 3);
	cr_assert_eq(v.track_ts, 1019200);
	cr_assert_eq(v.i64, -9);
	/* kt_event_get_track(), now on top of it, as before. */
	cr_assert_eq(kt_event_get_track(&ev, &te), 1);
	cr_assert_eq(te.track, 3);
	cr_assert_eq(te.track_ts, 1019200);
	cr_assert_eq(te.value_i64, -9);

	double d = 0.125;
	uint64_t bits;
	memcpy(&bits, &d, 8);
	put_le(p + 8, bits);
	ev = event(KT_EV_TRACK_COUNTER_F64, 4, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_TRACK_F64);
	cr_assert(v.f64 == 0.125);
	cr_assert_eq(kt_event_get_track(&ev, &te), 1);
	cr_assert(te.value_f64 == 0.125);

	ev = event(KT_EV_TRACK_END, 2, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_TRACK);
	cr_assert_eq(v.track, 2);
	cr_assert_eq(v.track_ts, 1019200);
	ev = event(KT_EV_ZONE_BEGIN, 0, NULL, 0);
	cr_assert_eq(kt_event_get_track(&ev, &te), 0);
}

Test(value, a_payload_not_as_the_row_says_gives_no_value)
{
	uint8_t p[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	kt_value v;
	/* A pass that copied no payload: no number made up from nothing. */
	kt_event ev = event(KT_EV_COUNTER_I64, 0, NULL, 0);
	cr_assert_eq(kt_event_get_value(&ev, &v), 0);
	cr_assert_eq(v.kind, KT_VALUE_NONE);
	cr_assert_eq(v.i64, 0);
	/* A short or long fixed payload is not read at all. */
	ev = event(KT_EV_ALLOC, 0, p, 8);
	cr_assert_eq(kt_event_get_value(&ev, &v), 0);
	cr_assert_eq(v.ptr, 0);
	ev = event(KT_EV_FRAME, 0, p, 9);
	cr_assert_eq(kt_event_get_value(&ev, &v), 0);
	cr_assert_eq(v.u64, 0);
	/* A type no row names: its bytes, nothing more. */
	ev = event(200, 0, p, 9);
	cr_assert_eq(kt_event_get_value(&ev, &v), 0);
	cr_assert_eq(v.kind, KT_VALUE_NONE);
	cr_assert_eq(v.bytes, p);
	cr_assert_eq(v.len, 9);
}

/* A scheduler record: the followed thread and the CPU, or what was lost;
 * an id past 32 bits is no thread's. */
Test(value, sched_gives_thread_and_cpu)
{
	uint8_t p[16];
	kt_value v;
	memcpy(p, (const uint8_t[]){ 7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0 }, 16);
	kt_event ev = event(KT_EV_SCHED, KT_SCHED_PREEMPTED, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_SCHED);
	cr_assert_eq(v.thread, 7);
	cr_assert_eq(v.cpu, 3);
	ev = event(KT_EV_SCHED, KT_SCHED_LOST, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.thread, 7);
	cr_assert_eq(v.cpu, 0);
	cr_assert_eq(v.u64, 3);
	p[4] = 1; /* thread 2^32 + 7 */
	ev = event(KT_EV_SCHED, KT_SCHED_IN, p, 16);
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.thread, 0);
	cr_assert_eq(v.cpu, 3);
}

/* A sample names its thread and its stack entry's id. */
Test(value, sample_gives_thread_and_stack)
{
	uint8_t p[16] = { 0 };
	p[0] = 9;
	p[8] = 0x34;
	p[9] = 0x12;
	kt_event ev = event(KT_EV_SAMPLE, 0, p, 16);
	kt_value v;
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.kind, KT_VALUE_SAMPLE);
	cr_assert_eq(v.thread, 9);
	cr_assert_eq(v.u64, 0x1234);
	p[4] = 1; /* no thread of 32 bits */
	cr_assert_eq(kt_event_get_value(&ev, &v), 1);
	cr_assert_eq(v.thread, 0);
}

/* Every row of the table, with a payload of its size: the row's kind,
 * and the size the producer and the reader accept. */
Test(value, every_row_of_the_table_gives_its_kind)
{
	static const uint8_t p[16] = { 0 };
	unsigned rows = 0;
#define ROW(code, name, text, payload, max_flags, value)                                   \
	do {                                                                               \
		kt_event ev = event(code, 0, p, (uint16_t)kt__payload_len(payload));       \
		kt_value v;                                                                \
		cr_assert(kt__record_ok(code, 0, ev.payload_len), "%s", text);             \
		cr_assert_eq(kt_event_get_value(&ev, &v), 1, "%s", text);                  \
		cr_assert_eq(v.kind, value, "%s", text);                                   \
		rows++;                                                                    \
	} while (0);
	KT_EVENT_TYPES(ROW)
#undef ROW
	cr_assert_eq(rows, 21);
}

/* kt_event_set_value() writes back the bytes kt_event_get_value() read,
 * for every row with a fixed-size payload: a payload of distinct bytes
 * (the sched row's thread and CPU kept under 2^32, which its accessor
 * clamps) comes back byte for byte through the value.  Rows with no
 * payload or bytes are refused, as is a kind that is not the row's. */
Test(value, set_value_is_the_inverse_of_get_value)
{
	unsigned fixed = 0, refused = 0;
#define ROW(code, name, text, pl, max_flags, value)                                       \
	do {                                                                               \
		uint8_t in[16], out[16];                                                   \
		for (int i = 0; i < 16; i++)                                               \
			in[i] = (uint8_t)(0x11 * (i + 1));                                 \
		if ((code) == KT_EV_SCHED || (code) == KT_EV_SAMPLE)                       \
			in[4] = in[5] = in[6] = in[7] = in[12] = in[13] = in[14] = in[15] = 0; \
		uint16_t len = (uint16_t)kt__payload_len(pl);                         \
		kt_event ev = event(code, 1, in, len), back = event(code, 1, NULL, 0);     \
		kt_value v;                                                                \
		kt_event_get_value(&ev, &v);                                               \
		if (len == 8 || len == 16) {                                               \
			cr_assert_eq(kt_event_set_value(&back, &v, out), 1, "%s", text);   \
			cr_assert_eq(back.payload, out, "%s", text);                       \
			cr_assert_eq(back.payload_len, len, "%s", text);                   \
			cr_assert_arr_eq(out, in, len, "%s", text);                        \
			v.kind = v.kind == KT_VALUE_I64 ? KT_VALUE_U64 : KT_VALUE_I64;     \
			cr_assert_eq(kt_event_set_value(&back, &v, out), 0, "%s", text);   \
			fixed++;                                                           \
		} else {                                                                   \
			cr_assert_eq(kt_event_set_value(&back, &v, out), 0, "%s", text);   \
			cr_assert_null(back.payload, "%s", text);                          \
			refused++;                                                         \
		}                                                                          \
	} while (0);
	KT_EVENT_TYPES(ROW)
#undef ROW
	cr_assert_eq(fixed + refused, 21);
	cr_assert_eq(refused, 6); /* zone begin, end, instant; message, user, arg_str */
}
