/*
 * The archival chunk codec: a compact payload (format/compact.c), then one
 * zstd frame.  The compact streams already hold only what no prediction
 * guessed; zstd's entropy coding then takes the timestamp bytes, which
 * carry 3-4 bits of news each, from 8 bits to about 2.
 */
#include <errno.h>
#include <stdlib.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "format/compact.h"
#include "format/format.h"

/* An encoder (enc, cc, level) or a decoder (dec, dc, cap): one struct,
 * so one function frees either. */
struct kt__czstd {
	kt__compact_enc *enc;
	ZSTD_CCtx *cc;
	int level;
	kt__compact_dec *dec;
	ZSTD_DCtx *dc;
	uint8_t *buf;     /* encoder: the compact payload, at most max_raw
			   * bytes; decoder: the zstd frame's output */
	size_t cap;
};

static void czstd_free(void *p)
{
	struct kt__czstd *z = p;
	if (!z)
		return;
	kt__compact_enc_free(z->enc);
	kt__compact_dec_free(z->dec);
	ZSTD_freeCCtx(z->cc);
	ZSTD_freeDCtx(z->dc);
	free(z->buf);
	free(z);
}

/* Level 0 means 3, the level format/SPEC.md's figures are for. */
static int enc_level(void *p, int level)
{
	if (level < 0 || level > 19)
		return -EINVAL;
	((struct kt__czstd *)p)->level = level ? level : 3;
	return 0;
}

static void enc_free(void *p)
{
	czstd_free(p);
}

static void enc_skip(void *p, uint8_t *skip)
{
	kt__compact_enc_skip(((struct kt__czstd *)p)->enc, skip);
}

static int enc_new(void **out, size_t max_raw, int level)
{
	*out = NULL;
	struct kt__czstd *e = kt__calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	int rc = enc_level(e, level);
	if (!rc)
		rc = kt__compact_enc_new(&e->enc, max_raw);
	if (!rc)
		rc = kt__compact_enc_lz4(e->enc, 0, 1);
	e->cc = ZSTD_createCCtx();
	e->buf = kt__malloc(max_raw ? max_raw : 1);
	if (!rc && (!e->cc || !e->buf))
		rc = -ENOMEM;
	if (rc) {
		enc_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

static long encode(void *p, const void *events, size_t raw_len, uint8_t *out, size_t cap)
{
	struct kt__czstd *e = p;
	/* The compact payload never exceeds raw_len (kt__compact_encode). */
	long n = kt__compact_encode(e->enc, events, raw_len, e->buf, raw_len);
	if (n < 0)
		return n;
	size_t z = ZSTD_compressCCtx(e->cc, out, cap, e->buf, (size_t)n, e->level);
	if (ZSTD_isError(z))
		return ZSTD_getErrorCode(z) == ZSTD_error_dstSize_tooSmall ? -ENOSPC : -EIO;
	return kt__compact_ratio_ok(raw_len, z) ? (long)z : -ERANGE;
}

static void dec_free(void *p)
{
	czstd_free(p);
}

static int dec_new(void **out)
{
	*out = NULL;
	struct kt__czstd *d = kt__calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dc = ZSTD_createDCtx();
	if (!d->dc || kt__compact_dec_new(&d->dec)) {
		dec_free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

static size_t dec_bytes(const void *p)
{
	const struct kt__czstd *d = p;
	if (!d)
		return 0;
	return sizeof(*d) + d->cap + kt__compact_dec_bytes(d->dec) + ZSTD_sizeof_DCtx(d->dc);
}

static int decode(void *p, const uint8_t *in, size_t len, uint8_t *out, size_t raw_len,
		  uint32_t count)
{
	struct kt__czstd *d = p;
	if (count == 0)
		return KT_ECOUNT;
	if (raw_len > KT_MAX_RAW || !kt__compact_ratio_ok(raw_len, len))
		return KT_ERAWLEN;
	if (raw_len > d->cap) {
		uint8_t *b = kt__realloc(d->buf, raw_len);
		if (!b)
			return -ENOMEM;
		d->buf = b;
		d->cap = raw_len;
	}
	/* Decompressing into a flat buffer of raw_len bytes: zstd writes no
	 * more than that, whatever window or size the frame claims. */
	size_t n = ZSTD_decompressDCtx(d->dc, d->buf, raw_len, in, len);
	if (ZSTD_isError(n))
		return KT_EFRAME;
	return kt__compact_decode(d->dec, d->buf, n, out, raw_len, count);
}

const kt__codec kt__codec_compact_zstd = KT__CODEC_TABLE(19);
