/*
 * perfetto_pack.c - Perfetto packets compressed in batches; perfetto_pack.h
 * says what is written.  Level 1 of each codec: the export is about speed,
 * and a trace's packets are repetitive enough that it gets most of the gain.
 */
#include <stdlib.h>

#include <zlib.h>
#include <zstd.h>

#include "tools/export/export_perfetto.h"
#include "tools/export/perfetto_pack.h"

struct perfetto_pack {
	FILE *f;
	int codec;
	ZSTD_CCtx *zc;
	uint8_t *dst;
	size_t cap;
};

struct perfetto_pack *perfetto_pack_new(FILE *f, int codec, size_t batch)
{
	struct perfetto_pack *pk = calloc(1, sizeof(*pk));
	if (!pk)
		return NULL;
	pk->f = f;
	pk->codec = codec;
	pk->cap = codec == PERFETTO_ZSTD ? ZSTD_compressBound(batch) : compressBound(batch);
	pk->dst = malloc(pk->cap);
	if (codec == PERFETTO_ZSTD)
		pk->zc = ZSTD_createCCtx();
	if (!pk->dst || (codec == PERFETTO_ZSTD && !pk->zc)) {
		perfetto_pack_free(pk);
		return NULL;
	}
	return pk;
}

static uint8_t *varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

int perfetto_pack_write(void *pack, const uint8_t *buf, size_t len)
{
	struct perfetto_pack *pk = pack;
	size_t n;
	unsigned field;
	if (pk->codec == PERFETTO_ZSTD) {
		n = ZSTD_compressCCtx(pk->zc, pk->dst, pk->cap, buf, len, 1);
		if (ZSTD_isError(n))
			return -1;
		field = 133;
	} else {
		uLongf dl = pk->cap;
		if (compress2(pk->dst, &dl, buf, len, 1) != Z_OK)
			return -1;
		n = dl;
		field = 50;
	}
	/* Trace.packet (1) { TracePacket.<field> = the compressed bytes } */
	uint8_t inner[16], head[16], *i = varint(inner, (uint64_t)field << 3 | 2), *h = head;
	i = varint(i, n);
	*h++ = 1 << 3 | 2;
	h = varint(h, (size_t)(i - inner) + n);
	size_t hl = (size_t)(h - head), il = (size_t)(i - inner);
	if (fwrite(head, 1, hl, pk->f) != hl || fwrite(inner, 1, il, pk->f) != il ||
	    fwrite(pk->dst, 1, n, pk->f) != n)
		return -1;
	return 0;
}

void perfetto_pack_free(struct perfetto_pack *pk)
{
	if (!pk)
		return;
	ZSTD_freeCCtx(pk->zc);
	free(pk->dst);
	free(pk);
}
