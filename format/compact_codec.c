/*
 * The compact codec (format/compact.c, compact_dec.c) as a kt__codec
 * table: its typed functions behind the table's opaque pointers, and the
 * writer's level as the streams it tries LZ4 on.  The calls here are one
 * per chunk, never per event.
 */
#include <limits.h>

#include "format/compact.h"

/* LZ4 on the payload bytes at level 0 and below; at 1 (a session's
 * default) on the timestamps and keys too, each where it pays; on every
 * stream from 2 (format/SPEC.md, bench/RESULTS.md). */
static int enc_level(void *e, int level)
{
	unsigned streams = level >= 2  ? KT__COMPACT_ALL
			   : level == 1 ? KT__COMPACT_T | KT__COMPACT_K | KT__COMPACT_P
					: KT__COMPACT_P;
	return kt__compact_enc_lz4(e, streams, 1);
}

static void enc_free(void *e)
{
	kt__compact_enc_free(e);
}

static void enc_skip(void *e, uint8_t *skip)
{
	kt__compact_enc_skip(e, skip);
}

static int enc_new(void **out, size_t max_raw, int level)
{
	kt__compact_enc *e;
	int rc = kt__compact_enc_new(&e, max_raw);
	if (!rc && (rc = enc_level(e, level)))
		enc_free(e);
	*out = rc ? NULL : e;
	return rc;
}

static long encode(void *e, const void *events, size_t raw_len, uint8_t *out, size_t cap)
{
	return kt__compact_encode(e, events, raw_len, out, cap);
}

static int dec_new(void **out)
{
	kt__compact_dec *d;
	int rc = kt__compact_dec_new(&d);
	*out = d;
	return rc;
}

static void dec_free(void *d)
{
	kt__compact_dec_free(d);
}

static size_t dec_bytes(const void *d)
{
	return kt__compact_dec_bytes(d);
}

static int decode(void *d, const uint8_t *in, size_t len, uint8_t *out, size_t raw_len,
		  uint32_t count)
{
	return kt__compact_decode(d, in, len, out, raw_len, count);
}

const kt__codec kt__codec_compact = KT__CODEC_TABLE(INT_MAX);
