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

struct kt__czstd_enc {
	kt__compact_enc *enc;
	ZSTD_CCtx *cc;
	int level;
	uint8_t *buf;     /* the compact payload, at most max_raw bytes */
};

struct kt__czstd_dec {
	kt__compact_dec *dec;
	ZSTD_DCtx *dc;
	uint8_t *buf;
	size_t cap;
};

int kt__czstd_enc_new(kt__czstd_enc **out, size_t max_raw, int level)
{
	*out = NULL;
	if (level < 0 || level > 19)
		return -EINVAL;
	kt__czstd_enc *e = kt__calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	int rc = kt__compact_enc_new(&e->enc, max_raw);
	if (!rc)
		rc = kt__compact_enc_lz4(e->enc, 0, 1);
	e->cc = ZSTD_createCCtx();
	e->buf = kt__malloc(max_raw ? max_raw : 1);
	if (!rc && (!e->cc || !e->buf))
		rc = -ENOMEM;
	if (rc) {
		kt__czstd_enc_free(e);
		return rc;
	}
	e->level = level ? level : 3;
	*out = e;
	return 0;
}

void kt__czstd_enc_free(kt__czstd_enc *e)
{
	if (!e)
		return;
	kt__compact_enc_free(e->enc);
	ZSTD_freeCCtx(e->cc);
	free(e->buf);
	free(e);
}

long kt__czstd_encode(kt__czstd_enc *e, const void *events, size_t raw_len, uint8_t *out,
		      size_t cap)
{
	/* The compact payload never exceeds raw_len (kt__compact_encode). */
	long n = kt__compact_encode(e->enc, events, raw_len, e->buf, raw_len);
	if (n < 0)
		return n;
	size_t z = ZSTD_compressCCtx(e->cc, out, cap, e->buf, (size_t)n, e->level);
	if (ZSTD_isError(z))
		return ZSTD_getErrorCode(z) == ZSTD_error_dstSize_tooSmall ? -ENOSPC : -EIO;
	return kt__compact_ratio_ok(raw_len, z) ? (long)z : -ERANGE;
}

int kt__czstd_dec_new(kt__czstd_dec **out)
{
	*out = NULL;
	kt__czstd_dec *d = kt__calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dc = ZSTD_createDCtx();
	if (!d->dc || kt__compact_dec_new(&d->dec)) {
		kt__czstd_dec_free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void kt__czstd_dec_free(kt__czstd_dec *d)
{
	if (!d)
		return;
	kt__compact_dec_free(d->dec);
	ZSTD_freeDCtx(d->dc);
	free(d->buf);
	free(d);
}

size_t kt__czstd_dec_bytes(const kt__czstd_dec *d)
{
	if (!d)
		return 0;
	return sizeof(*d) + d->cap + kt__compact_dec_bytes(d->dec) + ZSTD_sizeof_DCtx(d->dc);
}

int kt__czstd_decode(kt__czstd_dec *d, const uint8_t *in, size_t len, uint8_t *out,
		     size_t raw_len, uint32_t count)
{
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
