/* The compact chunk codec (format/compact.c): round trips, exact bytes,
 * and what the decoder refuses. */
#include "helpers.h"

#include <errno.h>
#include <criterion/criterion.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "format/compact.h"
#include "format/format.h"

#define MAX_RAW (4u << 20)

/* A chunk being built, record by record, as a ring holds them. */
struct chunk {
	uint8_t *buf;
	size_t len;
	uint32_t count;
};

static void chunk_init(struct chunk *c)
{
	c->buf = calloc(1, MAX_RAW);
	cr_assert_not_null(c->buf);
	c->len = 0;
	c->count = 0;
}

static void add(struct chunk *c, uint64_t ts, uint8_t type, uint32_t name, uint8_t flags,
		const void *payload, uint16_t plen)
{
	kt_event ev = { .ts = ts, .name_id = name, .type = type, .flags = flags,
			.payload_len = plen, .payload = payload };
	size_t n = kt_event_encode(c->buf + c->len, MAX_RAW - c->len, &ev);
	cr_assert_gt(n, 0, "the test's chunk is full");
	c->len += n;
	c->count++;
}

static void add_u64(struct chunk *c, uint64_t ts, uint8_t type, uint32_t name, uint8_t flags,
		    uint64_t v)
{
	uint8_t p[8];
	kt__put64(p, v);
	add(c, ts, type, name, flags, p, 8);
}

/* An allocation record of pool @pool: @ptr, @size. */
static void add_alloc(struct chunk *c, uint64_t ts, uint32_t pool, uint64_t ptr, uint64_t size)
{
	uint8_t p[16];
	kt__put64(p, ptr);
	kt__put64(p + 8, size);
	add(c, ts, KT_EV_ALLOC, pool, 0, p, 16);
}

static void add_f64(struct chunk *c, uint64_t ts, uint32_t name, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	add_u64(c, ts, KT_EV_COUNTER_F64, name, 0, v);
}

/* Encode @c, decode it back and compare byte for byte; the encoded
 * length. */
static long round_trip(const struct chunk *c)
{
	kt__compact_enc *e;
	kt__compact_dec *d;
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	size_t cap = 2 * (size_t)MAX_RAW;
	uint8_t *enc = malloc(cap), *dec = malloc(c->len);
	cr_assert(enc && dec);
	long n = kt__compact_encode(e, c->buf, c->len, enc, cap);
	cr_assert_gt(n, 0, "encode: %ld", n);
	int rc = kt__compact_decode(d, enc, (size_t)n, dec, c->len, c->count);
	cr_assert_eq(rc, 0, "decode: %s", kt_strerror(rc));
	cr_assert_eq(memcmp(dec, c->buf, c->len), 0, "the round trip changed the records");
	free(enc);
	free(dec);
	kt__compact_dec_free(d);
	kt__compact_enc_free(e);
	return n;
}

Test(compact, every_record_type_round_trips)
{
	struct chunk c;
	chunk_init(&c);
	uint64_t ts = 1000;
	static const char msg[] = "hello, compact";
	static const uint8_t blob[13] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
	for (int round = 0; round < 3; round++) {
		add(&c, ts += 20, KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
		add(&c, ts += 20, KT_EV_INSTANT, 2, 0, NULL, 0);
		add_u64(&c, ts += 20, KT_EV_COUNTER_I64, 3, 0, (uint64_t)(-5 * round));
		add_f64(&c, ts += 20, 4, 16.0 + round);
		add_u64(&c, ts += 20, KT_EV_FRAME, 5, 0, (uint64_t)round);
		for (uint8_t phase = 0; phase <= KT_FLOW_END; phase++)
			add_u64(&c, ts += 20, KT_EV_FLOW, 6, phase, 77 + (uint64_t)round);
		add(&c, ts += 20, KT_EV_MESSAGE, 7, 0, msg, (uint16_t)(sizeof(msg) - 1 - round));
		add(&c, ts += 20, KT_EV_USER, 8, (uint8_t)round, blob, (uint16_t)(13 - round));
		add_alloc(&c, ts += 20, 9, 0x7f0000001000 + 64 * (uint64_t)round, 48 << round);
		add_u64(&c, ts += 20, KT_EV_FREE, 9, 0, 0x7f0000001000 + 64 * (uint64_t)round);
		add(&c, ts += 20, KT_EV_ZONE_END, 1, 0, NULL, 0);
	}
	round_trip(&c);
	free(c.buf);
}

Test(compact, every_user_flag_value_round_trips)
{
	struct chunk c;
	chunk_init(&c);
	uint8_t p[3] = { 9, 8, 7 };
	for (unsigned f = 0; f < 256; f++)
		add(&c, 50 * f, KT_EV_USER, 1 + f % 3, (uint8_t)f, p, (uint16_t)(f % 4));
	round_trip(&c);
	free(c.buf);
}

Test(compact, extreme_and_backwards_timestamps_round_trip)
{
	static const uint64_t ts[] = { UINT64_MAX, 0, UINT64_MAX, UINT64_C(1) << 63, 5, 4, 3,
				       UINT64_MAX - 1, 1, 1, 1, UINT64_C(0x7fffffffffffffff) };
	struct chunk c;
	chunk_init(&c);
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		add(&c, ts[i], KT_EV_INSTANT, 1, 0, NULL, 0);
	round_trip(&c);
	free(c.buf);
}

Test(compact, extreme_values_round_trip)
{
	static const uint64_t v[] = { 0, UINT64_MAX, 1, UINT64_C(1) << 63, 0, 0, 0,
				      UINT64_C(0x8000000000000001), 2, UINT64_MAX, 7 };
	struct chunk c;
	chunk_init(&c);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		add_u64(&c, i, KT_EV_COUNTER_I64, 1, 0, v[i]);
		add_u64(&c, i, KT_EV_COUNTER_F64, 2, 0, v[i]);
		add_u64(&c, i, KT_EV_FLOW, 3, KT_FLOW_STEP, v[i] * 3);
	}
	round_trip(&c);
	free(c.buf);
}

/* Payload lengths 0..65535: every one up to 600, then a stride through the
 * rest, and the largest; the bytes differ from record to record. */
static uint32_t next_size(uint32_t n)
{
	if (n < 600)
		return n + 1;
	return n + 997 < 65535 ? n + 997 : 65535;
}

Test(compact, payloads_of_every_size_round_trip)
{
	static uint8_t p[65535 + 17];
	for (size_t i = 0; i < sizeof(p); i++)
		p[i] = (uint8_t)(i * 131 + (i >> 8));
	struct chunk c;
	chunk_init(&c);
	uint64_t ts = 0;
	unsigned sizes = 0;
	for (uint32_t n = 0;; n = next_size(n)) {
		if (c.len + kt_event_size(n) > MAX_RAW) {
			round_trip(&c);
			c.len = 0;
			c.count = 0;
		}
		add(&c, ts += 3, n % 2 ? KT_EV_USER : KT_EV_MESSAGE, 1 + n % 5, 0, p + n % 17,
		    (uint16_t)n);
		sizes++;
		if (n == 65535)
			break;
	}
	round_trip(&c);
	cr_assert_eq(sizes, 601 + 65 + 1);
	free(c.buf);
}

/* More distinct names than the dictionary holds (64K of them, and the
 * extremes), so keys spill past it, in one chunk. */
Test(compact, sixty_four_k_names_in_one_chunk_round_trip)
{
	struct chunk c;
	chunk_init(&c);
	uint64_t ts = 0;
	for (uint32_t n = 1; n <= 65536; n++)
		add(&c, ts += 7, KT_EV_ZONE_BEGIN, n, 0, NULL, 0);
	add(&c, ts += 7, KT_EV_INSTANT, UINT32_MAX, 0, NULL, 0);
	add(&c, ts += 7, KT_EV_INSTANT, 0, 0, NULL, 0);
	add(&c, ts += 7, KT_EV_INSTANT, UINT32_MAX, 0, NULL, 0);
	add_u64(&c, ts += 7, KT_EV_COUNTER_I64, 70000, 0, 5);
	add_u64(&c, ts += 7, KT_EV_COUNTER_I64, 70000, 0, 6);
	for (uint32_t n = 65536; n >= 1; n--)
		add(&c, ts += 7, KT_EV_ZONE_END, n, 0, NULL, 0);
	cr_assert_eq(c.count, 2 * 65536 + 5);
	long n = round_trip(&c);
	/* A spilled key is spelled out at each miss: more bytes than a
	 * dictionary index, still fewer than the raw records. */
	cr_assert_lt(n, (long)c.len);
	free(c.buf);
}

/* Encode @c and compare with @want (the exact bytes). */
static void assert_bytes(const struct chunk *c, const uint8_t *want, size_t n)
{
	kt__compact_enc *e;
	uint8_t out[256];
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	long got = kt__compact_encode(e, c->buf, c->len, out, sizeof(out));
	cr_assert_eq(got, (long)n, "encoded %ld bytes, want %zu", got, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(out[i], want[i], "byte %zu is %02x, want %02x", i, out[i], want[i]);
	kt__compact_enc_free(e);
	round_trip(c);
}

Test(compact, one_zone_begin_has_exact_bytes)
{
	struct chunk c;
	chunk_init(&c);
	add(&c, 100, KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
	static const uint8_t want[] = {
		0x00, 0x01, 0x04, 0x00, 0x00, /* no LZ4; lengths of T, K, V, L */
		0x64,                         /* T: 100 */
		0x00, 0x01, 0x00, 0x01,       /* K: run 0, key #0 new: type 1, flags 0, name 1 */
	};
	assert_bytes(&c, want, sizeof(want));
	free(c.buf);
}

Test(compact, alternating_zones_have_exact_bytes)
{
	struct chunk c;
	chunk_init(&c);
	for (int i = 0; i < 4; i++) {
		add(&c, 1000 + 40 * (uint64_t)i, KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
		add(&c, 1020 + 40 * (uint64_t)i, KT_EV_ZONE_END, 1, 0, NULL, 0);
	}
	static const uint8_t want[] = {
		0x00, 0x09, 0x09, 0x00, 0x00,
		0xe8, 0x07, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, /* T: 1000, then +20 */
		0x00, 0x01, 0x00, 0x01,       /* K: run 0, #0 new: begin 1 */
		0x01, 0x02, 0x00, 0x01,       /* run 0, #1 new: end 1 */
		0x00,                         /* run 0, #0: begin follows end from now on */
	};                                    /* the five predicted after it: implied */
	assert_bytes(&c, want, sizeof(want));
	free(c.buf);
}

Test(compact, counter_values_have_exact_bytes)
{
	struct chunk c;
	chunk_init(&c);
	static const uint64_t v[] = { 10, 20, 30, 45 };
	for (int i = 0; i < 4; i++)
		add_u64(&c, 1 + (uint64_t)i, KT_EV_COUNTER_I64, 2, 0, v[i]);
	add_f64(&c, 5, 3, 16.0);
	add_f64(&c, 6, 3, 17.0);
	add_f64(&c, 7, 3, 17.0);
	static const uint8_t want[] = {
		0x00, 0x07, 0x08, 0x0b, 0x00,
		0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
		0x00, 0x04, 0x00, 0x02,       /* K: run 0, #0 new: i64 counter 2 */
		0x61, 0x05, 0x00, 0x03,       /* run 3, #1 new: f64 counter 3, then itself */
		/* V: 10 against 0 (zigzag 20); 20, 30 on the step; 45 is 5 over 40 */
		0x00, 0x14, 0x02, 0x0a,
		/* 16.0 against 0.0: 0 leading, 6 trailing zero bytes, 40 30;
		 * 17.0 against 16.0: 1 leading, 6 trailing, 01; 17.0 again */
		0x00, 0x06, 0x30, 0x40, 0x00, 0x16, 0x01,
	};
	assert_bytes(&c, want, sizeof(want));
	free(c.buf);
}

/* An allocation's pointer steps as an integer's value; its size is
 * predicted to repeat. */
Test(compact, allocations_have_exact_bytes)
{
	struct chunk c;
	chunk_init(&c);
	add_alloc(&c, 1, 0, 0x1000, 64);
	add_alloc(&c, 2, 0, 0x2000, 64); /* on the step from 0: 0x1000 + 0x1000 */
	add_alloc(&c, 3, 0, 0x3000, 64);
	add_alloc(&c, 4, 0, 0x3100, 32);
	add_u64(&c, 5, KT_EV_FREE, 0, 0, 0x3100);
	static const uint8_t want[] = {
		0x00, 0x05, 0x08, 0x0f, 0x00,
		0x01, 0x01, 0x01, 0x01, 0x01,
		0x00, 0x0e, 0x00, 0x00,       /* K: run 0, #0 new: alloc, pool 0 */
		0x61, 0x0f, 0x00, 0x00,       /* run 3, #1 new: free, pool 0 */
		/* V: 0x1000 against 0 (zigzag 0x2000), then size 64 against 0
		 * (zigzag 128); four hits; 0x3100 is 0xf00 under 0x4000 (zigzag
		 * 0x1dff), 32 is 32 under 64 (zigzag 63); the free's 0x3100
		 * against its own slot's 0 (zigzag 0x6200) */
		0x00, 0x80, 0x40, 0x00, 0x80, 0x01, 0x04, 0xff, 0x3b, 0x00, 0x3f,
		0x00, 0x80, 0xc4, 0x01,
	};
	assert_bytes(&c, want, sizeof(want));
	free(c.buf);
}

Test(compact, payload_lengths_and_bytes_have_exact_bytes)
{
	struct chunk c;
	chunk_init(&c);
	add(&c, 0, KT_EV_MESSAGE, 1, 0, "abc", 3);
	add(&c, 1, KT_EV_MESSAGE, 1, 0, "def", 3);
	add(&c, 2, KT_EV_USER, 2, 7, "", 0);
	static const uint8_t want[] = {
		0x00, 0x03, 0x08, 0x00, 0x02,
		0x00, 0x01, 0x01,
		0x00, 0x08, 0x00, 0x01,       /* K: run 0, #0 new: message 1 */
		0x21, 0x09, 0x07, 0x02,       /* run 1, #1 new: user 2, flags 7 */
		0x00, 0x03,                   /* L: run 0, 3; then 3 again, and 0 for the new key */
		'a', 'b', 'c', 'd', 'e', 'f', /* P */
	};
	assert_bytes(&c, want, sizeof(want));
	free(c.buf);
}

/* One raw record, written field by field, so it can be one the writer
 * would never make. */
static size_t raw_record(uint8_t *p, uint8_t type, uint8_t flags, uint16_t plen)
{
	size_t size = kt_event_size(plen);
	memset(p, 0, size);
	kt__put64(p, 1);
	kt__put32(p + 8, 1);
	p[12] = type;
	p[13] = flags;
	kt__put16(p + 14, plen);
	return size;
}

static long encode_one(uint8_t type, uint8_t flags, uint16_t plen, uint8_t pad)
{
	uint8_t rec[64], out[128];
	kt__compact_enc *e;
	cr_assert_eq(kt__compact_enc_new(&e, 4096), 0);
	size_t n = raw_record(rec, type, flags, plen);
	if (pad)
		rec[n - 1] = pad;
	long rc = kt__compact_encode(e, rec, n, out, sizeof(out));
	kt__compact_enc_free(e);
	return rc;
}

Test(compact, encoder_refuses_records_the_format_does_not_allow)
{
	cr_assert_gt(encode_one(KT_EV_ZONE_BEGIN, 0, 0, 0), 0);
	cr_assert_eq(encode_one(0, 0, 0, 0), -EINVAL);
	cr_assert_eq(encode_one(16, 0, 0, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_ZONE_BEGIN, 1, 0, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_ZONE_END, 0, 8, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_COUNTER_I64, 0, 4, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_COUNTER_F64, 0, 16, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_FLOW, KT_FLOW_END + 1, 8, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_MESSAGE, KT_SEV_FATAL + 1, 3, 0), -EINVAL);
	cr_assert_eq(encode_one(KT_EV_USER, 0xff, 3, 0x55), -EINVAL); /* pad not zero */
	cr_assert_gt(encode_one(KT_EV_USER, 0xff, 3, 0), 0);
}

Test(compact, encoder_refuses_spans_that_are_not_whole_records)
{
	uint8_t rec[64], out[128];
	kt__compact_enc *e;
	cr_assert_eq(kt__compact_enc_new(&e, 64), 0);
	size_t n = raw_record(rec, KT_EV_USER, 0, 20); /* 40 bytes */
	cr_assert_eq(kt__compact_encode(e, rec, 0, out, sizeof(out)), -EINVAL);
	cr_assert_eq(kt__compact_encode(e, rec, 12, out, sizeof(out)), -EINVAL);
	cr_assert_eq(kt__compact_encode(e, rec, n - 8, out, sizeof(out)), -EINVAL);
	cr_assert_eq(kt__compact_encode(e, rec, 72, out, sizeof(out)), -EINVAL); /* over max_raw */
	cr_assert_gt(kt__compact_encode(e, rec, n, out, sizeof(out)), 0);
	/* The encoding needs 5 + 1 + 4 + 2 + 20 bytes. */
	cr_assert_eq(kt__compact_encode(e, rec, n, out, 32), 32);
	cr_assert_eq(kt__compact_encode(e, rec, n, out, 31), -ENOSPC);
	kt__compact_enc_free(e);
	cr_assert_eq(kt__compact_enc_new(&e, 12), -EINVAL);
	cr_assert_null(e);
	cr_assert_eq(kt__compact_enc_new(&e, 0), -EINVAL);
	cr_assert_eq(kt__compact_enc_new(&e, (size_t)KT_MAX_RAW + 8), -EINVAL);
}

/* Decode hand-written bytes into @raw_len bytes of @count records. */
static int decode(const uint8_t *in, size_t len, size_t raw_len, uint32_t count)
{
	kt__compact_dec *d;
	uint8_t out[256];
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	cr_assert_leq(raw_len, sizeof(out));
	int rc = kt__compact_decode(d, in, len, out, raw_len, count);
	kt__compact_dec_free(d);
	return rc;
}

#define DEC(raw_len, count, ...)                                                 \
	decode((const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }), \
	       raw_len, count)

Test(compact, decoder_refuses_malformed_streams)
{
	/* The one-zone chunk of one_zone_begin_has_exact_bytes decodes. */
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1), 0);
	cr_assert_eq(decode(NULL, 0, 16, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 0, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1), KT_ECOUNT);
	cr_assert_eq(DEC(16, 1, 0x20, 1, 4, 0, 0, 100, 0, 1, 0, 1), KT_ERESERVED);
	/* a stream running past the payload; a byte left over */
	cr_assert_eq(DEC(16, 1, 0, 1, 5, 0, 0, 100, 0, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1, 9), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 2, 4, 0, 0, 100, 9, 0, 1, 0, 1), KT_EFRAME);
	/* a varint spelled with a useless zero group; one of 11 bytes; a
	 * tenth byte with bits past 64 */
	cr_assert_eq(DEC(16, 1, 0, 2, 4, 0, 0, 0xe4, 0, 0, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 11, 4, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			 0xff, 0xff, 0x01, 0, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 10, 4, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			 0xff, 0x02, 0, 1, 0, 1), KT_EFRAME);
	/* the first record predicted, or K empty; an index past the dictionary */
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0x20, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 1, 0, 0, 0, 100), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0x01, 1, 0, 1), KT_EFRAME);
	/* keys SPEC §4.2 does not allow; a name over 32 bits */
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 0, 0, 1), KT_EEVENT);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 99, 0, 1), KT_EEVENT);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 1, 1, 1), KT_EEVENT);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 0, 0, 100, 0, 7, 3, 1), KT_EEVENT);
	cr_assert_eq(DEC(16, 1, 0, 1, 8, 0, 0, 100, 0, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x10),
		     KT_EFRAME);
	/* the records end before raw_len, or would run past it */
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1), KT_ERAWLEN);
	cr_assert_eq(DEC(8, 1, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1), KT_ERAWLEN);
	/* more records than T holds; a token, or a V run, whose miss never comes */
	cr_assert_eq(DEC(32, 2, 0, 1, 4, 0, 0, 100, 0, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 1, 5, 0, 0, 100, 0, 1, 0, 1, 0x20), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0, 1, 4, 1, 0, 100, 0, 1, 0, 1, 1), KT_EFRAME);
	/* an LZ4 stream that does not decode, or decodes past raw_len */
	cr_assert_eq(DEC(16, 1, 0x01, 1, 4, 0, 0, 1, 100, 0, 1, 0, 1), KT_EFRAME);
	cr_assert_eq(DEC(16, 1, 0x01, 1, 4, 0, 0, 100, 100, 0, 1, 0, 1), KT_ERAWLEN);
	cr_assert_eq(DEC(16, 1, 0x01, 1, 4, 0, 0, 0, 100, 0, 1, 0, 1), KT_EFRAME);
}

Test(compact, decoder_refuses_bad_values_and_payloads)
{
	/* A user record of 3 bytes "abc" decodes. */
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 0, 2, 0, 0, 9, 0, 1, 0, 3, 'a', 'b', 'c'), 0);
	/* its length over 65535; P shorter or longer than it */
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 0, 4, 0, 0, 9, 0, 1, 0, 0x80, 0x80, 0x04, 'a', 'b', 'c'),
		     KT_EFRAME);
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 0, 2, 0, 0, 9, 0, 1, 0, 3, 'a', 'b'), KT_EFRAME);
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 0, 2, 0, 0, 9, 0, 1, 0, 3, 'a', 'b', 'c', 'd'), KT_EFRAME);
	/* An f64 counter at 16.0 decodes; a XOR with 8 zero bytes of 8 does
	 * not, nor one cut short. */
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 4, 0, 0, 0, 5, 0, 1, 0, 0x06, 0x30, 0x40), 0);
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 2, 0, 0, 0, 5, 0, 1, 0, 0x44), KT_EFRAME);
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 3, 0, 0, 0, 5, 0, 1, 0, 0x06, 0x30), KT_EFRAME);
	/* an i64 counter's residual spelled with a useless zero group */
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 3, 0, 0, 0, 4, 0, 1, 0, 0x80, 0), KT_EFRAME);
	/* An allocation of 2 bytes at 1 decodes; not without its size, nor
	 * into 24 bytes of records. */
	cr_assert_eq(DEC(32, 1, 0, 1, 4, 4, 0, 0, 0, 14, 0, 0, 0, 2, 0, 4), 0);
	cr_assert_eq(DEC(32, 1, 0, 1, 4, 3, 0, 0, 0, 14, 0, 0, 0, 2, 0), KT_EFRAME);
	cr_assert_eq(DEC(24, 1, 0, 1, 4, 4, 0, 0, 0, 14, 0, 0, 0, 2, 0, 4), KT_ERAWLEN);
}

/* A chunk of @n records drawn from @seed: every type, a few dozen names,
 * deltas from 0 to the full 64 bits, values that step and jump, payloads
 * of 0 to 40 bytes. */
static void random_chunk(struct chunk *c, uint64_t seed, uint32_t n)
{
	uint64_t x = seed * 2654435761u + 1, ts = x;
	uint8_t p[40];
	c->len = 0;
	c->count = 0;
	for (uint32_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* types 1-9, and allocations and frees */
		uint8_t type = (uint8_t)(x % 11 < 9 ? 1 + x % 11 : 5 + x % 11), flags = 0;
		uint16_t plen = 0;
		ts += x % 16 == 0 ? x : (x >> 8) % 300;
		if (type == KT_EV_FLOW)
			flags = (uint8_t)((x >> 20) % 3);
		if (type == KT_EV_USER)
			flags = (uint8_t)(x >> 24);
		if ((type >= KT_EV_COUNTER_I64 && type <= KT_EV_FLOW) || type == KT_EV_FREE) {
			plen = 8;
			kt__put64(p, x % 4 ? i * 3 : x);
		} else if (type == KT_EV_ALLOC) {
			plen = 16;
			kt__put64(p, x % 4 ? i * 16 : x);
			kt__put64(p + 8, x % 3 ? 64 : x >> 7);
		} else if (type >= KT_EV_MESSAGE) {
			plen = (uint16_t)((x >> 32) % 41);
			for (uint16_t j = 0; j < plen; j++)
				p[j] = (uint8_t)(x >> (j % 8));
		}
		add(c, ts, type, (uint32_t)((x >> 40) % 40), flags, p, plen);
	}
}

Test(compact, random_chunks_round_trip)
{
	struct chunk c;
	chunk_init(&c);
	for (uint64_t seed = 0; seed < 300; seed++) {
		random_chunk(&c, seed, 1 + (uint32_t)(seed * 37 % 2000));
		round_trip(&c);
	}
	free(c.buf);
}

Test(compact, no_state_carries_from_one_chunk_to_the_next)
{
	struct chunk a, b;
	chunk_init(&a);
	chunk_init(&b);
	random_chunk(&a, 1, 500);
	random_chunk(&b, 2, 500);
	kt__compact_enc *e1, *e2;
	kt__compact_dec *d1, *d2;
	cr_assert_eq(kt__compact_enc_new(&e1, MAX_RAW), 0);
	cr_assert_eq(kt__compact_enc_new(&e2, MAX_RAW), 0);
	cr_assert_eq(kt__compact_dec_new(&d1), 0);
	cr_assert_eq(kt__compact_dec_new(&d2), 0);
	static uint8_t ea[1 << 16], eb[1 << 16], eb2[1 << 16], out[1 << 16];
	long na = kt__compact_encode(e1, a.buf, a.len, ea, sizeof(ea));
	long nb = kt__compact_encode(e1, b.buf, b.len, eb, sizeof(eb));
	cr_assert_eq(kt__compact_encode(e2, b.buf, b.len, eb2, sizeof(eb2)), nb);
	cr_assert_eq(memcmp(eb, eb2, (size_t)nb), 0);
	cr_assert_eq(kt__compact_decode(d1, ea, (size_t)na, out, a.len, a.count), 0);
	cr_assert_eq(kt__compact_decode(d1, eb, (size_t)nb, out, b.len, b.count), 0);
	cr_assert_eq(memcmp(out, b.buf, b.len), 0);
	cr_assert_eq(kt__compact_decode(d2, eb, (size_t)nb, out, b.len, b.count), 0);
	cr_assert_eq(memcmp(out, b.buf, b.len), 0);
	kt__compact_enc_free(e1);
	kt__compact_enc_free(e2);
	kt__compact_dec_free(d1);
	kt__compact_dec_free(d2);
	free(a.buf);
	free(b.buf);
}

/* What a decode that succeeds writes: @count valid records, exactly. */
static void assert_valid_records(const uint8_t *p, size_t raw_len, uint32_t count)
{
	uint32_t n = 0;
	for (size_t at = 0; at < raw_len; n++) {
		long sz = kt__event_check(p + at, raw_len - at);
		cr_assert_gt(sz, 0, "record %u at %zu is not valid", n, at);
		at += (size_t)sz;
	}
	cr_assert_eq(n, count);
}

Test(compact, every_cut_and_byte_flip_is_refused_or_gives_valid_records)
{
	struct chunk c;
	chunk_init(&c);
	random_chunk(&c, 7, 60);
	kt__compact_enc *e;
	kt__compact_dec *d;
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	static uint8_t enc[1 << 14], bad[1 << 14], out[1 << 14];
	long n = kt__compact_encode(e, c.buf, c.len, enc, sizeof(enc));
	cr_assert_gt(n, 0);
	for (long cut = 0; cut < n; cut++)
		cr_assert_lt(kt__compact_decode(d, enc, (size_t)cut, out, c.len, c.count), 0,
			     "the first %ld of %ld bytes decoded", cut, n);
	unsigned ok = 0;
	static const uint8_t flips[] = { 0x01, 0x02, 0x10, 0x80, 0xff };
	for (long i = 0; i < n; i++) {
		for (size_t f = 0; f < sizeof(flips); f++) {
			memcpy(bad, enc, (size_t)n);
			bad[i] ^= flips[f];
			if (kt__compact_decode(d, bad, (size_t)n, out, c.len, c.count) == 0) {
				assert_valid_records(out, c.len, c.count);
				ok++;
			}
		}
	}
	/* Timestamp and value bytes change what they say, not the shape. */
	cr_assert_gt(ok, 0);
	kt__compact_enc_free(e);
	kt__compact_dec_free(d);
	free(c.buf);
}

/* Encode @c with LZ4 tried on @streams; the flags byte, after checking
 * that the chunk comes back. */
static unsigned lz4_flags(const struct chunk *c, unsigned streams)
{
	kt__compact_enc *e;
	kt__compact_dec *d;
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	cr_assert_eq(kt__compact_enc_lz4(e, streams, 1), 0);
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	uint8_t *enc = malloc(c->len), *dec = malloc(c->len);
	cr_assert(enc && dec);
	long n = kt__compact_encode(e, c->buf, c->len, enc, c->len);
	cr_assert_gt(n, 0);
	cr_assert_eq(kt__compact_decode(d, enc, (size_t)n, dec, c->len, c->count), 0);
	cr_assert_eq(memcmp(dec, c->buf, c->len), 0);
	unsigned flags = enc[0];
	free(enc);
	free(dec);
	kt__compact_dec_free(d);
	kt__compact_enc_free(e);
	return flags;
}

Test(compact, lz4_streams_are_kept_where_they_shrink)
{
	struct chunk c;
	chunk_init(&c);
	static const uint8_t zeros[24];
	uint8_t rnd[24];
	uint64_t x = 88172645463325252u;
	/* A loop's zones and counters repeat; user payloads of zeros. */
	for (int i = 0; i < 2000; i++) {
		add(&c, 40 * (uint64_t)i, KT_EV_ZONE_BEGIN, 1 + i % 3, 0, NULL, 0);
		add_u64(&c, 40 * (uint64_t)i + 9, KT_EV_COUNTER_I64, 7, 0, (uint64_t)(i % 5) * 1000);
		add(&c, 40 * (uint64_t)i + 17, KT_EV_USER, 8, 0, zeros, 24);
		add(&c, 40 * (uint64_t)i + 30, KT_EV_ZONE_END, 1 + i % 3, 0, NULL, 0);
	}
	cr_assert_eq(lz4_flags(&c, 0), 0);
	cr_assert_eq(lz4_flags(&c, KT__COMPACT_P), KT__COMPACT_P);
	cr_assert_eq(lz4_flags(&c, KT__COMPACT_ALL),
		     KT__COMPACT_T | KT__COMPACT_K | KT__COMPACT_V | KT__COMPACT_P);
	/* Random payload bytes do not shrink: stored as they are. */
	c.len = 0;
	c.count = 0;
	for (int i = 0; i < 500; i++) {
		for (int j = 0; j < 24; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			rnd[j] = (uint8_t)x;
		}
		add(&c, 40 * (uint64_t)i, KT_EV_USER, 8, 0, rnd, 24);
	}
	cr_assert_eq(lz4_flags(&c, KT__COMPACT_ALL) & KT__COMPACT_P, 0);
	kt__compact_enc *e;
	cr_assert_eq(kt__compact_enc_new(&e, 64), 0);
	cr_assert_eq(kt__compact_enc_lz4(e, 0x20, 1), -EINVAL);
	kt__compact_enc_free(e);
	free(c.buf);
}

/* T of @n records whose spacing repeats every 64 records (@noisy 0: LZ4
 * takes T to a tenth, which the ratio bound allows) or is random. */
static void spaced_chunk(struct chunk *c, uint32_t n, int noisy, uint64_t *x)
{
	uint64_t ts = 1000;
	c->len = 0;
	c->count = 0;
	for (uint32_t i = 0; i < n; i++) {
		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		ts += noisy ? 100 + *x % 20000 : 30 + ((i % 64) * 0x9E3779B9u >> 26);
		add(c, ts, i % 2 ? KT_EV_ZONE_END : KT_EV_ZONE_BEGIN, 1, 0, NULL, 0);
	}
}

/* A stream whose LZ4 saved under an eighth is not tried for the next 15
 * chunks of the encoder, then tried again; P is tried every chunk. */
Test(compact, lz4_is_not_tried_for_15_chunks_on_a_stream_where_it_did_not_pay)
{
	struct chunk c;
	chunk_init(&c);
	kt__compact_enc *e;
	kt__compact_dec *d;
	uint64_t x = 88172645463325252u;
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	cr_assert_eq(kt__compact_enc_lz4(e, KT__COMPACT_T | KT__COMPACT_P, 1), 0);
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	uint8_t *enc = malloc(MAX_RAW), *dec = malloc(MAX_RAW);
	cr_assert(enc && dec);
	for (int k = 0; k < 18; k++) {
		/* Chunk 0 is noise (T has two bytes a record that LZ4 cannot
		 * shrink), every other one repeats. */
		spaced_chunk(&c, 4000, k == 0, &x);
		long n = kt__compact_encode(e, c.buf, c.len, enc, c.len);
		cr_assert_gt(n, 0);
		cr_assert_eq(kt__compact_decode(d, enc, (size_t)n, dec, c.len, c.count), 0);
		cr_assert_eq(memcmp(dec, c.buf, c.len), 0);
		int tried = k == 0 || k > 15;
		cr_assert_eq(enc[0], tried && k ? KT__COMPACT_T : 0, "chunk %d: flags %#x", k, enc[0]);
	}
	/* A new setting tries every stream at once. */
	spaced_chunk(&c, 4000, 1, &x);
	cr_assert_gt(kt__compact_encode(e, c.buf, c.len, enc, c.len), 0);
	spaced_chunk(&c, 4000, 0, &x);
	cr_assert_eq(kt__compact_enc_lz4(e, KT__COMPACT_T, 1), 0);
	cr_assert_gt(kt__compact_encode(e, c.buf, c.len, enc, c.len), 0);
	cr_assert_eq(enc[0], KT__COMPACT_T);
	free(enc);
	free(dec);
	kt__compact_dec_free(d);
	kt__compact_enc_free(e);
	free(c.buf);
}

/* A short noisy chunk (a drain's tail: T under LZ4_JUDGE's 4096 bytes)
 * does not turn LZ4 off for the chunks after it: the next repeating
 * chunk's T is LZ4's. */
Test(compact, a_short_chunk_does_not_turn_lz4_off)
{
	struct chunk c;
	chunk_init(&c);
	kt__compact_enc *e;
	uint64_t x = 88172645463325252u;
	cr_assert_eq(kt__compact_enc_new(&e, MAX_RAW), 0);
	cr_assert_eq(kt__compact_enc_lz4(e, KT__COMPACT_T | KT__COMPACT_P, 1), 0);
	uint8_t *enc = malloc(MAX_RAW);
	cr_assert_not_null(enc);
	spaced_chunk(&c, 200, 1, &x); /* ~400 bytes of T that LZ4 cannot shrink */
	cr_assert_gt(kt__compact_encode(e, c.buf, c.len, enc, c.len), 0);
	cr_assert_eq(enc[0], 0);
	spaced_chunk(&c, 4000, 0, &x);
	cr_assert_gt(kt__compact_encode(e, c.buf, c.len, enc, c.len), 0);
	cr_assert_eq(enc[0], KT__COMPACT_T, "flags %#x", enc[0]);
	free(enc);
	kt__compact_enc_free(e);
	free(c.buf);
}

Test(compact, zstd_archival_codec_round_trips_and_refuses_what_it_cannot_trust)
{
	struct chunk c;
	chunk_init(&c);
	const kt__codec *zc = &kt__codec_compact_zstd;
	void *e, *d;
	cr_assert_eq(zc->enc_new(&e, MAX_RAW, 0), 0);
	cr_assert_eq(zc->dec_new(&d), 0);
	static uint8_t enc[1 << 16], out[1 << 16], frame[1 << 10];
	for (uint64_t seed = 0; seed < 20; seed++) {
		random_chunk(&c, seed, 1 + (uint32_t)seed * 50);
		long n = zc->encode(e, c.buf, c.len, enc, sizeof(enc));
		cr_assert_gt(n, 0);
		cr_assert_eq(zc->decode(d, enc, (size_t)n, out, c.len, c.count), 0);
		cr_assert_eq(memcmp(out, c.buf, c.len), 0);
	}
	long n = zc->encode(e, c.buf, c.len, enc, 8);
	cr_assert_eq(n, -ENOSPC);
	/* Not a zstd frame; a frame holding more than raw_len; a frame
	 * holding a compact payload that does not decode. */
	static const uint8_t junk[16] = { 1, 2, 3 };
	cr_assert_eq(zc->decode(d, junk, sizeof(junk), out, 16, 1), KT_EFRAME);
	static const uint8_t big[64];
	size_t z = ZSTD_compress(frame, sizeof(frame), big, sizeof(big), 1);
	cr_assert(!ZSTD_isError(z));
	cr_assert_eq(zc->decode(d, frame, z, out, 32, 1), KT_EFRAME);
	static const uint8_t bad[] = { 0, 1, 4, 0, 0, 100, 0, 99, 0, 1 };
	z = ZSTD_compress(frame, sizeof(frame), bad, sizeof(bad), 1);
	cr_assert_eq(zc->decode(d, frame, z, out, 16, 1), KT_EEVENT);
	zc->enc_free(e);
	zc->dec_free(d);
	cr_assert_eq(zc->enc_new(&e, MAX_RAW, 20), -EINVAL);
	cr_assert_null(e);
	free(c.buf);
}

/* A chunk that compresses too well: identical records one tick apart. */
static void flat_chunk(struct chunk *c, uint32_t n)
{
	c->len = 0;
	c->count = 0;
	for (uint32_t i = 0; i < n; i++)
		add(c, i, KT_EV_INSTANT, 1, 0, NULL, 0);
}

Test(compact, no_payload_expands_more_than_a_reader_accepts)
{
	struct chunk c;
	chunk_init(&c);
	flat_chunk(&c, 65536); /* 1 MiB of records */
	/* LZ4 would take T's 64K equal bytes to a few hundred: T stays plain. */
	unsigned flags = lz4_flags(&c, KT__COMPACT_ALL);
	cr_assert_eq(flags & KT__COMPACT_T, 0);
	/* The archival codec cannot stay within the ratio: -ERANGE. */
	const kt__codec *zc = &kt__codec_compact_zstd;
	void *z;
	cr_assert_eq(zc->enc_new(&z, MAX_RAW, 3), 0);
	static uint8_t enc[1 << 17];
	cr_assert_eq(zc->encode(z, c.buf, c.len, enc, sizeof(enc)), -ERANGE);
	zc->enc_free(z);
	/* Decoders refuse a raw_len past 1024 x the payload + 4096, before
	 * reading it. */
	kt__compact_dec *d;
	void *zd;
	cr_assert_eq(kt__compact_dec_new(&d), 0);
	cr_assert_eq(zc->dec_new(&zd), 0);
	/* (a reserved flag: refused as KT_ERESERVED once the bytes are read) */
	static const uint8_t bad[] = { 0x20, 1, 4, 0, 0, 100, 0, 1, 0, 1 };
	size_t edge = 1024 * sizeof(bad) + 4096;
	cr_assert_eq(kt__compact_decode(d, bad, sizeof(bad), c.buf, edge + 8, 1), KT_ERAWLEN);
	cr_assert_eq(kt__compact_decode(d, bad, sizeof(bad), c.buf, edge, 1), KT_ERESERVED);
	cr_assert_eq(zc->decode(zd, bad, sizeof(bad), c.buf, edge + 8, 1), KT_ERAWLEN);
	cr_assert_eq(zc->decode(zd, bad, sizeof(bad), c.buf, edge, 1), KT_EFRAME);
	kt__compact_dec_free(d);
	zc->dec_free(zd);
	free(c.buf);
}

/* Where the first record starting at or past @limit lies in @c, with the
 * records before it and their last timestamp. */
static size_t prefix_at(const struct chunk *c, size_t limit, uint32_t *count, uint64_t *last)
{
	size_t at = 0;
	*count = 0;
	while (at < c->len && at < limit) {
		*last = kt__get64(c->buf + at + KT_REC_TS);
		at += kt_event_size(kt__get16(c->buf + at + KT_REC_LEN));
		(*count)++;
	}
	return at;
}

/* encode_upto takes the records before the limit, or before a record the
 * format does not know, and encodes them as kt__compact_encode() does. */
Test(compact, encode_upto_takes_whole_records_up_to_the_limit_or_a_foreign_record)
{
	struct chunk c;
	chunk_init(&c);
	kt__compact_enc *e;
	cr_assert_eq(kt__compact_enc_new(&e, 8192 + kt_event_size(UINT16_MAX)), 0);
	size_t cap = 2 * (size_t)MAX_RAW;
	uint8_t *a = malloc(cap), *b = malloc(cap);
	cr_assert(a && b);
	for (uint64_t seed = 0; seed < 100; seed++) {
		random_chunk(&c, seed, 1 + (uint32_t)(seed * 37 % 700));
		size_t limit = 8 * (1 + seed * 97 % 1024);
		uint32_t count;
		uint64_t last = 0;
		size_t used = prefix_at(&c, limit, &count, &last);
		kt__compact_run run;
		long n = kt__compact_encode_upto(e, c.buf, c.len, limit, a, cap, &run);
		cr_assert_eq(run.used, used);
		cr_assert_eq(run.count, count);
		cr_assert_eq(run.first, kt__get64(c.buf + KT_REC_TS));
		cr_assert_eq(run.last, last);
		long m = kt__compact_encode(e, c.buf, used, b, cap);
		cr_assert_eq(n, m);
		cr_assert(n < 0 || memcmp(a, b, (size_t)n) == 0);
		/* A ring's drop marker (type 0xFE) where the limit was: the
		 * walk ends before it, with the same bytes. */
		if (used < c.len) {
			c.buf[used + 12] = 0xFE;
			n = kt__compact_encode_upto(e, c.buf, c.len, 8192, a, cap, &run);
			cr_assert_eq(run.used, used);
			cr_assert_eq(n, m);
		}
	}
	kt__compact_run run;
	cr_assert_eq(kt__compact_encode_upto(e, c.buf, c.len, 16384, a, cap, &run), -EINVAL,
		     "a limit past what the encoder holds");
	c.buf[12] = 0xFE;
	cr_assert_eq(kt__compact_encode_upto(e, c.buf, c.len, 64, a, cap, &run), 0);
	cr_assert_eq(run.used, 0);
	free(a);
	free(b);
	free(c.buf);
	kt__compact_enc_free(e);
}

/* Bytes that change while they are read (a ring its producer overwrites)
 * can be anything: encode_upto reads nothing past what it is given, here
 * the end of a mapping. */
Test(compact, encode_upto_reads_nothing_past_its_bytes_whatever_they_are)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mprotect(m + 2 * page, (size_t)page, PROT_NONE), 0);
	struct chunk c;
	chunk_init(&c);
	kt__compact_enc *e;
	cr_assert_eq(kt__compact_enc_new(&e, 4096 + kt_event_size(UINT16_MAX)), 0);
	uint8_t *out = malloc(MAX_RAW);
	cr_assert_not_null(out);
	random_chunk(&c, 7, 400);
	size_t len = c.len < 2 * (size_t)page ? c.len & ~(size_t)7 : 2 * (size_t)page;
	uint8_t *at = m + 2 * page - len;
	uint64_t x = 88172645463325252u;
	for (int i = 0; i < 20000; i++) {
		memcpy(at, c.buf, len);
		for (int k = 0; k < 1 + i % 8; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			at[x % len] = (uint8_t)(x >> 32);
		}
		kt__compact_run run;
		size_t from = 8 * (x % (len / 8));
		kt__compact_encode_upto(e, at + from, len - from, 4096, out, MAX_RAW, &run);
		cr_assert_leq(run.used, len - from);
	}
	free(out);
	free(c.buf);
	kt__compact_enc_free(e);
	munmap(m, 3 * (size_t)page);
}
