/*
 * libFuzzer target for the compact chunk codec (format/compact.c).
 *
 * Input byte 0, modulo 3, chooses what the rest is:
 *  - 0: a chunk's declared raw_len and event_count (2 bytes each) and
 *    compact bytes, which the decoder must refuse or turn into exactly
 *    that many valid records;
 *  - 1: a recipe for valid records (SPEC §4.2) that must come back byte
 *    for byte from decode(encode(records)), through the compact codec
 *    with LZ4 tried on every stream and through the archival one;
 *  - 2: as 0, for the archival codec (a zstd frame of a compact payload).
 * Either failure aborts.  The encoder and decoder are made once and reused,
 * as a writer and a reader reuse theirs, so no state may leak between
 * chunks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <katra/trace.h>
#include <katra/writer.h>
#include "format/compact.h"
#include "format/format.h"

#define RAW_MAX (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kt__compact_enc *enc;
static kt__compact_dec *dec;
static const kt__codec *const zstd = &kt__codec_compact_zstd;
static void *zenc, *zdec;
static uint8_t raw[RAW_MAX], out[RAW_MAX], packed[4 * RAW_MAX];

static void decode_only(const uint8_t *p, size_t n, int archival)
{
	if (n < 4)
		return;
	size_t raw_len = ((size_t)kt__get16(p) % (RAW_MAX / 8 - 1) + 2) * 8;
	uint32_t count = (uint32_t)(kt__get16(p + 2) % (raw_len / 16)) + 1;
	if (archival ? zstd->decode(zdec, p + 4, n - 4, out, raw_len, count)
		     : kt__compact_decode(dec, p + 4, n - 4, out, raw_len, count))
		return;
	uint32_t seen = 0;
	for (size_t at = 0; at < raw_len; seen++) {
		long sz = kt__event_check(out + at, raw_len - at);
		if (sz <= 0)
			abort(); /* a decode that succeeds writes valid records */
		at += (size_t)sz;
	}
	if (seen != count)
		abort();
}

/* Take @k bytes of the recipe (zeros past its end). */
static uint64_t take(const uint8_t **p, const uint8_t *end, unsigned k)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < k && *p < end; i++)
		v |= (uint64_t)*(*p)++ << (8 * i);
	return v;
}

/* One valid record from the recipe at *@p; its size, or 0 when it does
 * not fit. */
static size_t one_record(const uint8_t **p, const uint8_t *end, uint8_t *at, size_t room,
			 uint64_t *ts)
{
	uint8_t op = (uint8_t)take(p, end, 1);
	kt_event ev = { .type = (uint8_t)(1 + op % KT_EV_TRACK_COUNTER_F64) };
	*ts += op & 0x80 ? take(p, end, 8) : take(p, end, 1);
	ev.ts = *ts;
	ev.name_id = op & 0x40 ? (uint32_t)take(p, end, 4) : (uint32_t)take(p, end, 1) % 8;
	uint8_t v[16];
	int bytes = ev.type == KT_EV_MESSAGE || ev.type == KT_EV_USER || ev.type == KT_EV_ARG_STR;
	if (ev.type >= KT_EV_COUNTER_I64 && !bytes) {
		kt__put64(v, op & 0x20 ? take(p, end, 8) : take(p, end, 1));
		ev.payload = v;
		ev.payload_len = 8;
		/* pointer, then size; track time, then value */
		if (ev.type == KT_EV_ALLOC || ev.type >= KT_EV_TRACK_COUNTER_I64) {
			kt__put64(v + 8, take(p, end, op & 0x10 ? 8 : 1));
			ev.payload_len = 16;
		}
		/* flow and frame phases */
		if (ev.type == KT_EV_FLOW || ev.type == KT_EV_FRAME)
			ev.flags = (uint8_t)(op >> 4) % 3;
		/* a track's id */
		if (ev.type >= KT_EV_TRACK_BEGIN)
			ev.flags = (uint8_t)take(p, end, 1);
	} else if (bytes) {
		ev.payload_len = (uint16_t)take(p, end, 1);
		if (op & 0x20)
			ev.payload_len = (uint16_t)(ev.payload_len * 64);
		ev.flags = ev.type == KT_EV_USER	   ? (uint8_t)(op >> 3)
			   : ev.type == KT_EV_MESSAGE ? (uint8_t)((op >> 3) % (KT_SEV_FATAL + 1))
						   : 0;
		ev.payload = *p;
		if ((size_t)(end - *p) < ev.payload_len)
			ev.payload_len = (uint16_t)(end - *p);
		*p += ev.payload_len;
	}
	return kt_event_encode(at, room, &ev);
}

static void round_trip(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint64_t ts = 0;
	size_t len = 0, sz;
	uint32_t count = 0;
	while (p < end && (sz = one_record(&p, end, raw + len, RAW_MAX - len, &ts))) {
		len += sz;
		count++;
	}
	if (!count)
		return;
	long m = kt__compact_encode(enc, raw, len, packed, sizeof(packed));
	if (m == -ENOSPC)
		return; /* streams longer than the records: a writer stores them raw */
	if (m <= 0 || kt__compact_decode(dec, packed, (size_t)m, out, len, count) ||
	    memcmp(out, raw, len))
		abort();
	m = zstd->encode(zenc, raw, len, packed, sizeof(packed));
	if (m == -ENOSPC)
		return; /* the compact payload with its head is over raw_len */
	if (m <= 0 || zstd->decode(zdec, packed, (size_t)m, out, len, count) ||
	    memcmp(out, raw, len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!enc && (kt__compact_enc_new(&enc, RAW_MAX) ||
		     kt__compact_enc_lz4(enc, KT__COMPACT_ALL, 1) || kt__compact_dec_new(&dec) ||
		     zstd->enc_new(&zenc, RAW_MAX, 1) || zstd->dec_new(&zdec)))
		abort();
	if (size < 1)
		return 0;
	if (data[0] % 3 == 1)
		round_trip(data + 1, size - 1);
	else
		decode_only(data + 1, size - 1, data[0] % 3 == 2);
	return 0;
}
